"""The session helper every job of the team uses."""
from pyspark.sql import SparkSession


def get_spark(app_name: str) -> SparkSession:
    return (SparkSession.builder
            .appName(app_name)
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "8")
            .getOrCreate())
