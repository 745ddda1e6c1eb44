"""The executable model of event-time semantics (spark profile): it agrees with every bundled scenario,
its rules one by one, `eventtime check-model` / `eventtime expect`, and that disagreements are caught."""
from __future__ import annotations

import re

import pytest

from eventtime.cli import main
from eventtime.loader import find_scenario_files, load_scenario, load_scenario_text
from eventtime.semantics import NotCovered, check_scenario, simulate
from eventtime.semantics.aggregation import Aggregates, CountRows, StreamingAggregation
from eventtime.semantics.fill import expectations_yaml
from eventtime.semantics.joins import IntervalJoin
from eventtime.semantics.state import OperatorWatermarks
from eventtime.semantics.stateful import HoldTimer, InactivityTimeout
from eventtime.semantics.watermark import EventTimeStats, WatermarkTracker, us_to_ms
from eventtime.semantics.windows import Session, merge_sessions, time_windows, window_time
from eventtime.textreport import describe_failure
from eventtime.scenarios import SUITE_DIR

S = 1_000_000  # µs per second
SUITE = [load_scenario(p) for p in find_scenario_files([SUITE_DIR])[0]]


def wms(late_s: float, evict_s: float | None = None) -> OperatorWatermarks:
    evict_s = late_s if evict_s is None else evict_s
    return OperatorWatermarks(int(late_s * 1000), int(evict_s * 1000))


# -- the model and the suite keep each other honest -------------------------------------------------------

@pytest.mark.parametrize("sc", SUITE, ids=lambda s: s.name)
def test_model_agrees_with_bundled_scenario(sc):
    result = check_scenario(sc)
    assert result.status == "passed", describe_failure(result) if result.steps else result.reason


def test_model_covers_the_whole_standard_suite():
    uncovered = [(sc.path, check_scenario(sc).reason) for sc in SUITE if check_scenario(sc).status == "not_applicable"]
    assert not uncovered
    assert len(SUITE) >= 78


