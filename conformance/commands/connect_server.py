"""Start a Spark Connect server (Spark 4.x ships it with pyspark) on a loopback port, wait until it
accepts connections, run COMMAND with {remote} in its arguments (and $EVENTTIME_REMOTE and
$SPARK_REMOTE in its environment) set to its URL, sc://HOST:PORT, then stop it whatever happened.
Without a command, print the URL and keep the server up until Ctrl-C."""
from __future__ import annotations

import argparse
from typing import Any

from .around import serve, service_arguments, service_parser
from .options import positive_int

__all__ = ["add_parser", "run", "PLACEHOLDER", "ENV_VAR"]

PLACEHOLDER = "{remote}"
ENV_VAR = "EVENTTIME_REMOTE"


def _port(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (1-65535)")
    return value


def add_parser(sub: Any) -> None:
    c = service_parser(
        sub, "connect-server", what="a local Spark Connect server from the installed pyspark",
        description=__doc__,
        example=f"eventtime connect-server -- eventtime certify --contract dedup --remote {PLACEHOLDER}")
    c.add_argument("--port", type=_port, default=None, help="port to listen on (default: a free one)")
    c.add_argument("--master", default="local[2]", help="the server's Spark master (default local[2])")
    service_arguments(c, timeout_help="bound on the wait for the server to come up",
                      log_help="keep the server's log here")


def run(args: argparse.Namespace) -> int:
    from eventtime.harness.connect_server import ConnectServer, ConnectServerError

    def make() -> ConnectServer:
        from eventtime.harness.cluster import check_master

        check_master(args.master)  # a MasterURLError is a ValueError: a usage error
        return ConnectServer(port=args.port, host=args.host, master=args.master, timeout=args.timeout,
                             log_dir=args.log_dir)

    return serve(make, what="the Spark Connect server", error=ConnectServerError, cmd=args.cmd,
                 placeholder=PLACEHOLDER, starting=f"a Spark Connect server on {args.host} ({args.master})",
                 up=lambda server: f"Spark Connect server up: {server.url} (log {server.log_path})",
                 url=lambda server: server.url, env=lambda url: {ENV_VAR: url, "SPARK_REMOTE": url})
