"""A user's project folder in a test's temporary directory: a project root (its pyproject.toml, which
ends the contract lookup), one contract file and one scenario file, the scenario loaded as a user's is."""
from __future__ import annotations

from pathlib import Path

from eventtime.loader import load_scenario


def user_scenario(root: Path, *, contract: tuple[str, str], scenario: tuple[str, str]):
    """Write `contract` and `scenario` ((file name, text) each) into a project at `root`; the loaded scenario."""
    (root / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    (root / contract[0]).write_text(contract[1])
    path = root / scenario[0]
    path.write_text(scenario[1])
    return load_scenario(path)
