"""Watermarks and stream statuses as input (dataflow profile): the valve's rules one by one, the steps
and the `watermarks` check in scenario files (validation, check-model, expect --write), and Hypothesis
properties of the model: watermarks never regress, an idle input never holds the minimum, timers fire
before the watermark that fires them is forwarded."""
from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime.cli import main
from eventtime.loader import load_scenario_text
from eventtime.problems import ScenarioInvalid
from eventtime.semantics import check_scenario
from eventtime.semantics.dataflow import (ON_TIME, WATERMARK, DataflowQuery,
                                            StatusWatermarkValve)
from eventtime.spec import model_only

S = 1_000_000  # µs


# -- StatusWatermarkValve, rule by rule (Flink's class of that name) ------------------------------------

def test_the_valve_forwards_the_minimum_over_active_inputs_only_when_it_advances():
    v = StatusWatermarkValve(2)
    assert v.input_watermark(0, 10) is None  # input 1 is still at Long.MIN_VALUE
    assert v.input_watermark(1, 5) == 5
    assert v.input_watermark(1, 3) is None  # not above input 1's last: ignored
    assert v.input_watermark(1, 12) == 10
    assert v.input_watermark(0, 11) == 11
    assert v.last_output == 11


def test_an_idle_input_leaves_the_minimum_and_its_watermarks_are_ignored():
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 10)
    v.input_watermark(1, 5)
    assert v.input_status(1, True) == 10  # it held the minimum: the rest decide
    assert v.input_watermark(1, 50) is None and v.channels[1].watermark == 5  # idle: ignored
    assert v.input_watermark(0, 20) == 20


def test_active_again_below_the_watermark_neither_moves_it_back_nor_holds_it_until_it_catches_up():
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 10)
    v.input_watermark(1, 5)
    v.input_status(1, True)
    assert v.input_status(1, False) is None and not v.channels[1].aligned
    assert v.input_watermark(0, 30) == 30  # input 1 (5) is not aligned: it does not hold it
    assert v.input_watermark(1, 25) is None and not v.channels[1].aligned
    assert v.input_watermark(1, 35) is None and v.channels[1].aligned  # caught up
    assert v.input_watermark(0, 50) == 35  # and holds the minimum again


def test_when_every_input_is_idle_the_maximum_is_flushed_if_the_last_one_held_the_minimum():
    v = StatusWatermarkValve(2)
    v.input_watermark(0, 10)
    v.input_watermark(1, 30)
    assert v.input_status(1, True) is None  # 30 was not the minimum
    assert v.input_status(0, True) == 30 and v.idle
    ahead = StatusWatermarkValve(2)
    ahead.input_watermark(0, 10)
    ahead.input_watermark(1, 30)
    ahead.input_status(0, True)  # the minimum goes idle first: input 1 alone decides
    assert ahead.last_output == 30
    assert ahead.input_status(1, True) is None  # nothing above 30 to flush


# -- the query: order of the output stream ------------------------------------------------------------

def _query(**kw) -> DataflowQuery:
    args = dict(bound_ms=0, length_us=10 * S, lateness_ms=0, clock_start_ms=0, trigger_ms=None)
    args.update(kw)
    q = DataflowQuery(("events",), **args)  # type: ignore[arg-type]
    q.start()
    return q


def test_timers_fire_before_the_watermark_that_fires_them_is_forwarded():
    q = _query(partitions={"events": 1}, generator={"events": "none"})
    q.add("events", [{"key": "a", "ts": 3 * S}, {"key": "a", "ts": 13 * S}], partition=0)
    q.signal(["events#0"], WATERMARK, 9_999)
    q.signal(["events#0"], WATERMARK, 25_000)
    [b] = q.process()
    assert [k for k, _ in b.emitted] == ["row", WATERMARK, "row", WATERMARK]
    assert b.forwarded == [9_999, 25_000]
    assert [r[1] for k, r in b.emitted if k == "row"] == [0, 10 * S]


