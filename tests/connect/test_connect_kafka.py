"""Kafka sources and scheduled runs over Spark Connect: what tests/spark/test_kafka_source.py and
tests/spark/test_available_now.py check on the classic harness.

The kafka records (binary key and value, headers as array<struct<key string, value binary>>) go
through the staged source; the job's from_json passes and a job with a misnamed JSON field fails.
The bundled `tumbling/available-now-runs` passes with its `run: available_now` steps.
"""
from __future__ import annotations

import pytest

from eventtime import load_scenario, run_scenario
from eventtime.textreport import describe_failure
from tests.user_project import user_scenario
from tests.spark.test_available_now import _bundled, tumbling_count
from tests.spark.test_kafka_source import SCENARIO, CONTRACT, misnamed_field, parse_records

pytestmark = [pytest.mark.connect, pytest.mark.spark]

TIMEOUT = 180  # a cold server's first batch took 20-50 s on two shared cores


def test_a_kafka_source_over_connect_and_a_wrong_json_schema_fails(tmp_path, remote_spark):
    """The classic test's scenario without its `advance` (Connect has no manual clock: a scenario that
    moves processing time is not applicable there), so the second add's records are stamped 00:00:00."""
    text = SCENARIO.replace("  - advance: 10s\n", "").replace('"00:00:10", 0]', '"00:00:00", 0]')
    assert text.count('"00:00:00", 0]') == 4 and "advance" not in text
    scenario = user_scenario(tmp_path, contract=("kafka_records.contract.yaml", CONTRACT),
                             scenario=("records.scenario.yaml", text))
    result = run_scenario(scenario, parse_records, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", describe_failure(result)
    wrong = run_scenario(scenario, misnamed_field, session=remote_spark, timeout=TIMEOUT)
    assert wrong.status == "failed", describe_failure(wrong)


def test_run_available_now_over_connect(remote_spark):
    result = run_scenario(load_scenario(_bundled()), tumbling_count, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", describe_failure(result)
    assert [len(s.batches) for s in result.steps if s.kind == "run"] == [2, 2, 0, 2]
