"""`eventtime expect SCENARIO [--write]`: print (or write into the file) what the model computes for each
expect step of a scenario."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from ..exitcodes import ExitCode
from .check_model import profile_option
from .options import contracts_parent

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    e = sub.add_parser("expect", parents=[contracts_parent("the scenario")],
                       help="print what the model computes for each expect step of a scenario")
    e.add_argument("scenario", metavar="SCENARIO", help="a scenario file")
    profile_option(e, "the scenario's")
    e.add_argument("--write", action="store_true",
                   help="write the model's values into the file's expect steps in place (comments and "
                        "formatting elsewhere are kept); the result must agree with check-model")


def run(args: argparse.Namespace) -> int:
    return _expect(args.scenario, args.profile, args.write, args.contracts)


def _expect(path: str, profile: str | None, write: bool = False, contract_dirs: Sequence[str] = ()) -> int:
    from eventtime.scenarios import display_path

    from ..loader import load_scenario
    from ..problems import FileInvalid
    from ..registry import ContractLookup
    from ..semantics.fill import expectations_yaml
    from ..semantics.simulate import ModelError, NotCovered, simulate

    if not Path(path).is_file():
        print(f"eventtime: error: no such file: {path}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        sc = load_scenario(path, display_path=display_path(path), contracts=ContractLookup(contract_dirs))
    except FileInvalid as exc:
        print(exc, file=sys.stderr)
        return ExitCode.FAILED
    try:
        sim = simulate(sc, profile or sc.profile)
    except (NotCovered, ModelError) as exc:
        print(f"eventtime: the model cannot compute {sc.path}: {exc}", file=sys.stderr)
        if isinstance(exc, NotCovered):  # what a user's own contract, a kafka source or a job has instead
            print(f"eventtime: to write what Spark observes instead: eventtime run {path} --snapshot create "
                  "(or fix; docs/scenario-format.md, Snapshots)", file=sys.stderr)
        return ExitCode.FAILED
    if write:
        return _write(Path(path), sim)
    print(expectations_yaml(sim), end="")
    return ExitCode.OK


def _write(path: Path, sim: Any) -> int:
    """`expect --write`: the file's expect steps get the model's values; the new text must load and
    agree with the model before it replaces the file."""
    from ..loader import load_scenario_text
    from ..problems import FileInvalid
    from ..results import PASSED
    from ..textreport import describe_failure
    from ..semantics.check import check_scenario
    from ..semantics.fill import WriteError, write_expectations

    with open(path, encoding="utf-8", newline="") as fh:
        old = fh.read()
    try:
        new = write_expectations(sim, old)
    except WriteError as exc:
        print(f"eventtime: cannot write the expectations of {sim.scenario.path}: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    try:
        written = load_scenario_text(new, path=sim.scenario.path)
    except FileInvalid as exc:  # a bug of the writer, never a file half-written
        print(f"eventtime: the expectations written into {sim.scenario.path} would not load; file left unchanged:\n"
              f"{exc}", file=sys.stderr)
        return ExitCode.FAILED
    check = check_scenario(written, sim.profile)
    if check.status != PASSED:
        print(f"eventtime: the expectations written into {sim.scenario.path} do not agree with the model; file left "
              f"unchanged:\n{describe_failure(check)}", file=sys.stderr)
        return ExitCode.FAILED
    if new == old:
        print(f"{sim.scenario.path}: the expectations already agree with the model ({sim.profile} profile)")
        return ExitCode.OK
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(new)
    import difflib

    changed = sum(1 for line in difflib.ndiff(old.splitlines(), new.splitlines()) if line.startswith("+ "))
    print(f"{sim.scenario.path}: expectations written from the model ({sim.profile} profile), "
          f"{changed} line(s) changed or added")
    return ExitCode.OK
