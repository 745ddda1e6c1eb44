"""`run: available_now` behaves as a real `trigger(availableNow=True)` query does, `run: once` as a real
`trigger(once=True)` (Trigger.Once) query.

The same tumbling count runs twice: as the bundled scenario `tumbling/available-now-runs` under the harness,
and as a plain PySpark query started with `trigger(availableNow=True)` on a MemoryStream with a
`foreachBatch` sink, started again from the same checkpoint for each run. Each run's batches must
be the same: the data batch and the trailing no-data batch the watermark advance needs, the
watermark each ran with, the state left, the rows written. Two adds before one run make one batch
on both (a MemoryStream has no read limit: a run reads everything added before it); a run with
nothing new runs no batch on both. The control: the comparison names a run that lost its no-data
batch (what a trigger that stops after the data would do). Trigger.Once, on the same adds
(`tumbling/trigger-once-runs`), runs one batch per run with data and none without; its control is
the availableNow runs, which differ from the first run on.
"""
from __future__ import annotations

import datetime as dt
import pytest
from pyspark.sql import functions as F

from eventtime import load_scenario, run_scenario
from eventtime.textreport import describe_failure

pytestmark = pytest.mark.spark

def _bundled(name="available-now-runs"):
    from eventtime.scenarios import SUITE_DIR

    return SUITE_DIR / "tumbling" / f"{name}.scenario.yaml"


T0 = int(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp()) * 1_000_000
# what each run of the bundled scenario adds before it runs (event time in seconds after T0)
RUNS = [[[("a", 3), ("a", 7)]], [[("a", 16)], [("a", 4)]], [], [[("b", 30), ("a", 5)]]]


def tumbling_count(events, window="10 seconds", watermark_delay="5 seconds"):
    w = F.window("ts", window)
    return (events.withWatermark("ts", watermark_delay).groupBy("key", w.alias("w")).count()
            .select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "count"))


def _ms(text):
    """A progress report's watermark (absent before the first data on 4.x; the epoch on 3.x)."""
    if not text:
        return 0
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def real_available_now_runs(spark, checkpoint, **trigger):
    """Each run of RUNS as a real `trigger(availableNow=True)` query (or another trigger, `once=True`):
    per batch (input rows, watermark it ran with, state rows, dropped, rows written)."""
    from eventtime.harness import MemorySource

    source = MemorySource(spark, "events", [("key", "string"), ("ts", "timestamp")])
    out = []
    for adds in RUNS:
        for rows in adds:
            source.add([(k, T0 + s * 1_000_000) for k, s in rows])
        written: dict[int, list[tuple]] = {}

        def sink(df, batch_id, written=written):
            written[batch_id] = sorted(tuple(r) for r in df.selectExpr(
                "key", "unix_micros(window_start)", "unix_micros(window_end)", "count").collect())

        query = (tumbling_count(source.dataframe()).writeStream.foreachBatch(sink).outputMode("append")
                 .option("checkpointLocation", checkpoint).trigger(**(trigger or {"availableNow": True})).start())
        assert query.awaitTermination(300), f"the {trigger or 'availableNow'} query did not stop within 300 s"
        assert query.exception() is None, query.exception()
        batches = []
        for p in query.recentProgress:
            if p["batchId"] not in written:
                continue  # an idle report: no batch ran
            ops = p["stateOperators"]
            batches.append((p["numInputRows"], _ms((p.get("eventTime") or {}).get("watermark")),
                            sum(o["numRowsTotal"] for o in ops), sum(o["numRowsDroppedByWatermark"] for o in ops),
                            written[p["batchId"]]))
        assert len(batches) == len(written), (batches, written)
        out.append(batches)
    return out


def harness_runs(result):
    return [[(b.input_rows, b.watermark_before_ms or 0, b.state_rows, b.dropped, sorted(b.rows)) for b in s.batches]
            for s in result.steps if s.kind == "run"]


def differences(harness, real, trigger="availableNow=True"):
    return [f"run {i + 1}: harness {h}, trigger({trigger}) {r}"
            for i, (h, r) in enumerate(zip(harness, real)) if h != r] + (
        [f"{len(harness)} runs, expected {len(real)}"] if len(harness) != len(real) else [])


def test_run_available_now_matches_a_real_available_now_query(tmp_path, spark):
    """The bundled scenario (tumbling/available-now-runs) under the harness, beside the real trigger."""
    result = run_scenario(load_scenario(_bundled()), tumbling_count, session=spark)
    assert result.status == "passed", describe_failure(result)
    harness = harness_runs(result)
    real = real_available_now_runs(spark, str(tmp_path / "checkpoint"))
    assert differences(harness, real) == []
    assert [len(r) for r in real] == [2, 2, 0, 2]  # data + no-data batch per run with data; none without
    # the control: a run that lost its trailing no-data batch is told apart
    assert differences(harness, [real[0], real[1][:1], real[2], real[3]]) == [
        f"run 2: harness {harness[1]}, trigger(availableNow=True) {real[1][:1]}"]


def test_run_once_matches_a_real_trigger_once_query(tmp_path, spark):
    """The bundled scenario (tumbling/trigger-once-runs) under the harness, beside the real Trigger.Once."""
    from eventtime.harness.compat import compat_for

    if "trigger_once" not in compat_for(spark).features:
        pytest.skip("this Spark has no Trigger.Once")
    result = run_scenario(load_scenario(_bundled("trigger-once-runs")), tumbling_count, session=spark)
    assert result.status == "passed", describe_failure(result)
    harness = harness_runs(result)
    real = real_available_now_runs(spark, str(tmp_path / "checkpoint"), once=True)
    assert differences(harness, real, "once=True") == []
    assert [len(r) for r in real] == [1, 1, 0, 1]  # one batch per run with data: never a no-data batch
    # the control: the availableNow runs of the same adds are told apart from the first run on
    available_now = real_available_now_runs(spark, str(tmp_path / "checkpoint-available-now"))
    assert len(differences(harness, available_now, "once=True")) == 3
