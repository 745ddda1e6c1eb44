"""`eventtime warm status|stop`: the warm Spark daemons of this user (docs/warm.md). A run attaches to
one with `--warm` (`eventtime run/certify/watch`), `--eventtime-warm` (pytest), EVENTTIME_WARM=1 or the
ini key eventtime_warm = true; each daemon ends by itself after its idle time."""
from __future__ import annotations

import argparse
import os
import time
from typing import Any

from ..exitcodes import ExitCode

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    w = sub.add_parser("warm", help="show or stop the warm Spark daemons that runs attach to (--warm)",
                       description=__doc__)
    w.add_argument("action", choices=["status", "stop"], help="status: list them; stop: end them")
    w.add_argument("--here", action="store_true",
                   help="only the daemons of runs started in this folder (a daemon is per working directory)")


def run(args: argparse.Namespace) -> int:
    from eventtime.harness.warm import daemons, stop_daemon, warm_dir

    here = os.path.realpath(os.getcwd())
    found = [d for d in daemons() if not args.here or os.path.realpath(d.cwd) == here]
    if not found:
        print(f"no warm Spark running{' for this folder' if args.here else ''} ({warm_dir()})")
        return ExitCode.OK
    for daemon in found:
        if args.action == "stop":
            print(f"{daemon.key} pid {daemon.pid} ({daemon.cwd}): {stop_daemon(daemon)}")
            continue
        answer = daemon.answer
        if answer is None:
            how = "does not answer (the next run replaces it)"
        elif answer.get("retiring"):
            how = f"retiring: {answer['retiring']}"
        elif answer.get("clients"):
            how = f"{answer['clients']} run(s) attached"
        else:
            limit = answer.get("idle_limit_s")
            how = f"idle for {answer.get('idle_s', 0):.0f} s" + (f" (ends at {limit:.0f} s)" if limit else "")
        served = answer.get("served", 0) if answer else 0
        age = time.time() - daemon.started
        print(f"{daemon.key} pid {daemon.pid} Spark {daemon.spark} up {age / 60:.0f} min, {served} run(s) served, "
              f"{how}\n    for runs in {daemon.cwd}")
    return ExitCode.OK
