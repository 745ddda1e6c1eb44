"""Clicks and revenue per page and country in 5-minute windows, for the traffic dashboard."""
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from shop.events import parse_clicks, read_clicks


def transform(clicks: DataFrame, window: str = "5 minutes", watermark_delay: str = "10 minutes") -> DataFrame:
    events = parse_clicks(clicks).withWatermark("ts", watermark_delay)
    return (events.groupBy("page", "country", F.window("ts", window).alias("window"))
            .agg(F.count(F.lit(1)).alias("clicks"),
                 F.coalesce(F.sum("price"), F.lit(0)).cast("decimal(12,2)").alias("revenue"))
            .select("page", "country", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "clicks", "revenue"))


def main(argv=None) -> None:  # pragma: no cover - production I/O, not under test
    bootstrap, out = (argv or sys.argv[1:])[:2]
    spark = SparkSession.builder.appName("clicks-per-page").getOrCreate()
    (transform(read_clicks(spark, bootstrap)).writeStream.outputMode("append").format("parquet")
     .option("path", out).option("checkpointLocation", out + "/_checkpoint").start().awaitTermination())


if __name__ == "__main__":  # pragma: no cover
    main()
