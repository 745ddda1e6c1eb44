"""`eventtime compare-profiles SCENARIO...`: the same steps under the spark and dataflow profiles of the
model, side by side at each expect step (no Spark needed)."""
from __future__ import annotations

import argparse
from typing import Any

from ..exitcodes import ExitCode
from .options import contracts_parent

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    c = sub.add_parser("compare-profiles", parents=[contracts_parent()],
                       help="show a scenario's steps under both profiles of the model (Spark's and the "
                            "Dataflow model's), side by side at each expect step")
    c.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories")


def run(args: argparse.Namespace) -> int:
    from ..semantics.sidebyside import render, side_by_side
    from .files import load_scenarios, scenario_files

    files = scenario_files(args.paths, what="under the given paths")
    if files is None:
        return ExitCode.USAGE_ERROR
    scenarios, invalid = load_scenarios(files, args.contracts)
    for i, sc in enumerate(scenarios):
        print(("\n" if i else "") + render(side_by_side(sc)), end="")
    return ExitCode.FAILED if invalid else ExitCode.OK
