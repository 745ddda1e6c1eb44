"""A job that is all module-level code reading `sys.argv`, with a bare `spark.stop()` at the bottom
(test_job_entry.py runs it as `__main__`, as spark-submit does; importing it would start a query)."""
import sys

from pyspark.sql import SparkSession

from tests.spark.jobs_under_test import _counts, overwrite_partitions

spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
clicks = spark.readStream.format("json").schema("page string, ts timestamp").load(sys.argv[1])
query = _counts(clicks).writeStream.outputMode("update").foreachBatch(overwrite_partitions).start()
query.awaitTermination()
spark.stop()
