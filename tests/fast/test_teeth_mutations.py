"""The kit's teeth (`eventtime.teeth`): each check of a passing run judged again with mutated
expectations on the observations the run kept, no Spark. Runs are the model's (`check-model`, which
keeps its observations as a Spark run does) or observations written out here."""
from __future__ import annotations

import datetime as _dt
import decimal
from pathlib import Path

import pytest

from eventtime import coltypes
from eventtime.harness.observations import BatchObservation
from eventtime.judge import Observed, judge
from eventtime.loader import load_scenario, load_scenario_text
from eventtime.registry import ContractLookup
from eventtime.results import PASSED, FailureInfo, ScenarioResult, StepResult
from eventtime.scenarios import SUITE_DIR
from eventtime.semantics.check import check_scenario
from eventtime.spec import ExpectStep, ExpectedRecord, TopicCheck
from eventtime.teeth import changed_value, examine, report_lines, totals_line
from eventtime.topics import Record

pytest_plugins = ["pytester"]

HEAD = """\
scenario: s
description: d
contract: tumbling_count
params: {window: 10 seconds, watermark_delay: 5 seconds, output_mode: append}
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
steps:
"""

CONTROL = HEAD + """\
  - add:
      events: [[a, "00:00:03"], [a, "00:00:07"]]
  - expect: {no_output: true, batches: 0}
  - process
  - expect: {no_output: true, watermark: "00:00:02", state_rows: 1}
  - add:
      events: [[a, "00:00:16"]]
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 2]]
      watermark: "00:00:11"
  - add:
      events: [[a, "00:00:04"]]
  - expect:
      rows: []
      dropped: 0
  - process
  - expect: {no_output: true, dropped: 1}
"""


def model_run(text: str, path: str = "s.yaml") -> ScenarioResult:
    result = check_scenario(load_scenario_text(text, path))
    assert result.status == PASSED, result.steps
    return result


def where_of(teeth) -> dict[str, str]:
    return {str(c.where): c.label for c in teeth.vacuous}


def test_a_check_no_step_could_make_fail_is_reported_vacuous_at_its_line():
    teeth = examine(model_run(CONTROL))
    # line 12: an expect right after an `add` (the query started before any row existed); lines 24-25:
    # after an `add`, before the `process` that reads it
    assert where_of(teeth) == {"s.yaml:12:25": "no_output", "s.yaml:12:31": "batches",
                               "s.yaml:24:13": "rows: []", "s.yaml:25:7": "dropped"}
    assert all("no step since the previous expect can run a micro-batch" in c.vacuous for c in teeth.vacuous)
    assert teeth.toothless and not teeth.weak
    # the same checks after a `process` have teeth: every mutation of them fails
    assert [c.label for c in teeth.checks if c.where.line == 27] == ["no_output", "dropped"]
    assert [c.label for c in teeth.vacuous if c.where.line == 27] == []
    lines = report_lines(teeth, load_scenario_text(CONTROL, "s.yaml").lines)
    assert lines[0].startswith("TOOTHLESS s  [model (spark profile)]  (")
    assert "4 vacuous" in lines[0]
    assert any(line.startswith("  s.yaml:24:13: vacuous `rows: []`: no step since the previous expect") for line in lines)
    assert "      24 | rows: []" in lines


def test_the_control_made_meaningful_has_teeth():
    fixed = CONTROL.replace('  - expect: {no_output: true, batches: 0}\n',
                            '  - process\n  - expect: {batches: 2}\n').replace(
        '  - expect:\n      rows: []\n      dropped: 0\n', '')
    teeth = examine(model_run(fixed))
    assert teeth.vacuous == [] and teeth.weak == [] and not teeth.toothless
    assert len(teeth.checks) == 8 and teeth.mutations > 2 * len(teeth.checks)


