"""Reference implementations of the bundled contracts in idiomatic PySpark (DataFrame API).

A pipeline is `fn(sources, params) -> DataFrame`: `sources` maps each source name to a streaming
DataFrame, `params` holds the scenario's contract parameters (durations have `.interval`, a Spark
interval string). The harness writes the returned DataFrame with `params.output_mode` unless the
pipeline returns `conformance.Output(df, output_mode=...)`.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_JOIN_TYPES = {"inner": "inner", "left_outer": "left_outer", "right_outer": "right_outer",
               "full_outer": "full_outer"}


def _window_columns(prefix: str = "window") -> list:
    return [F.col("w.start").alias(f"{prefix}_start"), F.col("w.end").alias(f"{prefix}_end")]


def _window_count(df: DataFrame, window: str, slide: str | None = None) -> DataFrame:
    w = F.window("ts", window, slide) if slide else F.window("ts", window)
    return df.groupBy(w.alias("w"), "key").count().select("key", *_window_columns(), "count")


def tumbling_count(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _window_count(events, params.window.interval)


def tumbling_sum(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return (events.groupBy(F.window("ts", params.window.interval).alias("w"), "key")
            .agg(F.count(F.lit(1)).alias("count"), F.sum("amount").alias("total"))
            .select("key", *_window_columns(), "count", "total"))


def sliding_count(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _window_count(events, params.window.interval, params.slide.interval)


def _session_count(events: DataFrame, gap) -> DataFrame:
    return (events.groupBy(F.session_window("ts", gap).alias("w"), "key").count()
            .select("key", *_window_columns("session"), "count"))


def session_count(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _session_count(events, params.gap.interval)


def session_count_dynamic_gap(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _session_count(events, F.col("gap"))


def event_time_count(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return events.groupBy("key", "ts").count()


def dedup(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return events.dropDuplicates(["id", "ts"])


def dedup_within_watermark(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return events.dropDuplicatesWithinWatermark(["id"])


def _join_sides(sources, params) -> tuple[DataFrame, DataFrame]:
    """The two watermarked join inputs, renamed apart: (lkey, left_ts) and (rkey, right_ts)."""
    left = (sources["left"].withWatermark("ts", params.left_delay.interval)
            .select(F.col("key").alias("lkey"), F.col("ts").alias("left_ts")))
    right = (sources["right"].withWatermark("ts", params.right_delay.interval)
             .select(F.col("key").alias("rkey"), F.col("ts").alias("right_ts")))
    return left, right


def interval_join(sources, params) -> DataFrame:
    left, right = _join_sides(sources, params)
    bound = F.expr(f"INTERVAL {params.bound.interval}")
    condition = ((F.col("lkey") == F.col("rkey"))
                 & (F.col("right_ts") >= F.col("left_ts") - bound)
                 & (F.col("right_ts") <= F.col("left_ts") + bound))
    joined = left.join(right, condition, _JOIN_TYPES[params.join_type])
    return joined.select(F.coalesce("lkey", "rkey").alias("key"), "left_ts", "right_ts")


def union_tumbling_count(sources, params) -> DataFrame:
    left = sources["left"].withWatermark("ts", params.left_delay.interval)
    right = sources["right"].withWatermark("ts", params.right_delay.interval)
    return _window_count(left.unionByName(right), params.window.interval)


def chained_window_count(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    per_key = events.groupBy(F.window("ts", params.window.interval).alias("w"), "key").count()
    outer = F.window(F.window_time("w"), params.outer_window.interval).alias("w")
    return (per_key.groupBy(outer)
            .agg(F.count(F.lit(1)).alias("groups"), F.sum("count").alias("events"))
            .select(*_window_columns(), "groups", "events"))


def join_then_count(sources, params) -> DataFrame:
    left, right = _join_sides(sources, params)
    bound = F.expr(f"INTERVAL {params.bound.interval}")
    matches = left.join(right, (F.col("lkey") == F.col("rkey")) & (F.col("right_ts") >= F.col("left_ts"))
                        & (F.col("right_ts") <= F.col("left_ts") + bound), "inner")
    return (matches.groupBy(F.window("left_ts", params.window.interval).alias("w"), F.col("lkey").alias("key"))
            .count().select("key", *_window_columns(), "count"))


def processing_time_stamp(sources, params) -> DataFrame:
    return sources["events"].select("key", "ts", F.current_timestamp().alias("processed_at"))
