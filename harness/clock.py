"""A processing-time clock the harness steps by hand: the JVM's trigger loop parks in it between triggers.

It implements `org.apache.spark.util.Clock` in Python through py4j's callback server. Spark's
ProcessingTimeExecutor calls `waitTillTime(next trigger)` after every trigger; here that call
blocks until the harness grants one more trigger, so the harness *knows* when the stream thread
is idle (no polling), decides exactly when each micro-batch runs, and moves time only when told.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

__all__ = ["SteppedClock", "ClockWaitTimeout"]


class ClockWaitTimeout(Exception):
    """The stream thread did not come back to the clock within the bound."""


class SteppedClock:
    """Processing time in epoch milliseconds, advanced only by `advance`; triggers only by `grant`."""

    def __init__(self, start_ms: int, *, trigger_ms: int | None = None):
        self._now = int(start_ms)
        self._trigger_ms = trigger_ms
        self._cv = threading.Condition()
        self._permits = 0
        self._parks = 0  # how many times the stream thread has come to wait
        self._target: int | None = None  # what it waits for, while it waits
        self._free = False  # once freed (before stop), every wait returns at once

    # -- org.apache.spark.util.Clock, called from the JVM -----------------------------------------
    def getTimeMillis(self) -> int:  # noqa: N802 - Java interface
        return self._now

    def nanoTime(self) -> int:  # noqa: N802
        return self._now * 1_000_000

    def waitTillTime(self, targetTime: int) -> int:  # noqa: N802,N803
        with self._cv:
            self._parks += 1
            self._target = int(targetTime)
            self._cv.notify_all()
            while not self._free and self._permits == 0:
                self._cv.wait()
            if self._permits:
                self._permits -= 1
            self._target = None
            return self._now

    class Java:
        implements = ["org.apache.spark.util.Clock"]

    # -- the harness's side ---------------------------------------------------------------------
    @property
    def now_ms(self) -> int:
        return self._now

    @property
    def parks(self) -> int:
        with self._cv:
            return self._parks

    def advance(self, ms: int) -> bool:
        """Move time forward; True if a processing-time trigger has become due for the parked thread."""
        with self._cv:
            self._now += int(ms)
            return (self._trigger_ms is not None and self._target is not None
                    and self._target <= self._now)

    def grant(self) -> int:
        """Let the parked stream thread run one trigger; returns the park count to wait past."""
        with self._cv:
            seen = self._parks
            self._permits += 1
            self._cv.notify_all()
            return seen

    def wait_parked(self, after: int, timeout: float, alive: Callable[[], bool],
                    what: str) -> None:
        """Block until the stream thread parks again (park count > `after`).

        Waits in slices so that a query that died (`alive()` false) ends the wait at once instead of
        running into the timeout; raises ClockWaitTimeout naming `what` when the bound passes.
        """
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._parks <= after:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ClockWaitTimeout(f"timed out after {timeout:g}s waiting for {what}")
                self._cv.wait(timeout=min(remaining, 0.05))
                if self._parks > after:
                    break
                self._cv.release()
                try:
                    still = alive()
                finally:
                    self._cv.acquire()
                if not still and self._parks <= after:
                    return  # the caller finds out why from the query

    def free(self) -> None:
        """Stop blocking: lets a query be stopped even while its thread sits in `waitTillTime`."""
        with self._cv:
            self._free = True
            self._cv.notify_all()
