"""A job's own session helper, as public jobs keep one (`utils/spark.py: get_spark()`), for `jobs_as_shipped.py`.
The comments `# <- NAME` mark the lines a note must name (test_job_entry.py finds them)."""
from __future__ import annotations

from pyspark.sql import SparkSession

SKIP = "jobs.test.skip_page"  # a runtime setting of the job's own: applied for its query


def get_spark():
    return (SparkSession.builder
            .appName("page-counts")  # <- app name
            .master("yarn")  # <- master
            .config("spark.jars.packages", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0")  # <- packages
            .config("spark.sql.shuffle.partitions", "8")  # <- partitions
            .config("spark.sql.session.timeZone", "UTC")
            .config(SKIP, "cart")
            .enableHiveSupport()  # <- hive
            .getOrCreate())