def test_each_mutation_family_fails_against_the_model_run():
    text = HEAD + """\
  - add:
      events: [[a, "00:00:03"], [b, "00:00:07"]]
  - process
  - add:
      events: [[a, "00:00:16"]]
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 1], [b, "00:00:00", "00:00:10", 1]]
      output: [[a, "00:00:00", "00:00:10", 1], [b, "00:00:00", "00:00:10", 1]]
      last_batch: [[a, "00:00:00", "00:00:10", 1], [b, "00:00:00", "00:00:10", 1]]
      ordered: true
      watermark: "00:00:11"
      dropped: 0
      state_rows: 1
      event_time: {min: "00:00:16", max: "00:00:16", watermark: "00:00:02"}
      batches:
        - {data: true, watermark_before: initial, watermark_after: "00:00:02", state_rows: 2}
        - {data: false, watermark_before: "00:00:02", rows: []}
        - {data: true, watermark_before: "00:00:02", watermark_after: "00:00:11", state_rows: 3, dropped: 0}
        - {data: false, watermark_before: "00:00:11", state_rows: 1}
"""
    result = model_run(text)
    teeth = examine(result)
    assert teeth.vacuous == [] and teeth.weak == []
    by_label = {c.label: c for c in teeth.checks}
    assert set(by_label) == {"rows", "output", "last_batch", "watermark", "dropped", "state_rows", "event_time",
                             "batches", "batches[1]", "batches[2]", "batches[3]", "batches[4]"}
    # a value per column, a row removed, a row counted twice, the order: each judged and failed
    assert by_label["rows"].mutations == 4 + 3
    assert by_label["watermark"].mutations == 2 and by_label["event_time"].mutations == 6
    assert by_label["dropped"].mutations == 1  # 0 - 1 is no count


def test_a_check_the_judge_ignores_is_vacuous(monkeypatch):
    """A judge that looks at nothing of a check passes every mutation of it: vacuous, at its line."""
    result = model_run(CONTROL.replace('      watermark: "00:00:11"\n', '      watermark: "00:00:11"\n'
                                       '      event_time: {max: "00:00:16"}\n'))
    assert [c.label for c in examine(result).vacuous if c.where.line == 21] == []  # the judge looks at it
    monkeypatch.setattr("eventtime.judge._judge_event_time", lambda step, observed, scenario: [])
    teeth = examine(result)
    [event_time] = [c for c in teeth.vacuous if c.where.line == 21]
    assert (event_time.label, str(event_time.where)) == ("event_time", "s.yaml:21:19")
    assert event_time.vacuous == ("it passes whatever is expected: event_time max +1 ms; event_time max -1 ms "
                                  "pass as well")


def fake_result(text: str, observations: list[Observed], contracts: ContractLookup | None = None,
                path: str = "s.yaml") -> ScenarioResult:
    """A passed run of `text` whose expect steps observed `observations`, in order (each must pass)."""
    sc = load_scenario_text(text, path, contracts=contracts)
    result = ScenarioResult(sc, "impl", PASSED)
    result.steps.append(StepResult(0, "start", sc.where))
    seen = iter(observations)
    for step in sc.steps:
        sr = StepResult(step.index, step.kind, step.where)
        if isinstance(step, ExpectStep):
            sr.observed = next(seen)
            assert judge(step, sr.observed, sc, sr.observed.unjudged) == [], "the run must pass"
        result.steps.append(sr)
    return result


def batch(i: int, rows=(), wm_before=0, wm_after=0, operators=(), input_rows=1) -> BatchObservation:
    return BatchObservation(batch_id=i, input_rows=input_rows, timestamp_ms=None, watermark_before_ms=wm_before,
                            watermark_after_ms=wm_after, rows=list(rows), operators=list(operators))


def observed(*batches: BatchObservation, failure: FailureInfo | None = None,
             schema=None, unjudged: frozenset[str] = frozenset()) -> Observed:
    obs = Observed(list(batches), list(batches), "append", ["key", "window_start", "window_end", "count"],
                   failure, schema)
    obs.unjudged = unjudged
    return obs


OPS = [{"operatorName": "stateStoreSave", "numRowsTotal": 2, "numRowsUpdated": 3, "numRowsDroppedByWatermark": 1}]


def test_operators_updated_batch_watermark_and_schema_have_teeth():
    text = HEAD + """\
  - add: {events: [[a, "00:00:03"]]}
  - process
  - expect:
      updated: 3
      batch_watermark: "00:00:02"
      operators: [{name: stateStoreSave, state_rows: 2, updated: 3, dropped: 1}]
      schema: "key string, window_start timestamp, window_end timestamp, count bigint"
"""
    schema = [("key", "string", True), ("window_start", "timestamp", True), ("window_end", "timestamp", True),
              ("count", "bigint", False)]
    b = batch(0, wm_before=1_704_067_202_000, operators=OPS)
    teeth = examine(fake_result(text, [observed(b, schema=schema)]))
    assert teeth.vacuous == [] and teeth.weak == []
    assert {c.label: c.mutations for c in teeth.checks} == {
        "updated": 2, "batch_watermark": 2, "operators": 2, "operators[1]": 1 + 2 + 2 + 2, "schema": 4 + 1 + 1 + 1}


