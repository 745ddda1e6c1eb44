"""Lay out a tree of links shaped like the installed package, for tools that follow no import hooks.

The repository keeps `conformance/`, `harness/` and `scenarios/` at the top; the wheel installs them as
`eventtime`, `eventtime.harness` and `eventtime.scenarios` (pyproject.toml, package-dir). mypy reads
files, not the editable install's finder, so it checks `DEST/eventtime`, whose entries link back to the
repository's files: its messages name `DEST/eventtime/...`, which is `conformance/...` in the checkout.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPING = {"": "conformance", "harness": "harness", "scenarios": "scenarios"}


def lay_out(dest: Path) -> Path:
    package = dest / "eventtime"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for entry in sorted((ROOT / MAPPING[""]).iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for sub, folder in MAPPING.items():
        if sub:
            (package / sub).symlink_to(ROOT / folder)
    return package


if __name__ == "__main__":
    print(lay_out(Path(sys.argv[1] if len(sys.argv) > 1 else "build/typecheck").resolve()))
