"""Jobs for `test_properties.py`, written as a user writes them: clicks per page and 10-second window,
the whole table handed each batch to the job's `foreachBatch`, which writes it to the folder the
contract's `out` parameter names. One twin overwrites the folder (a batch run again after a crash
leaves the same table); the other appends (the seeded bug: a batch run again adds its table twice)."""
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
