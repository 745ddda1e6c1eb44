"""The scenario files a command reads: the paths on its command line, or the bundled suite.

Shared by the CLI's commands (`run`, `certify`, `check-model`); problems are printed for a person
(a missing path, no files, each invalid file with its problems), never raised.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["scenario_files", "load_scenarios"]


def scenario_files(paths: Sequence[str] | None, *, what: str = "to run",
                   allow_empty: bool = False) -> list[Path] | None:
    """The scenario files under `paths` (the bundled suite when there are none); None once a usage
    error (a missing path; no files, unless `allow_empty`) has been printed."""
    from .loader import find_scenario_files

    if paths:
        files, missing = find_scenario_files(paths)
        for path in missing:
            print(f"eventtime: error: no such file or directory: {path}", file=sys.stderr)
        if missing:
            return None
    else:
        from eventtime.scenarios import SUITE_DIR

        files, _ = find_scenario_files([SUITE_DIR])
    if not files and not allow_empty:
        print(f"eventtime: error: no scenario files (*.scenario.yaml) {what}", file=sys.stderr)
        return None
    return list(files)


def load_scenarios(files: Sequence[Path], contract_dirs: Sequence[str | Path] = ()) -> tuple[list[Any], int]:
    """Load each file, printing every invalid one with its problems; returns (scenarios, invalid count).
    Contracts are found beside or above each file, in `contract_dirs`, registered or bundled."""
    from eventtime.scenarios import display_path

    from .loader import ScenarioInvalid, load_scenario
    from .registry import ContractLookup

    lookup = ContractLookup(contract_dirs)
    scenarios, invalid = [], 0
    for f in files:
        try:
            scenarios.append(load_scenario(f, display_path=display_path(f), contracts=lookup))
        except ScenarioInvalid as exc:
            invalid += 1
            print(exc, file=sys.stderr)
    return scenarios, invalid
