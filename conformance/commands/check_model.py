"""`eventtime check-model [PATH...]`: check the scenarios' expectations against the executable model of
event-time semantics (no Spark needed)."""
from __future__ import annotations

import argparse
from typing import Any, Sequence

from ..exitcodes import ExitCode
from .options import contracts_parent

__all__ = ["add_parser", "run", "profile_option"]


def profile_option(parser: argparse.ArgumentParser, whose: str) -> None:
    """--profile: the model's profile (spark, or another the model knows), over the scenario's own."""
    from ..semantics.simulate import PROFILES

    parser.add_argument("--profile", choices=PROFILES, default=None,
                        help=f"the model's profile (default: {whose} own `profile`, spark unless it says)")


def add_parser(sub: Any) -> None:
    c = sub.add_parser("check-model", parents=[contracts_parent()],
                       help="check the scenarios' expectations against the executable model "
                            "of event-time semantics (no Spark needed)")
    c.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or directories (default: the bundled suite)")
    profile_option(c, "each scenario's")
    c.add_argument("-q", "--quiet", action="store_true", help="print disagreements and the totals only")


def run(args: argparse.Namespace) -> int:
    return _check_model(args.paths, args.profile, args.quiet, args.contracts)


def _check_model(paths: Sequence[str], profile: str | None, quiet: bool, contract_dirs: Sequence[str] = ()) -> int:
    from .files import load_scenarios, scenario_files
    from ..results import ERROR, FAILED, FAILING, NOT_APPLICABLE, PASSED
    from ..textreport import describe_failure
    from ..semantics.check import check_scenario

    files = scenario_files(paths, what="under the given paths")
    if files is None:
        return ExitCode.USAGE_ERROR
    scenarios, invalid = load_scenarios(files, contract_dirs)
    results = []
    used: set[str] = set()
    label = {PASSED: "agree", FAILED: "DISAGREE", NOT_APPLICABLE: "NOT COVERED", ERROR: "ERROR"}
    for sc in scenarios:
        r = check_scenario(sc, profile or sc.profile)
        used.add(profile or sc.profile)
        results.append(r)
        if not quiet or r.status != PASSED:
            extra = f"  ({r.reason})" if r.reason else ""
            print(f"{label[r.status]:11}  {sc.name}  {sc.path}{extra}")
    bad = [r for r in results if r.status in FAILING]
    for r in bad:
        print()
        print(describe_failure(r))
    count = {s: sum(r.status == s for r in results) for s in label}
    print()
    # the profiles the scenarios ran under; none ran: the one asked for, else each scenario's own
    profiles = (" and ".join(sorted(used)) + (" profiles" if len(used) > 1 else " profile") if used
                else f"{profile} profile" if profile else "each scenario's own profile")
    print(f"{len(results)} scenarios: {count[PASSED]} agree with the model ({profiles}), "
          f"{count[FAILED]} disagree, {count[NOT_APPLICABLE]} not covered, {count[ERROR]} errors, "
          f"{invalid} invalid files")
    return ExitCode.FAILED if bad or invalid else ExitCode.OK
