"""A team's own tumbling-window count, written the way they like it (SQL-ish column expressions)."""
from pyspark.sql import functions as F


def count_per_window(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    w = F.window(F.col("ts"), params.window.interval)
    return (events.groupBy(F.col("key"), w.alias("bucket"))
            .agg(F.count(F.lit(1)).alias("count"))
            .select("key", F.col("bucket.start").alias("window_start"), F.col("bucket.end").alias("window_end"),
                    "count"))
