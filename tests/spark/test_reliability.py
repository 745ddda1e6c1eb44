"""No hangs: every way a run can go wrong ends within its bound, with a verdict naming the step and the cause.

Each case also checks what it leaves behind: no active streaming query, and a session on which the
next scenario passes. Elapsed times are compared with the bound the harness was given plus a wide
margin for a loaded machine: what is tested is that the wait ends, not how fast.
"""
import re
import time

import pytest

from eventtime.runner import run_scenario
from eventtime.textreport import describe_failure
from eventtime.harness import HarnessTimeout

from tests.spark.pipelines import events_run
from tests.spark.test_harness import BASIC, scenario

pytestmark = pytest.mark.spark

MARGIN = 60  # seconds on top of a bound: JVM work after the bound (stopping a query) on a loaded machine


def _clean_and_usable(spark):
    assert [q.name for q in spark.streams.active] == []
    after = run_scenario(scenario(BASIC), session=spark)
    assert after.status == "passed", describe_failure(after)


def test_query_dying_mid_scenario_names_the_step_and_spark_error_class(spark):
    t0 = time.monotonic()
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:cast_fails_in_batch", session=spark,
                          conf={"spark.sql.ansi.enabled": "true"}, timeout=30)
    assert time.monotonic() - t0 < 30 + MARGIN
    assert result.status == "error"
    assert result.reason.startswith("step 2 (process): the query failed during trigger for batch 0")
    assert "CAST_INVALID_INPUT" in result.reason
    assert [s.status for s in result.steps] == ["passed", "passed", "error", "skipped"]
    _clean_and_usable(spark)


def test_batch_that_never_finishes_hits_the_bound(spark):
    t0 = time.monotonic()
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:never_finishes", session=spark, timeout=20)
    assert time.monotonic() - t0 < 2 * 20 + MARGIN  # the step's wait, then the bounded stop
    assert result.status == "error"
    # the slow UDF runs in the first batch that emits a window: the no-data batch 1 on an idle
    # machine; on a loaded one batch 0 can outlive the bound first
    assert re.match(r"step 2 \(process\): timed out after 20s waiting for trigger for batch [01] \(the bound on each "
                    r"wait for Spark is --timeout SECONDS \(eventtime run\), --eventtime-timeout", result.reason), result.reason
    _clean_and_usable(spark)


def test_expectation_that_can_never_be_met_fails_at_once(spark):
    never = BASIC.replace('rows: [[a, "00:00:00", "00:00:10", 1]]', 'rows: [[z, "00:01:00", "00:01:10", 9]]')
    never = never.replace('watermark: "00:00:11"', 'watermark: "01:00:00"')
    never += "- process\n- process\n- expect:\n    rows: [[z, \"00:01:00\", \"00:01:10\", 9]]\n"
    t0 = time.monotonic()
    result = run_scenario(scenario(never, "never.scenario.yaml"), session=spark, timeout=30)
    assert time.monotonic() - t0 < 30 + MARGIN  # judged on what happened, nothing is waited for
    assert result.status == "failed"
    failed = [s for s in result.steps if s.status == "failed"]
    assert [s.index for s in failed] == [3, 6]
    text = describe_failure(result)
    assert "never.scenario.yaml:14:" in text and "watermark is 00:00:11, expected 01:00:00" in text
    _clean_and_usable(spark)


def _parked_run(spark, tmp_path, trigger_ms=None):
    from eventtime.pipelines.reference import tumbling_count

    run, sources = events_run(spark, tumbling_count, tmp_path / "checkpoint", timeout=30, trigger_ms=trigger_ms)
    run.start()
    sources["events"].add([("a", 1_704_067_203_000_000)])
    run.process()
    return run


@pytest.mark.parametrize("trigger_ms", [None, 3_600_000], ids=["process-trigger", "hourly-trigger"])
def test_stop_while_the_clock_is_parked_ends_at_once(spark, tmp_path, trigger_ms):
    run = _parked_run(spark, tmp_path, trigger_ms)
    query = run._query
    assert run.clock._target is not None  # the stream thread sits in waitTillTime
    t0 = time.monotonic()
    run.stop()
    assert time.monotonic() - t0 < 30 + MARGIN
    assert not query.isActive()
    assert not query.exception().isDefined()  # stopped, not failed
    _clean_and_usable(spark)


def test_stop_while_a_batch_is_in_flight_is_bounded(spark, tmp_path):
    from tests.spark.pipelines import never_finishes

    run, sources = events_run(spark, never_finishes, tmp_path / "checkpoint", timeout=15)
    run.start()
    sources["events"].add([("a", 1_704_067_203_000_000), ("a", 1_704_067_216_000_000)])
    with pytest.raises(HarnessTimeout, match=r"timed out after 15s waiting for trigger for batch"):
        run.process()  # batch 1 (the no-data batch emitting the window) sits in the slow UDF
    t0 = time.monotonic()
    try:
        run.stop()  # interrupts the batch; bounded by the same 15 s
    except HarnessTimeout as exc:
        pytest.fail(f"the stop did not end within its bound: {exc}")
    assert time.monotonic() - t0 < 15 + MARGIN
    _clean_and_usable(spark)


def test_no_callback_connection_outlives_its_query_on_the_jvm_side(spark, monkeypatch):
    # Each query's stream thread calls the stepped clock in Python on a connection of its own. Once
    # the thread has ended, both ends must be closed: py4j's JVM side would keep its end forever.
    # (Long-lived JVM threads, e.g. the one telling Python about collected proxies, keep theirs.)
    from eventtime.harness.clock import SteppedClock

    used: list[int] = []
    close = SteppedClock.close_connections

    def recording(self):
        ports = close(self)
        used.extend(ports)
        return ports

    monkeypatch.setattr(SteppedClock, "close_connections", recording)
    for pipeline in (None, "tests.spark.pipelines:cast_fails_in_batch", None, None):
        run_scenario(scenario(BASIC), pipeline, session=spark, conf={"spark.sql.ansi.enabled": "true"}, timeout=30)
    assert len(used) >= 4  # one connection per query start at least
    from eventtime.harness.compat import compat_for

    assert not set(used) & compat_for(spark).pooled_callback_ports()
