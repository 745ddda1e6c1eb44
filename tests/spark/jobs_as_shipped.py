"""Jobs whose entry point is written as public jobs write it, for `test_job_entry.py`: a `main()` with no
parameters that makes its own session through a helper, ends with `spark.stop()` or `sys.exit(...)`.
The comments `# <- NAME` mark the lines an error or a note must name (the tests find them)."""
from __future__ import annotations

import sys

from pyspark import SparkContext
from pyspark.sql import functions as F

from tests.spark.jobs_under_test import _counts, overwrite_partitions
from tests.spark.shipped_utils import SKIP, get_spark

SCHEMA = "page string, ts timestamp"


def main():
    """Its own session, one query it waits on with timeouts, every query stopped and the session ended."""
    spark = get_spark()
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "4")  # <- conf set
        clicks = spark.readStream.format("json").schema(SCHEMA).load("/data/clicks")
        clicks = clicks.where(F.col("page") != spark.conf.get(SKIP))
        query = (_counts(clicks).writeStream.outputMode("update").foreachBatch(overwrite_partitions)
                 .option("checkpointLocation", "checkpoints/page_counts").start())
        spark.streams.awaitAnyTermination(timeout=3600)
        query.awaitTermination(3600)
    finally:
        for query in spark.streams.active:
            query.stop()
        SparkContext.getOrCreate().stop()  # <- context stop
        spark.stop()  # <- stop


def _started(spark):
    clicks = spark.readStream.format("json").schema(SCHEMA).load("/data/clicks")
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(overwrite_partitions).start()


def main_exits_zero():
    _started(get_spark()).awaitTermination()
    sys.exit(0)


def main_exits_three():
    _started(get_spark())
    sys.exit(3)  # <- exit


def main_no_spark(argv=None):
    """`main(argv=None)`: asks for nothing the contract supplies, so it is a job."""
    from pyspark.sql import SparkSession

    _started(SparkSession.getActiveSession())
