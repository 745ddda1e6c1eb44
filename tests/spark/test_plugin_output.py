"""What the pytest plugin prints for a user: Spark's own lines out of the captured output, the driver's
log attached to a scenario that fails, and a re-run command that works exactly as printed.

Each test runs pytest in a child process on a small project of its own (its own JVM), as a user would."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # CI runs it on the newest line (tests/README.md)

_JOB = """\
from pyspark.sql import functions as F


@F.udf("string")
def region(device):
    if device.startswith("bad"):
        raise ValueError(f"no region for device {device}")
    return device.split("-")[0]


def transform(readings, window):
    return (readings.withWatermark("ts", "10 seconds")
            .groupBy(region("device").alias("region"), F.window("ts", window))
            .count()
            .select("region", F.col("window.start").alias("window_start"), "count"))


def wrong_count(sources, params):  # no watermark: Spark refuses append mode at the start
    return (sources["events"].groupBy("key", F.window("ts", params["window"].interval)).count()
            .select("key", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "count"))
"""

_CONTRACT = """\
contract: region_counts
description: readings -> count per region (a UDF of the device id) and window.
sources:
  readings: {columns: "device string, ts timestamp", event_time: ts}
params:
  window: {kind: duration, default: 10 seconds}
output: {columns: "region string, window_start timestamp, count bigint", modes: [append]}
"""

_SCENARIO = """\
scenario: region-count
description: Two readings of one region in a window, counted once the watermark passes.
contract: region_counts
steps:
  - add: {readings: [[DEVICE, "00:00:01"], [eu-2, "00:00:02"]]}
  - add: {readings: [[eu-3, "00:00:30"]]}
  - process
  - expect:
      rows: [[eu, "00:00:00", 2]]
"""

# lines Spark's JVM prints on its own at start-up (log4j's profile line, its WARN lines)
_SPARK_NOISE = re.compile(r"log4j|WARN [A-Za-z]+:|Setting default log level")


def _project(tmp_path, device: str):
    (tmp_path / "regionjob.py").write_text(_JOB)
    (tmp_path / "region_counts.contract.yaml").write_text(_CONTRACT)
    (tmp_path / "region.scenario.yaml").write_text(_SCENARIO.replace("DEVICE", device))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\npythonpath = ["."]\neventtime_pipelines = ["region_counts = regionjob:transform"]\n')


def _pytest(tmp_path, *args: str, log: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "EVENTTIME_DRIVER_LOG"}
    if log is not None:
        env["EVENTTIME_DRIVER_LOG"] = log
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)


# a user's tests that stop the session they were given (collected before the scenario: "a_" < "region")
_STOPS = """\
import pytest
from pyspark.sql import functions as F


@pytest.fixture(scope="session")
def spark(eventtime_spark):  # the user's own session fixture, made from the kit's
    return eventtime_spark


def test_stops_the_session(spark):
    from regionjob import region  # imported with a session: its UDF's type is a DDL string

    assert spark.range(1).select(region(F.lit("eu-1"))).first()[0] == "eu"  # the job's UDF, before the stop
    spark.stop()


def test_the_next_test_gets_a_live_session(spark, eventtime_spark):
    assert spark is eventtime_spark and spark.range(3).count() == 3