def test_a_check_the_implementation_declares_unjudged_is_said_so_not_vacuous():
    text = HEAD + """\
  - add: {events: [[a, "00:00:03"]]}
  - process
  - expect: {state_rows: 5, updated: 7, watermark: initial, batches: [{data: true, state_rows: 5}]}
"""
    teeth = examine(fake_result(text, [observed(batch(0, operators=OPS), unjudged=frozenset({"state_rows"}))]))
    assert [c.label for c in teeth.unjudged] == ["state_rows", "updated"]
    # a batch's `state_rows` passes by the declaration too; its `data` is judged and has teeth
    [entry] = [c for c in teeth.checks if c.label == "batches[1]"]
    assert (entry.mutations, entry.survived, entry.unjudged) == (3, [], False)
    assert teeth.vacuous == [] and teeth.weak == [] and not teeth.toothless
    assert "2 not judged on this implementation (it declares so)" in report_lines(teeth)[0]


def test_a_failure_check_has_teeth():
    text = HEAD + """\
  - add: {events: [[a, "00:00:03"]]}
  - process
  - expect:
      failure: {error_class: STREAM_FAILED, exception: StreamingQueryException, message: "state schema"}
"""
    failure = FailureInfo("boom", ["STREAM_FAILED"], ["org.apache.spark.sql.streaming.StreamingQueryException"],
                          "the state schema is incompatible")
    teeth = examine(fake_result(text, [observed(batch(0), failure=failure)]))
    [check] = teeth.checks
    assert (check.label, check.mutations, check.survived, check.vacuous) == ("failure", 4, [], None)


def test_a_wide_tolerance_leaves_a_row_check_weak(tmp_path: Path):
    (tmp_path / "avg.contract.yaml").write_text(
        "contract: avg_of\ntitle: t\ndescription: d\nsources:\n  events:\n    columns: {key: string, v: double}\n"
        "output:\n  columns: {key: string, avg: double}\n  modes: [append]\n")
    text = ("scenario: s\ndescription: d\ncontract: avg_of\nsources:\n  events:\n    columns: {key: string, v: double}\n"
            "steps:\n  - add: {events: [[a, 1.0]]}\n  - process\n  - expect: {rows: [[a, 1.0]], tolerance: 1}\n")
    obs = Observed([batch(0, [("a", 1.5)])], [batch(0, [("a", 1.5)])], "append", ["key", "avg"])
    teeth = examine(fake_result(text, [obs], ContractLookup([tmp_path])))
    [rows] = teeth.checks
    assert rows.weak and rows.survived == ["row 1's avg changed"] and teeth.toothless
    assert "weak `rows`: 1 of 4 mutations pass: row 1's avg changed" in "\n".join(report_lines(teeth))


def test_an_output_topic_check_has_teeth():
    check = TopicCheck(load_scenario_text(HEAD + "  - process\n", "s.yaml").where, "out",
                       (ExpectedRecord(value={"n": 1}, key="a"), ExpectedRecord(value={"n": 2}, key="b")))
    from eventtime.teeth import _topic_check
    from eventtime.topics import judge_records

    records = [Record("out", 0, 0, b"a", b'{"n": 1}'), Record("out", 0, 1, b"b", b'{"n": 2}')]
    assert judge_records(check, records) == []
    made = _topic_check(check)
    assert [what for what, mutated in made.mutations if not judge_records(mutated, records)] == []
    assert len(made.mutations) == 4
    empty = _topic_check(TopicCheck(check.where, "out", ()))
    assert [bool(judge_records(m_, [])) for _, m_ in empty.mutations] == [True]


@pytest.mark.parametrize("type_name, value", [
    ("int", 2 ** 31 - 1), ("bigint", 5), ("double", 0.25), ("double", -1e300), ("double", float("nan")),
    ("float", 0.0), ("string", ""), ("boolean", True), ("binary", b"x"), ("date", _dt.date(2024, 1, 1)),
    ("timestamp", 1_704_067_200_000_000), ("decimal(4,2)", decimal.Decimal("99.99")),
    ("decimal(10,2)", decimal.Decimal("1.50")), ("array<int>", ()), ("array<string>", ("a",)),
    ("map<string,int>", coltypes.MapValue.of([("a", 1)])), ("struct<a: int, b: string>", (1, "x")),
    ("string", None), ("struct<a: timestamp>", None)])
