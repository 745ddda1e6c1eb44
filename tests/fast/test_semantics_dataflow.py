"""The dataflow profile (Flink's event-time rules, the seed texts) rule by rule, and the `profile` key of a scenario."""
from __future__ import annotations

from eventtime.cli import main
from eventtime.loader import load_scenario_text
from eventtime.semantics import check_scenario, simulate
from eventtime.semantics.dataflow import (DROPPED, LATE, MIN_WATERMARK, ON_TIME, BoundedOutOfOrderness,
                                            CombinedWatermark, DataflowQuery, LatenessWindows)

S = 1_000_000  # µs
MS = 1000


def test_bounded_out_of_orderness_is_max_minus_bound_minus_one_ms_from_the_minimum_long():
    g = BoundedOutOfOrderness(bound_ms=2000)
    assert g.on_periodic_emit() == MIN_WATERMARK  # seed 002: "a very large negative value"
    g.on_event(7000)
    g.on_event(3000)
    assert g.emitted == MIN_WATERMARK  # periodic: nothing until the period ends
    assert g.on_periodic_emit() == 4999
    g.on_event(5000)
    assert g.on_periodic_emit() == 4999  # never backwards
    p = BoundedOutOfOrderness(bound_ms=0, punctuated=True)
    p.on_event(10_000)
    assert p.emitted == 9999  # punctuated: after every element


def test_the_minimum_over_inputs_leaves_idle_ones_out():
    gens = {"left": BoundedOutOfOrderness(0), "right": BoundedOutOfOrderness(0)}
    wm = CombinedWatermark(gens, idle_timeout_ms=10_000)
    wm.mark_active("left", 0)
    gens["left"].on_event(30_000)
    gens["left"].on_periodic_emit()
    assert wm.update(0) == MIN_WATERMARK  # right has said nothing yet: it holds the minimum back
    wm.mark_active("right", 0)
    gens["right"].on_event(5_000)
    gens["right"].on_periodic_emit()
    assert wm.update(0) == 4_999
    # every input idle: the maximum over them, as Flink's WatermarkOutputMultiplexer does
    # (WatermarkOutputMultiplexerTest.whenAllImmediateOutputsBecomeIdleWatermarkAdvances)
    assert wm.update(10_000) == 29_999
    wm.mark_active("left", 10_000)
    assert wm.update(10_000) == 29_999  # right still idle, left active again: left alone decides
    without = CombinedWatermark(gens)
    assert without.update(10**9) == 4_999  # no idleness: the stalled input stalls the watermark


def test_an_idle_input_lets_the_watermark_move_on_processing_time():
    q = DataflowQuery(("left", "right"), bound_ms=0, length_us=10 * S, lateness_ms=0, clock_start_ms=0,
                      trigger_ms=None, idle_timeout_ms=5_000)
    q.start()
    q.add("left", [{"key": "a", "ts": 3 * S}])
    q.add("right", [{"key": "b", "ts": 4 * S}])
    q.process()
    q.add("left", [{"key": "a", "ts": 25 * S}])
    q.advance(3_000)
    [b] = q.process()
    assert b.watermark_after_ms == 3_999  # right (max 4 s) holds it back
    assert q.advance(1_000) == []  # right idle for 4 s: not yet
    [idle] = q.advance(1_000)  # 5 s without an element from right: left alone decides
    assert idle.input_rows == 0 and idle.watermark_after_ms == 24_999
    assert sorted(r[4] for r in idle.rows) == [ON_TIME, ON_TIME]


def test_allowed_lateness_late_firings_side_output_and_result_timestamps():
    w = LatenessWindows(10 * S, allowed_lateness_ms=2000)
    assert w.on_element("a", 4 * S, MIN_WATERMARK) == []
    [f] = w.on_watermark(9_999)
    assert (f.count, f.kind, f.result_ts_us) == (1, ON_TIME, 9_999 * MS)  # fires at end - 1 ms
    [late] = w.on_element("a", 6 * S, 11_998)
    assert (late.count, late.kind) == (2, LATE)
    assert w.on_watermark(11_999) == [] and not w.windows  # purged at end - 1 ms + lateness
    [side] = w.on_element("a", 8 * S, 11_999)
    assert (side.kind, side.count, side.result_ts_us) == (DROPPED, 1, 8 * S)
    [first_late] = LatenessWindows(10 * S, 5000).on_element("b", 1 * S, 10_000)
    assert first_late.kind == LATE  # a window whose first element is already late fires at once


RESTART = """\
scenario: dataflow-restart
description: Watermarks are not checkpointed under the dataflow profile.
contract: lateness_count
profile: dataflow
params: {window: 10s, bound: 0s, allowed_lateness: 0s}
sources:
  events: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [[a, "00:00:12"]]}
  - process
  - expect: {watermark: "00:00:11.999", no_output: true}
  - restart
  - add: {events: [[a, "00:00:05"]]}
  - process
  - expect: {no_output: true, watermark: "00:00:04.999"}   # not checkpointed: from Long.MIN_VALUE again
"""


def test_profile_key_selects_the_dataflow_rules_and_restarts_forget_watermarks(capsys, tmp_path):
    sc = load_scenario_text(RESTART, "r.scenario.yaml")
    assert sc.profile == "dataflow"
    history = simulate(sc).history
    assert [b.watermark_before_ms for b in history] == [0, 0]  # after the restart: Long.MIN_VALUE again
    assert check_scenario(sc).status == "passed"
    spark = check_scenario(sc, "spark")  # Spark restores its watermark: 00:00:05 is side output there
    assert spark.status == "failed"
    path = tmp_path / "r.scenario.yaml"
    path.write_text(RESTART, encoding="utf-8")
    assert main(["check-model", str(path)]) == 0
    assert "(dataflow profile)" in capsys.readouterr().out
    assert main(["check-model", "--profile", "spark", str(path)]) == 1
