"""`eventtime watch`: a scenario runs, an edited scenario runs again, an edited pipeline module is
reloaded and every scenario runs against it, a broken file is reported and watching goes on, and
Ctrl-C stops it with exit 0. Every wait for the child's output is bounded and says what it waited for."""
from __future__ import annotations

import os

import pytest

from tests.lines import WATCHED, stop_watching, watching

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # CI runs it on the newest line (tests/README.md)

WAIT = 300.0  # seconds for one verdict, a JVM start included, on a loaded machine

JOB = """\
from pyspark.sql import functions as F


def count(events, window, watermark_delay):
    return (events.withWatermark("ts", watermark_delay)
            .groupBy("key", F.window("ts", window)).agg(F.count(F.lit(1)).alias("count"))
            .select("key", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "count"))
"""

SCENARIO = WATCHED


def test_watch_reruns_what_changed_and_stops_on_ctrl_c(tmp_path):
    (tmp_path / "jobs.py").write_text(JOB)
    scenario = tmp_path / "one.scenario.yaml"
    scenario.write_text(SCENARIO.replace("COUNT", "2"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "EVENTTIME_DRIVER_LOG": str(tmp_path / "driver.log")}
    with watching(["one.scenario.yaml", "--pipeline", "jobs:count", "--poll", "0.1"], cwd=tmp_path, env=env,
                  wait=WAIT) as (proc, lines):
        assert lines.until("watched", "the first run's verdict").startswith("PASS")
        lines.until("watching (Ctrl-C stops)", "the first round's totals")

        scenario.write_text(SCENARIO.replace("COUNT", "3"))  # a wrong expectation: that scenario runs again
        assert lines.until("watched", "the edited scenario's verdict").startswith("FAIL")
        lines.until("1 missing, 1 unexpected", "the diff of the failing step")

        # the pipeline's module changes: it is reloaded, and the scenario runs against the new code
        (tmp_path / "jobs.py").write_text(JOB.replace('F.count(F.lit(1))', '(F.count(F.lit(1)) + 1)'))
        assert lines.until("watched", "the verdict after the module changed").startswith("PASS")

        scenario.write_text("scenario: [broken\n")  # a broken file is reported, and watching goes on
        lines.until("one.scenario.yaml:2:1: YAML syntax error", "the broken file's problem at its place")
        lines.until("watching (Ctrl-C stops)", "watching after the broken file")

        assert stop_watching(proc, lines) == 0


@pytest.mark.parametrize("bound", ["pyproject", "command-line"])
def test_watch_reruns_after_an_edit_to_a_module_bound_to_the_contract(tmp_path, bound):
    """A module bound per contract (the project's `eventtime_pipelines`, or `--pipeline CONTRACT=...`) is
    imported by the run, after the first look at the files: its edit must run the scenario again (it once
    left a stale "1 passed" on the screen)."""
    (tmp_path / "jobs.py").write_text(JOB)
    (tmp_path / "one.scenario.yaml").write_text(SCENARIO.replace("COUNT", "2"))
    args = ["one.scenario.yaml", "--poll", "0.1"]
    if bound == "pyproject":
        (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\n'
                                                 'eventtime_pipelines = ["tumbling_count = jobs:count"]\n')
    else:
        args += ["--pipeline", "tumbling_count=jobs:count"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "EVENTTIME_DRIVER_LOG": str(tmp_path / "driver.log")}
    with watching(args, cwd=tmp_path, env=env, wait=WAIT) as (proc, lines):
        assert lines.until("watched", "the first run's verdict").startswith("PASS")
        lines.until("watching (Ctrl-C stops)", "the first round's totals")
        # the bound module changes so the expectation no longer holds: the scenario runs again and fails
        (tmp_path / "jobs.py").write_text(JOB.replace('F.count(F.lit(1))', '(F.count(F.lit(1)) + 1)'))
        assert lines.until("watched", "the verdict after the bound module changed").startswith("FAIL")
        assert stop_watching(proc, lines) == 0
