"""A new Spark across a restart (`eventtime.crossline`, docs/upgrade.md): the steps before the restart on
the Spark of another environment, in its own process and JVM, the rest here from its checkpoint.

The other environment: EVENTTIME_EARLIER_PYTHON, else the oldest line's environment CI installs beside
this one (.venv-spark34, once its install has finished). The control of the compatible restart is a
changed grouping key restarted from the same earlier checkpoint: Spark refuses it."""
import json
import os
from pathlib import Path

import pytest

from eventtime import load_scenario
from eventtime.crossline import EarlierSpark
from eventtime.scenarios import SUITE_DIR

pytestmark = [pytest.mark.spark, pytest.mark.any_line]

ROOT = Path(__file__).resolve().parents[2]
RESTART = SUITE_DIR / "restart" / "restart-keeps-window-exactly-once.scenario.yaml"  # restart at step 4
REFERENCE = "eventtime.pipelines.reference:tumbling_count"


def _earlier_python() -> str | None:
    given = os.environ.get("EVENTTIME_EARLIER_PYTHON")
    if given:
        return given
    oldest = ROOT / ".venv-spark34"
    # `./dev` writes the marker once the environment is installed: not before, while CI installs it beside
    return str(oldest / "bin" / "python") if (oldest / ".eventtime-installed").exists() else None


@pytest.fixture(scope="module")
def earlier():
    python = _earlier_python()
    if python is None:
        pytest.skip("no other environment to run the earlier side: set EVENTTIME_EARLIER_PYTHON to another "
                    "environment's python with pyspark and eventtime installed (CI: .venv-spark34, once installed)")
    side = EarlierSpark(python)
    yield side
    side.close()


def test_the_reference_restarts_on_this_spark_from_the_earlier_sparks_checkpoint(earlier, spark):
    result = earlier.run(load_scenario(str(RESTART)), REFERENCE, session=spark)
    json.dumps(result.to_dict())  # what the results file gets
    assert result.status == "passed", result.reason
    assert result.upgrade["outcome"] == "restarts"
    assert result.upgrade["previous_spark"] == earlier.spark and result.upgrade["across"] == "spark"
    assert result.upgrade["previous"] == f"Spark {earlier.spark}"
    # the first batches are the earlier side's (run 0), the later ones this side's, from its checkpoint
    assert [s.batches[0].batch_id for s in result.steps if s.index == 2] == [0]
    assert sum(len(s.batches) for s in result.steps if s.index > 4) >= 1


def test_control_a_changed_grouping_key_cannot_restart_from_the_same_earlier_checkpoint(earlier, spark):
    result = earlier.run(load_scenario(str(RESTART)), "tests.spark.upgrade_pipelines:regrouped", session=spark,
                         previous=REFERENCE)
    assert result.status == "error", result.reason
    assert result.upgrade["outcome"] == "cannot_restart"
    assert "in the first batch after it (step 8)" in result.reason
    named = result.upgrade["error_class"] or result.upgrade["exception"]
    assert "SCHEMA" in named.upper() or "StateSchemaNotCompatible" in named


# -- jobs across Spark lines -----------------------------------------------------------------------------
JOB_ACROSS = """\
scenario: NAME
description: A job's window open across the restart onto the new Spark; closed and written after it.
contract: page_counts
steps:
  - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
  - process
  - expect: {WHAT, rows: []}
  - restart
  - add: {clicks: [{page: home, ts: "00:01:10"}]}
  - process
  - expect: {WHAT, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
"""


def test_eventtime_run_takes_jobs_across_spark_lines_with_their_folders_and_tables(tmp_path):
    """As a user runs an upgrade check (`eventtime run --previous-python`): a job writing a folder and one
    writing a table (`toTable`) each restart on this Spark from the earlier side's checkpoint and pass; they
    were not applicable ("its tables are in the earlier side's catalog"), even the one that uses no table."""
    import subprocess

    from eventtime.harness.cluster import child_environment

    from tests.lines import console_script
    from tests.spark.test_job_paths import NO_PARAMS

    python = _earlier_python()
    if python is None:
        pytest.skip("no other environment to run the earlier side (EVENTTIME_EARLIER_PYTHON, or CI's .venv-spark34)")
    (tmp_path / "page_counts.contract.yaml").write_text(NO_PARAMS)
    for folder, what in (("files", "written: data/gold/counts"), ("table", "table: page_counts")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "across.scenario.yaml").write_text(
            JOB_ACROSS.replace("NAME", f"{folder}-across").replace("WHAT", what))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\neventtime_pipelines = [\n'
        '    "page_counts[files] = tests.spark.jobs_paths:relative_sink",\n'
        '    "page_counts[table] = tests.spark.jobs_under_test:main",\n]\n')
    env = child_environment(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([*console_script(), "run", ".", "--previous-python", python, "--json", "across.json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    results = {r["scenario"]: r for r in json.loads((tmp_path / "across.json").read_text())["results"]}
    for name in ("files-across", "table-across"):
        record = results[name]
        assert record["status"] == "passed", (name, record["reason"], out)
        assert record["upgrade"]["outcome"] == "restarts" and record["upgrade"]["across"] == "spark", record["upgrade"]
        # the batches before the restart are the earlier side's: this side's first batch is after it
        assert [s["batches"][0]["batch_id"] for s in record["steps"] if s["index"] == 2] == [0], name
        assert sum(len(s["batches"]) for s in record["steps"] if s["index"] > 4) >= 1, name
