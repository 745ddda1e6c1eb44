"""Deliberately wrong implementations: the standard suite must reject every one of them.

Each is a plausible mistake a data engineer makes, and each is listed in WRONG with the contract it
claims to implement and what is wrong with it. Each must run: a scenario has to catch it by a
wrong result (`failed`); a query Spark refuses outright (`error`) proves nothing about the suite. `tests/spark/test_teeth.py` certifies them against
the suite and `benchmarks/kill_rate.py` records which scenarios catch each one.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from eventtime import Output
from eventtime.pipelines import reference as ref


def _window_count(df, window_col):
    return (df.groupBy(window_col.alias("w"), "key").count()
            .select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "count"))


# -- tumbling_count ----------------------------------------------------------------------------
def tumbling_no_watermark(sources, params):
    return _window_count(sources["events"], F.window("ts", params.window.interval))


def tumbling_watermark_on_ingest_time(sources, params):
    events = sources["events"].withColumn("ingested", F.current_timestamp())
    events = events.withWatermark("ingested", params.watermark_delay.interval)
    return _window_count(events, F.window("ts", params.window.interval))


def tumbling_processing_time_windows(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _window_count(events, F.window(F.current_timestamp(), params.window.interval))


def tumbling_delay_too_large(sources, params):
    delay = f"{params.watermark_delay.total_us * 2 + 1_000_000} microseconds"
    events = sources["events"].withWatermark("ts", delay)
    return _window_count(events, F.window("ts", params.window.interval))


def tumbling_delay_too_small(sources, params):
    delay = f"{params.watermark_delay.total_us // 2} microseconds"
    events = sources["events"].withWatermark("ts", delay)
    return _window_count(events, F.window("ts", params.window.interval))


def tumbling_update_where_append_promised(sources, params):
    df = ref.tumbling_count(sources, params)
    return Output(df, output_mode="update" if params.output_mode == "append" else params.output_mode)


def tumbling_windows_offset(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    w = params.window.interval
    return _window_count(events, F.window("ts", w, w, "1 second"))


# -- sliding_count / session_count ----------------------------------------------------------------
def sliding_ignores_slide(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return _window_count(events, F.window("ts", params.window.interval))


def session_as_tumbling(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return (events.groupBy(F.window("ts", params.gap.interval).alias("w"), "key").count()
            .select("key", F.col("w.start").alias("session_start"), F.col("w.end").alias("session_end"), "count"))


# -- dedup ----------------------------------------------------------------------------------------
def dedup_forgets_watermark(sources, params):
    return sources["events"].dropDuplicates(["id", "ts"])


def dedup_on_id_only(sources, params):
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    return events.dropDuplicates(["id"])


# -- interval_join --------------------------------------------------------------------------------
def join_always_inner(sources, params):
    class Inner:
        def __getattr__(self, name):
            return "inner" if name == "join_type" else getattr(params, name)

    return ref.interval_join(sources, Inner())


def join_bound_one_sided(sources, params):
    left = (sources["left"].withWatermark("ts", params.left_delay.interval)
            .select(F.col("key").alias("lkey"), F.col("ts").alias("left_ts")))
    right = (sources["right"].withWatermark("ts", params.right_delay.interval)
             .select(F.col("key").alias("rkey"), F.col("ts").alias("right_ts")))
    bound = F.expr(f"INTERVAL {params.bound.interval}")
    cond = ((F.col("lkey") == F.col("rkey")) & (F.col("right_ts") >= F.col("left_ts"))
            & (F.col("right_ts") <= F.col("left_ts") + bound))
    joined = left.join(right, cond, params.join_type)
    return joined.select(F.coalesce("lkey", "rkey").alias("key"), "left_ts", "right_ts")


# -- union_tumbling_count -------------------------------------------------------------------------
def union_one_watermark_after_union(sources, params):
    delay = min(params.left_delay, params.right_delay, key=lambda d: d.total_us)
    events = sources["left"].unionByName(sources["right"]).withWatermark("ts", delay.interval)
    return _window_count(events, F.window("ts", params.window.interval))


# -- chained_window_count -------------------------------------------------------------------------
def chained_outer_window_slides_by_inner(sources, params):
    """Passes the inner window's length as the outer window's slide: `window(col, duration, slide)`
    read as (inner, outer), so the outer windows overlap and each inner window is counted twice."""
    events = sources["events"].withWatermark("ts", params.watermark_delay.interval)
    per_key = events.groupBy(F.window("ts", params.window.interval).alias("w"), "key").count()
    outer = F.window(F.window_time("w"), params.outer_window.interval, params.window.interval).alias("w")
    return (per_key.groupBy(outer).agg(F.count(F.lit(1)).alias("groups"), F.sum("count").alias("events"))
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "groups", "events"))


# -- inactivity_timeout ---------------------------------------------------------------------------
def inactivity_fires_at_equality(sources, params):
    """Sets the timeout one millisecond early, so it fires when the watermark *equals* last + timeout."""
    class Early:
        def __getattr__(self, name):
            if name == "timeout":
                from eventtime.timeparse import Duration

                return Duration(max(params.timeout.total_us - 1000, 0))
            return getattr(params, name)

    from eventtime.pipelines.stateful import inactivity_timeout

    return inactivity_timeout(sources, Early())


# -- lateness_count (the dataflow profile's triggers) ----------------------------------------------
def _lateness_count_with(sources, params, change):
    """The bundled lateness_count pipeline with its window logic (`_Windowing`) replaced by `change(base)`,
    a subclass made inside a function so the workers receive it by value."""
    from unittest import mock

    from eventtime.pipelines import dataflow

    with mock.patch.object(dataflow, "_Windowing", change(dataflow._Windowing)):
        return dataflow.lateness_count(sources, params)


def lateness_pane_never_restarts(sources, params):
    """A firing does not start a new pane: the early trigger fires on every element once the window holds
    early_count, and a discarding firing counts everything since the first."""
    def change(base):
        class Windowing(base):
            def fire(self, start, w, firing):
                pane = w[2]
                out = super().fire(start, w, firing)
                w[2] = pane
                return out
        return Windowing

    return _lateness_count_with(sources, params, change)


def lateness_discarding_ignored(sources, params):
    """Ignores `accumulation`: every firing counts the window so far."""
    class Accumulating:
        def __getattr__(self, name):
            return "accumulating" if name == "accumulation" else getattr(params, name)

        def __getitem__(self, name):
            return getattr(self, name)

    from eventtime.pipelines.dataflow import lateness_count

    return lateness_count(sources, Accumulating())


def lateness_on_time_skips_empty_pane(sources, params):
    """Flink's PurgingTrigger habit: no on-time firing when the pane is empty (the contract fires always)."""
    def change(base):
        class Windowing(base):
            def timers(self, open_, watermark):
                return [f for f in super().timers(open_, watermark) if f[1] or f[2] != "on_time"]
        return Windowing

    return _lateness_count_with(sources, params, change)


