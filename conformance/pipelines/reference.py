"""Reference implementations of the bundled contracts, one function per contract shape.

A pipeline is `fn(sources, params) -> DataFrame`: `sources` maps each source name to a streaming
DataFrame, `params` holds the scenario's contract parameters (durations have `.interval`, a Spark
interval string). The harness writes the returned DataFrame with `params.output_mode` unless the
pipeline returns `conformance.Output(df, output_mode=...)`.
"""
from __future__ import annotations

import uuid

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def _window_count(df: DataFrame, window: str) -> DataFrame:
    return (df.groupBy(F.window("ts", window).alias("w"), "key").count()
            .select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                    "count"))


def tumbling_count(sources, params) -> DataFrame:
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _window_count(events, params.window.interval)


def tumbling_count_sql(sources, params) -> DataFrame:
    """The same contract written as SQL text over a temporary view."""
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    spark = events.sparkSession
    view = f"events_{uuid.uuid4().hex}"  # temp views are session-wide: keep each query's own
    events.createOrReplaceTempView(view)
    return spark.sql(f"""
        SELECT key, window.start AS window_start, window.end AS window_end, count(*) AS count
        FROM {view}
        GROUP BY window(ts, '{params.window.interval}'), key
    """)


def union_tumbling_count(sources, params) -> DataFrame:
    left = sources["left"].withWatermark("ts", params.left_delay.interval)
    right = sources["right"].withWatermark("ts", params.right_delay.interval)
    return _window_count(left.unionByName(right), params.window.interval)


def processing_time_stamp(sources, params) -> DataFrame:
    return sources["events"].select("key", "ts", F.current_timestamp().alias("processed_at"))
