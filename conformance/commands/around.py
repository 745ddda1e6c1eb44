"""What `eventtime cluster` and `eventtime connect-server` share: a Spark service started for the length
of a command (the command's placeholder replaced by the service's URL), or until Ctrl-C without one;
SIGTERM stops it as Ctrl-C does; the service is stopped whatever happened."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
from typing import Any, Callable, ContextManager, Sequence

from ..exitcodes import ExitCode

__all__ = ["service_parser", "service_arguments", "expand", "serve", "run_command"]


def service_parser(sub: Any, name: str, *, what: str, description: str, example: str) -> argparse.ArgumentParser:
    """The subcommand `name` that starts `what` around a command."""
    return sub.add_parser(name, help=f"start {what}, run a command against it, stop it", description=description,
                          epilog=f"example: {example}")


def service_arguments(parser: argparse.ArgumentParser, *, timeout_help: str, log_help: str) -> None:
    """--host, --timeout, --log-dir and the command after `--`."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen and bind to (default 127.0.0.1)")
    parser.add_argument("--timeout", type=float, default=120.0, help=f"{timeout_help}, seconds (default 120)")
    parser.add_argument("--log-dir", metavar="DIR", default=None,
                        help=f"{log_help} (default: a temporary directory, removed unless something failed)")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run against it")


def expand(cmd: Sequence[str], placeholder: str, url: str) -> list[str]:
    """The command (less a leading `--`) with every `placeholder` in its arguments replaced by `url`."""
    cmd = list(cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    return [arg.replace(placeholder, url) for arg in cmd]


def serve(make: Callable[[], ContextManager[Any]], *, what: str, starting: str, up: Callable[[Any], str],
          url: Callable[[Any], str], cmd: Sequence[str], placeholder: str, env: Callable[[str], dict[str, str]],
          error: type[Exception]) -> int:
    """Start the service `make()` makes (`what` names it in messages; a ValueError from `make` is a usage
    error), run `cmd` against it with `env(its url)` added to its environment, stop it; without a
    command, print its URL and keep it until Ctrl-C. `error` is what it raises when it does not come up."""
    try:
        service = make()
    except ValueError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)  # `kill` stops the service like Ctrl-C does
    try:
        print(f"eventtime: starting {starting}", file=sys.stderr, flush=True)
        with service:
            print(f"eventtime: {up(service)}", file=sys.stderr, flush=True)
            if not expand(cmd, placeholder, ""):
                print(url(service), flush=True)
                print("eventtime: Ctrl-C stops it", file=sys.stderr, flush=True)
                threading.Event().wait()  # until interrupted
                return ExitCode.OK
            return run_command(expand(cmd, placeholder, url(service)), env(url(service)))
    except error as exc:
        print(f"eventtime: error: {what} did not come up: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print(f"eventtime: interrupted; {what} is stopped", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run_command(cmd: list[str], env: dict[str, str]) -> int:
    """Run `cmd` with `env` added to this environment, less the Connect-mode variables PySpark may have
    left in it (`child_environment`); Ctrl-C terminates it (killed after 30 s) and goes on up."""
    from eventtime.harness.cluster import child_environment

    try:
        proc = subprocess.Popen(cmd, env={**child_environment(), **env})
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
