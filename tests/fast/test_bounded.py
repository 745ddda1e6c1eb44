"""harness.bounded.bounded_call, the harness's one bounded wait on a call that has no bound of its own
(a Connect call, a pipeline update, a Connect server's first answer): its value, its error raised in the
caller's thread, and past the bound a HarnessTimeout saying what it waited for (no timing decides: a
bound of 0 on a call held until after the wait)."""
from __future__ import annotations

import threading

import pytest

from eventtime.harness.bounded import bounded_call
from eventtime.harness.stream import HarnessTimeout


def test_the_calls_value_and_its_error_come_back_to_the_caller():
    assert bounded_call(lambda: 42, 60, "an answer", name="t-value") == 42
    assert bounded_call(lambda: None, 60, "nothing", name="t-none") is None

    def fails() -> None:
        raise ValueError("the call's own error")

    with pytest.raises(ValueError, match="the call's own error"):
        bounded_call(fails, 60, "a failure", name="t-error")


def test_past_the_bound_it_says_what_it_waited_for_after_on_timeout():
    gate, seen, interrupted = threading.Event(), ["first"], []
    try:
        with pytest.raises(HarnessTimeout, match=r"^timed out after 0s waiting for the update; seen: \['first', 'x'\]$"):
            bounded_call(gate.wait, 0, lambda: f"the update; seen: {seen}", name="t-held",
                         on_timeout=lambda: (interrupted.append(True), seen.append("x")))
        assert interrupted == [True]  # called before the words are made: they see what it did
    finally:
        gate.set()
    # control: the same call let go finishes within its bound
    assert bounded_call(lambda: gate.wait(), 60, "the gate", name="t-open") is True
