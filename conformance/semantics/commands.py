"""The model's commands: `eventtime check-model [PATH...]` and `eventtime expect SCENARIO` (registered by the CLI)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["add_parsers", "run", "expectations_yaml"]

from ..exitcodes import ExitCode


def add_parsers(sub: Any) -> None:
    """Register `check-model` and `expect` on the CLI's subparsers."""
    from .simulate import PROFILES

    c = sub.add_parser("check-model", help="check the scenarios' expectations against the executable model "
                                           "of event-time semantics (no Spark needed)")
    c.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or directories (default: the bundled suite)")
    c.add_argument("--profile", choices=PROFILES, default=None,
                   help="the model's profile (default: each scenario's own `profile`, spark unless it says)")
    c.add_argument("-q", "--quiet", action="store_true", help="print disagreements and the totals only")
    c.add_argument("--contracts", action="append", default=[], metavar="DIR",
                   help="a folder of *.contract.yaml files, besides those beside or above each scenario (repeatable)")

    e = sub.add_parser("expect", help="print what the model computes for each expect step of a scenario")
    e.add_argument("scenario", metavar="SCENARIO", help="a scenario file")
    e.add_argument("--profile", choices=PROFILES, default=None,
                   help="the model's profile (default: the scenario's own `profile`, spark unless it says)")
    e.add_argument("--contracts", action="append", default=[], metavar="DIR",
                   help="a folder of *.contract.yaml files, besides those beside or above the scenario (repeatable)")
    e.add_argument("--write", action="store_true",
                   help="write the model's values into the file's expect steps in place (comments and "
                        "formatting elsewhere are kept); the result must agree with check-model")


def run(args: argparse.Namespace) -> int:
    if args.command == "check-model":
        return _check_model(args.paths, args.profile, args.quiet, args.contracts)
    return _expect(args.scenario, args.profile, args.write, args.contracts)


def _check_model(paths: Sequence[str], profile: str | None, quiet: bool, contract_dirs: Sequence[str] = ()) -> int:
    from ..cli_files import load_scenarios, scenario_files
    from ..results import ERROR, FAILED, NOT_APPLICABLE, PASSED
    from ..textreport import describe_failure
    from .check import check_scenario

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
    bad = [r for r in results if r.status in (FAILED, ERROR)]
    for r in bad:
        print()
        print(describe_failure(r))
    count = {s: sum(r.status == s for r in results) for s in label}
    print()
    profiles = " and ".join(sorted(used)) + (" profiles" if len(used) > 1 else " profile") if used else "spark profile"
    print(f"{len(results)} scenarios: {count[PASSED]} agree with the model ({profiles}), "
          f"{count[FAILED]} disagree, {count[NOT_APPLICABLE]} not covered, {count[ERROR]} errors, "
          f"{invalid} invalid files")
    return ExitCode.FAILED if bad or invalid else ExitCode.OK


def _expect(path: str, profile: str | None, write: bool = False, contract_dirs: Sequence[str] = ()) -> int:
    from eventtime.scenarios import display_path

    from ..loader import ScenarioInvalid, load_scenario
    from ..registry import ContractLookup
    from .simulate import ModelError, NotCovered, simulate

    if not Path(path).is_file():
        print(f"eventtime: error: no such file: {path}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        sc = load_scenario(path, display_path=display_path(path), contracts=ContractLookup(contract_dirs))
    except ScenarioInvalid as exc:
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
    from ..loader import ScenarioInvalid, load_scenario_text
    from ..textreport import describe_failure
    from .check import check_scenario
    from .fill import WriteError, write_expectations

    with open(path, encoding="utf-8", newline="") as fh:
        old = fh.read()
    try:
        new = write_expectations(sim, old)
    except WriteError as exc:
        print(f"eventtime: cannot write the expectations of {sim.scenario.path}: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    try:
        written = load_scenario_text(new, path=sim.scenario.path)
    except ScenarioInvalid as exc:  # a bug of the writer, never a file half-written
        print(f"eventtime: the expectations written into {sim.scenario.path} would not load; file left unchanged:\n"
              f"{exc}", file=sys.stderr)
        return ExitCode.FAILED
    check = check_scenario(written, sim.profile)
    if check.status != "passed":
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


# -- rendering the model's observations as scenario `expect` steps --------------------------------------

def expectations_yaml(sim: Any) -> str:
    """Every `expect` step of the simulated scenario, filled with what the model observed there:
    rows (or the whole table in complete mode), watermark, dropped, state rows, event-time
    statistics and the batches, one YAML block per step, headed by its file:line."""
    from .fill import checks_block, model_checks

    sc = sim.scenario
    out = [f"# {sc.path}: what the model ({sim.profile} profile) observes at each expect step", ""]
    for step, since_expect, history in sim.observed_by_expects():
        lines = [f"# {sc.path}:{step.where.line}", "  - expect:"] + checks_block(model_checks(sc, since_expect, history), 6)
        out += lines + [""]
    return "\n".join(out)
