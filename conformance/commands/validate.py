"""`eventtime validate PATH...`: check scenario files without Spark; a line `file:line:column: message` per problem."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..exitcodes import ExitCode
from .options import contracts_parent

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    v = sub.add_parser("validate", parents=[contracts_parent()],
                       help="check scenario files; print file:line:column: message per problem")
    v.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories")


def run(args: argparse.Namespace) -> int:
    from ..loader import find_scenario_files, validate_file
    from ..registry import ContractLookup
    from .files import read_project

    project = read_project(args.paths, None, args.contracts, None)  # the contract folders `run` and pytest read
    if project is None:
        return ExitCode.USAGE_ERROR
    lookup = ContractLookup(project.contract_dirs)

    files, missing = find_scenario_files(args.paths)
    for path in missing:
        print(f"eventtime: error: no such file or directory: {path}", file=sys.stderr)
    if missing:
        return ExitCode.USAGE_ERROR
    if not files:
        print("eventtime: error: no scenario files (*.scenario.yaml) under the given paths", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    bad = 0
    for f in files:
        problems = validate_file(f, contracts=lookup)
        for problem in problems:
            print(problem)
        bad += bool(problems)
    print(f"{len(files) - bad} valid, {bad} invalid ({len(files)} file{'s' if len(files) != 1 else ''})")
    return ExitCode.FAILED if bad else ExitCode.OK
