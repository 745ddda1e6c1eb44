"""`eventtime run PATH... --snapshot create|fix|all [--yes] [--snapshot-on-spark]`: the command line's
face of a snapshot (`eventtime.snapshot` observes, plans, reviews and writes). The scenarios run through
the one run loop of `execute` (its driver-death recovery, results file and signal handling), which hands
the results to `SnapshotReview` instead of to the verdicts."""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..exitcodes import ExitCode
from ..results import ERROR
from .execute import Ran, execute, unimportable

__all__ = ["add_options", "snapshot_run", "SnapshotReview"]


def add_options(parser: Any) -> None:
    """The options `eventtime run` takes for a snapshot (their rules: `eventtime.snapshot.OPTIONS`)."""
    from ..snapshot import MODES, OPTIONS

    parser.add_argument("--snapshot", choices=MODES, default=None,
                        help=f"{OPTIONS.mode} (docs/scenario-format.md, Snapshots)")
    parser.add_argument("--yes", action="store_true", help=f"with --snapshot: {OPTIONS.yes}")
    parser.add_argument("--snapshot-on-spark", action="store_true",
                        help=f"with --snapshot fix: {OPTIONS.on_spark}")


def snapshot_run(args: Any, files: Sequence[Path], project: Any, conf: Any) -> int:
    """Run the scenario files for a snapshot, then review and write them (`SnapshotReview`)."""
    from eventtime.scenarios import display_path

    from ..problems import FileInvalid
    from ..projectconfig import unbound_message
    from ..registry import ContractLookup
    from ..snapshot import load_scenario

    if not args.snapshot:
        flag = "--yes" if args.yes else "--snapshot-on-spark"
        print(f"eventtime: error: {flag} goes with --snapshot create|fix|all", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    # a snapshot records one run of the code as it is: a run across a change has two, and none is ignored
    crossing = [f for f, given in (("--previous", getattr(args, "previous", None)),
                                   ("--previous-ref", getattr(args, "previous_ref", None)),
                                   ("--previous-python", getattr(args, "previous_python", None))) if given]
    if crossing:
        print(f"eventtime: error: --snapshot does not go with {', '.join(crossing)}: a snapshot records one run "
              "of the code as it is; run across the change without --snapshot (docs/upgrade.md)", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    lookup = ContractLookup(project.contract_dirs)
    plan: list[tuple[Any, Path, str]] = []
    invalid, file_of = 0, {}
    for f in files:
        shown = display_path(f)
        try:
            sc = load_scenario(f, display_path=shown, contracts=lookup)  # a check without a value is a hole
        except FileInvalid as exc:
            invalid += 1
            print(exc, file=sys.stderr)
            continue
        targets = project.targets(sc, Path(f))
        if not targets:  # a file nobody's pipeline would run is no snapshot: it counts as invalid
            print(f"eventtime: error: {unbound_message(sc.contract, sc.path)}", file=sys.stderr)
            invalid += 1
            continue
        file_of[shown] = Path(f)
        plan += [(sc, Path(f), target) for target in targets]
    if not plan:
        print("eventtime: error: nothing ran: no scenario to snapshot (see above)", file=sys.stderr)
        return ExitCode.FAILED
    failed_import = unimportable(list(dict.fromkeys(target for _, _, target in plan)))
    if failed_import:
        return failed_import
    return execute(plan, args, conf, invalid, after=SnapshotReview(args, file_of, invalid, lookup))


@dataclass(frozen=True)
class SnapshotReview:
    """What a snapshot run does with the results the run loop hands it: the totals before the snapshot,
    then each file planned from its runs (a file with a run that erred, the driver's death included, or
    one that did not run, is not touched), the diffs shown and the files written as decided (`settle`).
    The run passes when it is settled, every file was valid and every pair ran."""

    args: Any
    file_of: dict[str, Path]  # a scenario's path as shown -> its file
    invalid: int
    contracts: Any
    # a snapshot shows diffs, not failures: what the scenarios print comes as it comes (as it always has)
    captures: bool = False

    def shows(self, result: Any) -> bool:
        return result.status == ERROR

    def finish(self, ran: Ran) -> int:
        from ..snapshot import Review, observe, plan, settle, terminal_prompt
        from ..textreport import totals, totals_line

        args, deaths = self.args, ran.recovery.deaths
        print(totals_line(totals(ran.results), self.invalid)
              + (f", {len(ran.not_run)} not run" if ran.not_run else "")
              + (f", {deaths} driver death{'s' if deaths != 1 else ''}" if deaths else "")
              + f" on Spark {ran.version} (before the snapshot)")
        if ran.not_run:
            print(f"{len(ran.not_run)} not run: {ran.recovery.gave_up}")
            for name, _file, impl in ran.not_run:
                print(f"  {name}  [{impl}]")
        observed: dict[str, list[Any]] = {}
        for r in ran.results:
            shown = r.scenario.path
            observed.setdefault(shown, []).append(
                observe(self.file_of[shown], shown, r, args.snapshot, on_spark=args.snapshot_on_spark))
        unfinished = Counter(shown for _name, shown, _impl in ran.not_run)
        plans = [plan(self.file_of[shown], shown, observed.get(shown, []), args.snapshot, contracts=self.contracts,
                      unfinished=unfinished[shown]) for shown in dict.fromkeys([*observed, *unfinished])]
        settled = settle(Review(plans, args.snapshot), ran.results, args.yes, terminal_prompt())
        return ExitCode.OK if settled and not self.invalid and not ran.not_run else ExitCode.FAILED
