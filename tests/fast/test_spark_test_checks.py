"""What Spark's own streaming tests check can be said in a scenario, judged without Spark: an expected
failure of one query of a job (`failure` with `query`), numRowsUpdated summed since the previous check
of it (`updated_since_check`, StreamTest's `assertNumStateRows`), a range for a watermark; and the
failure explanation of a window end that is not a timestamp (docs/scenario-format.md)."""
from __future__ import annotations

import textwrap

import pytest

from eventtime.harness.observations import BatchObservation
from eventtime.judge import Observed, judge
from eventtime.loader import ScenarioInvalid, load_scenario, load_scenario_text
from eventtime.results import FailureInfo
from eventtime.semantics.check import check_scenario

T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z, the scenarios' date


def _s(seconds: float) -> int:
    return T0_MS + int(seconds * 1000)


# -- numRowsUpdated summed since the previous check of it -------------------------------------------
# expected values from the semantics (a window count puts each group a batch aggregates once), the same
# on Spark: tests/spark/test_spark_test_checks.py runs this text
SPAN = textwrap.dedent("""\
    scenario: updated-since-check
    description: numRowsUpdated summed since the previous check of it, as Spark's StreamTest sums it.
    contract: tumbling_count
    params: {window: 10 seconds, watermark_delay: 5 seconds, output_mode: append}
    sources:
      events: {columns: {key: string, ts: timestamp}, event_time: ts}
    steps:
      - add: {events: [[a, "00:00:03"], [a, "00:00:07"]]}
      - process
      - expect: {updated: 1, watermark: {at_least: "00:00:01", at_most: "00:00:02"}}
      - add: {events: [[b, "00:00:04"]]}
      - process
      - expect: {updated: 1, updated_since_check: 2, operators: [{updated_since_check: 2}]}
      - add: {events: [[a, "00:00:16"]]}
      - process
      - expect: {updated_since_check: 1, dropped_since_check: 0}
      - add: {events: [[d, "00:00:18"]]}
      - process
      - restart
      - add: {events: [[e, "00:00:19"]]}
      - process
      - expect: {updated: 2, updated_since_check: 1}
    """)


def test_the_model_sums_updates_since_the_previous_check_and_since_the_query_started():
    result = check_scenario(load_scenario_text(SPAN, "span.yaml"))
    assert result.status == "passed", [(s.where, [f.message for f in s.failures]) for s in result.steps]


@pytest.mark.parametrize("old, new, line, message", [
    # the first two expects' updates: 2 since no check of the span before, where `updated` says 1
    ("updated: 1, updated_since_check: 2, operators", "updated: 1, updated_since_check: 1, operators", 13,
     "2 row(s) updated in state since the previous check of `updated_since_check`/`dropped_since_check` or the "
     "query's start (batches 0 to 2), expected 1"),
    ("operators: [{updated_since_check: 2}]", "operators: [{updated_since_check: 1}]", 13,
     "operator 1 of 1 (stateStoreSave): 2 row(s) updated in state since the previous check"),
    # after the restart: only the batches since it, though `updated` sums both of the expect's
    ("{updated: 2, updated_since_check: 1}", "{updated: 2, updated_since_check: 2}", 22,
     "1 row(s) updated in state since the previous check"),
    ("dropped_since_check: 0}", "dropped_since_check: 1}", 16, "0 row(s) dropped as late since the previous check"),
], ids=["span", "operator", "restart", "dropped"])
def test_a_wrong_sum_since_the_check_fails_at_its_line(old, new, line, message):
    assert old in SPAN
    result = check_scenario(load_scenario_text(SPAN.replace(old, new), "span.yaml"))
    failures = [f for s in result.steps for f in s.failures]
    assert result.status == "failed" and [f.where.line for f in failures] == [line], failures
    assert message in failures[0].message, failures[0].message


def test_a_check_of_updated_alone_does_not_close_the_span():
    # `updated: 1` at the second expect, not `updated_since_check`: the third expect's span starts at the first
    text = SPAN.replace("{updated: 1, updated_since_check: 2, operators: [{updated_since_check: 2}]}", "{updated: 1}")
    text = text.replace("{updated_since_check: 1, dropped_since_check: 0}", "{updated_since_check: 3}")
    result = check_scenario(load_scenario_text(text, "span.yaml"))
    assert result.status == "passed", [[f.message for f in s.failures] for s in result.steps]