def test_an_explicit_watermark_makes_an_idle_partition_active_again_and_it_holds_its_subtask():
    """Partitions of one subtask combine as Flink's WatermarkOutputMultiplexer does: a partition active
    again below the subtask's watermark does not move it back, but holds it until it catches up (no
    "aligned" rule there, unlike the operator's valve over subtasks)."""
    q = _query(partitions={"events": 2}, generator={"events": "none"})
    q.signal(["events#0", "events#1"], WATERMARK, 5_000)
    q.signal(["events#1"], "idle")
    q.signal(["events#0"], WATERMARK, 8_000)
    q.process()
    assert q.watermark == 8_000  # partition 1 idle when the batch ends
    q.signal(["events#1"], WATERMARK, 6_000)  # active again (the multiplexer's setWatermark)
    q.process()
    q.signal(["events#0"], WATERMARK, 20_000)
    q.process()
    assert q.watermark == 8_000  # held by partition 1's 6 s, not moved back to it
    q.signal(["events#1"], WATERMARK, 30_000)
    q.process()
    assert q.watermark == 20_000
    valve = _query(partitions={"events": 2}, subtasks={"events": 2}, generator={"events": "none"})
    for part, kind, value in [(0, WATERMARK, 5_000), (1, WATERMARK, 5_000), (1, "idle", None), (0, WATERMARK, 8_000)]:
        valve.signal([f"events#{part}"], kind, value)
    valve.process()
    valve.signal(["events#1"], WATERMARK, 6_000)
    valve.process()
    valve.signal(["events#0"], WATERMARK, 20_000)
    valve.process()
    assert valve.watermark == 20_000  # one subtask per partition: the valve leaves the unaligned one out


# -- scenario files ---------------------------------------------------------------------------------------

HEAD = """\
scenario: s
description: seed 000.
contract: lateness_count
profile: {profile}
params: {{window: 10s, bound: 0s, allowed_lateness: 0s}}
sources:
  events:
    columns: {{key: string, ts: timestamp}}
    event_time: ts
    partitions: 2
{source}steps:
"""


def _text(steps: str, profile: str = "dataflow", source: str = "") -> str:
    return HEAD.format(profile=profile, source=source) + steps


def _problems(steps: str, **kw) -> list[str]:
    try:
        load_scenario_text(_text(steps, **kw), "s.yaml")
    except ScenarioInvalid as exc:
        return [str(p) for p in exc.problems]
    return []


@pytest.mark.parametrize("steps, kw, expected", [
    ('  - watermark: {events: "00:00:10"}\n  - process\n', {"profile": "spark"},
     "s.yaml:12:5: `watermark` gives a watermark as input, which only the dataflow profile's model takes"),
    ("  - idle: events partition 1\n  - process\n", {"profile": "spark"},
     "s.yaml:12:5: `idle` gives a stream status as input, which only the dataflow profile's model takes"),
    ("  - idle: events partition 2\n  - process\n", {},
     "s.yaml:12:11: unknown partition 2: source 'events' has 2 partitions (0-1)"),
    ("  - active: [events partition 0, evnts]\n  - process\n", {},
     "s.yaml:12:34: unknown source 'evnts'; did you mean 'events'?"),
    ('  - watermark: {events partition 7: "00:00:10"}\n  - process\n', {},
     "s.yaml:12:17: unknown partition 7: source 'events' has 2 partitions (0-1)"),
    ('  - watermark: {events: "ten"}\n  - process\n', {}, "s.yaml:12:25: cannot read timestamp 'ten'"),
    ("  - idle: events partition 01\n  - process\n", {}, "s.yaml:12:11: "),
    ("  - process\n  - expect: {watermarks: []}\n", {"profile": "spark"},
     "s.yaml:13:14: `watermarks` checks the watermarks an operator forwarded, which only the dataflow profile's "
     "model gives (add `profile: dataflow`): a Spark run does not show them"),
    ("  - process\n", {"profile": "spark", "source": "    idle_timeout: 5s\n"},
     "s.yaml:11:5: `idle_timeout` is a source setting only the dataflow profile's model takes"),
    ("  - process\n", {"source": "    subtasks: 2\n    generator: sometimes\n"},
     "s.yaml:12:16: 'sometimes' is not allowed here"),
    ("  - idle\n  - process\n", {}, "s.yaml:12:5: step 'idle' needs a value"),
])
def test_misuse_is_a_file_line_error(steps, kw, expected):
    found = _problems(steps, **kw)
    assert any(p.startswith(expected) for p in found), found


def test_subtasks_need_partitions():
    text = _text("  - process\n").replace("    partitions: 2\n", "    subtasks: 2\n")
    with pytest.raises(ScenarioInvalid) as exc:
        load_scenario_text(text, "s.yaml")
    assert "s.yaml:10:15: source 'events' has no `partitions:` for its 2 subtasks" in str(exc.value.problems[0])


SCENARIO = _text("""\
  - add: {events: {partition 0: [[a, "00:00:04"]], partition 1: [[b, "00:00:15"]]}}
  - process
  - expect: {no_output: true, watermark: "00:00:03.999", watermarks: ["00:00:03.999"]}
  - idle: events partition 0
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 1, on_time, "00:00:09.999"]]
      watermarks: ["00:00:14.999"]
""")


