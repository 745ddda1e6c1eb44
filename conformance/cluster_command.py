"""`eventtime cluster`: a standalone Spark cluster on this host for the length of a command (registered by the CLI)."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
from typing import Any, Sequence

__all__ = ["add_parser", "run", "expand_command", "PLACEHOLDER"]

from .exitcodes import ExitCode
PLACEHOLDER = "{master}"
ENV_VAR = "EVENTTIME_MASTER"


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "cluster", help="start a standalone Spark cluster (a master and workers) on this host, run a command "
                        "against it, stop it",
        description="Start Spark's standalone Master and WORKERS Workers from the installed pyspark, wait until "
                    f"the master lists them ALIVE, run COMMAND with {PLACEHOLDER} in its arguments (and "
                    f"${ENV_VAR} in its environment) set to the master URL, then stop them all. Without a "
                    "command, print the master URL and keep the cluster up until Ctrl-C.",
        epilog=f"example: eventtime cluster --workers 2 -- eventtime certify --contract dedup --master {PLACEHOLDER}")
    c.add_argument("--workers", type=_positive_int, default=2, help="number of workers (default 2)")
    c.add_argument("--host", default="127.0.0.1", help="address the master and workers bind to (default 127.0.0.1)")
    c.add_argument("--cores", type=_positive_int, default=1, help="cores each worker offers (default 1)")
    c.add_argument("--memory", default="1g", help="memory each worker offers, e.g. 1g, 1536m (default 1g)")
    c.add_argument("--timeout", type=float, default=120.0,
                   help="bound on each wait for the cluster to come up, seconds (default 120)")
    c.add_argument("--log-dir", metavar="DIR", default=None,
                   help="keep the master's and workers' logs here (default: a temporary directory, removed "
                        "unless something failed)")
    c.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run against it")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def expand_command(cmd: Sequence[str], master_url: str) -> list[str]:
    """The command with every {master} in its arguments replaced by `master_url`."""
    cmd = list(cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    return [arg.replace(PLACEHOLDER, master_url) for arg in cmd]


def run(args: argparse.Namespace) -> int:
    from eventtime.harness.cluster import ClusterError, StandaloneCluster

    try:
        cluster = StandaloneCluster(workers=args.workers, host=args.host, cores=args.cores, memory=args.memory,
                                    timeout=args.timeout, log_dir=args.log_dir)
    except ValueError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    cmd = expand_command(args.cmd, "")
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` stops the cluster like Ctrl-C does
    try:
        print(f"eventtime: starting a standalone cluster: master and {args.workers} worker(s) on {args.host}",
              file=sys.stderr, flush=True)
        with cluster:
            print(f"eventtime: cluster up: {cluster.master_url} (status {cluster.status_url}, logs "
                  f"{cluster.log_dir})", file=sys.stderr, flush=True)
            if not cmd:
                print(cluster.master_url, flush=True)
                print("eventtime: Ctrl-C stops it", file=sys.stderr, flush=True)
                threading.Event().wait()  # until interrupted
                return ExitCode.OK
            return _run_command(expand_command(args.cmd, cluster.master_url), cluster.master_url)
    except ClusterError as exc:
        print(f"eventtime: error: the cluster did not come up: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print("eventtime: interrupted; the cluster is stopped", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run_command(cmd: list[str], master_url: str, env: dict[str, str] | None = None) -> int:
    """Run `cmd` with `env` (default: $EVENTTIME_MASTER = `master_url`) added to this environment, less the
    Connect-mode variables PySpark may have left in it (`child_environment`)."""
    from eventtime.harness.cluster import child_environment

    env = {**child_environment(), **(env if env is not None else {ENV_VAR: master_url})}
    try:
        proc = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        print(f"eventtime: error: cannot run {cmd[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
