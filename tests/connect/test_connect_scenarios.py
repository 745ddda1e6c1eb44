"""A few scenarios of the standard suite run over Spark Connect (the whole suite against the classic
harness: benchmarks/connect_vs_classic.py). Each checks a verdict and what Connect let the harness see."""
from __future__ import annotations

from pathlib import Path

import pytest

from eventtime.loader import load_scenario, load_scenario_text
from eventtime.runner import run_scenario

pytestmark = [pytest.mark.connect, pytest.mark.spark]

SUITE = Path(__file__).resolve().parents[2] / "scenarios"
TIMEOUT = 180  # a cold server's first batch took 20-50 s on two shared cores


def _run(spark, path_or_scenario):
    scenario = load_scenario(SUITE / path_or_scenario) if isinstance(path_or_scenario, str) else path_or_scenario
    return run_scenario(scenario, session=spark, timeout=TIMEOUT)


def test_two_sources_land_in_one_batch_and_the_global_watermark_is_the_minimum(remote_spark):
    result = _run(remote_spark, "union/min-policy-different-delays.scenario.yaml")
    assert result.status == "passed", result.reason or [s.failures for s in result.steps]
    first = next(s for s in result.steps if s.kind == "process")
    assert [b.input_rows for b in first.batches] == [2, 0]  # both sources' rows in one data batch, then no-data
    assert first.batches[0].watermark_after_ms == 1704067204000  # min(00:00:10, 00:00:04) on 2024-01-01


def test_a_restart_from_the_same_checkpoint_reads_rows_added_while_stopped(remote_spark):
    result = _run(remote_spark, "restart/rows-added-while-stopped.scenario.yaml")
    assert result.status == "passed", result.reason or [s.failures for s in result.steps]
    restart = [s for s in result.steps if s.kind == "start"][-1]
    assert [(b.input_rows, b.dropped, b.run) for b in restart.batches] == [(3, 1, 1)]


def test_a_wrong_expectation_fails_over_connect(remote_spark):
    """The control: the same scenario with the watermark it expects moved by one second fails."""
    path = SUITE / "tumbling/append-late-row-dropped.scenario.yaml"
    text = path.read_text()
    scenario = load_scenario(path)
    wrong_text = text.replace("watermark: \"00:00:11\"", "watermark: \"00:00:12\"", 1)
    assert wrong_text != text
    assert _run(remote_spark, scenario).status == "passed"
    assert _run(remote_spark, load_scenario_text(wrong_text, str(path))).status == "failed"


def test_clock_scenarios_are_not_applicable_with_the_reason(remote_spark):
    result = _run(remote_spark, "clock/processing-time-trigger.scenario.yaml")
    assert result.status == "not_applicable"
    assert "needs the manual processing-time clock" in result.reason


def test_this_process_has_no_jvm(remote_spark):
    from pyspark import SparkContext

    from eventtime.harness.compat import is_connect

    assert is_connect(remote_spark)
    assert SparkContext._gateway is None and SparkContext._active_spark_context is None