def test_a_scenario_with_status_steps_is_judged_by_the_model_and_not_run_on_spark():
    sc = load_scenario_text(SCENARIO, "s.yaml")
    assert check_scenario(sc).status == "passed"
    assert model_only(sc).startswith("model only: step 4 (idle) gives a stream status as input")
    from eventtime.runner import applicability

    assert applicability(sc, "4.0.0", frozenset({"apply_in_pandas_with_state"})).startswith("model only")
    wrong = load_scenario_text(SCENARIO.replace('watermarks: ["00:00:14.999"]', 'watermarks: ["00:00:09.999"]'),
                               "s.yaml")
    result = check_scenario(wrong)  # a control: the check can fail, at its line
    assert result.status == "failed"
    [failure] = [f for s in result.steps for f in s.failures]
    assert failure.where.line == 19 and "forwarded watermarks [00:00:14.999]" in failure.message
    spark = check_scenario(sc, "spark")  # the spark profile takes no stream status, and says so
    assert spark.status == "not_applicable" and "s.yaml:15:5: step 'idle' gives a watermark or a stream" in spark.reason


def test_check_model_and_expect_write_understand_the_new_steps(tmp_path, capsys):
    path = tmp_path / "s.scenario.yaml"
    path.write_text(SCENARIO.replace('["00:00:14.999"]', '["00:00:01"]').replace(
        'watermarks: ["00:00:03.999"]', "watermarks: []"), encoding="utf-8")
    assert main(["check-model", str(path)]) == 1
    assert main(["expect", "--write", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert 'watermarks: ["00:00:03.999"]' in text and 'watermarks: ["00:00:14.999"]' in text
    capsys.readouterr()
    assert main(["check-model", str(path)]) == 0
    assert main(["expect", str(path)]) == 0
    assert 'watermarks: ["00:00:14.999"]' in capsys.readouterr().out


def test_the_bundled_seed_scenarios_cite_their_seed_and_pass_and_can_fail():
    from eventtime.loader import load_scenario

    folder = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "dataflow")
    seeds = sorted(f for f in os.listdir(folder) if f.startswith("seed"))
    assert len(seeds) >= 13
    for name in seeds:
        sc = load_scenario(os.path.join(folder, name))
        assert f"seed {name[4:7]}" in " ".join(sc.description.split()), name
        assert check_scenario(sc).status == "passed", name
        assert model_only(sc) is not None, name  # none of them is a Spark run's
        # a control per file: a forwarded watermark that is not there fails
        text = re.sub(r"(?<!\w)watermarks: \[", 'watermarks: ["00:00:00.001", ', "\n".join(sc.lines), count=1)
        assert check_scenario(load_scenario_text(text, name)).status == "failed", name


# -- properties (Hypothesis) ------------------------------------------------------------------------------

_LONG = os.environ.get("EVENTTIME_MODEL_EXAMPLES")
FAST = settings(max_examples=int(_LONG or 150), deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.too_slow])

_op = st.one_of(
    st.tuples(st.just("row"), st.integers(0, 3), st.integers(0, 60)),
    st.tuples(st.just(WATERMARK), st.integers(0, 3), st.integers(0, 60_000)),
    st.tuples(st.just("idle"), st.integers(0, 3), st.just(0)),
    st.tuples(st.just("active"), st.integers(0, 3), st.just(0)),
    st.tuples(st.just("process"), st.just(0), st.just(0)),
    st.tuples(st.just("advance"), st.just(0), st.integers(1, 4_000)),
)


def _run(ops, partitions: int, subtasks: int, generator: str, idle_timeout: int | None, skip: int | None = None):
    """Run `ops` on a query; `skip`: leave that partition's operations out (it only goes idle at once)."""
    clocked = {"time_lag": {"lag_ms": {"events": 2_000}},  # seed 001's TimeLagWatermarkGenerator
               "idle_after": {"lag_ms": {"events": 2_000}, "idle_after_ms": {"events": 3_000}}}.get(generator, {})
    q = _query(partitions={"events": partitions}, subtasks={"events": subtasks},
               generator={"events": "periodic" if generator == "idle_after" else generator},
               idle_timeout_ms=idle_timeout, bound_ms=1_000, **clocked)
    if skip is not None:  # idle before anything else is read
        q.signal([f"events#{skip}"], "idle")
        q.process()
    batches = []
    for kind, part, value in ops:
        part %= partitions
        if part == skip and kind not in ("process", "advance"):
            continue
        if kind == "row":
            q.add("events", [{"key": "k", "ts": value * S}], partition=part)
        elif kind in (WATERMARK, "idle", "active"):
            q.signal([f"events#{part}"], kind, value if kind == WATERMARK else None)
        elif kind == "process":
            batches += q.process()
        else:
            batches += q.advance(value)
    batches += q.process()
    return q, batches