"""


def test_spark_lines_stay_out_of_the_output_and_a_failure_gets_the_driver_log(tmp_path):
    _project(tmp_path, device="eu-1")
    (tmp_path / "a_stop_test.py").write_text(_STOPS)  # and the scenario after them runs on a live one
    ok = _pytest(tmp_path, log=str(tmp_path / "driver.log"))
    assert ok.returncode == 0 and "3 passed" in ok.stdout, ok.stdout[-3000:] + ok.stderr[-2000:]
    # the UDF made before the stop runs for the new context: its tasks report to a live accumulator server
    assert "Failed to update accumulator" not in (tmp_path / "driver.log").read_text()
    assert not _SPARK_NOISE.search(ok.stdout + ok.stderr), (ok.stdout + ok.stderr)[-3000:]
    # control: with the driver's output left alone, the same run shows Spark's start-up lines
    loud = _pytest(tmp_path, log="-")
    assert loud.returncode == 0 and _SPARK_NOISE.search(loud.stdout + loud.stderr), loud.stdout[-3000:]

    _project(tmp_path, device="bad-1")  # the UDF raises inside a Spark task: the driver logs the task's error
    failed = _pytest(tmp_path)
    assert failed.returncode == 1, failed.stdout[-3000:]
    section = failed.stdout.split("Spark driver log", 1)
    assert len(section) == 2, failed.stdout[-4000:]
    assert "no region for device bad-1" in section[1], section[1][:4000]


def test_the_rerun_command_of_a_bundled_suite_item_works_as_printed(tmp_path):
    _project(tmp_path, device="eu-1")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    first = _pytest(tmp_path, "tests", "-x", "--eventtime-suite", "tumbling_count",
                    "--eventtime-pipeline", "tumbling_count=regionjob:wrong_count")
    assert first.returncode == 1, first.stdout[-3000:]
    printed = re.search(r"re-run: (pytest .*)", first.stdout)
    assert printed, first.stdout[-3000:]
    failed_item = re.search(r"^FAILED (\S+)", first.stdout, re.MULTILINE)
    assert failed_item, first.stdout[-3000:]
    words = shlex.split(printed.group(1))
    assert words[:3] == ["pytest", "--eventtime-suite", "tumbling_count"], words
    again = _pytest(tmp_path, *words[1:])
    ran = re.search(r"(\d+) failed", again.stdout)
    assert again.returncode == 1 and ran and ran.group(1) == "1", again.stdout[-3000:]
    assert f"FAILED {failed_item.group(1)}" in again.stdout, again.stdout[-3000:]
    assert " passed" not in again.stdout.splitlines()[-1], again.stdout[-1000:]  # that item alone


def test_the_rerun_command_of_a_scenario_file_works_from_a_subfolder(tmp_path):
    _project(tmp_path, device="eu-1")
    (tmp_path / "region.scenario.yaml").write_text(_SCENARIO.replace("DEVICE", "eu-1").replace("2]]", "3]]"))
    (tmp_path / "sub").mkdir()
    first = _pytest(tmp_path / "sub", "..", "--eventtime-pipeline", "region_counts=regionjob:transform")
    printed = re.search(r"re-run: (pytest .*)", first.stdout)
    assert first.returncode == 1 and printed, first.stdout[-3000:]
    assert "--eventtime-pipeline region_counts=regionjob:transform " in printed.group(1)  # the run's own binding
    again = _pytest(tmp_path / "sub", *shlex.split(printed.group(1))[1:])
    assert again.returncode == 1 and re.search(r"\b1 failed", again.stdout), again.stdout[-3000:]
    assert "region-count" in again.stdout


_MISSING_COLUMN_JOB = _JOB.replace('groupBy(region("device")', 'groupBy(region("devise")')


def test_pysparks_echo_of_an_analysis_error_goes_to_the_driver_log(tmp_path):
    # PySpark 4 repeats an analysis error with a DataFrame context as a JSON line on stderr
    # (DataFrameQueryContextLogger); the kit already reports the error, so the echo is driver output
    pytest.importorskip("pyspark.logger", reason="PySpark 3.x has no query-context loggers")
    _project(tmp_path, device="eu-1")
    (tmp_path / "regionjob.py").write_text(_MISSING_COLUMN_JOB)
    failed = _pytest(tmp_path)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "devise" in failed.stdout, failed.stdout[-3000:]  # the kit's own report names the column
    captured = failed.stdout.split("Spark driver log", 1)[0]
    assert "DataFrameQueryContextLogger" not in captured + failed.stderr, captured[-3000:]
    # control: with the driver's output left alone, the echo is in the test's captured stderr
    loud = _pytest(tmp_path, log="-")
    assert loud.returncode == 1 and "DataFrameQueryContextLogger" in loud.stdout + loud.stderr, loud.stdout[-3000:]