def test_check_model_cli_on_the_suite(capsys):
    assert main(["check-model", "-q"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^{len(SUITE)} scenarios: {len(SUITE)} agree with the model \(dataflow and spark profiles\), 0 disagree, "
                     r"0 not covered, 0 errors, 0 invalid files$", out, re.M), out


WRONG = """\
scenario: wrong
description: A deliberately wrong expectation.
contract: tumbling_count
params: {window: 10 seconds, watermark_delay: 5 seconds}
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
steps:
  - add:
      events: [[a, "00:00:03"], [a, "00:00:16"]]
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 2]]
      watermark: "00:00:10"
"""


def test_a_wrong_expectation_is_a_disagreement_at_its_line(capsys, write_scenario):
    result = check_scenario(load_scenario_text(WRONG, "wrong.scenario.yaml"))
    assert result.status == "failed"
    failures = [f for s in result.steps for f in s.failures]
    assert {f.check for f in failures} == {"rows", "watermark"}
    assert {f.where.line for f in failures} == {14, 15}
    said = describe_failure(result)  # one query, not named: no "(query None)"
    assert "    batches since the previous expect:\n" in said and "query None" not in said, said
    path = write_scenario("wrong.scenario.yaml", WRONG)
    assert main(["check-model", str(path)]) == 1
    out = capsys.readouterr().out
    assert "DISAGREE" in out and ":15:18: watermark is 00:00:11, expected 00:00:10" in out
    assert "missing (expected, not produced)" in out and "unexpected (produced, not expected)" in out
    assert "1 scenarios: 0 agree with the model (spark profile), 1 disagree" in out


def test_uncovered_scenarios_are_reported_as_such(capsys, write_scenario):
    text = WRONG.replace('      rows: [[a, "00:00:00", "00:00:10", 2]]\n      watermark: "00:00:10"\n',
                         "      failure: {message: boom}\n")
    path = write_scenario("fails.scenario.yaml", text)
    with pytest.raises(NotCovered):
        simulate(load_scenario(path))
    assert main(["check-model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "NOT COVERED" in out and "does not predict failures" in out and "1 not covered" in out


def test_check_model_usage_errors(capsys, tmp_path):
    assert main(["check-model", str(tmp_path / "nope")]) == 2
    assert main(["check-model", str(tmp_path)]) == 2


def _with_model_expectations(sc) -> str:
    """The scenario's text with each expect step replaced by what `eventtime expect` prints for it."""
    blocks: dict[int, list[str]] = {}
    for block in expectations_yaml(simulate(sc)).split("\n\n")[1:]:
        head, *body = block.strip("\n").splitlines()
        blocks[int(head.rsplit(":", 1)[1])] = body
    lines = list(sc.lines)
    starts = sorted(s.where.line for s in sc.steps)
    for step in reversed([s for s in sc.steps if s.kind == "expect"]):
        end = next((n for n in starts if n > step.where.line), len(lines) + 1)
        lines[step.where.line - 1:end - 1] = blocks[step.where.line]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("sc", [s for s in SUITE if s.name in (
    "tumbling-append-late-row-dropped", "join-full-outer-nulls-both-sides", "tumbling-complete-mode",
    "inactivity-late-row-dropped-per-row", "seeds-initial-watermark-before-epoch")], ids=lambda s: s.name)
def test_expect_prints_expectations_that_load_and_agree(sc):
    result = check_scenario(load_scenario_text(_with_model_expectations(sc), sc.path))
    assert result.status == "passed", describe_failure(result)


def test_expect_cli(capsys):
    path = str(SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml")
    assert main(["expect", path, "--profile", "spark"]) == 0
    out = capsys.readouterr().out
    assert 'rows: [[a, "00:00:00", "00:00:10", 2]]' in out and 'watermark: "00:00:11"' in out
    assert main(["expect", path + ".missing"]) == 2


# -- the model's rules, one by one --------------------------------------------------------------------------

def test_windows_are_half_open_and_epoch_aligned():
    assert time_windows(10 * S, 10 * S) == time_windows(19 * S, 10 * S)
    assert time_windows(10 * S - 1, 10 * S)[0].end == 10 * S
    assert [(w.start, w.end) for w in time_windows(-2 * S, 10 * S)] == [(-10 * S, 0)]  # 1969-12-31T23:59:58
    assert [(w.start // S, w.end // S) for w in time_windows(7 * S, 10 * S, 5 * S)] == [(0, 10), (5, 15)]
    assert len(time_windows(10 * 3600 * S, 3600 * S, 900 * S)) == 4
    assert window_time(time_windows(15 * S, 10 * S)[0]) == 20 * S - 1


def test_touching_sessions_merge_and_end_at_the_latest_end():
    merged = merge_sessions([Session(0, 5, (1,)), Session(5, 10, (1,)), Session(3, 4, (1,)), Session(11, 12, (1,))],
                            lambda a, b: (a[0] + b[0],))
    assert merged == [Session(0, 10, (3,)), Session(11, 12, (1,))]


def test_event_time_in_whole_milliseconds_truncated_toward_zero():
    assert us_to_ms(1_999) == 1 and us_to_ms(-1_999) == -1
    stats = EventTimeStats()
    for us in (1_000, 2_000, 4_000):
        stats.add(us)
    assert stats.as_progress() == {"min": 1, "max": 4, "avg": 2}


def test_event_time_avg_is_sparks_running_double_truncated():
    base_ms = 1_704_067_200_000  # 2024-01-01T00:00:00Z
    one_task = EventTimeStats()
    one_task.add_partition((base_ms + s * 1000) * 1000 for s in (15, 16, 20, 5, 20, 4, 13, 14))
    assert (base_ms + 13_375) * 8 == sum(base_ms + s * 1000 for s in (15, 16, 20, 5, 20, 4, 13, 14))  # exact mean
    assert one_task.avg == base_ms + 13_374  # Spark's running double ends at ...13.3749998
    assert one_task.as_progress()["avg"] == base_ms + 13_374


def test_event_time_avg_that_depends_on_task_order_is_left_out():
    # a generated scenario's batch: three input partitions; Spark merges them as the tasks finish
    day, year = 86_400_000, 1_704_067_200_000
    parts = [[year - 5_000, year - 15_000, year], [year - day + 3_000] * 3, [year - 365 * day + 7_000]]
    stats = EventTimeStats()
    for part in parts:
        stats.add_partition(ms * 1000 for ms in part)
    exact = sum(map(sum, parts)) // 7
    assert stats.avg is None and stats.avg_range == (exact - 1, exact)
    assert stats.as_progress() == {"min": year - 365 * day + 7_000, "max": year, "avg_range": (exact - 1, exact)}
    same = EventTimeStats()  # equal event times: every order gives the exact value
    for _ in range(3):
        same.add_partition([year * 1000, year * 1000])
    assert same.avg == year
    empty = EventTimeStats()
    empty.add_partition([None])
    assert empty.as_progress() == {} and empty.avg is None


def test_global_watermark_min_max_initial_and_monotonic():
    t = WatermarkTracker({"left": 5_000, "right": 5_000})
    assert t.update({"left": _stats(30_000)}) == 0  # right has no data yet: counts as 0
    assert t.update({"right": _stats(20_000)}) == 15_000
    assert t.update({"right": _stats(10_000)}) == 15_000  # never backwards
    t = WatermarkTracker({"left": 2_000, "right": 8_000}, policy="max")
    assert t.update({"left": _stats(12_000), "right": _stats(12_000)}) == 10_000
    assert WatermarkTracker({"events": 5_000}).update({"events": _stats(4_000)}) == 0  # below the initial 0
    restarted = WatermarkTracker({"left": 5_000, "right": 5_000}, global_ms=3_000)  # per-input values forgotten
    assert restarted.update({"left": _stats(20_000)}) == 3_000


def _stats(*ms: int) -> EventTimeStats:
    s = EventTimeStats()
    for v in ms:
        s.add(v * 1000)
    return s


def test_aggregation_drops_late_groups_not_rows_and_evicts_inclusively():
    agg = StreamingAggregation(Aggregates((CountRows(),)), lambda k: k[1], "append")
    assert agg.run([(("a", 3 * S), {}), (("a", 3 * S), {}), (("b", 6 * S), {})], wms(0, 3)) == [(("a", 3 * S), (2,))]
    assert agg.state_rows == 1
    assert agg.run([(("a", 3 * S), {})] * 3 + [(("c", 3 * S), {})], wms(3)) == []
    assert agg.dropped == 2  # 4 late rows, 2 late groups


def test_update_mode_emits_changes_and_evicts_silently_complete_mode_keeps_all():
    upd = StreamingAggregation(Aggregates((CountRows(),)), lambda k: k[1], "update")
    assert upd.run([(("a", 3 * S), {})], wms(0, 5)) == [(("a", 3 * S), (1,))]
    assert upd.state_rows == 0 and upd.wants_another_batch(10_000)
    full = StreamingAggregation(Aggregates((CountRows(),)), lambda k: k[1], "complete")
    assert full.run([(("a", 3 * S), {})], wms(100)) == [(("a", 3 * S), (1,))]
    assert full.dropped == 0 and full.state_rows == 1 and not full.wants_another_batch(200_000)


def test_join_keeps_state_one_millisecond_past_the_bound():
    join = IntervalJoin(key="k", ts="ts", lower_us=-5 * S, upper_us=5 * S, join_type="left_outer")
    assert join.run([{"k": "a", "ts": 10 * S}], [], wms(0)) == []
    assert join.run([], [], wms(15)) == []  # 00:00:15 = ts + bound: not yet
    out = join.run([], [], wms(15.001))
    assert [(j.left["ts"], j.right) for j in out] == [(10 * S, None)]
    assert join.output_watermark(15_000) == 9_999


def test_join_drops_late_rows_per_row_even_with_a_buffered_match():
    join = IntervalJoin(key="k", ts="ts", lower_us=-10 * S, upper_us=10 * S)
    join.run([{"k": "a", "ts": 10 * S}], [], wms(0))
    out = join.run([], [{"k": "a", "ts": 15 * S}, {"k": "a", "ts": 15 * S + 1000}], wms(15))
    assert join.dropped == 1 and [j.right["ts"] for j in out] == [15 * S + 1000]


@pytest.mark.parametrize("join_type, nulls", [("inner", []), ("left_outer", []), ("right_outer", [("d", 10)]),
                                               ("full_outer", [("d", 10)])])
def test_join_rows_below_the_state_watermark_on_arrival(join_type, nulls):
    # SPARK-49829: a left row is buffered even below its state watermark, so this batch's right rows
    # still match it; an unmatched right row of a right/full outer join gets its null row at once
    join = IntervalJoin(key="k", ts="ts", lower_us=-5 * S, upper_us=5 * S, join_type=join_type)
    out = join.run([{"k": "c", "ts": 12 * S}], [{"k": "c", "ts": 14 * S}, {"k": "d", "ts": 10 * S}], wms(0, 25))
    assert [(j.left["ts"], j.right["ts"]) for j in out if j.left and j.right] == [(12 * S, 14 * S)]
    assert [(j.right["k"], j.right["ts"] // S) for j in out if j.left is None] == nulls
    assert [j for j in out if j.right is None] == [] and join.state_rows == 0 and join.dropped == 0


def test_group_state_timeout_strictly_after_timer_at_equality():
    timeout = InactivityTimeout(key="k", ts="ts", timeout_ms=10_000)
    timeout.run([{"k": "a", "ts": 10 * S}], wms(0))
    assert timeout.run([], wms(20)) == []
    assert [k for k, _ in timeout.run([], wms(20.001))] == ["a"]
    timer = HoldTimer(key="k", ts="ts", hold_ms=10_000)
    timer.run([{"k": "a", "ts": 10 * S}], wms(0))
    assert [(k, g.count) for k, g in timer.run([], wms(20))] == [("a", 1)]


SPARK_40925 = """\
scenario: lag
description: The late filter uses the previous batch's watermark.
contract: dedup
params: {watermark_delay: 5s}
conf: {spark.sql.streaming.noDataMicroBatches.enabled: false}
sources:
  events: {columns: {id: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [[a, "00:00:10"]]}
  - process
  - add: {events: [[b, "00:00:20"]]}
  - process
  - add: {events: [[c, "00:00:12"]]}
  - process
  - add: {events: [[d, "00:00:13"]]}
  - process
  - expect: {watermark: "00:00:15"}
"""


def test_late_rows_judged_by_the_previous_batch_watermark():
    history = simulate(load_scenario_text(SPARK_40925, "lag.scenario.yaml")).history
    assert [(b.watermark_before_ms % 100_000, [r[0] for r in b.rows], b.dropped) for b in history] == [
        (0, ["a"], 0), (5_000, ["b"], 0), (15_000, ["c"], 0), (15_000, [], 1)]
    single = SPARK_40925.replace("conf: {", "conf: {spark.sql.streaming.statefulOperator.allowMultiple: false, ")
    assert simulate(load_scenario_text(single, "single.scenario.yaml")).history[2].dropped == 1


RESTART = """\
scenario: restart
description: A no-data batch owed at the stop is not run after the start; the policy is the first batch's.
contract: union_tumbling_count
params: {window: 10s, left_delay: 5s, right_delay: 5s, policy: max}
conf: {spark.sql.streaming.noDataMicroBatches.enabled: false}
sources:
  left: {columns: {key: string, ts: timestamp}, event_time: ts}
  right: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {left: [[a, "00:00:03"], [a, "00:00:16"]]}
  - process
  - restart:
      conf: {spark.sql.streaming.noDataMicroBatches.enabled: true, spark.sql.streaming.multipleWatermarkPolicy: min}
  - process
  - add: {right: [[b, "00:00:12"]]}
  - process
  - expect: {watermark: "00:00:11"}
"""


def test_restart_loses_the_owed_no_data_batch_and_keeps_the_recorded_policy():
    sim = simulate(load_scenario_text(RESTART, "restart.scenario.yaml"))
    by_step = {s.kind + str(s.index): s.batches for s in sim.steps}
    assert len(by_step["process2"]) == 1 and by_step["restart3"] == [] and by_step["process4"] == []
    after = by_step["process6"]
    # max policy (recorded by batch 0), left forgotten at the restart: max(0, 7 s) stays below 11 s
    assert [b.has_data for b in after] == [True] and [(r[0], r[3]) for r in after[0].rows] == [("a", 1)]
    assert sim.steps[-1].watermark_ms % 100_000 == 11_000


def test_processing_time_trigger_runs_one_batch_per_due_trigger():
    sc = next(s for s in SUITE if s.name == "clock-processing-time-trigger")
    assert [len(s.batches) for s in simulate(sc).steps if s.kind == "advance"] == [0, 1, 1, 0]


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown profile"):
        simulate(SUITE[0], profile="flink")


# -- the suite has teeth against the model: a wrong rule is caught ------------------------------------------

def _disagreeing(names: tuple[str, ...]) -> set[str]:
    return {sc.name for sc in SUITE if sc.name in names and check_scenario(sc).status == "failed"}


def test_late_filter_with_the_current_watermark_is_caught(monkeypatch):
    from eventtime.semantics import microbatch

    monkeypatch.setattr(microbatch, "_flag", lambda conf, key, default: (
        False if key == microbatch.ALLOW_MULTIPLE else default if conf.get(key) is None else conf[key] == "true"))
    assert "dedup-late-filter-lags-without-no-data-batches" in _disagreeing(
        ("dedup-late-filter-lags-without-no-data-batches",))


def test_join_state_without_the_extra_millisecond_is_caught(monkeypatch):
    monkeypatch.setattr(IntervalJoin, "left_state_watermark_us", lambda self, wm: wm * 1000 - self.upper_us)
    assert _disagreeing(("join-left-outer-null-after-watermark", "join-then-count-waits-for-join-output-watermark")) == {
        "join-left-outer-null-after-watermark", "join-then-count-waits-for-join-output-watermark"}


def test_inclusive_group_state_timeout_is_caught(monkeypatch):
    from eventtime.semantics import stateful

    original = stateful.InactivityTimeout.run

    def inclusive(self, rows, wm):
        return original(self, rows, OperatorWatermarks(wm.late_ms, wm.evict_ms + 1))

    monkeypatch.setattr(stateful.InactivityTimeout, "run", inclusive)
    assert _disagreeing(("inactivity-timeout-fires-strictly-after",)) == {"inactivity-timeout-fires-strictly-after"}


def test_counting_late_rows_instead_of_groups_is_caught(monkeypatch):
    original = StreamingAggregation.run

    def per_row(self, rows, wm):
        rows = list(rows)
        out = original(self, rows, wm)
        self.dropped = sum(1 for k, _ in rows if self.output_mode != "complete"
                           and self.event_time_of(k) <= wm.late_ms * 1000)
        return out

    monkeypatch.setattr(StreamingAggregation, "run", per_row)
    assert _disagreeing(("raw-update-mode-dropped-counts-groups",)) == {"raw-update-mode-dropped-counts-groups"}
