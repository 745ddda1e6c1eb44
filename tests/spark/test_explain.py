"""Spark's observations explain a missing window row in the same words as the model's
(tests/fast/test_explain.py pins them): the watermark timeline, and the input that would close the
window or the chain of operators that holds it back. The control: the row the tumbling explanation
names, added, closes the window on Spark too."""
from __future__ import annotations

import pytest

from eventtime import run_scenario
from eventtime.loader import load_scenario_text
from eventtime.textreport import describe_failure
from tests.fast.test_explain import CASES, explanations

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("name", sorted(CASES))
def test_spark_explains_a_missing_window_row_as_the_model_does(name, spark):
    text, lines, _ = CASES[name]
    result = run_scenario(load_scenario_text(text, f"{name}.scenario.yaml"), session=spark)
    if result.status == "not_applicable":
        pytest.skip(result.reason)
    assert result.status == "failed", describe_failure(result)
    assert explanations(result) == ["\n".join(lines)]
    assert "watermark timeline:" in describe_failure(result)


def test_the_input_the_explanation_names_closes_the_window_on_spark(spark):
    text, _, row = CASES["tumbling"]
    closed = text.replace("  - expect:\n", f"  - add: {{events: [{row}]}}\n  - process\n  - expect:\n")
    result = run_scenario(load_scenario_text(closed, "closed.scenario.yaml"), session=spark)
    assert result.status == "passed", describe_failure(result)
