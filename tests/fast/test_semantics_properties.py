"""Properties of the model of event-time semantics on generated scenarios (eventtime.strategies).

Pure Python, a few hundred generated scenarios per run: invariants that hold for every contract
(the watermark never decreases, batches chain their watermarks, no-data batches only after a
move, determinism), and what a watermark delay that covers the disorder guarantees (nothing is
dropped, windows are emitted complete, deduplication is exact). The Spark differential runs of
the same strategies are a separate, Spark-backed concern.
"""
from __future__ import annotations

import os
from collections import Counter

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from eventtime.registry import CONTRACTS
from eventtime.semantics import simulate
from eventtime.strategies import contract_params, scenarios
from eventtime.timeparse import parse_duration

# Deterministic (derandomized, no example database) like the rest of the fast suite; most of the
# time goes into writing and loading the generated YAML, so the example count stays small. A long,
# randomized run: EVENTTIME_MODEL_EXAMPLES=2000 pytest tests/fast/test_semantics_properties.py
_LONG = os.environ.get("EVENTTIME_MODEL_EXAMPLES")
FAST = settings(max_examples=int(_LONG or 40), deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.too_slow])
DELAY_PARAMS = ("watermark_delay", "left_delay", "right_delay")
# lateness_count derives its delay from `bound` (bound + 1 ms) and judges lateness itself
WATERMARKED = tuple(sorted(n for n, c in CONTRACTS.items() if all(s.event_time for s in c.sources)
                           and any(p.name in DELAY_PARAMS for p in c.params)))