@FAST
@given(st.lists(_op, max_size=30), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from(["periodic", "punctuated", "none", "time_lag", "idle_after"]), st.sampled_from([None, 3_000]))
def test_watermarks_never_regress_and_timers_fire_before_the_forwarded_watermark(ops, partitions, subtasks, generator,
                                                                                  idle_timeout):
    q, batches = _run(ops, partitions, subtasks, generator, idle_timeout)
    forwarded = [w for b in batches for w in b.forwarded]
    assert forwarded == sorted(set(forwarded))  # strictly increasing
    afters = [b.watermark_after_ms for b in batches]
    assert afters == sorted(afters)
    for b in batches:
        for i, (kind, item) in enumerate(b.emitted):
            if kind == "row" and item[4] == ON_TIME:
                fired_at = item[5] // 1000  # maxTimestamp: the watermark that fires it reaches it
                before = [w for k, w in b.emitted[:i] if k == WATERMARK]
                after = [w for k, w in b.emitted[i:] if k == WATERMARK]
                assert all(w < fired_at for w in before)  # no watermark that reached it went out before it
                assert after and after[0] >= fired_at  # then the watermark that fired it is forwarded


@FAST
@given(st.lists(_op, max_size=30), st.sampled_from([(2, 1), (2, 2), (3, 3), (4, 2)]),
       st.sampled_from(["periodic", "punctuated", "none"]))
def test_an_idle_input_never_holds_the_minimum(ops, shape, generator):
    """A partition idle from the start and never heard from again leaves the watermark to the others:
    the same as a source without it (here: that partition's operations left out, the rest unchanged)."""
    partitions, subtasks = shape
    skip = partitions - 1
    with_idle, _ = _run(ops, partitions, subtasks, generator, None, skip=skip)
    # the reference: the same operations with that partition's replaced by nothing, and one subtask per
    # remaining reader; an idle subtask that reads only the skipped partition leaves the valve too
    without = [(k, p % partitions, v) for k, p, v in ops if p % partitions != skip or k in ("process", "advance")]
    alone, _ = _run(without, partitions - 1, subtasks, generator, None)
    assert with_idle.watermark == alone.watermark


# -- one scenario, two profiles, side by side ---------------------------------------------------------------

def test_compare_profiles_shows_where_spark_and_the_dataflow_model_differ(capsys):
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "dataflow")
    per_partition = os.path.join(folder, "seed001-kafka-per-partition-ascending.scenario.yaml")
    assert main(["compare-profiles", per_partition]) == 0
    out = capsys.readouterr().out
    # Spark: one watermark from the maximum over the partitions drops partition 0's 00:00:09;
    # the dataflow model's per-partition minimum counts it
    assert '  spark     watermark "00:00:11.999"  rows [[p0, "00:00:00", "00:00:10", 1, dropped, "00:00:09"]]' in out
    assert '  dataflow  watermark "00:00:08.999"  forwarded ["00:00:08.999"]  rows []' in out
    assert "3 of 3 expect steps differ between Spark and the Dataflow model" in out
    same = os.path.join(folder, "late-firing-within-allowed-lateness.scenario.yaml")
    assert main(["compare-profiles", same]) == 0
    assert "0 of 3 expect steps differ" in capsys.readouterr().out
    status = os.path.join(folder, "seed000-stream-status-idle-input.scenario.yaml")
    assert main(["compare-profiles", status]) == 0
    out = capsys.readouterr().out
    assert "spark: cannot run these steps: " in out and "step 'watermark' gives a watermark" in out
    assert '  dataflow  watermark "00:00:30"  forwarded ["00:00:30"]' in out


_valve_op = st.tuples(st.integers(0, 2), st.sampled_from(["watermark", "idle", "active"]), st.integers(0, 100))


@given(st.lists(_valve_op, max_size=40))
@settings(max_examples=200, deadline=None)
def test_an_ignored_channel_moves_no_watermark_and_its_status_still_counts(ops):
    """Seed 000's SingleWatermarkCoFlatMap (processWatermark2 overridden only): channel 2 ignored. The
    watermarks forwarded are those of a valve without it; the operator is idle exactly when every channel,
    the ignored one included, is idle."""
    with_ignored, without = StatusWatermarkValve(3, ignored=[2]), StatusWatermarkValve(2)
    active = [True, True, True]
    for channel, kind, value in ops:
        if kind == "watermark":
            with_ignored.input_watermark(channel, value)
            if channel < 2:
                without.input_watermark(channel, value)
        else:
            active[channel] = kind == "active"
            with_ignored.input_status(channel, kind == "idle")
            if channel < 2:
                without.input_status(channel, kind == "idle")
        assert with_ignored.status_idle == (not any(active))
    assert ([o for o in with_ignored.outputs if o[0] == WATERMARK]
            == [o for o in without.outputs if o[0] == WATERMARK])
