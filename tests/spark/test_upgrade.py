"""A new version of the job restarted from the previous version's checkpoint (`run_scenario(crossing=NewVersion(...))`,
docs/upgrade.md): each outcome on Spark, from one bundled scenario with a restart and three changes of
the tumbling count (tests/spark/upgrade_pipelines.py), each a control of the others."""
import json

import pytest

from eventtime import load_scenario
from eventtime.runner import run_scenario
from eventtime.scenarios import SUITE_DIR
from eventtime.upgrade import NewVersion

pytestmark = pytest.mark.spark

PREVIOUS = "eventtime.pipelines.reference:tumbling_count"
RESTART = SUITE_DIR / "restart" / "restart-keeps-window-exactly-once.scenario.yaml"  # restart at step 4
NEW = "tests.spark.upgrade_pipelines:"


def across(spark, current, previous=PREVIOUS, path=RESTART):
    result = run_scenario(load_scenario(str(path)), current, crossing=NewVersion(previous), session=spark)
    json.dumps(result.to_dict())  # what the results file gets
    return result


def test_a_compatible_change_restarts_and_passes(spark):
    result = across(spark, NEW + "projected")
    assert result.status == "passed", result.reason
    assert result.upgrade == {"previous": PREVIOUS, "restart_step": 4, "outcome": "restarts",
                              "restart_where": f"{result.scenario.path}:22:5"}
    assert result.implementation == NEW + "projected"
    assert result.to_dict()["upgrade"]["outcome"] == "restarts"


def test_a_change_that_restarts_but_counts_wrong_differs_after_the_restart(spark):
    result = across(spark, NEW + "doubled")
    assert result.status == "failed"
    assert result.upgrade["outcome"] == "differs"
    assert [s.index for s in result.steps if s.status == "failed"] == [11, 14]  # both after the restart
    assert "outputs differ from the scenario after the restart: step 11 (expect)" in result.reason


def spark_4():
    import pyspark
    from packaging.version import Version

    return Version(pyspark.__version__.split("-")[0]) >= Version("4.0")


def test_a_changed_grouping_key_cannot_restart_with_sparks_error_class(spark):
    result = across(spark, NEW + "regrouped")
    assert result.status == "error"
    assert result.upgrade["outcome"] == "cannot_restart"
    # the restart itself runs no batch here (nothing new to read): Spark checks the state's schema when
    # the first batch after it plans the stateful operator (step 8)
    assert "in the first batch after it (step 8)" in result.reason
    if spark_4():
        assert result.upgrade["error_class"] == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
        assert "Existing key_schema=" in result.upgrade["message"]  # what changed, as Spark says it
        assert "Logical Plan" not in result.upgrade["message"]
    else:  # 3.4, 3.5: a Java exception in the batch's task, with no error class
        assert result.upgrade["error_class"] is None
        assert result.upgrade["exception"].endswith(".StateSchemaNotCompatible")
        assert "Existing key schema: " in result.upgrade["message"]
    # control: the same regrouped code run from its own first start restarts fine (the scenario's
    # expectations hold for it): the failure is the change's, not the code's
    alone = run_scenario(load_scenario(str(RESTART)), NEW + "regrouped", session=spark)
    assert alone.status == "passed", alone.reason


def test_a_scenario_that_fails_before_the_restart_does_not_describe_the_previous_version(spark, tmp_path):
    path = _with_rows_before_restart(tmp_path)
    result = across(spark, PREVIOUS, previous=NEW + "doubled", path=path)
    assert result.upgrade["outcome"] == "previous_differs"
    assert result.status == "failed"
    assert result.reason.startswith(f"the scenario does not describe the previous version ({NEW}doubled): step 3")
    # control: the previous version the scenario describes, with the same change after the restart, passes
    assert across(spark, NEW + "doubled", path=path).upgrade["outcome"] == "differs"
    assert across(spark, PREVIOUS, path=path).upgrade["outcome"] == "restarts"


def test_a_scenario_without_a_restart_is_not_applicable(spark):
    result = across(spark, NEW + "projected", path=SUITE_DIR / "tumbling" / "window-bounds.scenario.yaml")
    assert result.status == "not_applicable"
    assert "has no `start` or `restart` step" in result.reason
    assert result.upgrade is None


def _with_rows_before_restart(folder):
    path = folder / "before-and-after.scenario.yaml"
    path.write_text("""\
scenario: before-and-after
description: a window emitted before the restart and one after it
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:16"]]}
  - process
  - expect: {rows: [[a, "00:00:00", "00:00:10", 1]]}
  - restart
  - add: {events: [[a, "00:00:31"]]}
  - process
  - expect: {rows: [[a, "00:00:10", "00:00:20", 1]]}
""")
    return path


# -- a pull request's check: the changed job against the checkpoint of the version at a git ref ----------

_JOB = """\
from pyspark.sql import functions as F


def count(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    counts = events.groupBy(F.window("ts", params.window.interval).alias("w"), GROUPING).count()
    return counts.select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "count")
"""
_BEFORE = '"key"'
_INCOMPATIBLE = '"key", F.length("key").alias("key_length")'  # a grouping key added: the state's key schema changes
_COMPATIBLE = 'F.col("key")'  # the same key, written another way


def _pull_request(folder, change):
    """A project in git whose committed job counts per key and window, changed in the working tree."""
    import subprocess

    (folder / "prjob.py").write_text(_JOB.replace("GROUPING", _BEFORE))
    (folder / "restart.scenario.yaml").write_text(RESTART.read_text())
    (folder / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n'
                                           'eventtime_pipelines = ["tumbling_count = prjob:count"]\n')
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "the job as deployed"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                       capture_output=True)
    (folder / "prjob.py").write_text(_JOB.replace("GROUPING", change))


def _found(value, key):
    if isinstance(value, dict):
        return [value[key]] if key in value else [x for v in value.values() for x in _found(v, key)]
    return [x for v in value for x in _found(v, key)] if isinstance(value, list) else []


def test_a_pull_request_check_runs_the_changed_job_from_the_checkpoint_of_the_committed_one(tmp_path):
    import subprocess
    import sys

    from tests.lines import console_script

    _pull_request(tmp_path, _INCOMPATIBLE)
    done = subprocess.run([*console_script(), "run", "restart.scenario.yaml", "--previous-ref", "HEAD", "--json",
                           "out.json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    upgrade, = _found(json.loads((tmp_path / "out.json").read_text()), "upgrade")
    assert (upgrade["outcome"], upgrade["previous"]) == ("cannot_restart", "prjob:count@HEAD")
    named = "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE" if spark_4() else "StateSchemaNotCompatible"
    assert "cannot restart from the checkpoint of prjob:count@HEAD: " in done.stdout, done.stdout[-3000:]
    assert named in done.stdout.split("cannot restart from the checkpoint of prjob:count@HEAD: ")[1].split(";")[0]
    assert "--previous-ref HEAD" in done.stdout  # the re-run command runs it across the change too
    assert "Existing key" in done.stdout  # Spark's whole refusal: the schema it had and the one it got
    listed = subprocess.run(["git", "worktree", "list"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert len(listed.strip().splitlines()) == 1  # the ref's checkout is gone

    # control, through the pytest face: a change that keeps the state restarts from the same checkpoint
    (tmp_path / "prjob.py").write_text(_JOB.replace("GROUPING", _COMPATIBLE))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "restart.scenario.yaml",
                           "--eventtime-previous-ref", "HEAD"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and " 1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
