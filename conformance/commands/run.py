"""`eventtime run [PATH...]`: run scenarios on Spark against the pipelines the project and the command
line bind (`files.read_project`), print a verdict per scenario and the totals."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..exitcodes import ExitCode
from .options import allow_parent, but, conf_pairs, contracts_parent, pipelines_parent, results_parent, spark_parent

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    r = sub.add_parser("run", parents=[pipelines_parent(), spark_parent(), results_parent(), contracts_parent(),
                                       allow_parent()],
                       help="run scenarios on Spark and print a verdict per scenario")
    r.add_argument("paths", nargs="*", metavar="PATH",
                   help="scenario files or directories (default: in a project that binds pipelines or names "
                        "contract folders for pytest, its testpaths or its root; elsewhere the bundled suite)")
    r.add_argument("-q", "--quiet", action="store_true", help="print failures and the totals only")
    from ..teeth import add_cli_option

    add_cli_option(r)  # --teeth: could each check have failed? (docs/teeth.md)
    r.add_argument("-s", "--show-output", action="store_true",
                   help="print what the pipelines and jobs print as it comes (default: kept per scenario and shown "
                        "with a failing one only, as pytest does)")
    from .snapshot import add_options as add_snapshot_options

    add_snapshot_options(r)
    from ..previous import add_options

    add_options(r)  # --previous, --previous-ref: a run across a change (docs/upgrade.md)


def run(args: argparse.Namespace) -> int:
    from ..projectconfig import unbound_message
    from .execute import execute, unimportable
    from .files import allowed_unjudged, load_scenario_files, read_project, scenario_files

    conf = conf_pairs(args.spark_conf)
    if not args.paths:  # in a user's project: its own scenarios, as pytest would collect them
        from ..projectconfig import SettingsError, project_paths

        try:
            found = project_paths(Path.cwd())
        except SettingsError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return ExitCode.USAGE_ERROR
        if found is not None:
            args = but(args, paths=[os.path.relpath(p) for p in found])
            print(f"eventtime: no PATH given: the project's scenarios under {', '.join(args.paths)}", file=sys.stderr)
    files = scenario_files(args.paths)
    if files is None:
        return ExitCode.USAGE_ERROR
    project = read_project(args.paths, args.pipeline, args.contracts, args.timeout)
    if project is None:
        return ExitCode.USAGE_ERROR
    args = but(args, timeout=project.timeout)  # args.contracts stays the command line's: the re-run commands repeat it
    allowed = allowed_unjudged(args.allow_not_applicable, project.ini)
    if allowed is None:
        return ExitCode.USAGE_ERROR
    if args.teeth and (args.snapshot or args.yes or args.snapshot_on_spark):
        print("eventtime: error: --teeth judges the checks a run has; a snapshot writes them: run one, then the other",
              file=sys.stderr)
        return ExitCode.USAGE_ERROR
    if args.snapshot or args.yes or args.snapshot_on_spark:
        from .snapshot import snapshot_run

        return snapshot_run(args, files, project, conf)
    loaded, invalid = load_scenario_files(files, project.contract_dirs)
    plan: list[tuple[Any, Path, str]] = []
    unbound: dict[str, list[Any]] = {}
    for file, sc in loaded:
        targets = project.targets(sc, file)
        if not targets:
            unbound.setdefault(sc.contract.name, []).append(sc)
        plan += [(sc, file, target) for target in targets]
    for scenarios in unbound.values():  # never a green run that tested nobody's code
        more = f" (and {len(scenarios) - 1} more scenario file(s) of it)" if len(scenarios) > 1 else ""
        print(f"eventtime: error: {unbound_message(scenarios[0].contract, scenarios[0].path)}{more}", file=sys.stderr)
    failed_import = unimportable(list(dict.fromkeys(target for _, _, target in plan)))
    if failed_import:
        return failed_import
    from .crossings import run_across

    # --previous, --previous-ref, --previous-python: a run across a change (docs/upgrade.md)
    return run_across(args, [str(d) for d in project.contract_dirs], [t for _, _, t in plan], lambda crossings: execute(
        plan, args, conf, invalid, unbound=sum(map(len, unbound.values())), crossings=crossings, allowed=allowed))
