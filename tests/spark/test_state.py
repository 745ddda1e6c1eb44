"""`expect: {state: ...}` on Spark (issue 40, item 1): the rows a stateful operator keeps, read with
Spark's state data source after the step (Spark 4.0+), compared on the fields the rows name.

The bundled `dedup/dedup-state-contents` passes and fails with one key changed; the bundled window,
session, join and transformWithState state scenarios (which the suite runs) each fail with one key or
value changed; a join's two sides and the window count after it are read by operator and side on the
bundled `join_then_count` contract, each with a control; a field the state does not have, a join
without its side and an unknown state variable are failures saying so. On a Spark without the state
reader (3.x) a scenario with a `state` check is not applicable, naming the feature.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from eventtime import run_scenario
from eventtime.loader import load_scenario_text
from eventtime.textreport import describe_failure
from tests.fast.test_statecheck import CONTROLS, control_text

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2] / "scenarios"
DEDUP = ROOT / "dedup" / "dedup-state-contents.scenario.yaml"

JOIN = """\
scenario: join-state-sides
description: The rows each side of a stream-stream join keeps, and the count after it.
requires: {features: [join_then_stateful]}
contract: join_then_count
params: {left_delay: 5s, right_delay: 5s, bound: 5s, window: 10s}
sources:
  left: {columns: {key: string, ts: timestamp}, event_time: ts}
  right: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add:
      left: [[a, "00:00:02"], [a, "00:00:08"]]
      right: [[a, "00:00:04"]]
  - process
  - expect:
      state:
        operator: symmetricHashJoin
        side: left
        rows: [{value.lkey: a, value.left_ts: "00:00:02"}, {value.lkey: a, value.left_ts: "00:00:08"}]
  - expect:
      state:
        operator: symmetricHashJoin
        side: right
        rows: [{value.rkey: a, value.right_ts: "00:00:04"}]
  - expect:
      state:
        operator: 0
        rows: [{key.lkey: a, key.window.start: "00:00:00", key.window.end: "00:00:10", value.count: 1}]
"""


def _run(spark, text, path=DEDUP):
    return run_scenario(load_scenario_text(text, str(path), file=path), session=spark)


def _applies(spark) -> bool:
    from eventtime.harness.compat import compat_for

    return "state_reader" in compat_for(spark).features


def _messages(result):
    return [f.message for s in result.steps for f in s.failures]


def test_a_state_check_is_not_applicable_without_the_state_reader(spark):
    result = _run(spark, DEDUP.read_text())
    if _applies(spark):
        assert result.status == "passed", describe_failure(result)
    else:
        assert result.status == "not_applicable" and "state_reader" in (result.reason or ""), result.reason


@pytest.mark.parametrize("old, new, message", [
    ("- {key.id: b, key.ts: \"00:00:12\"}\n          - {key.id: c", "- {key.id: x, key.ts: \"00:00:12\"}\n          - {key.id: c",
     "the state of dedupe (operator 0): 1 missing, 1 unexpected"),
    ("rows: [{key.id: d}]", "rows: [{key.id: d}, {key.id: a}]", "the state of dedupe (operator 0): 1 missing, 0 unexpected"),
    ("rows: [{key.id: d}]", "rows: [{key.idd: d}]",
     "cannot read the state: the state of dedupe (operator 0) has no field 'key.idd' (fields: key.id, key.ts, value.__dummy__)"),
    ("        operator: dedupe\n", "        operator: stateStoreSave\n",
     "cannot read the state: the query's checkpoint has no stateful operator 'stateStoreSave' (operators: 0 dedupe)"),
])
def test_a_changed_dedup_state_fails_saying_what_differs(spark, old, new, message):
    if not _applies(spark):
        pytest.skip("no state reader on this Spark")
    text = DEDUP.read_text()
    assert text.count(old) == 1, old
    result = _run(spark, text.replace(old, new))
    assert result.status == "failed", describe_failure(result)
    assert any(message in m for m in _messages(result)), _messages(result)


def test_a_joins_sides_and_the_count_after_it(spark):
    if not _applies(spark):
        pytest.skip("no state reader on this Spark")
    result = _run(spark, JOIN, ROOT / "join-state.scenario.yaml")
    assert result.status == "passed", describe_failure(result)
    # controls: the other side's row, a count of 2, and no side at all
    for old, new, message in [
            ('rows: [{value.rkey: a, value.right_ts: "00:00:04"}]', 'rows: [{value.rkey: a, value.right_ts: "00:00:08"}]',
             "the state of symmetricHashJoin (operator 1, right side): 1 missing, 1 unexpected"),
            ("value.count: 1}", "value.count: 2}", "the state of stateStoreSave (operator 0): 1 missing, 1 unexpected"),
            ("        side: right\n", "", "a stream-stream join keeps a state per side: say `side: left` or `side: right`")]:
        assert JOIN.count(old) == 1, old
        failed = _run(spark, JOIN.replace(old, new), ROOT / "join-state.scenario.yaml")
        assert failed.status == "failed" and any(message in m for m in _messages(failed)), describe_failure(failed)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_bundled_state_scenario_with_one_value_changed_fails(spark, name):
    """The bundled window, session, join and transformWithState state scenarios pass in the suite
    (test_certify_suite); the control: each with one key or value changed fails, saying what differs."""
    if not _applies(spark):
        pytest.skip("no state reader on this Spark")
    path, text = control_text(name)
    failed = _run(spark, text, Path(path))
    if failed.status == "not_applicable":
        pytest.skip(failed.reason)
    assert failed.status == "failed" and any(CONTROLS[name][3] in m for m in _messages(failed)), describe_failure(failed)


def test_an_unknown_state_variable_fails_with_sparks_reason(spark):
    if not _applies(spark):
        pytest.skip("no state reader on this Spark")
    path = ROOT / CONTROLS["transform_with_state"][0]
    result = _run(spark, path.read_text().replace("variable: group", "variable: grp"), path)
    if result.status == "not_applicable":
        pytest.skip(result.reason)
    assert result.status == "failed" and any(m.startswith("cannot read the state: ") for m in _messages(result)), \
        describe_failure(result)
