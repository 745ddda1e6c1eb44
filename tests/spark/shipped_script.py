"""A job whose only entry is `if __name__ == "__main__":`, run as `spark-submit shipped_script.py --input ...`,
reading its arguments with argparse and a setting from the environment (test_job_entry.py)."""
from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.spark.jobs_under_test import _counts, overwrite_partitions


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shipped_script")
    parser.add_argument("--input", required=True)
    args = parser.parse_args(argv)  # <- parse
    spark = SparkSession.builder.appName("shipped-script").getOrCreate()
    clicks = spark.readStream.format("json").schema("page string, ts timestamp").load(args.input)
    clicks = clicks.where(F.col("page") != os.environ["SKIP_PAGE"])
    (_counts(clicks).writeStream.outputMode("update").foreachBatch(overwrite_partitions).start()
     .awaitTermination())


if __name__ == "__main__":
    main()
    sys.exit(0)
