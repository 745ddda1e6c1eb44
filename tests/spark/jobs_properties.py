"""Jobs for `test_properties.py`, written as a user writes them: clicks per page and 10-second window,
the whole table handed each batch to the job's `foreachBatch`, which writes it to the folder the
contract's `out` parameter names. One twin overwrites the folder (a batch run again after a crash
leaves the same table); the other appends (the seeded bug: a batch run again adds its table twice).
Two more seeded bugs: the appending job without a checkpoint location (a restart starts it anew, and it
appends everything again) and a quality rule that casts text (a value that is not a number stops the
query under ANSI casts). The twins correct in every way (`*_once`, for benchmarks/property_seeded.py) append
once per batch id (`append_once`), so a batch run again after a crash writes nothing twice."""
from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F

OUT = "props.test.out"  # the Spark setting the contract's `kind: path` parameter sets


def _counts(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return (clicks.withWatermark("ts", "10 seconds")
            .groupBy("page", F.window("ts", "10 seconds").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks"))


def overwrite_table(batch, batch_id):
    """Idempotent: each batch writes the whole table in place of the last."""
    batch.write.mode("overwrite").parquet(batch.sparkSession.conf.get(OUT))


def append_table(batch, batch_id):
    """Not idempotent: each batch's table is added to the folder, so a batch run again is there twice."""
    batch.write.mode("append").parquet(batch.sparkSession.conf.get(OUT))


def append_once(batch, batch_id, out=None):
    """Idempotent by batch id, as Spark's guide asks of a foreachBatch sink (Delta's txnVersion, done by hand): the
    batch's rows are appended and then a marker `_batches/<id>` is left in the folder (Spark's readers skip a path
    that starts with `_`); a batch run again after a crash finds its marker and writes nothing."""
    out = out or batch.sparkSession.conf.get(OUT)
    marker = Path(out) / "_batches" / str(batch_id)
    if marker.exists():
        return
    batch.write.mode("append").parquet(out)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()


def overwriting(spark):
    return (_counts(spark).writeStream.outputMode("complete").foreachBatch(overwrite_table)
            .option("checkpointLocation", "/checkpoints/page_counts"))


def appending(spark):
    return (_counts(spark).writeStream.outputMode("complete").foreachBatch(append_table)
            .option("checkpointLocation", "/checkpoints/page_counts"))


def without_checkpoint(spark):
    """The appending job without a checkpoint location: Spark gives the query a new temporary checkpoint at
    each start, so after a restart it reads every file again and appends the whole table once more."""
    return _counts(spark).writeStream.outputMode("complete").foreachBatch(append_table)


def numeric_pages(spark):
    """A quality rule that casts: under ANSI casts (Spark 4's default) a page that is not a number stops the
    query instead of being filtered out."""
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    kept = clicks.where(F.col("page").cast("int") >= 0)
    return (kept.withWatermark("ts", "10 seconds")
            .groupBy("page", F.window("ts", "10 seconds").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks")
            .writeStream.outputMode("complete").foreachBatch(overwrite_table)
            .option("checkpointLocation", "/checkpoints/page_counts"))


# Orders split by a quality rule into a clean folder and a quarantine folder (the contract's `clean` and
# `quarantine` path parameters), both written by the job's batch function. The rule is `amount > 0`.
CLEAN, QUARANTINE = "props.test.clean", "props.test.quarantine"


def _orders(spark):
    return spark.readStream.format("json").schema("id string, amount int, ts timestamp").load("/data/orders")


def _split(passes, fails):
    def write(batch, batch_id):
        conf = batch.sparkSession.conf
        batch.where(passes).write.mode("append").parquet(conf.get(CLEAN))
        batch.where(fails).write.mode("append").parquet(conf.get(QUARANTINE))
    return write


def _split_job(spark, passes, fails):
    return (_orders(spark).writeStream.outputMode("append").foreachBatch(_split(passes, fails))
            .option("checkpointLocation", "/checkpoints/orders_split"))


def split_blind_to_nulls(spark):
    """Seeded bug: the quarantine takes `NOT (amount > 0)`, which is null, not true, for a null amount: such a
    row lands in neither folder."""
    rule = F.col("amount") > 0
    return _split_job(spark, rule, ~rule)


def split_overlapping(spark):
    """Seeded bug: the quarantine takes `amount <= 0` but the clean side `amount >= 0`: a zero lands in both
    folders (and a null amount in neither)."""
    return _split_job(spark, F.col("amount") >= 0, F.col("amount") <= 0)


def split_total(spark):
    """Correct in its rule: the quarantine takes every row the rule does not pass, a null amount included."""
    rule = F.col("amount") > 0
    return _split_job(spark, rule, ~F.coalesce(rule, F.lit(False)))


def split_total_once(spark):
    """Correct in every way: the total rule, each folder appended once per batch id (`append_once`)."""
    rule = F.col("amount") > 0
    passes, fails = rule, ~F.coalesce(rule, F.lit(False))

    def write(batch, batch_id):
        conf = batch.sparkSession.conf
        append_once(batch.where(passes), batch_id, conf.get(CLEAN))
        append_once(batch.where(fails), batch_id, conf.get(QUARANTINE))
    return (_orders(spark).writeStream.outputMode("append").foreachBatch(write)
            .option("checkpointLocation", "/checkpoints/orders_split"))


# Events deduplicated on their id, written to the contract's `out` folder. Spark evicts a dropDuplicates
# key once the watermark passes the event time in it, so the key must hold the event-time column.
def _events(spark):
    events = spark.readStream.format("json").schema("id string, ts timestamp").load("/data/events")
    return events.withWatermark("ts", "10 seconds")


def _deduped(rows, write=append_table):
    return (rows.writeStream.outputMode("append").foreachBatch(write)
            .option("checkpointLocation", "/checkpoints/events_dedup"))


def dedup_without_event_time(spark):
    """Seeded bug: dropDuplicates on the id alone keeps every id in state for ever, watermark or not."""
    return _deduped(_events(spark).dropDuplicates(["id"]))


def dedup_with_event_time(spark):
    """Correct in its state: the event time in the key, so a key leaves the state once the watermark passes it
    (appended with `append_table`: twice for a batch run again)."""
    return _deduped(_events(spark).dropDuplicates(["id", "ts"]))


def dedup_with_event_time_once(spark):
    """Correct in every way: the event time in the key, and the folder appended once per batch id."""
    return _deduped(_events(spark).dropDuplicates(["id", "ts"]), append_once)


def dedup_within_watermark(spark):
    """Correct (Spark 3.5+): a key is kept until the watermark passes its first event time plus the delay."""
    return _deduped(_events(spark).dropDuplicatesWithinWatermark(["id"]))


# Clicks counted per page, written by the job's batch function to the contract's `out` folder.
def _clicks(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return clicks.withWatermark("ts", "10 seconds")


def append_page_counts(batch, batch_id):
    """Seeded bug: the batch's own counts per page, appended with no state: a page's clicks split over two
    micro-batches are written as two partial counts."""
    counts = batch.groupBy("page").agg(F.count("*").alias("clicks"))
    counts.write.mode("append").parquet(batch.sparkSession.conf.get(OUT))


def counts_per_batch(spark):
    return (_clicks(spark).writeStream.outputMode("append").foreachBatch(append_page_counts)
            .option("checkpointLocation", "/checkpoints/page_counts"))


def _windowed(spark, write):
    counts = (_clicks(spark).groupBy("page", F.window("ts", "10 seconds").alias("window"))
              .agg(F.count("*").alias("clicks"))
              .select("page", F.col("window.start").alias("window_start"), "clicks"))
    return (counts.writeStream.outputMode("append").foreachBatch(write)
            .option("checkpointLocation", "/checkpoints/page_counts"))


def windowed_counts(spark):
    """Correct in its counts: clicks per page and 10-second window, in append mode (each window written once, when
    the watermark passes its end), appended to the folder (`append_table`: twice for a batch run again)."""
    return _windowed(spark, append_table)


def windowed_counts_once(spark):
    """Correct in every way: the windowed counts, appended once per batch id."""
    return _windowed(spark, append_once)


def main():
    """The appending job as it ships: a `main()` with no parameters that makes its own session, starts its query,
    waits on it and ends the session (the kit gives it the session it runs on: a worker's, under --jobs)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("page-counts").getOrCreate()
    try:
        appending(spark).start()
        spark.streams.awaitAnyTermination(timeout=3600)
    finally:
        for query in spark.streams.active:
            query.stop()
        spark.stop()


# Impressions joined with the clicks on the same ad (a transform of the contract's two sources, as the kit calls
# it). Spark evicts a stream-stream join's state rows only by a watermark the join condition can turn into a
# bound on each side's event time: both sides need a watermark and the condition a time range between them.
def join_without_time_bound(impressions, ad_clicks):
    """Seeded bug: watermarks on both sides but no time range in the condition: no watermark can rule out a
    later partner, so every impression and every click stays in the join's state for ever."""
    shown = impressions.where(F.col("ad_id").isNotNull()).withWatermark("shown_at", "10 seconds").alias("i")
    clicked = ad_clicks.where(F.col("ad_id").isNotNull()).withWatermark("clicked_at", "10 seconds").alias("c")
    return (shown.join(clicked, F.col("i.ad_id") == F.col("c.ad_id"))
            .select(F.col("i.ad_id").alias("ad_id"), "i.shown_at", "c.clicked_at"))


def join_within_bound(impressions, ad_clicks):
    """Correct: watermarks on both sides and a click counted only up to 30 seconds after its impression, so a row
    leaves the state once the watermark passes the last time a partner could have. Rows without an ad_id are left
    out (a streaming join pairs a null key with another null key, a batch join never does)."""
    shown = impressions.where(F.col("ad_id").isNotNull()).withWatermark("shown_at", "10 seconds").alias("i")
    clicked = ad_clicks.where(F.col("ad_id").isNotNull()).withWatermark("clicked_at", "10 seconds").alias("c")
    return (shown.join(clicked, (F.col("i.ad_id") == F.col("c.ad_id"))
                       & (F.col("c.clicked_at") >= F.col("i.shown_at"))
                       & (F.col("c.clicked_at") <= F.col("i.shown_at") + F.expr("INTERVAL 30 seconds")))
            .select(F.col("i.ad_id").alias("ad_id"), "i.shown_at", "c.clicked_at"))


SEEN = "props.test.seen"  # the folder of orders already sent, which the job both reads and appends to


def _new_orders(spark):
    orders = spark.readStream.format("json").schema("order_id string, ts timestamp").load("/data/orders")
    folder = Path(spark.conf.get(SEEN))
    folder.mkdir(parents=True, exist_ok=True)  # empty before the first batch
    seen = spark.read.schema("order_id string, ts timestamp").parquet(str(folder))
    return orders.where("order_id IS NOT NULL").join(seen.select("order_id"), "order_id", "left_anti")


def remember(batch, batch_id):
    batch.write.mode("append").parquet(batch.sparkSession.conf.get(SEEN))


def deduped_against_its_own_sink(spark):
    """Orders not seen before, by an anti-join with the folder its `foreachBatch` appends them to. The seeded
    bug: a batch run again after a crash finds its own orders in the folder (read anew at the restart) and
    sends nothing, where its first run sent them; the folder itself ends the same."""
    return (_new_orders(spark).writeStream.foreachBatch(remember)
            .option("checkpointLocation", "/checkpoints/new_orders"))