# -- session_lateness_count (merging sessions, the dataflow profile's triggers) ----------------------------
def _session_lateness_count_with(sources, params, change):
    """The bundled session_lateness_count pipeline with its session logic (`_Sessions`) replaced by
    `change(base)`, a subclass made inside a function so the workers receive it by value."""
    from unittest import mock

    from eventtime.pipelines import dataflow

    with mock.patch.object(dataflow, "_Sessions", change(dataflow._Sessions)):
        return dataflow.session_lateness_count(sources, params)


def session_lateness_never_bridges(sources, params):
    """An element extends the first session it touches, but two sessions it bridges never merge."""
    def change(base):
        class Sessions(base):
            def merged(self, open_, us):
                session, into = super().merged(open_, us)
                if len(into) < 2:
                    return session, into
                first = min(into)
                return [min(first[0], us), max(first[1], us + self.gap_us), *first[2:]], [first]
        return Sessions

    return _session_lateness_count_with(sources, params, change)


def session_lateness_judged_per_element(sources, params):
    """Lateness judged on the element's own window [ts, ts + gap), as Spark's session_window judges a row,
    not on the session it merges into: a late element that would bridge into a live session is dropped."""
    def change(base):
        class Sessions(base):
            def arrivals(self, open_, frames, watermark):
                out = []
                for frame in frames:
                    for us in frame["ts_us"]:
                        us = int(us)
                        if self.max_ts_ms(us + self.gap_us) + self.lateness_ms <= watermark:
                            out.append((us, us + self.gap_us, 1, "dropped", us))
                        else:
                            out += super().arrivals(open_, [{"ts_us": [us]}], watermark)
                return out
        return Sessions

    return _session_lateness_count_with(sources, params, change)


