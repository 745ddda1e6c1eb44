"""What Spark's own streaming tests check, said in a scenario and judged on Spark: numRowsUpdated summed
since the previous check of it (StreamTest's assertNumStateRows, `updated_since_check`), a watermark
range, and an expected failure of one query of a job of several (`failure` with `query`). The same
texts are judged on the model in tests/fast/test_spark_test_checks.py."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime.loader import load_scenario_text
from eventtime.textreport import describe_failure

from tests.fast.test_spark_test_checks import SPAN
from tests.spark import jobs_of_queries as jobs

pytestmark = pytest.mark.spark


def test_updates_summed_since_the_previous_check_are_sparks(spark):
    result = run_scenario(load_scenario_text(SPAN, "span.yaml"), session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: after the restart Spark's span holds the restarted query's batches only (1), not the
    # expect's two (`updated: 2` beside it)
    wrong = SPAN.replace("{updated: 2, updated_since_check: 1}", "{updated: 2, updated_since_check: 2}")
    assert wrong != SPAN
    failed = run_scenario(load_scenario_text(wrong, "span.yaml"), session=spark)
    failures = [f for s in failed.steps for f in s.failures]
    assert failed.status == "failed" and [(f.check, f.where.line) for f in failures] == [
        ("updated_since_check", 22)], describe_failure(failed)
    assert failures[0].message.startswith("1 row(s) updated in state since the previous check"), failures[0].message


CONTRACT = textwrap.dedent("""\
    contract: checked_clicks
    description: clicks read once -> every record in memory, and a batch function that refuses bots.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    queries:
      raw: {columns: "page string, ts timestamp"}
      checked: {columns: "page string, ts timestamp"}
    """)

FAILS = textwrap.dedent("""\
    scenario: one-query-of-the-job-fails
    description: The batch function of the checked query raises on a bot's click; the raw query runs on.
    contract: checked_clicks
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {query: raw, rows: [[home, "00:00:01"]]}
      - expect: {query: checked, batches: 1}
      - add: {clicks: [[bot, "00:00:02"]]}
      - process
      - expect: {query: checked, failure: {message: bot traffic in batch 1}}
    """)


def test_an_expected_failure_of_one_query_of_a_job(spark, contract_beside):
    scenario_of = contract_beside(CONTRACT)
    result = run_scenario(scenario_of(FAILS), jobs.one_query_fails, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: the failure expected of the other query fails at its line, naming the query that failed
    wrong = FAILS.replace("{query: checked, failure:", "{query: raw, failure:")
    assert wrong != FAILS
    failed = run_scenario(scenario_of(wrong), jobs.one_query_fails, session=spark)
    failures = [f for s in failed.steps for f in s.failures]
    assert failed.status == "failed" and [f.where.line for f in failures] == [11], describe_failure(failed)
    assert failures[0].message.startswith("expected query 'raw' to have failed, but query 'checked' of the job "
                                          "failed"), failures[0].message


_CAST_JOB = """\
from pyspark.sql import functions as F


def transform(events):
    return events.select("key", F.col("n").cast("int").alias("n"))
"""

_CAST_CONTRACT = """\
contract: parsed
description: events -> their count parsed as an int (null where it is not a number, with ANSI off).
sources:
  events: {columns: "key string, n string"}
output: {columns: "key string, n int", modes: [append]}
"""

_CAST_SCENARIO = """\
scenario: not-a-number
description: A count that is not a number is null with ANSI off, as on Spark 3.
contract: parsed
steps:
  - add: {events: [[a, "1"], [b, "x"]]}
  - process
  - expect: {rows: [[a, 1], [b, null]]}
"""


def test_pytest_takes_spark_settings_as_the_command_line_does(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "castjob.py").write_text(_CAST_JOB)
    (tmp_path / "parsed.contract.yaml").write_text(_CAST_CONTRACT)
    (tmp_path / "cast.scenario.yaml").write_text(_CAST_SCENARIO)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\npythonpath = ["."]\neventtime_pipelines = ["parsed = castjob:transform"]\n')

    def pytest_run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args], cwd=tmp_path,
                              env=dict(os.environ), capture_output=True, text=True, timeout=900)

    off = pytest_run("--eventtime-spark-conf", "spark.sql.ansi.enabled=false")
    assert off.returncode == 0 and "1 passed" in off.stdout, off.stdout[-3000:] + off.stderr[-2000:]
    # control: Spark 4's default (ANSI on) refuses the cast, and the re-run command keeps the setting
    on = pytest_run("--eventtime-spark-conf", "spark.sql.ansi.enabled=true")
    assert on.returncode == 1 and "CAST_INVALID_INPUT" in on.stdout, on.stdout[-3000:]
    assert "--eventtime-spark-conf spark.sql.ansi.enabled=true" in on.stdout, on.stdout[-3000:]
