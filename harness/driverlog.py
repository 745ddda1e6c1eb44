"""The driver JVM's own output (log4j, the JVM's warnings, Python workers' stderr), kept in a file.

A JVM launched by PySpark inherits the launching process's stdout and stderr. In a test run those are
the test framework's capture of whichever test happens to be running, so Spark's start-up lines and
warnings land in the captured output of unrelated tests, and in a terminal they bury the verdicts.
The harness launches its driver with both pointed at one log file instead; a caller that wants the
part of the log a scenario caused takes a `mark()` before it and reads `since(mark)` after it fails.

`EVENTTIME_DRIVER_LOG=PATH` chooses the file (kept); by default it is a file of this process in the
temporary directory, removed when the process exits unless its path was shown (`keep()`).
`EVENTTIME_DRIVER_LOG=-` leaves the JVM's output where it would go without the harness (the
terminal, or the test framework's capture).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import tempfile
from typing import Iterator

__all__ = ["DriverLog", "driver_log", "jvm_output_to_log", "python_loggers_to_log", "ENV"]

ENV = "EVENTTIME_DRIVER_LOG"

_CURRENT: "DriverLog | None" = None

# a Java stack trace's frames (`\tat org.apache...`, `\t... 42 more`): the messages and `Caused by:`
# lines around them say what went wrong, the frames only where, inside Spark
# PySpark 4's loggers that repeat, as a JSON line on stderr, the analysis error the caller is raised
# anyway (`PySparkException._log_exception`): driver output like the JVM's, so it goes to the same file
_PYSPARK_ERROR_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")

_JVM_FRAME = re.compile(r"^\s+(at [\w$.<>/]+\(.*\)|\.\.\. \d+ (more|common frames omitted))\s*$")


class DriverLog:
    """A log file the driver JVM writes to: marks are byte offsets, so a reader sees only what was
    written after its mark, whatever else the JVM wrote before."""

    def __init__(self, path: str, *, temporary: bool = False):
        self.path = path
        self.temporary = temporary  # removed when this process exits, unless kept

    def keep(self) -> str:
        """Keep the file after this process exits (its path was shown to someone); returns the path."""
        self.temporary = False
        return self.path

    def _remove_if_temporary(self) -> None:
        if self.temporary:
            with contextlib.suppress(OSError):
                os.remove(self.path)

    def mark(self) -> int:
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0

    def since(self, mark: int, limit: int = 80) -> list[str]:
        """The lines written after `mark` but Java stack frames, at most the last `limit` of them (a
        first line saying how many were left out)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(mark)
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        lines = [line for line in text.splitlines() if line.strip() and not _JVM_FRAME.match(line)]
        if len(lines) > limit:
            return [f"... {len(lines) - limit} earlier lines in {self.path}"] + lines[-limit:]
        return lines

    def tail(self, limit: int = 20) -> list[str]:
        return self.since(0, limit)


def driver_log() -> DriverLog | None:
    """The log of the driver JVM this process launched through the harness; None when the JVM's
    output was left where it was (`EVENTTIME_DRIVER_LOG=-`, or a session the harness did not launch)."""
    return _CURRENT


def _log_path() -> tuple[str, bool] | None:
    """Where the driver's output goes, and whether the file is this process's own (temporary)."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen == "-":
        return None
    if chosen:
        return os.path.abspath(chosen), False
    return os.path.join(tempfile.gettempdir(), f"eventtime-driver-{os.getpid()}.log"), True


@contextlib.contextmanager
def jvm_output_to_log() -> Iterator[DriverLog | None]:
    """While the body launches a JVM, this process's stdout and stderr (file descriptors 1 and 2, which
    a child inherits) point at the driver log; Python's own streams are flushed first and restored
    after. Yields the log (None when the output is left alone). A log that cannot be opened leaves
    the output alone too: the JVM's lines on the terminal are better than no session."""
    global _CURRENT
    chosen = _log_path()
    if chosen is None:
        yield None
        return
    path, temporary = chosen
    try:
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        yield None
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        _CURRENT = DriverLog(path, temporary=temporary)
        if temporary:
            atexit.register(_CURRENT._remove_if_temporary)
        yield _CURRENT
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def python_loggers_to_log(log: DriverLog | None) -> None:
    """Point PySpark's own error-echo loggers (`_PYSPARK_ERROR_LOGGERS`) at the driver log instead of
    stderr. PySpark creates them on first use with a stderr handler and `propagate = False`; a logger
    that already has a handler of its own is left alone (the user configured it). No-op without a log
    or on a PySpark that has no such loggers (3.x)."""
    if log is None:
        return
    try:
        from pyspark.logger import PySparkLogger  # PySpark 4+
    except ImportError:
        return
    import logging

    for name in _PYSPARK_ERROR_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        ours = [h for h in logger.handlers if getattr(h, "eventtime_driver_log", False)]
        if ours or any(type(h) is not logging.StreamHandler for h in logger.handlers):
            continue
        for handler in list(logger.handlers):  # the stderr handler PySpark added
            logger.removeHandler(handler)
        handler = logging.FileHandler(log.path, delay=True, encoding="utf-8")
        handler.eventtime_driver_log = True  # type: ignore[attr-defined]
        logger.addHandler(handler)  # PySparkLogger.addHandler sets its JSON formatter
        logger.propagate = False
