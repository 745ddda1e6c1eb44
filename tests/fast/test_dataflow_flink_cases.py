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


# -- WatermarkOutputMultiplexerTest (flink-core, org.apache.flink.api.common.eventtime) -------------------
# A source subtask's partitions (`CombinedWatermark`). Flink's outputs are `immediate` (a watermark above
# the combined one, an idle or active mark, updates the combined watermark at once: a punctuated
# generator) or `deferred` (only at the next periodic emit: a periodic generator). The glue below plays
# the multiplexer's part, `CombinedWatermark` decides; the underlying output keeps the last watermark
# reported and whether it was last marked idle, as Flink's TestingWatermarkOutput does.

class _Multiplexed:
    def __init__(self):
        from eventtime.semantics.dataflow import BoundedOutOfOrderness, CombinedWatermark

        self.gens: dict[str, BoundedOutOfOrderness] = {}
        self.mux = CombinedWatermark(self.gens)
        self.last: int | None = None
        self.idle = False
        self._new = BoundedOutOfOrderness

    def output(self, name: str) -> None:
        self.gens[name] = self._new(None)

    def update(self) -> None:
        before = self.mux.current
        self.mux.update(0)
        if self.mux.current > before:
            self.last = self.mux.current
        if self.gens:  # no outputs: nothing to report
            self.idle = self.mux.all_idle(0)

    def emit(self, name: str, ms: int, immediate: bool) -> None:
        above = ms > self.gens[name].emitted and ms > self.mux.current
        self.gens[name].emit(ms)
        self.mux.mark_active(name, 0)
        if immediate and above:
            self.update()

    def status(self, name: str, idle: bool, immediate: bool) -> None:
        if idle:
            self.mux.mark_idle(name)
        else:
            self.mux.mark_active(name, 0)
        if immediate:
            self.update()


def _mux_case(calls: list[tuple]) -> list[tuple[tuple, object]]:
    m = _Multiplexed()
    out = []
    for call in calls:
        kind = call[0]
        if kind in ("immediate", "deferred"):
            m.output(call[1])
        elif kind == "emit":
            m.emit(call[1], call[2], immediate=_kinds[call[1]] == "immediate")
        elif kind in ("idle", "active"):
            m.status(call[1], kind == "idle", immediate=_kinds[call[1]] == "immediate")
        elif kind == "periodic":
            m.update()
        elif kind == "last":
            out.append((call, m.last))
        elif kind == "is_idle":
            out.append((call, m.idle))
    return out


_kinds: dict[str, str] = {}


def _run_mux(calls: list[tuple]) -> list[tuple[tuple, object]]:
    _kinds.clear()
    _kinds.update({c[1]: c[0] for c in calls if c[0] in ("immediate", "deferred")})
    return _mux_case(calls)


