"""Jobs written as a user writes them, for `test_jobs.py`: each builds its own query from `spark.readStream`
to `writeStream`. The comments `# <- NAME` mark the lines an error must name (the tests find them)."""
from __future__ import annotations

from pyspark.sql import functions as F

OUT = "jobs.test.out"  # the Spark setting the contract's `kind: path` parameter sets


def _counts(clicks):
    return (clicks.withWatermark("ts", "0 seconds")
            .groupBy("page", F.window("ts", "1 minute").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks"))


def overwrite_partitions(batch, batch_id):
    """Idempotent: each batch overwrites the page partitions it touches."""
    (batch.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("page")
     .parquet(batch.sparkSession.conf.get(OUT)))


def append_rows(batch, batch_id):
    """Not idempotent: a batch run twice appends its rows twice."""
    batch.write.mode("append").partitionBy("page").parquet(batch.sparkSession.conf.get(OUT))


def build(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return (_counts(clicks).writeStream.outputMode("update").foreachBatch(overwrite_partitions)
            .option("checkpointLocation", "/checkpoints/page_counts").trigger(processingTime="1 minute")
            .queryName("page_counts"))


def build_appending(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(append_rows)


def main(spark):
    """A job's entry point as it ships: starts its query and waits on it (and on any query)."""
    clicks = spark.readStream.json("/data/clicks", schema="page string, ts timestamp")
    query = (_counts(clicks).writeStream.outputMode("append").option("checkpointLocation", "/checkpoints/x")
             .toTable("page_counts"))
    query.awaitTermination()
    spark.streams.awaitAnyTermination()


def unmatched_reader(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/other")  # <- unmatched
    return _counts(clicks).writeStream.foreachBatch(overwrite_partitions)


def batch_limit(spark):
    clicks = (spark.readStream.format("json").schema("page string, ts timestamp")
              .option("maxFilesPerTrigger", 1)  # <- batch size
              .load("/data/clicks"))
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(overwrite_partitions)


def file_age(spark):
    clicks = (spark.readStream.format("json").schema("page string, ts timestamp")
              .option("maxFileAge", "1h")  # <- option
              .load("/data/clicks"))
    return _counts(clicks).writeStream.foreachBatch(overwrite_partitions)


def connector_sink(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return (_counts(clicks).writeStream
            .format("org.apache.spark.sql.cassandra")  # <- sink
            .option("table", "page_counts"))


def raising(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(_reject_cart)


def _reject_cart(batch, batch_id):
    if batch.where("page = 'cart'").count():
        raise ValueError("no carts here")  # <- raise
    overwrite_partitions(batch, batch_id)


def file_sink(spark):
    """A parquet file sink whose path comes from the conf the contract's path parameter sets."""
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    return (_counts(clicks).writeStream.outputMode("append").format("parquet")
            .option("path", spark.conf.get(OUT)).option("checkpointLocation", "/checkpoints/files"))


def file_sink_outside(spark):
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
    _counts(clicks).writeStream.outputMode("append").format("parquet").start("../out")  # <- outside
