"""A new version of the job restarted from the previous version's checkpoint (`run_scenario(previous=...)`,
docs/upgrade.md): each outcome on Spark, from one bundled scenario with a restart and three changes of
the tumbling count (tests/spark/upgrade_pipelines.py), each a control of the others."""
import json

import pytest

from eventtime import load_scenario
from eventtime.runner import run_scenario
from eventtime.scenarios import SUITE_DIR

pytestmark = pytest.mark.spark

PREVIOUS = "eventtime.pipelines.reference:tumbling_count"
RESTART = SUITE_DIR / "restart" / "restart-keeps-window-exactly-once.scenario.yaml"  # restart at step 4
NEW = "tests.spark.upgrade_pipelines:"


def across(spark, current, previous=PREVIOUS, path=RESTART):
    result = run_scenario(load_scenario(str(path)), current, previous=previous, session=spark)
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


def test_a_changed_grouping_key_cannot_restart_with_sparks_error_class(spark):
    from packaging.version import Version

    result = across(spark, NEW + "regrouped")
    assert result.status == "error"
    assert result.upgrade["outcome"] == "cannot_restart"
    # the restart itself runs no batch here (nothing new to read): Spark checks the state's schema when
    # the first batch after it plans the stateful operator (step 8)
    assert "in the first batch after it (step 8)" in result.reason
    if Version(spark.version.split("-")[0]) >= Version("4.0"):
        assert result.upgrade["error_class"] == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
        assert "Existing key_schema=" in result.upgrade["message"]  # what changed, as Spark says it
        assert "Logical Plan" not in result.upgrade["message"]
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
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
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
