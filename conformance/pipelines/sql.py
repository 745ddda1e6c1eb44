"""Second implementations of the bundled contracts, written as SQL text over temporary views.

They must pass the same scenarios as the DataFrame-API references: that is what certifying "any
implementation" of a contract means. Temporary views are session-wide, so each query registers its
inputs under names of its own.
"""
from __future__ import annotations

import uuid

from typing import Any

from pyspark.sql import DataFrame


def _views(sources, delays: dict[str, str]) -> tuple[Any, dict[str, str]]:
    """Register each watermarked source as a fresh temp view; returns (spark, name -> view)."""
    names = {}
    spark = None
    for name, delay in delays.items():
        df = sources[name].withWatermark("ts", delay)
        spark = df.sparkSession
        view = f"{name}_{uuid.uuid4().hex}"
        df.createOrReplaceTempView(view)
        names[name] = view
    return spark, names


def tumbling_count(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"""
        SELECT key, window.start AS window_start, window.end AS window_end, count(*) AS count
        FROM {v['events']}
        GROUP BY window(ts, '{params.window.interval}'), key
    """)


def tumbling_sum(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"""
        SELECT key, window.start AS window_start, window.end AS window_end,
               count(*) AS count, sum(amount) AS total
        FROM {v['events']}
        GROUP BY window(ts, '{params.window.interval}'), key
    """)


def sliding_count(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"""
        SELECT key, window.start AS window_start, window.end AS window_end, count(*) AS count
        FROM {v['events']}
        GROUP BY window(ts, '{params.window.interval}', '{params.slide.interval}'), key
    """)


def session_count(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"""
        SELECT key, session_window.start AS session_start, session_window.end AS session_end,
               count(*) AS count
        FROM {v['events']}
        GROUP BY session_window(ts, '{params.gap.interval}'), key
    """)


def session_count_dynamic_gap(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"""
        SELECT key, session_window.start AS session_start, session_window.end AS session_end,
               count(*) AS count
        FROM {v['events']}
        GROUP BY session_window(ts, gap), key
    """)


def event_time_count(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"SELECT key, ts, count(*) AS count FROM {v['events']} GROUP BY key, ts")


_SQL_JOIN = {"inner": "JOIN", "left_outer": "LEFT OUTER JOIN", "right_outer": "RIGHT OUTER JOIN",
             "full_outer": "FULL OUTER JOIN"}


def interval_join(sources, params) -> DataFrame:
    spark, v = _views(sources, {"left": params.left_delay.interval, "right": params.right_delay.interval})
    bound = params.bound.interval
    return spark.sql(f"""
        SELECT coalesce(l.key, r.key) AS key, l.ts AS left_ts, r.ts AS right_ts
        FROM {v['left']} l {_SQL_JOIN[params.join_type]} {v['right']} r
          ON l.key = r.key
         AND r.ts BETWEEN l.ts - INTERVAL {bound} AND l.ts + INTERVAL {bound}
    """)


def chained_window_count(sources, params) -> DataFrame:
    spark, v = _views(sources, {"events": params.watermark_delay.interval})
    return spark.sql(f"""
        SELECT window.start AS window_start, window.end AS window_end,
               count(*) AS groups, sum(count) AS events
        FROM (
            SELECT window AS inner_window, key, count(*) AS count
            FROM {v['events']}
            GROUP BY window(ts, '{params.window.interval}'), key
        )
        GROUP BY window(window_time(inner_window), '{params.outer_window.interval}')
    """)
