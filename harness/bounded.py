"""A blocking call waited for with a bound: the harness's one way of bounding a call that has none of its
own (Spark Connect's `processAllAvailable`, a pipeline update's stream of events, a Connect server that
does not answer: a client retries for minutes). The call runs on a daemon thread; past the bound the
caller gets `HarnessTimeout` saying what it waited for, and the thread is left to end on its own (what
can stop it, such as interrupting the session's operations, is the caller's `on_timeout`)."""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

from .stream import HarnessTimeout

__all__ = ["bounded_call"]

T = TypeVar("T")


def bounded_call(fn: Callable[[], T], timeout: float, what: str | Callable[[], str], *, name: str,
                 on_timeout: Callable[[], object] | None = None) -> T:
    """`fn()` on a daemon thread named `name`, waited for at most `timeout` seconds: its value, or the
    exception it raised, raised here. Past the bound `on_timeout()` is called, then
    HarnessTimeout("timed out after {timeout}s waiting for {what}") is raised (`what` may be a callable
    giving the words then, such as the last events seen)."""
    done = threading.Event()
    result: list[T] = []
    error: list[BaseException] = []

    def call() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # noqa: BLE001 - rethrown in the caller's thread
            error.append(exc)
        finally:
            done.set()

    threading.Thread(target=call, name=name, daemon=True).start()
    if not done.wait(timeout):
        if on_timeout is not None:
            on_timeout()
        raise HarnessTimeout(f"timed out after {timeout:g}s waiting for {what() if callable(what) else what}")
    if error:
        raise error[0]
    return result[0]
