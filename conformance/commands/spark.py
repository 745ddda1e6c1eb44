"""The signal handling of every command and the opening of a run's Spark session, in one place.

Signals: SIGTERM unwinds a command like Ctrl-C does (stop the running query, write the results) and
exits 143, Ctrl-C exits 130 (`guarded`). A run's session is opened from --master/--remote/SPARK_REMOTE
(`projectconfig.spark_target`): over Spark Connect, or a local driver JVM, started again after a death
(`start_session`, used by `execute` for a fresh session too)."""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Callable

from ..exitcodes import ExitCode

__all__ = ["Terminated", "STOP", "guarded", "remote_of", "open_session", "start_session", "NoDriver", "master_of",
           "jobs_of", "MAX_DEATHS"]

MAX_DEATHS = 3  # driver deaths in a row (no scenario completing in between) before a run gives up


class Terminated(BaseException):
    """SIGTERM arrived: unwinds the run like Ctrl-C does (a BaseException, so that no `except
    Exception` on the way turns it into a verdict), leaving the results written."""


# Why the run must stop, noted by the signal handlers before they raise: the exception a handler
# raises lands in whatever Python code runs at that moment, and some code swallows it (a py4j object's
# finalizer, where Python only prints "Exception ignored"; PySpark 3.x's type parsing, which answers any
# BaseException with its own error). The run loop checks the note after every result.
STOP: list[tuple[str, int]] = []


def guarded(command: Callable[[Any], int], args: Any) -> int:
    """`command(args)` with SIGTERM raising Terminated while it runs; Ctrl-C and SIGTERM that reach
    here are said and end it with their exit codes."""
    import signal

    STOP.clear()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if main_thread() else None
    try:
        return command(args)
    except KeyboardInterrupt:
        print("eventtime: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Terminated:
        print("eventtime: terminated", file=sys.stderr)
        return ExitCode.TERMINATED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def on_sigterm(signum: int, frame: Any) -> None:
    STOP.append(("terminated (SIGTERM)", ExitCode.TERMINATED))
    if not _in_py4j_finalizer(frame):
        raise Terminated()


def on_sigint(signum: int, frame: Any) -> None:
    STOP.append(("interrupted (Ctrl-C)", ExitCode.INTERRUPTED))
    if not _in_py4j_finalizer(frame):
        raise KeyboardInterrupt()


def _in_py4j_finalizer(frame: Any) -> bool:
    """Whether the signal came while py4j's finalizer of a Java object ran (a weakref callback):
    an exception raised there is printed with a traceback ("Exception ignored in ...") and lost, so
    the handler only notes the signal and the run stops after the pair it came in."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith("java_gateway.py") and (
                code.co_name.startswith("_garbage_collect") or (code.co_name == "<lambda>" and "wr" in code.co_varnames)):
            return True
        frame = frame.f_back
    return False


def own_sigint(spark: Any) -> Any:
    """Take Ctrl-C back from PySpark: its handler (installed with each SparkContext) cancels jobs
    through py4j from inside the signal handler, on the connection the interrupted call is using
    (py4j then fails with a reentrant call, and the interrupt became an error verdict while the run
    went on). `on_sigint` notes it and raises KeyboardInterrupt, which unwinds the run; the running
    query is stopped on the way out. Over Spark Connect too: Ctrl-C stops a run the same way on both,
    also when the command was started with SIGINT ignored (a background job of a script)."""
    import signal

    if main_thread():
        signal.signal(signal.SIGINT, on_sigint)
    return spark


def main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


# -- the session ------------------------------------------------------------------------------------------
def remote_of(args: Any) -> str | None:
    """The Connect URL to run on: --remote, else SPARK_REMOTE unless --master asks for a local JVM.
    A bad SPARK_REMOTE or --remote with --master is a usage error (ValueError with the message)."""
    from ..projectconfig import spark_target

    return spark_target(getattr(args, "master", None), getattr(args, "remote", None),
                        master_where="--master", remote_where="--remote")


def open_session(args: Any) -> tuple[Any, int]:
    """The session of `run`, `certify` and `watch`: (the session, OK), or (None, the exit code) with the
    reason printed. Over Spark Connect when a remote is given (serially: one query at a time, since the
    harness sets query settings on the one Connect session), else a local driver (`start_session`)."""
    from eventtime.harness.stream import HarnessError

    try:
        remote = remote_of(args)
        if remote is not None:
            from eventtime.harness.connect import connect_session
            from eventtime.harness.warm import OVER_CONNECT

            if warm_of(args):
                print(f"eventtime: {OVER_CONNECT}", file=sys.stderr)

            if getattr(args, "jobs", 1) != 1:  # `jobs_of`
                print(f"eventtime: over Spark Connect the pairs run one at a time (--jobs {args.jobs} ignored)",
                      file=sys.stderr)
            # the client has no driver JVM to lose; a local driver is started (and restarted after a death)
            spark = own_sigint(connect_session(remote, timeout=args.timeout))
        else:
            spark = start_session(args.master, warm=warm_of(args))
    except ValueError as exc:  # projectconfig.SettingsError among them
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None, ExitCode.USAGE_ERROR
    except HarnessError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None, ExitCode.FAILED
    return spark, ExitCode.OK if spark is not None else ExitCode.FAILED


def jobs_of(args: Any, spark: Any) -> int:
    """How many pairs run at once on `spark`: --jobs, but one at a time over Spark Connect (the harness
    sets query settings on the one Connect session; `open_session` says so)."""
    from eventtime.harness.compat import is_connect

    return 1 if is_connect(spark) else getattr(args, "jobs", 1)


class NoDriver(Exception):
    """No driver JVM could be started: each died while its session was created."""


def warm_of(args: Any) -> bool:
    """Whether the run attaches to a warm Spark: --warm/--cold, EVENTTIME_WARM, the ini key
    (`projectconfig.warm_wanted`; the settings file found from the working directory). A bad value
    is a usage error (ValueError)."""
    from ..projectconfig import WARM_KEY, find_ini, warm_wanted

    ini = find_ini(Path.cwd())
    return warm_wanted(getattr(args, "warm", None), ini.text(WARM_KEY) if ini else None,
                       ini.where(WARM_KEY) if ini else WARM_KEY)


def start_session(master: str | None, fresh: bool = False, warm: bool | None = None) -> Any:
    """The run's session (`fresh`: on a new JVM, the last one died); a JVM that dies while the
    session is created is said as any death is and another is started, up to MAX_DEATHS in a row.
    None when none could be started (the deaths have been printed)."""
    from eventtime.harness.driverdeath import discard_dead_session, launch_death
    from eventtime.harness.session import get_session

    for _ in range(MAX_DEATHS):
        try:
            if fresh:
                discard_dead_session()
            return own_sigint(get_session(master=master, warm=warm))
        except Exception as exc:
            death = launch_death(after=exc)
            if death is None:
                raise
            print(f"eventtime: {death.message('while its session was starting')}", file=sys.stderr, flush=True)
            fresh = True
    print(f"eventtime: error: the Spark driver died {MAX_DEATHS} times in a row while starting", file=sys.stderr)
    return None


def master_of(spark: Any) -> str:
    from eventtime.harness.compat import is_connect

    return "spark connect" if is_connect(spark) else spark.sparkContext.master
