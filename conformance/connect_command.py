"""`eventtime connect-server`: a local Spark Connect server for the length of a command (registered by the CLI)."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from .cluster_command import _positive_int, _raise_interrupt, _run_command

__all__ = ["add_parser", "run", "PLACEHOLDER", "ENV_VAR"]

from .exitcodes import ExitCode
PLACEHOLDER = "{remote}"
ENV_VAR = "EVENTTIME_REMOTE"


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "connect-server", help="start a local Spark Connect server from the installed pyspark, run a command "
                               "against it, stop it",
        description="Start a Spark Connect server (Spark 4.x ships it with pyspark) on a loopback port, wait "
                    f"until it accepts connections, run COMMAND with {PLACEHOLDER} in its arguments (and "
                    f"${ENV_VAR} and $SPARK_REMOTE in its environment) set to its URL, sc://HOST:PORT, then "
                    "stop it whatever happened. Without a command, print the URL and keep the server up "
                    "until Ctrl-C.",
        epilog=f"example: eventtime connect-server -- eventtime certify --contract dedup --remote {PLACEHOLDER}")
    c.add_argument("--port", type=_port, default=None, help="port to listen on (default: a free one)")
    c.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    c.add_argument("--master", default="local[2]", help="the server's Spark master (default local[2])")
    c.add_argument("--timeout", type=float, default=120.0,
                   help="bound on the wait for the server to come up, seconds (default 120)")
    c.add_argument("--log-dir", metavar="DIR", default=None,
                   help="keep the server's log here (default: a temporary directory, removed unless something "
                        "failed)")
    c.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run against it")


def _port(text: str) -> int:
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (1-65535)")
    return value


def expand_command(cmd: list[str], url: str) -> list[str]:
    """The command with every {remote} in its arguments replaced by `url`."""
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    return [arg.replace(PLACEHOLDER, url) for arg in cmd]


def run(args: argparse.Namespace) -> int:
    from eventtime.harness.cluster import check_master
    from eventtime.harness.connect_server import ConnectServer, ConnectServerError

    try:
        check_master(args.master)
        server = ConnectServer(port=args.port, host=args.host, master=args.master, timeout=args.timeout,
                               log_dir=args.log_dir)
    except ValueError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    cmd = expand_command(list(args.cmd), "")
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` stops the server like Ctrl-C does
    try:
        print(f"eventtime: starting a Spark Connect server on {args.host} ({args.master})", file=sys.stderr,
              flush=True)
        with server:
            print(f"eventtime: Spark Connect server up: {server.url} (log {server.log_path})", file=sys.stderr,
                  flush=True)
            if not cmd:
                print(server.url, flush=True)
                print("eventtime: Ctrl-C stops it", file=sys.stderr, flush=True)
                threading.Event().wait()  # until interrupted
                return ExitCode.OK
            return _run_command(expand_command(list(args.cmd), server.url), server.url,
                                env={ENV_VAR: server.url, "SPARK_REMOTE": server.url})
    except ConnectServerError as exc:
        print(f"eventtime: error: the Spark Connect server did not come up: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print("eventtime: interrupted; the Spark Connect server is stopped", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
