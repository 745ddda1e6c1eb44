"""Cases from Flink's own operator tests, written from their published sources, run on the model.

StatusWatermarkValveTest (flink-streaming-java, org.apache.flink.streaming.runtime.watermarkstatus):
every test of the class, call by call, with every value it asserts. Flink's test pops the valve's
outputs one at a time (`popLastSeenOutput()`, null when there is none); here `("pop", X)` is one
such assertion, `("aligned", ch, b)` and `("channel", ch, wm)` the assertions on a channel's status.
The expected values are Flink's, copied from its test; the model's valve
(`eventtime.semantics.dataflow.StatusWatermarkValve`) must agree with each.
"""
from __future__ import annotations

import pytest

from eventtime.semantics.dataflow import StatusWatermarkValve

IDLE, ACTIVE = ("status", "idle"), ("status", "active")


def W(ms: int) -> tuple[str, int]:
    return ("watermark", ms)


def wm(ch: int, ms: int) -> tuple:
    return ("input_watermark", ch, ms)


def status(ch: int, value: str) -> tuple:
    return ("input_status", ch, value)


def pop(expected) -> tuple:
    return ("pop", expected)


CASES = {
    "testSingleInputIncreasingWatermarks": (1, [
        wm(0, 0), pop(W(0)), pop(None), wm(0, 25), pop(W(25)), pop(None)]),
    "testSingleInputDecreasingWatermarksYieldsNoOutput": (1, [
        wm(0, 25), pop(W(25)), wm(0, 18), pop(None), wm(0, 42), pop(W(42)), pop(None)]),
    "testSingleInputWatermarkStatusToggling": (1, [
        status(0, "active"), pop(None), status(0, "idle"), pop(IDLE), status(0, "idle"), pop(None),
        status(0, "active"), pop(ACTIVE), pop(None)]),
    "testSingleInputWatermarksIntactDuringIdleness": (1, [
        wm(0, 25), pop(W(25)), pop(None), status(0, "idle"), pop(IDLE), wm(0, 50), pop(None), ("channel", 0, 25),
        status(0, "active"), pop(ACTIVE), pop(None), wm(0, 50), pop(W(50)), pop(None)]),
    "testMultipleInputYieldsWatermarkOnlyWhenAllChannelsReceivesWatermarks": (3, [
        wm(0, 0), wm(1, 0), pop(None), wm(2, 0), pop(W(0)), pop(None)]),
    "testMultipleInputIncreasingWatermarks": (3, [
        wm(0, 0), wm(1, 0), wm(2, 0), pop(W(0)),
        wm(0, 12), wm(2, 8), wm(2, 10), pop(None),
        wm(1, 15), pop(W(10)), pop(None),
        wm(2, 17), pop(W(12)), pop(None),
        wm(0, 20), pop(W(15)), pop(None)]),
    "testMultipleInputDecreasingWatermarksYieldsNoOutput": (3, [
        wm(0, 25), wm(1, 10), wm(2, 17), pop(W(10)),
        wm(0, 12), wm(1, 8), wm(2, 15), pop(None)]),
    "testMultipleInputWatermarkStatusToggling": (2, [
        status(0, "active"), status(1, "active"), pop(None),
        status(1, "idle"), pop(None),
        status(0, "idle"), pop(IDLE),
        status(0, "idle"), status(1, "idle"), pop(None),
        status(1, "active"), pop(ACTIVE),
        status(0, "active"), pop(None)]),
    "testMultipleInputWatermarkAdvancingWithPartiallyIdleChannels": (3, [
        wm(0, 15), wm(1, 10), pop(None),
        status(2, "idle"), pop(W(10)), pop(None),
        wm(1, 18), pop(W(15)), pop(None),
        wm(0, 20), pop(W(18)), pop(None)]),
    "testMultipleInputWatermarkAdvancingAsChannelsIndividuallyBecomeIdle": (3, [
        wm(0, 25), wm(1, 10), wm(2, 17), pop(W(10)),
        status(1, "idle"), pop(W(17)),
        status(2, "idle"), pop(W(25)), pop(None)]),
    "testMultipleInputFlushMaxWatermarkAndWatermarkStatusOnceAllInputsBecomeIdle": (3, [
        wm(0, 10), wm(1, 5), wm(2, 3), pop(W(3)),
        status(0, "idle"), status(1, "idle"), pop(None),
        status(2, "idle"), pop(W(10)), pop(IDLE), pop(None)]),
    "testMultipleInputWatermarkRealignmentAfterResumeActive": (3, [
        wm(0, 10), wm(1, 7), wm(2, 3), pop(W(3)), pop(None),
        status(2, "idle"), pop(W(7)), pop(None),
        status(2, "active"), ("aligned", 2, False),
        wm(2, 5), ("channel", 2, 5), pop(None),
        wm(2, 9), ("aligned", 2, True), pop(None),
        wm(1, 12), pop(W(9)), pop(None)]),
    "testNoOutputWhenAllActiveChannelsAreUnaligned": (3, [
        wm(0, 10), wm(1, 7),
        status(2, "idle"), pop(W(7)), pop(None),
        status(2, "active"), pop(None),
        status(0, "idle"), status(1, "idle"), pop(None)]),
}

ASSERTIONS = ("pop", "aligned", "channel")


def _agreements(channels: int, calls: list[tuple]) -> list[tuple[tuple, object]]:
    """Run one of Flink's tests on the model's valve: (Flink's assertion, what the model gives) for each."""
    valve = StatusWatermarkValve(channels)
    seen = 0
    out = []
    for call in calls:
        if call[0] == "input_watermark":
            valve.input_watermark(call[1], call[2])
        elif call[0] == "input_status":
            valve.input_status(call[1], call[2] == "idle")
        elif call[0] == "pop":
            got = valve.outputs[seen] if seen < len(valve.outputs) else None
            seen += got is not None
            out.append((call, got))
        elif call[0] == "aligned":
            out.append((call, valve.channels[call[1]].aligned))
        elif call[0] == "channel":
            out.append((call, valve.channels[call[1]].watermark))
    return out


def _expected(assertion: tuple) -> object:
    return assertion[1] if assertion[0] == "pop" else assertion[2]


@pytest.mark.parametrize("name", sorted(CASES))
def test_flink_status_watermark_valve_test(name):
    channels, calls = CASES[name]
    disagreements = [(a, got) for a, got in _agreements(channels, calls) if got != _expected(a)]
    assert disagreements == []


def test_the_count_of_flinks_expected_values_the_model_agrees_with():
    """Every test of StatusWatermarkValveTest (13) and every value they assert (72): all agree."""
    results = [(a, got) for channels, calls in CASES.values() for a, got in _agreements(channels, calls)]
    assert len(CASES) == 13 and len(results) == 72
    assert sum(got == _expected(a) for a, got in results) == 72
    # a control: a valve without the realignment rule disagrees with Flink's values
    lenient = StatusWatermarkValve(3)
    for ch, value in ((0, 10), (1, 7), (2, 3)):
        lenient.input_watermark(ch, value)
    lenient.input_status(2, True)
    lenient.input_status(2, False)
    lenient.channels[2].aligned = True  # as if active again meant aligned again
    lenient.input_watermark(1, 12)
    assert lenient.last_output != 9 and lenient.last_output == 7
