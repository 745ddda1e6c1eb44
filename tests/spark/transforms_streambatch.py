"""Transforms for `test_stream_batch.py`, written as a user writes them: functions of the clicks DataFrame
(`transform(df)`), called by the kit on the streaming source and, for `stream-equals-batch`, on a batch
DataFrame of the same rows."""
from __future__ import annotations

import pandas as pd
from pyspark.sql import functions as F


def windowed_counts(clicks):
    """Correct: clicks per page and 10-second window in append mode (a window is written once, when the
    watermark passes its end; a click behind the watermark is dropped as late)."""
    return (clicks.withWatermark("ts", "10 seconds")
            .groupBy("page", F.window("ts", "10 seconds").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks"))


def sliding_counts(clicks):
    """Correct: clicks per page in 10-second windows every 5 seconds. A click is in two windows, so Spark may drop
    it from one as late and keep it in the other: its drop count is not a count of clicks."""
    return (clicks.withWatermark("ts", "10 seconds")
            .groupBy("page", F.window("ts", "10 seconds", "5 seconds").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks"))


def _count(pdf: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"page": [pdf["page"].iloc[0]], "clicks": [len(pdf)]})


def counts_per_group(clicks):
    """Seeded bug: clicks per page counted with a grouped pandas function. On a batch DataFrame that is the
    count per page; on a stream Spark runs `applyInPandas` on each micro-batch's rows alone (it keeps no
    state: it is not a streaming aggregation), so a page whose clicks arrive in two micro-batches is written
    twice, each time with a partial count."""
    return clicks.groupBy("page").applyInPandas(_count, "page string, clicks bigint")


def stamped(clicks):
    """Processing time: each click with the time it was processed (`current_timestamp()`)."""
    return clicks.select("page", F.current_timestamp().alias("seen"))