def _ms(us: int) -> int:
    return -((-us) // 1000) if us < 0 else us // 1000


@FAST
@given(scenarios(out_of_orderness=None))
def test_invariants_of_every_run(sc):
    sim = simulate(sc)
    history = sim.history
    assert [b.batch_id for b in history] == list(range(len(history)))
    assert not history or history[0].watermark_before_ms == 0
    for prev, b in zip(history, history[1:]):
        assert b.watermark_before_ms == prev.watermark_after_ms  # the next batch runs with what the last left
        assert b.timestamp_ms >= prev.timestamp_ms
        if not b.has_data:  # a no-data batch follows a batch of the same run that moved the watermark
            assert b.run == prev.run and b.watermark_before_ms > prev.watermark_before_ms
    for b in history:
        assert b.watermark_after_ms >= b.watermark_before_ms >= 0  # never backwards, never below the initial 0
        assert b.dropped >= 0 and b.state_rows >= 0
        if b.event_time:
            low, high = b.event_time.get("avg_range") or (b.event_time["avg"],) * 2
            assert b.has_data and b.event_time["min"] - 1 <= low <= high <= b.event_time["max"] + 1
    if sc.conf.get("spark.sql.streaming.noDataMicroBatches.enabled") == "false":
        assert all(b.has_data for b in history)
    if not sc.contract.sources[0].event_time:
        assert all(b.watermark_after_ms == 0 and not b.event_time for b in history)
    again = simulate(sc).history
    assert [b.to_dict() for b in again] == [b.to_dict() for b in history]  # deterministic


@FAST
@given(st.sampled_from([n for n in WATERMARKED if len(CONTRACTS[n].sources) == 1]).flatmap(
    lambda name: scenarios(name, out_of_orderness=None)))
def test_single_input_watermark_is_max_event_time_minus_delay(sc):
    delay = sc.params["watermark_delay"].total_ms
    seen = None
    pending: list[int] = []  # a batch reads every add since the previous batch
    for step in simulate(sc).steps:
        if step.kind == "add":
            pending += [row[1] for rows in step.step.rows.values() for row in rows]
        for b in step.batches:
            if b.has_data:
                top = max(_ms(t) for t in pending)
                seen = top if seen is None else max(seen, top)
                pending = []
            assert b.watermark_after_ms == max(0, (seen - delay) if seen is not None else 0)


def _bounded(draw, names: tuple[str, ...], **fixed: str):
    """A scenario whose out-of-orderness stays strictly below each input's watermark delay; `fixed`
    sets parameters the contract has (e.g. output_mode)."""
    name = draw(st.sampled_from(names))
    params = draw(contract_params(name))
    params.update({k: v for k, v in fixed.items() if k in params})
    for key in DELAY_PARAMS:
        if key in params and parse_duration(params[key]).total_ms < 2000:
            params[key] = "2s"
    if "policy" in params:
        params["policy"] = "min"  # under max a slower input's rows are late by design
    if name == "union_tumbling_count" or len(CONTRACTS[name].sources) == 2:
        bound = {"left": parse_duration(params["left_delay"]).total_ms - 1000,
                 "right": parse_duration(params["right_delay"]).total_ms - 1000}
    else:
        bound = parse_duration(params["watermark_delay"]).total_ms - 1000
    return draw(scenarios(name, params=params, out_of_orderness=bound))


@FAST
@given(st.data())
def test_a_delay_that_covers_the_disorder_drops_nothing(data):
    sc = _bounded(data.draw, WATERMARKED)
    assert sum(b.dropped for b in simulate(sc).history) == 0


def _input_rows(sc) -> list[tuple]:
    return [row for s in sc.steps if s.kind == "add" for rows in s.rows.values() for row in rows]


@FAST
@given(st.data())
def test_append_windows_are_emitted_once_and_complete_when_the_delay_covers_the_disorder(data):
    sc = _bounded(data.draw, ("tumbling_count", "sliding_count", "union_tumbling_count"), output_mode="append")
    assert sc.params.get("output_mode", "append") == "append"
    history = simulate(sc).history
    assume(any(b.rows for b in history))  # a run that emits no window checks nothing
    window = sc.params["window"].total_us
    slide = sc.params["slide"].total_us if "slide" in sc.params else window
    emitted = Counter()
    for b in history:
        for key, start, end, count in b.rows:
            emitted[(key, start, end)] += 1
            assert end <= b.watermark_before_ms * 1000  # final: the watermark has passed its end
            assert count == sum(1 for k, ts in _input_rows(sc) if k == key and start <= ts < end)
            assert end - start == window and start % slide == 0
    assert all(n == 1 for n in emitted.values())


@FAST
@given(st.data())
def test_deduplication_is_exact_when_the_delay_covers_the_disorder(data):
    sc = _bounded(data.draw, ("dedup",))
    out = [r for b in simulate(sc).history for r in b.rows]
    assume(out)
    assert len(out) == len(set(out)) and set(out) == {(i, ts) for i, ts in _input_rows(sc)}


@st.composite
def _joins(draw):
    """Join scenarios likely to produce rows: both inputs interleaved, matches allowed far apart."""
    params = draw(contract_params("interval_join"))
    params["bound"] = draw(st.sampled_from(("5s", "10s", "30s")))
    return draw(scenarios("interval_join", params=params, out_of_orderness=None, idle=False))


@FAST
@given(_joins())
def test_join_rows_match_and_outer_rows_wait_for_the_watermark(sc):
    bound = sc.params["bound"].total_us
    history = simulate(sc).history
    assume(any(b.rows for b in history))
    for b in history:
        for _key, left_ts, right_ts in b.rows:
            if left_ts is not None and right_ts is not None:
                assert left_ts - bound <= right_ts <= left_ts + bound
            else:  # a null row: no match can come any more, and Spark waited one more millisecond
                ts = left_ts if left_ts is not None else right_ts
                assert b.watermark_before_ms * 1000 >= ts + bound + 1000


@FAST
@given(st.sampled_from(["inactivity_timeout", "hold_timer"]).flatmap(lambda n: scenarios(n, out_of_orderness=None)))
def test_timeouts_fire_strictly_after_and_timers_at_the_watermark(sc):
    history = simulate(sc).history
    assume(any(b.rows for b in history))
    for b in history:
        for row in b.rows:
            if sc.contract.name == "inactivity_timeout":
                assert row[2] // 1000 + sc.params["timeout"].total_ms < b.watermark_before_ms
            else:
                assert row[1] // 1000 + sc.params["hold"].total_ms <= b.watermark_before_ms
