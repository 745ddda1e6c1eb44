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