def session_lateness_late_at_the_boundary(sources, params):
    """Allowed lateness compared with `<` for `<=`: an element whose session's end - 1 ms + allowed lateness
    equals the watermark is still accepted and fires late (and a session lives 1 ms longer)."""
    def change(base):
        class Sessions(base):
            def __init__(self, gap_us, lateness_ms, **kw):
                super().__init__(gap_us, lateness_ms + 1, **kw)
        return Sessions

    return _session_lateness_count_with(sources, params, change)


# name -> (contract, function, what is wrong)
WRONG = {
    "tumbling_no_watermark": ("tumbling_count", tumbling_no_watermark, "no withWatermark at all"),
    "tumbling_watermark_on_ingest_time": ("tumbling_count", tumbling_watermark_on_ingest_time,
                                          "watermark on an ingestion-time column instead of ts"),
    "tumbling_processing_time_windows": ("tumbling_count", tumbling_processing_time_windows,
                                         "windows over processing time (current_timestamp) instead of ts"),
    "tumbling_delay_too_large": ("tumbling_count", tumbling_delay_too_large, "watermark delay 2x + 1 s too large"),
    "tumbling_delay_too_small": ("tumbling_count", tumbling_delay_too_small, "watermark delay halved"),
    "tumbling_update_where_append_promised": ("tumbling_count", tumbling_update_where_append_promised,
                                              "writes in update mode where append is promised"),
    "tumbling_windows_offset": ("tumbling_count", tumbling_windows_offset, "windows start 1 s off the epoch grid"),
    "sliding_ignores_slide": ("sliding_count", sliding_ignores_slide, "tumbling windows: the slide is ignored"),
    "session_as_tumbling": ("session_count", session_as_tumbling, "tumbling windows of the gap length, not sessions"),
    "dedup_forgets_watermark": ("dedup", dedup_forgets_watermark, "dropDuplicates without a watermark"),
    "dedup_on_id_only": ("dedup", dedup_on_id_only, "deduplicates on id alone, not (id, ts)"),
    "join_always_inner": ("interval_join", join_always_inner, "ignores join_type, always an inner join"),
    "join_bound_one_sided": ("interval_join", join_bound_one_sided, "range condition only on one side of left.ts"),
    "union_one_watermark_after_union": ("union_tumbling_count", union_one_watermark_after_union,
                                        "one watermark on the union (smallest delay), policy ignored"),
    "chained_outer_window_slides_by_inner": ("chained_window_count", chained_outer_window_slides_by_inner,
                                             "outer window slides by the inner window's length: windows overlap"),
    "inactivity_fires_at_equality": ("inactivity_timeout", inactivity_fires_at_equality,
                                     "the timeout fires when the watermark equals last_ts + timeout"),
    "lateness_pane_never_restarts": ("lateness_count", lateness_pane_never_restarts,
                                     "a firing does not start a new pane (early fires on every element after N)"),
    "lateness_discarding_ignored": ("lateness_count", lateness_discarding_ignored,
                                    "accumulation ignored: discarding panes count the window so far"),
    "lateness_on_time_skips_empty_pane": ("lateness_count", lateness_on_time_skips_empty_pane,
                                          "no on-time firing of an empty pane (Flink's PurgingTrigger)"),
    "session_lateness_never_bridges": ("session_lateness_count", session_lateness_never_bridges,
                                       "a late element that bridges two sessions extends one; they never merge"),
    "session_lateness_judged_per_element": ("session_lateness_count", session_lateness_judged_per_element,
                                            "lateness judged on the element's own window, not the merged session"),
    "session_lateness_late_at_the_boundary": ("session_lateness_count", session_lateness_late_at_the_boundary,
                                              "a late firing at end - 1 ms + allowed lateness == the watermark"),
}
