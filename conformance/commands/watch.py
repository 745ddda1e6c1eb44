"""`eventtime watch PATH...`: run the scenarios, then re-run what a changed scenario, contract or
pipeline module affects, on one warm Spark session (the loop itself: `eventtime.watch.Watcher`)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..exitcodes import ExitCode
from .options import allow_parent, but, conf_pairs, contracts_parent, pipelines_parent, spark_parent

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    w = sub.add_parser("watch", parents=[
        pipelines_parent("; the modules of your code under the working directory are watched and reloaded"),
        spark_parent(), contracts_parent(), allow_parent()],
        help="run scenarios, then re-run what a changed scenario, contract or pipeline module affects, on one "
             "warm Spark session (Ctrl-C stops)")
    w.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories to watch")
    w.add_argument("--poll", type=float, default=0.2, metavar="SECONDS",
                   help="how often the files are looked at (default 0.2)")
    from ..previous import add_options

    add_options(w, binding_only=True)  # --previous: the edited version restarted from the previous one's checkpoint


def run(args: argparse.Namespace) -> int:
    from ..watch import Watcher
    from .crossings import across, crossings_of
    from .files import allowed_unjudged, read_project, rerun_command, scenario_files
    from .spark import open_session

    if args.poll <= 0:
        print("eventtime: error: --poll must be a positive number of seconds", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    if scenario_files(args.paths, what="to watch") is None:
        return ExitCode.USAGE_ERROR
    project = read_project(args.paths, args.pipeline, args.contracts, args.timeout)
    if project is None:
        return ExitCode.USAGE_ERROR
    args = but(args, timeout=project.timeout)
    allowed = allowed_unjudged(args.allow_not_applicable, project.ini)
    if allowed is None:
        return ExitCode.USAGE_ERROR
    conf = conf_pairs(args.spark_conf)
    crossings = crossings_of(args)  # --previous: a run across a change (docs/upgrade.md)
    if crossings is None:
        return ExitCode.USAGE_ERROR
    session, code = open_session(args)  # as run opens it: --remote, SPARK_REMOTE or a local Spark
    if session is None:
        return code
    go = across(crossings)

    def run_one(scenario: Any, target: Any) -> Any:
        rerun = rerun_command(scenario, None, target if isinstance(target, str) else str(project.pipeline), args)
        return go(scenario, target, session=session, timeout=args.timeout, conf=conf, rerun=rerun)

    watcher = Watcher(args.paths, pipeline=project.pipeline, contract_dirs=project.contract_dirs, run=run_one,
                      say=lambda text: print(text, flush=True), root=Path(os.getcwd()),
                      targets=None if project.pipeline else project.targets, allowed=allowed)
    try:
        watcher.first_round()
        watcher.loop(args.poll)
    except KeyboardInterrupt:
        print("eventtime: stopped watching", flush=True)
    return ExitCode.OK