MUX_CASES = {
    "singleImmediateWatermark": [("immediate", "a"), ("emit", "a", 0), ("last", 0), ("is_idle", False)],
    "singleImmediateIdleness": [("immediate", "a"), ("idle", "a"), ("last", None), ("is_idle", True)],
    "singleImmediateWatermarkAfterIdleness": [
        ("immediate", "a"), ("idle", "a"), ("is_idle", True), ("emit", "a", 0), ("last", 0), ("is_idle", False)],
    "multipleImmediateWatermark": [
        ("immediate", "a"), ("immediate", "b"), ("immediate", "c"), ("emit", "a", 2), ("emit", "b", 5), ("idle", "c"),
        ("last", 2), ("is_idle", False)],
    "whenImmediateOutputBecomesIdleWatermarkAdvances": [
        ("immediate", "a"), ("immediate", "b"), ("emit", "a", 2), ("emit", "b", 5), ("last", 2), ("idle", "a"),
        ("last", 5)],
    "whenAllImmediateOutputsBecomeIdleWatermarkAdvances": [
        ("immediate", "a"), ("immediate", "b"), ("emit", "a", 5), ("emit", "b", 2), ("last", 2), ("is_idle", False),
        ("idle", "a"), ("idle", "b"), ("last", 5), ("is_idle", True)],
    "whenAllDeferredOutputsEmitAndIdleWatermarkAdvances": [
        ("deferred", "a"), ("deferred", "b"), ("emit", "a", 5), ("idle", "a"), ("emit", "b", 2), ("idle", "b"),
        ("last", None), ("is_idle", False), ("periodic",), ("last", 5), ("is_idle", True)],
    "combinedWatermarkDoesNotRegressWhenIdleOutputRegresses": [
        ("immediate", "a"), ("immediate", "b"), ("emit", "a", 2), ("emit", "b", 5), ("idle", "a"), ("last", 5),
        ("emit", "a", 3), ("last", 5)],
    "noCombinedDeferredUpdateWhenWeHaveZeroOutputs": [("periodic",), ("last", None), ("is_idle", False)],
    "deferredOutputDoesNotImmediatelyAdvanceWatermark": [
        ("deferred", "a"), ("deferred", "b"), ("emit", "a", 0), ("emit", "b", 1), ("last", None), ("periodic",),
        ("last", 0)],
    "singleDeferredWatermark": [("deferred", "a"), ("emit", "a", 0), ("periodic",), ("last", 0), ("is_idle", False)],
    "singleDeferredIdleness": [("deferred", "a"), ("idle", "a"), ("periodic",), ("last", None), ("is_idle", True)],
    "singleDeferredWatermarkAfterIdleness": [
        ("deferred", "a"), ("idle", "a"), ("periodic",), ("is_idle", True), ("emit", "a", 0), ("periodic",),
        ("last", 0), ("is_idle", False)],
    "multipleDeferredWatermark": [
        ("deferred", "a"), ("deferred", "b"), ("deferred", "c"), ("emit", "a", 2), ("emit", "b", 5), ("idle", "c"),
        ("periodic",), ("last", 2), ("is_idle", False)],
    "immediateUpdatesTakeDeferredUpdatesIntoAccount": [
        ("immediate", "a"), ("deferred", "b"), ("emit", "b", 5), ("last", None), ("emit", "a", 2), ("last", 2)],
    "whenIdleImmediateOutputsBecomeActiveUnderlyingOutputIsMarkedActive": [
        ("immediate", "a"), ("immediate", "b"), ("emit", "a", 5), ("emit", "b", 2), ("idle", "a"), ("idle", "b"),
        ("last", 5), ("is_idle", True), ("active", "a"), ("is_idle", False)],
    "whenIdleDeferredOutputResumesUnderlyingOutputIsMarkedActive": [
        ("deferred", "a"), ("deferred", "b"), ("emit", "a", 5), ("emit", "b", 2), ("idle", "a"), ("idle", "b"),
        ("periodic",), ("last", 5), ("is_idle", True), ("emit", "a", 3), ("periodic",), ("last", 5),
        ("is_idle", False)],
}
# Not expressible: the model's inputs are fixed for a run (no split is added or removed while it runs:
# testRemoveUnblocksWatermarks, testRemoveOfLowestDoesNotImmediatelyAdvanceWatermark,
# testRemoveOfHighestDoesNotRetractWatermark, testRemoveRegisteredReturnValue,
# testRemoveNotRegisteredReturnValue, testEmittingIdleAfterAllSplitsRemoved), an input has one
# generator, either immediate or deferred, not both (immediateUpdateOnSameOutputAsDeferredUpdateDoesNotRegress,
# lowerImmediateUpdateOnSameOutputDoesNotEmitCombinedUpdate), and the model does not count status
# reports (whenThereAreNoOutputsNothingIsReported, whenRegisteredOutputReportsNothingNothingIsReported).
MUX_NOT_EXPRESSIBLE = 10


def _mux_expected(call: tuple) -> object:
    return call[1]


@pytest.mark.parametrize("name", sorted(MUX_CASES))
def test_flink_watermark_output_multiplexer_test(name):
    assert [(c, got) for c, got in _run_mux(MUX_CASES[name]) if got != _mux_expected(c)] == []


def test_the_count_of_flinks_multiplexer_values_the_model_agrees_with():
    """17 of WatermarkOutputMultiplexerTest's 27 tests are expressible; their 43 asserted values all agree."""
    results = [(c, got) for calls in MUX_CASES.values() for c, got in _run_mux(calls)]
    assert (len(MUX_CASES), MUX_NOT_EXPRESSIBLE, len(results)) == (17, 10, 43)
    assert sum(got == _mux_expected(c) for c, got in results) == 43


# -- WindowOperatorTest (flink-streaming-java, ...operators.windowing) --------------------------------------
# Tumbling event-time windows with EventTimeTrigger, a sum of 1s per key (a count), allowed lateness and
# the late side output: the `lateness_count` operator. `("element", key, ts)` is processElement,
# `("watermark", ms)` processWatermark; the test harness's output (records at window.maxTimestamp() and
# the forwarded watermarks, in order) and side output are compared with Flink's expected queues, the
# records between two watermarks as a multiset (Flink's assertOutputEqualsSorted sorts them).

