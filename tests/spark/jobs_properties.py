"""Jobs for `test_properties.py`, written as a user writes them: clicks per page and 10-second window,
the whole table handed each batch to the job's `foreachBatch`, which writes it to the folder the
contract's `out` parameter names. One twin overwrites the folder (a batch run again after a crash
leaves the same table); the other appends (the seeded bug: a batch run again adds its table twice).
Two more seeded bugs: the appending job without a checkpoint location (a restart starts it anew, and it
appends everything again) and a quality rule that casts text (a value that is not a number stops the
query under ANSI casts)."""
from __future__ import annotations

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
