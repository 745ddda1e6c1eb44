"""Versions of the tumbling count as a deploy changes them, for the runs across a change
(`run_scenario(crossing=NewVersion(...))`, tests/spark/test_upgrade.py). The previous version is
`eventtime.pipelines.reference:tumbling_count`."""
from pyspark.sql import functions as F

from eventtime.pipelines.reference import tumbling_count


def projected(sources, params):
    """Compatible: the same aggregation, a different projection after it (the window's end computed
    from its start, the columns in another order); the state is untouched."""
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    counts = events.groupBy(F.window("ts", params.window.interval).alias("w"), "key").count()
    return counts.select("count", F.col("w.start").alias("window_start"), "key",
                         (F.col("w.start") + F.expr(f"INTERVAL {params.window.interval}")).alias("window_end"))


def doubled(sources, params):
    """Restarts (the state is the same) but counts wrong: its outputs differ after the restart."""
    return tumbling_count(sources, params).withColumn("count", F.col("count") * 2)


def regrouped(sources, params):
    """Incompatible: a grouping key added (the key's length), so the state's key schema changes."""
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    counts = events.groupBy(F.window("ts", params.window.interval).alias("w"), "key",
                            F.length("key").alias("key_length")).count()
    return counts.select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "count")
