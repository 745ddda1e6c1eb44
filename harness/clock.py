"""A processing-time clock the harness steps by hand: the JVM's trigger loop parks in it between triggers.

It implements `org.apache.spark.util.Clock` in Python through py4j's callback server. Spark's
ProcessingTimeExecutor calls `waitTillTime(next trigger)` after every trigger; here that call
blocks until the harness grants one more trigger, so the harness *knows* when the stream thread
is idle (no polling), decides exactly when each micro-batch runs, and moves time only when told.
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable

from .errors import EventtimeError

__all__ = ["SteppedClock", "ClockWaitTimeout"]


class ClockWaitTimeout(EventtimeError):
    """The stream thread did not come back to the clock within the bound."""


class SteppedClock:
    """Processing time in epoch milliseconds, advanced only by `advance`; triggers only by `grant`."""

    def __init__(self, start_ms: int, *, trigger_ms: int | None = None,
                 current_connection: Callable[[], Any] | None = None):
        self._now = int(start_ms)
        # py4j's pinned-thread mode serves each JVM thread that calls back into Python on a
        # connection of its own, and never closes the connection of a thread that ended: one
        # socket and one Python thread per query start, for as long as the process lives. The
        # clock notes the connections its callbacks came on so the harness can close them once
        # the stream thread is gone.
        self._current_connection = current_connection
        self._connections: list[Any] = []
        self._trigger_ms = trigger_ms
        self._cv = threading.Condition()
        self._permits = 0
        self._parks = 0  # how many times the stream thread has come to wait
        self._target: int | None = None  # what it waits for, while it waits
        self._free = False  # once freed (before stop), every wait returns at once
        # The JVM object Spark is given instead of this one, when it could be made
        # (`jvmclasses.ClockFront`): it answers `getTimeMillis` and `nanoTime` in the JVM from the time it
        # is told here, and calls `waitTillTime` here.
        self._front: Any = None

    # -- org.apache.spark.util.Clock, called from the JVM -----------------------------------------
    def getTimeMillis(self) -> int:  # noqa: N802 - Java interface
        self._note_connection()
        return self._now

    def nanoTime(self) -> int:  # noqa: N802
        self._note_connection()
        return self._now * 1_000_000

    def waitTillTime(self, targetTime: int) -> int:  # noqa: N802,N803
        self._note_connection()
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

    def attach_front(self, front: Any) -> None:
        """Tell `front` (a JVM `ClockFront` over this clock) the time whenever it moves."""
        self._front = front

    def advance(self, ms: int) -> bool:
        """Move time forward; True if a processing-time trigger has become due for the parked thread."""
        with self._cv:
            self._now += int(ms)
            now = self._now
            due = self._trigger_ms is not None and self._target is not None and self._target <= now
        if self._front is not None:  # outside the lock: the stream thread's callbacks take it
            self._front.setTime(now)
        return due

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

    def _note_connection(self) -> None:
        if self._current_connection is None:
            return
        try:
            connection = self._current_connection()
        except Exception:  # noqa: BLE001 - only bookkeeping; a callback must never fail on it
            return
        if connection is not None:
            with self._cv:
                if all(c is not connection for c in self._connections):
                    self._connections.append(connection)

    def close_connections(self) -> list[int]:
        """Close the py4j connections this clock's callbacks came on; returns the JVM-side port of
        each (the JVM keeps its end too, see `SparkCompat.release_callback_connections`).

        Only once the JVM threads that called it have ended (the query stopped or died): a
        connection belongs to one JVM thread, which would otherwise open a new one on its next call.
        """
        with self._cv:
            connections, self._connections = self._connections, []
        ports = []
        for connection in connections:
            sock = getattr(connection, "socket", None)
            if sock is None:
                continue
            try:
                ports.append(sock.getpeername()[1])
            except OSError:  # already closed by the other side
                pass
            try:
                # Shut the socket down, do not close the connection: its own thread sits in a
                # readline on it, and closing the buffered stream under that read deadlocks on
                # the stream's lock. After a shutdown the read returns end-of-file and the
                # connection's thread closes it and ends.
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by the other side
                pass
        return ports

    def free(self) -> None:
        """Stop blocking: lets a query be stopped even while its thread sits in `waitTillTime`."""
        with self._cv:
            self._free = True
            self._cv.notify_all()
