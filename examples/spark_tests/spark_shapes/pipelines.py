"""Queries in the shapes of Spark's own streaming tests, each a plain function of DataFrames.

Spark's suites feed a `MemoryStream[Int]` (one INT column `value`) or a `MemoryStream[(String, Int)]`
(tuple columns `_1`, `_2`) and derive the event time inside the query with `timestamp_seconds`; their
results keep the `window` struct or cast its start to a long. These functions do the same; the
contracts in `contracts/` describe them and `pyproject.toml` binds each to its contract.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def with_event_time(input_data: DataFrame, column: str, watermark_delay: str) -> DataFrame:
    """`eventTime` = `timestamp_seconds(column)`, watermarked by `watermark_delay`."""
    return (input_data.withColumn("eventTime", F.timestamp_seconds(column))
            .withWatermark("eventTime", watermark_delay))


def windowed_count(input_data: DataFrame, window: str, watermark_delay: str) -> DataFrame:
    """EventTimeWatermarkSuite: count per tumbling window, the window's start cast to a long."""
    return (with_event_time(input_data, "value", watermark_delay)
            .groupBy(F.window("eventTime", window).alias("window"))
            .agg(F.count("*").alias("count"))
            .select(F.col("window.start").cast("long").alias("start"), "count"))


def window_summary(input_data: DataFrame, window: str, watermark_delay: str) -> DataFrame:
    """The `window` struct kept as it is, the window's values as an array, a nested struct of stats."""
    counted = (with_event_time(input_data, "value", watermark_delay)
               .groupBy(F.window("eventTime", window).alias("window"))
               .agg(F.count("*").alias("count"), F.sort_array(F.collect_list("value")).alias("values"),
                    F.min("value").alias("low"), F.max("value").alias("high")))
    stats = F.struct(F.struct(F.col("low").alias("min"), F.col("high").alias("max")).alias("range"),
                     F.size(F.array_distinct("values")).alias("distinct"))
    return counted.select("window", "count", "values", stats.alias("stats"))


def dedup_first_column(df: DataFrame) -> DataFrame:
    """StreamingDeduplicationSuite, "deduplicate with some columns": no watermark, state kept forever."""
    return df.dropDuplicates(["_1"])


def dedup_with_watermark(input_data: DataFrame, watermark_delay: str) -> DataFrame:
    """StreamingDeduplicationSuite, "deduplicate with watermark": all columns, event time among them."""
    return (with_event_time(input_data, "value", watermark_delay).dropDuplicates()
            .select(F.col("eventTime").cast("long").alias("eventTime")))


def dedup_within_watermark(input_data: DataFrame, watermark_delay: str) -> DataFrame:
    """StreamingDeduplicationSuite, dropDuplicatesWithinWatermark on `_1` (Spark 3.5+)."""
    return (with_event_time(input_data, "_2", watermark_delay)
            .dropDuplicatesWithinWatermark(["_1"]).select("_1", "_2"))


def time_range_join(left: DataFrame, right: DataFrame, left_delay: str, right_delay: str, bound: str) -> DataFrame:
    """StreamingJoinSuite, inner join with a time range and a watermark on each side."""
    left_side = (left.toDF("leftKey", "time")
                 .select("leftKey", F.timestamp_seconds("time").alias("leftTime"),
                         (F.col("leftKey") * 2).alias("leftValue"))
                 .withWatermark("leftTime", left_delay))
    right_side = (right.toDF("rightKey", "time")
                  .select("rightKey", F.timestamp_seconds("time").alias("rightTime"),
                          (F.col("rightKey") * 3).alias("rightValue"))
                  .withWatermark("rightTime", right_delay))
    condition = F.expr(f"leftKey = rightKey AND leftTime BETWEEN rightTime - INTERVAL {bound} "
                       f"AND rightTime + INTERVAL {bound}")
    return (left_side.join(right_side, condition)
            .select("leftKey", F.col("leftTime").cast("int").alias("leftTime"),
                    F.col("rightTime").cast("int").alias("rightTime")))


def dedup_then_count(input_data: DataFrame, window: str, watermark_delay: str) -> DataFrame:
    """StreamingDeduplicationSuite, "deduplicate with aggregate": a window count over dedup's output."""
    return (with_event_time(input_data, "value", watermark_delay).dropDuplicates()
            .groupBy(F.window("eventTime", window).alias("window"))
            .agg(F.count("*").alias("count"))
            .select(F.col("window.start").cast("long").alias("start"), "count"))


def window_of_windows(input_data: DataFrame, window: str, outer_window: str, watermark_delay: str) -> DataFrame:
    """MultiStatefulOperatorsSuite, windowed agg + windowed agg: the second windows the first's `window`."""
    inner = (with_event_time(input_data, "value", watermark_delay)
             .groupBy(F.window("eventTime", window).alias("window"))
             .agg(F.count("*").alias("count")))
    return (inner.groupBy(F.window("window", outer_window).alias("window"))
            .agg(F.count("*").alias("count"), F.sum("count").alias("sum"))
            .select(F.col("window.start").cast("long").alias("start"), "count", "sum"))


def window_join(left: DataFrame, right: DataFrame, window: str, left_delay: str, right_delay: str) -> DataFrame:
    """StreamingJoinSuite, inner join on a key and the event-time window, a watermark on each side."""
    def side(df: DataFrame, delay: str, value: str, factor: int) -> DataFrame:
        return (df.select(F.col("value").alias("key"), F.timestamp_seconds("value").alias("timestamp"),
                          (F.col("value") * factor).alias(value))
                .withWatermark("timestamp", delay)
                .select("key", F.window("timestamp", window).alias("window"), value))
    joined = side(left, left_delay, "leftValue", 2).join(side(right, right_delay, "rightValue", 3), ["key", "window"])
    return joined.select("key", F.col("window.end").cast("long").alias("end"), "leftValue", "rightValue")


def left_outer_join(left: DataFrame, right: DataFrame, left_delay: str, right_delay: str, bound: str) -> DataFrame:
    """StreamingOuterJoinSuite: a left outer join that keeps `eventTime` from both sides (two columns of
    one name), a right row matching when its eventTime is within `bound` after the left one's."""
    def side(df: DataFrame, delay: str) -> DataFrame:
        return (df.select(F.col("_1").alias("key"), F.timestamp_seconds("_2").alias("eventTime"))
                .withWatermark("eventTime", delay))
    left_side, right_side = side(left, left_delay), side(right, right_delay)
    condition = ((left_side["key"] == right_side["key"])
                 & (right_side["eventTime"] >= left_side["eventTime"])
                 & (right_side["eventTime"] <= left_side["eventTime"] + F.expr(f"INTERVAL {bound}")))
    return (left_side.join(right_side, condition, "left_outer")
            .select(left_side["key"], left_side["eventTime"], right_side["eventTime"]))
