"""The standard scenario suite, shipped as data inside the package (`SUITE_DIR`)."""
from pathlib import Path

SUITE_DIR = Path(__file__).resolve().parent

__all__ = ["SUITE_DIR", "display_path"]


def display_path(path: str | Path) -> str:
    """How a scenario file is named in messages and reports: `scenarios/...` for the bundled suite
    (wherever it is installed), relative to the working directory when under it, else as given."""
    p = Path(path).resolve()
    try:
        return str(Path("scenarios") / p.relative_to(SUITE_DIR))
    except ValueError:
        pass
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
