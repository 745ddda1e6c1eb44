"""`on_spark`: an expect step that states what changed between Spark versions, in one scenario file.
The loader reads each version's checks at their own place; a run takes the first variant whose
specifier matches its Spark, else the step's own checks (what the model predicts)."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import spec as m
from eventtime.loader import ScenarioInvalid, load_scenario_text

TEXT = textwrap.dedent("""\
    scenario: join-change
    description: Rows below the state watermark on arrival (SPARK-49829).
    contract: tumbling_count
    params: {window: 10s, watermark_delay: 5s}
    steps:
      - add: {events: [[a, "00:00:03"], [a, "00:00:30"]]}
      - process
      - expect:
          rows: [[a, "00:00:00", "00:00:10", 1]]
          watermark: "00:00:25"
          on_spark:
            "<3.5.4":
              no_output: true
              watermark: "00:00:25"
            ">=3.5.4,<4.0": {rows: [[a, "00:00:00", "00:00:10", 2]]}
    """)


def _expect(scenario: m.Scenario) -> m.ExpectStep:
    (step,) = [s for s in scenario.steps if isinstance(s, m.ExpectStep)]
    return step


def test_each_version_gets_its_checks_and_the_others_the_steps_own():
    scenario = load_scenario_text(TEXT, "s.yaml")
    base = _expect(scenario)
    assert [spec for spec, _ in base.variants] == ["<3.5.4", ">=3.5.4,<4.0"]
    old = _expect(m.for_spark_version(scenario, "3.5.3"))
    assert old.rows[0].rows == () and old.variants == ()
    assert (old.where, old.index) == (base.where, base.index)  # the same step, its checks at their own lines
    assert old.rows[0].where.line == 13
    middle = _expect(m.for_spark_version(scenario, "3.5.9"))
    assert middle.rows[0].rows[0][-1] == 2 and middle.watermark_us is None
    for newest in ("4.0.0", "4.3.0", "4.3.0-SNAPSHOT"):
        assert _expect(m.for_spark_version(scenario, newest)).rows == base.rows
    assert m.for_spark_version(scenario, "4.3.0").steps[0] is scenario.steps[0]


@pytest.mark.parametrize("old, new, place, message", [
    ('"<3.5.4":', '"before 3.5.4":', (12, 9), "'before 3.5.4' is not a version specifier"),
    ("no_output: true", "no_output: true\n          on_spark: {'<3.5': {no_output: true}}", (14, 11),
     "cannot have versions of their own"),
    ("no_output: true", "no_outpt: true", (13, 11), "no_outpt"),
    ('[[a, "00:00:00", "00:00:10", 2]]', '[[a, "00:00:00", "00:00:10", two]]', (15, 61), "two"),
])
def test_a_bad_variant_is_reported_at_its_place(old, new, place, message):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(TEXT.replace(old, new), "s.yaml")
    found = [(p.line, p.column, p.message) for p in info.value.problems]
    assert any((line, col) == place and message in text for line, col, text in found), found