# -- a range for a watermark ------------------------------------------------------------------------
@pytest.mark.parametrize("bounds, verdict", [
    ('{at_least: "00:00:01", at_most: "00:00:02"}', "passed"),
    ('{at_least: "00:00:02"}', "passed"),
    ('{at_most: "00:00:02"}', "passed"),
    ('{at_least: "00:00:02.001"}', "failed"),
    ('{at_most: "00:00:01.999"}', "failed"),
    ("{at_least: initial, at_most: \"00:00:01\"}", "failed"),
])
def test_a_watermark_range_holds_each_bound_inclusive(bounds, verdict):
    text = SPAN.replace('{at_least: "00:00:01", at_most: "00:00:02"}', bounds)
    result = check_scenario(load_scenario_text(text, "span.yaml"))
    assert result.status == verdict


def test_a_watermark_outside_its_range_says_both_in_the_scenarios_form():
    text = SPAN.replace('{at_least: "00:00:01", at_most: "00:00:02"}', '{at_least: "00:00:03", at_most: "00:00:05"}')
    result = check_scenario(load_scenario_text(text, "span.yaml"))
    (failure,) = [f for s in result.steps for f in s.failures]
    assert (failure.where.line, failure.where.column) == (10, 37), failure.where
    assert failure.message == "watermark is 00:00:02, expected at least 00:00:03 and at most 00:00:05"


def test_an_empty_watermark_range_is_an_error_at_its_line():
    text = SPAN.replace('{at_least: "00:00:01", at_most: "00:00:02"}', '{at_least: "00:00:02", at_most: "00:00:01"}')
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(text, "span.yaml")
    assert any(":10:" in str(p) and "`at_most` is before `at_least`" in str(p) for p in info.value.problems)
    text = SPAN.replace('{at_least: "00:00:01", at_most: "00:00:02"}', '{at_lest: "00:00:01"}')
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(text, "span.yaml")
    assert any("at_lest" in str(p) for p in info.value.problems), info.value.problems


# -- an expected failure of one query of a job ------------------------------------------------------
JOB_CONTRACT = textwrap.dedent("""\
    contract: two_layers
    description: clicks -> raw records and a count per page.
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts, from: {format: json, path: /data/clicks}}
    queries:
      raw: {columns: "page string, ts timestamp"}
      counts: {columns: "page string, clicks bigint"}
    """)

JOB_SCENARIO = textwrap.dedent("""\
    scenario: one-query-fails
    description: the counts query fails; the raw one does not
    contract: two_layers
    steps:
      - add: {clicks: [[boom, "00:00:01"]]}
      - process
      - expect: {query: counts, failure: {message: boom}}
    """)


def _job(tmp_path, scenario=JOB_SCENARIO, contract=JOB_CONTRACT):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "two_layers.contract.yaml").write_text(contract)
    path = tmp_path / "s.scenario.yaml"
    path.write_text(scenario)
    return load_scenario(str(path))


def _failure(query):
    return FailureInfo("the query failed: boom", ["STREAM_FAILED"], ["StreamingQueryException"],
                       "ValueError: boom", 2, query=query)


def test_an_expected_failure_names_the_query_of_the_job_that_fails(tmp_path):
    sc = _job(tmp_path)
    step = sc.steps[-1]
    assert step.query == "counts" and step.failure is not None
    assert judge(step, Observed([], [], "append", ["page", "clicks"], _failure("counts")), sc) == []
    (wrong,) = judge(step, Observed([], [], "append", ["page", "clicks"], _failure("raw")), sc)
    assert wrong.where.line == 7
    assert wrong.message == ("expected query 'counts' to have failed, but query 'raw' of the job failed: the query "
                             "failed: boom")
    (none,) = judge(step, Observed([], [], "append", ["page", "clicks"], None), sc)
    assert none.message == "expected the query to have failed, but it has not"


def test_a_failure_still_stands_alone_beside_its_query(tmp_path):
    with pytest.raises(ScenarioInvalid) as info:
        _job(tmp_path, JOB_SCENARIO.replace("failure: {message: boom}", "failure: {message: boom}, rows: []"))
    assert any(":7:" in str(p) and "an expected failure stands alone" in str(p) for p in info.value.problems)