def _window_case(length_ms: int, lateness_ms: int, calls: list[tuple]) -> tuple[list, list]:
    from eventtime.semantics.dataflow import DataflowQuery

    q = DataflowQuery(("events",), bound_ms=0, length_us=length_ms * 1000, lateness_ms=lateness_ms, clock_start_ms=0,
                      trigger_ms=None, generator={"events": "none"})
    q.start()
    output: list = []
    side: list = []
    for call in calls:
        if call[0] == "element":
            q.add("events", [{"key": call[1], "ts": call[2] * 1000}])
            continue
        q.signal(["events"], "watermark", call[1])
        for b in q.process():
            for kind, item in b.emitted:
                if kind == "watermark":
                    output.append(("watermark", item))
                elif item[4] == "dropped":
                    side.append((item[0], 1, item[5] // 1000))
                else:
                    output.append((item[0], item[3], item[5] // 1000))
    return output, side


def _segments(stream: list) -> list:
    """Records between watermarks as sorted lists, watermarks in place (assertOutputEqualsSorted)."""
    out, records = [], []
    for item in stream:
        if item[0] == "watermark":
            out += [sorted(records), item]
            records = []
        else:
            records.append(item)
    return out + [sorted(records)]


LONG_MAX = 2 ** 63 - 1
_overflow_max_ts = (LONG_MAX - 1750) - (LONG_MAX - 1750) % 1000 + 999

WINDOW_CASES = {
    # testTumblingEventTimeWindows (its snapshot and restore in the middle left out: window state
    # survives a restart in the model too, and no element arrives after it)
    "testTumblingEventTimeWindows": (3000, 0, [
        ("element", "key2", 3999), ("element", "key2", 3000), ("element", "key1", 20), ("element", "key1", 0),
        ("element", "key1", 999), ("element", "key2", 1998), ("element", "key2", 1999), ("element", "key2", 1000),
        ("watermark", 999), ("watermark", 1999), ("watermark", 2999), ("watermark", 3999), ("watermark", 4999),
        ("watermark", 5999), ("watermark", 6999), ("watermark", 7999)],
        [("watermark", 999), ("watermark", 1999), ("key1", 3, 2999), ("key2", 3, 2999), ("watermark", 2999),
         ("watermark", 3999), ("watermark", 4999), ("key2", 2, 5999), ("watermark", 5999), ("watermark", 6999),
         ("watermark", 7999)], []),
    "testSideOutputDueToLatenessTumbling": (2000, 0, [
        ("element", "key2", 1000), ("watermark", 1985), ("element", "key2", 1980), ("watermark", 1999),
        ("element", "key2", 1998), ("element", "key2", 2001), ("watermark", 2999), ("watermark", 3999)],
        [("watermark", 1985), ("key2", 2, 1999), ("watermark", 1999), ("watermark", 2999), ("key2", 1, 3999),
         ("watermark", 3999)], [("key2", 1, 1998)]),
    "testCleanupTimeOverflow": (1000, 2000, [
        ("element", "key2", LONG_MAX - 1750), ("watermark", LONG_MAX - 1500), ("watermark", _overflow_max_ts)],
        [("watermark", LONG_MAX - 1500), ("key2", 1, _overflow_max_ts), ("watermark", _overflow_max_ts)], []),
}
# testTumblingEventTimeWindows is Flink's testTumblingEventTimeWindowsReduce and ...Apply (one helper): 4
# of WindowOperatorTest's 35 tests here. Its session windows, purging triggers, lateness and cleanup-timer
# tests are in test_dataflow_flink_windows.py (17 more expressible), with the 14 that are not and why.


@pytest.mark.parametrize("name", sorted(WINDOW_CASES))
def test_flink_window_operator_test(name):
    length, lateness, calls, expected, side = WINDOW_CASES[name]
    output, side_output = _window_case(length, lateness, calls)
    assert _segments(output) == _segments(expected)
    assert sorted(side_output) == sorted(side)


def test_the_count_of_flinks_window_operator_values_the_model_agrees_with():
    """3 WindowOperatorTest tests: the 21 output elements their expected queues hold all agree."""
    agree = total = 0
    for length, lateness, calls, expected, side in WINDOW_CASES.values():
        output, side_output = _window_case(length, lateness, calls)
        total += len(expected) + len(side)
        agree += sum(1 for a, b in zip(_segments(output), _segments(expected)) for _ in (b if isinstance(b, list) else [b])
                     if a == b) + (len(side) if sorted(side_output) == sorted(side) else 0)
    assert (total, agree) == (21, 21)
