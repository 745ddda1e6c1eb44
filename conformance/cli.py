"""The `eventtime` command: the entry point and the table of subcommands (each a module of
`eventtime.commands`: its parser and `run(args) -> int`). Exit status: `exitcodes.ExitCode`, 0 ok,
1 failures, 2 usage, 5 nothing ran, 130 Ctrl-C, 143 SIGTERM, 141 when the reader of its output went
away, e.g. `| head`; `run` and `certify` write their results file before either of 130 and 143."""
from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
import time
from types import ModuleType
from typing import NoReturn, Sequence

from .commands import (certify, check_model, check_properties, cluster, connect_server, expect, listing, profiles,
                       report, run, validate, warm, watch)
from .commands.options import Options, Parser
from .commands.spark import guarded
from .exitcodes import ExitCode

__all__ = ["console_main", "main", "COMMANDS"]

# each subcommand's name -> its module, in the order `eventtime --help` lists them
COMMANDS: dict[str, ModuleType] = {
    "validate": validate, "run": run, "watch": watch, "certify": certify, "report": report, "list": listing,
    "check-model": check_model, "expect": expect, "compare-profiles": profiles, "cluster": cluster, "connect-server": connect_server,
    "warm": warm, "check-properties": check_properties,
}


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="eventtime", description="Deterministic event-time scenarios for Spark Structured Streaming.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = Options.of(_parser().parse_args(argv))  # read once, never written
    return guarded(COMMANDS[args.command].run, args)


def console_main() -> NoReturn:
    """The `eventtime` console script: `main`, then the process ends without the interpreter's
    teardown. What an exit must do is done first, in the order the interpreter does it: threading's
    own exit callbacks run (they wake the workers of every `concurrent.futures` pool, e.g. the Spark
    Connect client's), non-daemon threads are waited for, the exit handlers run (the harness's own:
    temporary folders, a cluster session's stop; a Connect client's; logging's flush) and the standard
    streams are flushed. Unlike the interpreter, the wait for threads is bounded (THREAD_WAIT seconds,
    once before the exit handlers and once after them, for a thread a handler releases): a library's
    thread that never ends must not keep a finished command alive (a Connect run sat idle for minutes
    that way). What is skipped is freeing every imported module and py4j proxy one by one (0.3 s after
    a run: BENCHMARKS.md "The end of a run"), for a JVM that exits by itself when this process's end
    closes its standard input."""
    try:
        code = main()
    except BrokenPipeError:  # the output's reader went away (`eventtime run ... | head`): end as a shell
        code = ExitCode.OUTPUT_GONE  # tool ends on SIGPIPE, without a traceback
    _threading_exit()
    left = _join_threads(THREAD_WAIT)
    atexit._run_exitfuncs()  # noqa: SLF001 - the interpreter's own exit step, run where it would run
    if left:
        left = _join_threads(THREAD_WAIT)
    if left:
        print(f"eventtime: ending with {len(left)} thread(s) still running after {2 * THREAD_WAIT:.0f}s of "
              f"waiting for them: {', '.join(t.name for t in left)}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # what is left in the buffer has no reader
            code = ExitCode.OUTPUT_GONE
        except (OSError, ValueError):  # e.g. a stream already closed
            code = code or 120  # what the interpreter returns when its final flush fails
    os._exit(code)


THREAD_WAIT = 10.0  # seconds console_main waits for non-daemon threads, before and again after the exit handlers


def _threading_exit() -> None:
    """threading's exit callbacks (`threading._register_atexit`), which the interpreter runs before it
    joins the threads: `concurrent.futures` registers the shutdown of its pools there, without which
    their idle workers wait on their queues for ever. Found by feature detection; where a Python has
    no such list, the bounded join covers it."""
    for call in reversed(list(getattr(threading, "_threading_atexits", ()))):
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - a library's callback must not stop the exit
            print(f"eventtime: a thread exit callback failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _join_threads(seconds: float) -> list[threading.Thread]:
    """Wait at most `seconds` in all for the non-daemon threads to end; those still running."""
    deadline = time.monotonic() + seconds
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