def test_a_contract_of_one_query_and_no_output_says_which_query_to_name(tmp_path):
    one = JOB_CONTRACT.replace('  counts: {columns: "page string, clicks bigint"}\n', "")
    assert one != JOB_CONTRACT
    text = JOB_SCENARIO.replace("{query: counts, failure: {message: boom}}", "{rows: []}")
    with pytest.raises(ScenarioInvalid) as info:
        _job(tmp_path, text, one)
    problems = [str(p) for p in info.value.problems]
    assert any(":7:" in p and "contract 'two_layers' declares its one query under `queries:` (raw) and no `output`: "
               "say `query: raw` in this expect" in p for p in problems), problems
    assert not any("several" in p for p in problems), problems


# -- a window end that is not a timestamp -----------------------------------------------------------
BIGINT_END = textwrap.dedent("""\
    scenario: seconds
    description: window ends as Spark's own tests write them, a bigint of seconds
    contract:
      description: a count per key and window, its end in seconds
      sources:
        events: {columns: "key string, ts timestamp", event_time: ts}
      output:
        columns: "key string, window_end bigint, count bigint"
    steps:
      - add: {events: [[a, "00:00:03"], [a, "00:00:16"]]}
      - process
      - expect: {rows: [[a, 10, 1]]}
    """)


def test_a_window_end_that_is_not_a_timestamp_is_not_explained_as_one():
    sc = load_scenario_text(BIGINT_END, "s.yaml")
    batches = [BatchObservation(0, 2, None, 0, _s(11), rows=[], event_time={"max": _s(16)}),
               BatchObservation(1, 0, None, _s(11), _s(11), rows=[("a", 10, 2)])]
    (failure,) = judge(sc.steps[-1], Observed(batches, batches, "append", ["key", "window_end", "count"]), sc)
    assert failure.message == "rows since the previous expect: 1 missing, 1 unexpected"
    # 10 is seconds, not an instant: no "a row ending at initial ... its window was closed"
    assert "ending at" not in failure.explanation and "closed" not in failure.explanation, failure.explanation
    # the same row with a timestamp end is explained
    ts = load_scenario_text(BIGINT_END.replace("window_end bigint", "window_end timestamp")
                            .replace("[[a, 10, 1]]", '[[a, "00:00:10", 1]]'), "s.yaml")
    rows = [BatchObservation(1, 0, None, _s(11), _s(11), rows=[("a", (T0_MS + 10_000) * 1000, 2)])]
    (explained,) = judge(ts.steps[-1], Observed(rows, batches[:1] + rows, "append", ["key", "window_end", "count"]), ts)
    assert "a row ending at 00:00:10 is written by the first batch" in explained.explanation, explained.explanation


# -- a snapshot fills the sums since the check ---------------------------------------------------------
def test_a_snapshot_writes_the_sum_since_the_check_not_since_the_expect(tmp_path):
    from eventtime import snapshot as snap
    from eventtime import spec as m
    from eventtime.results import PASSED, ScenarioResult, StepResult

    def op(updated, dropped=0):
        return [{"operatorName": "stateStoreSave", "numRowsTotal": 1, "numRowsUpdated": updated,
                 "numRowsDroppedByWatermark": dropped}]
    earlier = BatchObservation(0, 2, None, 0, _s(2), operators=op(1), state_rows=1)
    latest = BatchObservation(1, 1, None, _s(2), _s(2), operators=op(1, dropped=1), state_rows=2, dropped=1)
    text = SPAN.split("steps:")[0] + textwrap.dedent("""\
        steps:
          - add: {events: [[a, "00:00:03"], [a, "00:00:07"]]}
          - process
          - expect: {updated: 1}
          - add: {events: [[b, "00:00:04"]]}
          - process
          - expect:
              updated:
              updated_since_check:
              dropped_since_check:
              operators: [{updated_since_check: }]
        """)
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(text)
    sc = snap.load_scenario(path, display_path=path.name)
    result = ScenarioResult(sc, "impl", PASSED)
    for step in sc.steps:
        sr = StepResult(step.index, step.kind, step.where)
        if isinstance(step, m.ExpectStep):
            first = step.index == 3
            sr.observed = Observed([earlier] if first else [latest], [earlier] if first else [earlier, latest],
                                   "append", sc.contract.output_names,
                                   since_check=[earlier] if first else [earlier, latest])
        result.steps.append(sr)
    plan = snap.plan_file(path, path.name, [result], "create")
    assert plan.refused is None
    assert plan.new.endswith("  - expect:\n      updated: 1\n      updated_since_check: 2\n      dropped_since_check: 1\n"
                             "      operators: [{updated_since_check: 2}]\n"), plan.new
