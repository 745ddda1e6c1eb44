"""Jobs that write files as a user writes them, for `test_job_paths.py`: Spark's file sink, and paths
written as in production (relative, absolute, built from `__file__`, URIs). The comments `# <- NAME`
mark the lines an error must name (the tests find them)."""
from __future__ import annotations

from pyspark.sql import functions as F

OUT = "jobs.test.out"  # the Spark setting the contract's `kind: path` parameter sets


def _counts(clicks):
    return (clicks.withWatermark("ts", "0 seconds")
            .groupBy("page", F.window("ts", "1 minute").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks"))


def _clicks(spark):
    return spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")


def file_sink(spark):
    """A parquet file sink whose path comes from the conf the contract's path parameter sets."""
    return (_counts(_clicks(spark)).writeStream.outputMode("append").format("parquet")
            .option("path", spark.conf.get(OUT)).option("checkpointLocation", "/checkpoints/files"))
