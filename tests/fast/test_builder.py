"""A scenario written in Python says its places in the test's own code: a problem, a failing step and
the step's lines are the test file's, not those of the YAML the builder writes underneath."""
from __future__ import annotations

import inspect
import os

import pytest

from eventtime.builder import ScenarioBuilder
from eventtime.loader import ScenarioInvalid

HERE = os.path.relpath(__file__)


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno  # type: ignore[union-attr]


def test_a_bad_value_is_reported_at_the_line_of_the_step_that_wrote_it():
    s = ScenarioBuilder("tumbling_count", params={"window": "10s", "watermark_delay": "5s"})
    s.add(events=[("a", "00:00:03")]).process()
    where = _line() + 1
    s.expect(rows=[("a", "00:00:00", "00:00:10", "two")])
    with pytest.raises(ScenarioInvalid) as info:
        s.build()
    places = [(p.file, p.line) for p in info.value.problems]
    assert places == [(HERE, where)], info.value


def test_a_bad_parameter_is_reported_at_the_line_that_built_the_scenario():
    where = _line() + 1
    s = ScenarioBuilder("tumbling_count", params={"window": "10s", "watermark_dely": "5s"})
    s.add(events=[("a", "00:00:03")]).process()
    with pytest.raises(ScenarioInvalid) as info:
        s.build()
    assert {(p.file, p.line) for p in info.value.problems} == {(HERE, where)}, info.value
    assert "watermark_dely" in str(info.value)


def test_a_step_shows_the_lines_of_its_call_and_each_step_its_own_line():
    s = ScenarioBuilder("tumbling_count", params={"window": "10s", "watermark_delay": "5s"})
    add_line = _line() + 1
    s.add(events=[("a", "00:00:03")]).process()
    expect_line = _line() + 1
    s.expect(rows=[("a", "00:00:00", "00:00:10", 1)],
             watermark="00:00:00")
    scenario = s.build()
    steps = {step.kind: step for step in scenario.steps}
    assert scenario.path == HERE
    assert (steps["add"].where.file, steps["add"].where.line) == (HERE, add_line)
    assert steps["process"].where.line == add_line  # chained on the same line
    expect = steps["expect"]
    assert expect.where.line == expect_line and expect.where.column == 5
    assert [n for n, _ in scenario.step_text(expect)] == [expect_line, expect_line + 1]
    assert scenario.step_text(expect)[0][1].strip().startswith("s.expect(rows=")


def test_a_kafka_contract_and_a_scheduled_run_build_from_python():
    """The builder declares a kafka source as its contract does (kind, topic, headers, no columns)
    and writes `run: available_now`; the built scenario reads the records and the run step."""
    from eventtime.contractfile import contract_from_mapping

    contract = contract_from_mapping({
        "contract": "py_kafka", "description": "d",
        "sources": {"clicks": {"kind": "kafka", "topic": "shop.clicks", "headers": True}},
        "output": {"columns": "n bigint"}})
    s = ScenarioBuilder(contract).add("clicks", [{"value": {"page": "home"}, "headers": {"t": "1"}}])
    sc = s.run_available_now().expect(schema="n bigint NOT NULL").build()
    assert sc.sources["clicks"].kind == "kafka" and sc.sources["clicks"].topic == "shop.clicks"
    assert sc.steps[0].rows["clicks"][0][:5] == (None, b'{"page":"home"}', "shop.clicks", 0, 0)
    assert [st.kind for st in sc.steps] == ["add", "run", "expect"]
    assert sc.steps[-1].schema.columns == (("n", "long", True),)
