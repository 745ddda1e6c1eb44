"""Start Spark's standalone Master and WORKERS Workers from the installed pyspark, wait until the master
lists them ALIVE, run COMMAND with {master} in its arguments (and $EVENTTIME_MASTER in its environment)
set to the master URL, then stop them all. Without a command, print the master URL and keep the
cluster up until Ctrl-C."""
from __future__ import annotations

import argparse
from typing import Any

from .around import serve, service_arguments, service_parser
from .options import positive_int

__all__ = ["add_parser", "run", "PLACEHOLDER", "ENV_VAR"]

PLACEHOLDER = "{master}"
ENV_VAR = "EVENTTIME_MASTER"


def add_parser(sub: Any) -> None:
    c = service_parser(
        sub, "cluster", what="a standalone Spark cluster (a master and workers) on this host",
        description=__doc__,
        example=f"eventtime cluster --workers 2 -- eventtime certify --contract dedup --master {PLACEHOLDER}")
    c.add_argument("--workers", type=positive_int, default=2, help="number of workers (default 2)")
    c.add_argument("--cores", type=positive_int, default=1, help="cores each worker offers (default 1)")
    c.add_argument("--memory", default="1g", help="memory each worker offers, e.g. 1g, 1536m (default 1g)")
    service_arguments(c, timeout_help="bound on each wait for the cluster to come up",
                      log_help="keep the master's and workers' logs here")


def run(args: argparse.Namespace) -> int:
    from eventtime.harness.cluster import ClusterError, StandaloneCluster

    return serve(lambda: StandaloneCluster(workers=args.workers, host=args.host, cores=args.cores, memory=args.memory,
                                           timeout=args.timeout, log_dir=args.log_dir),
                 what="the cluster", error=ClusterError, cmd=args.cmd, placeholder=PLACEHOLDER,
                 starting=f"a standalone cluster: master and {args.workers} worker(s) on {args.host}",
                 up=lambda c: f"cluster up: {c.master_url} (status {c.status_url}, logs {c.log_dir})",
                 url=lambda c: c.master_url, env=lambda url: {ENV_VAR: url})
