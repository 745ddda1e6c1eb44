"""Several scenarios at once in one JVM (`run_pairs(jobs=N)`) observe exactly what they observe one at a time."""
import pytest

from eventtime.loader import load_scenario
from eventtime.parallel import Pair, observable, run_pairs
from eventtime.scenarios import SUITE_DIR, display_path

pytestmark = pytest.mark.spark

# Chosen to collide if runs were not isolated: one sets its own SQL conf for the query (no-data
# batches off) while another relies on the default, one has a processing-time trigger on the stepped
# clock, one restarts from its checkpoint.
_FILES = ["tumbling/no-data-batches-disabled", "tumbling/append-late-row-dropped",
          "clock/processing-time-trigger", "restart/restart-keeps-window-exactly-once"]


def _pairs():
    out = []
    for name in _FILES:
        path = SUITE_DIR / f"{name}.scenario.yaml"
        sc = load_scenario(path, display_path=display_path(path))
        out.append(Pair(sc, sc.contract.implementations[0]))
    return out


def test_concurrent_runs_observe_what_serial_runs_observe(spark):
    from pyspark.sql import SparkSession

    pairs = _pairs()
    serial = list(run_pairs(pairs, jobs=1, session=spark))
    concurrent = list(run_pairs(pairs, jobs=len(pairs), session=spark))
    assert [r.scenario.name for r in concurrent] == [p.scenario.name for p in pairs]
    assert [r.status for r in serial] == ["passed"] * len(pairs)
    for one, other in zip(serial, concurrent):
        assert observable(other.to_dict()) == observable(one.to_dict()), one.scenario.name
    # the worker threads' sessions are gone from view: the process's session is the active one again
    assert SparkSession.getActiveSession() is spark
    assert spark.conf.get("spark.sql.streaming.noDataMicroBatches.enabled") == "true"