def test_a_changed_value_is_of_the_type_and_never_equal(type_name: str, value):
    t = coltypes.parse_type(type_name)
    other = changed_value(t, value, tolerance=1e-9)
    assert not t.equal(other, value) and not t.equal(value, other)
    assert t.equal(other, t.canonical(other))  # a value the type holds


def test_the_bundled_suite_has_no_vacuous_check_under_the_model():
    """What the model covers of the bundled suite (the same suite on Spark: `eventtime run --teeth`)."""
    runs = []
    for path in sorted(Path(SUITE_DIR).rglob("*.scenario.yaml")):
        result = check_scenario(load_scenario(path, display_path=str(path.relative_to(SUITE_DIR.parent))))
        runs.append(examine(result))
        assert not runs[-1].toothless, "\n".join(report_lines(runs[-1], result.scenario.lines))
    assert sum(len(t.checks) for t in runs) > 500
    labels = {c.label for t in runs for c in t.checks}
    assert {"watermarks", "state", "batches[1]", "event_time: none", "no_output", "output"} <= labels, labels
    assert totals_line(runs).startswith("teeth: ")


# -- the pytest face: the same rule per scenario item (the model stands in for Spark here) ---------------
CONFTEST = """
import eventtime.pytest_plugin as plugin
import eventtime.runner as runner
from eventtime.semantics.check import check_scenario

plugin._spark = lambda config: None


def run_on_the_model(scenario, fn, *, implementation=None, **kwargs):
    result = check_scenario(scenario)
    result.implementation = implementation
    return result


runner.run_scenario = run_on_the_model
"""
INI = "[pytest]\neventtime_pipelines = tumbling_count = eventtime.pipelines.reference:tumbling_count\n"


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_pytest_option_fails_an_item_with_a_vacuous_check_and_sums_up(pytester, xdist):
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.path.joinpath("control.scenario.yaml").write_text(CONTROL.replace("scenario: s", "scenario: control"))
    fixed = CONTROL.replace("scenario: s", "scenario: clean").replace(
        '  - expect: {no_output: true, batches: 0}\n', '  - process\n  - expect: {batches: 2}\n').replace(
        '  - expect:\n      rows: []\n      dropped: 0\n', '')
    pytester.path.joinpath("clean.scenario.yaml").write_text(fixed)
    if not xdist:
        plain = pytester.runpytest_subprocess()
        assert plain.ret == 0, plain.stdout.str()  # the control: green without the question
    result = pytester.runpytest_subprocess("--eventtime-teeth", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "the scenario passed, but 4 of its checks are vacuous or weak (--eventtime-teeth, docs/teeth.md):",
        "TOOTHLESS control  [[]eventtime.pipelines.reference:tumbling_count[]]  (11 checks, 20 mutations, 4 vacuous)",
        "  control.scenario.yaml:12:25: vacuous `no_output`: no step since the previous expect can run a micro-batch*",
        "*= eventtime teeth =*"])
    summary = result.stdout.str().split("eventtime teeth", 1)[1]
    assert "TEETH clean  [eventtime.pipelines.reference:tumbling_count]  (8 checks, " in summary and "TOOTHLESS control  [" in summary
    assert "teeth: 19 checks, " in summary and ", 4 vacuous, 0 weak in 2 passing runs; judged in " in summary


def test_a_key_without_a_place_of_its_own_is_found_at_the_steps_level():
    text = HEAD + """\
  - add: {events: [[a, "00:00:03"]]}
  - process
  - expect:
      batches: [{data: true, dropped: 0}, {data: false, dropped: 0}]
      dropped: 0
  - add: {events: [[a, "00:00:04"]]}
  - process
  - expect: {batches: [{dropped: 0}, {dropped: 0}], dropped: 0}
"""
    from eventtime.teeth import _key_where

    sc = load_scenario_text(text, "s.yaml")
    first, second = [s for s in sc.steps if isinstance(s, ExpectStep)]
    assert str(_key_where(sc, first, "dropped")) == "s.yaml:14:7"
    assert str(_key_where(sc, first, "batches")) == "s.yaml:13:7"
    assert str(_key_where(sc, second, "dropped")) == "s.yaml:17:53"
