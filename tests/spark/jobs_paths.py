"""Jobs that write files as a user writes them, for `test_job_paths.py`: Spark's file sink, and paths
written as in production (relative, absolute, built from `__file__`, URIs). The comments `# <- NAME`
mark the lines an error must name (the tests find them)."""
from __future__ import annotations

import os

from pyspark.sql import functions as F

from tests.spark.jobs_under_test import OUT, _counts

def _clicks(spark):
    return spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")


def file_sink(spark):
    """A parquet file sink whose path comes from the conf the contract's path parameter sets."""
    return (_counts(_clicks(spark)).writeStream.outputMode("append").format("parquet")
            .option("path", spark.conf.get(OUT)).option("checkpointLocation", "/checkpoints/files"))


def _file_sink_to(spark, path):
    return (_counts(_clicks(spark)).writeStream.outputMode("append").format("parquet").option("path", path)
            .option("checkpointLocation", "data/checkpoints/counts"))


def relative_sink(spark):
    """Hard-coded relative paths, as most jobs have them."""
    return _file_sink_to(spark, "data/gold/counts")


def absolute_sink(spark):
    _file_sink_to(spark, "/data/gold/counts").start()


def uri_sink(spark):
    return (_counts(_clicks(spark)).writeStream.outputMode("append").format("parquet")
            .option("checkpointLocation", "s3a://lake/checkpoints/counts").start("s3a://lake/gold/counts"))


HERE_GOLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "gold", "counts")


def file_built_sink(spark):
    """A path built from the module's own `__file__`."""
    return _file_sink_to(spark, HERE_GOLD)


def silver_then_gold(batch, batch_id):
    """A foreachBatch function that writes a folder and reads it back, in the stream's callback thread."""
    batch.write.mode("append").parquet("data/silver/counts")
    everything = batch.sparkSession.read.parquet("data/silver/counts")
    everything.groupBy("page", "window_start").agg(F.sum("clicks").alias("clicks")) \
        .write.mode("overwrite").format("parquet").save(path="file:///data/gold/totals")


def batch_writes(spark):
    return _counts(_clicks(spark)).writeStream.outputMode("append").foreachBatch(silver_then_gold)


def sink_climbing_out(spark):
    _file_sink_to(spark, "../outside/counts").start()  # <- sink climbs


def _write_above(batch, batch_id):
    batch.write.mode("append").parquet("data/../../outside")  # <- batch climbs


def batch_write_climbing_out(spark):
    return _counts(_clicks(spark)).writeStream.outputMode("append").foreachBatch(_write_above)


OUTSIDE = ""  # a folder outside the run, set by the test


def _write_through_link(batch, batch_id):
    own = batch.sparkSession.conf.get(OUT)
    os.makedirs(own, exist_ok=True)
    if not os.path.islink(os.path.join(own, "link")):
        os.symlink(OUTSIDE, os.path.join(own, "link"))
    batch.write.mode("append").parquet(os.path.join(own, "link", "counts"))  # <- through link


def batch_write_through_link(spark):
    return _counts(_clicks(spark)).writeStream.outputMode("append").foreachBatch(_write_through_link)


def main_reads_missing_static(spark):
    """`spark.read` in main is kept too: the static path is looked for inside the run folder."""
    spark.read.parquet("/reference/pages")  # <- static read
    return _file_sink_to(spark, "data/gold/counts")
