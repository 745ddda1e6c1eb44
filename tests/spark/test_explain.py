"""Spark's observations explain a missing window row in the same words as the model's
(tests/fast/test_explain.py pins them): the watermark timeline, the input that would close the
window or the chain of operators that holds it back, and the input rows that came at or behind the
watermark (a tumbling window, a session, a join). The control: the row the tumbling explanation
names, added, closes the window on Spark too."""
from __future__ import annotations

import pytest

from eventtime import run_scenario
from eventtime.loader import load_scenario_text
from eventtime.textreport import describe_failure
from tests.fast.test_explain import CASES, explanation

pytestmark = pytest.mark.spark


TEXTS = sorted({text for text, _, _ in CASES.values()})  # each scenario run once, every case of it checked


@pytest.mark.parametrize("text", TEXTS, ids=lambda t: t.split()[1])
def test_spark_explains_a_missing_window_row_as_the_model_does(text, spark):
    result = run_scenario(load_scenario_text(text, "why.scenario.yaml"), session=spark)
    if result.status == "not_applicable":
        pytest.skip(result.reason)
    assert result.status == "failed", describe_failure(result)
    for name in [n for n, case in CASES.items() if case[0] == text]:
        assert explanation(result, name) == "\n".join(CASES[name][1]), name
    assert "watermark timeline:" in describe_failure(result)


def test_the_input_the_explanation_names_closes_the_window_on_spark(spark):
    text, _, row = CASES["tumbling"]
    closed = text.replace("  - expect:\n", f"  - add: {{events: [{row}]}}\n  - process\n  - expect:\n")
    result = run_scenario(load_scenario_text(closed, "closed.scenario.yaml"), session=spark)
    assert result.status == "passed", describe_failure(result)
