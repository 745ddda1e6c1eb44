"""Spark pipelines that implement Flink-style (Dataflow model) event-time semantics, certified under the dataflow profile."""
from __future__ import annotations

import json
from typing import Iterator

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from eventtime.userpipeline import implementation

_US_PER_MS = 1000
_NEVER_LATE = "2200-01-01 00:00:00"  # far ahead of any watermark, inside pandas' nanosecond range


def _ts(pd, micros: int):
    return pd.Timestamp(int(micros), unit="us")


@implementation(requires=("apply_in_pandas_with_state",))
def lateness_count(sources, params) -> DataFrame:
    """Reference of `lateness_count`: Flink's WindowOperator (tumbling windows, EventTimeTrigger, allowed
    lateness, late side output) written with applyInPandasWithState, with the contract's element-count
    early trigger (`early_count`) and accumulating or discarding panes (`accumulation`).

    - The watermark: withWatermark(ts, bound + 1 ms) makes Spark's `max - delay` equal to Flink's
      bounded-out-of-orderness `max - bound - 1 ms`.
    - Every row must reach the function, late ones included (they go to the side output). Spark
      drops rows whose event-time column is at or below the watermark before the function sees
      them; the operator's only column with the watermark metadata is a constant far in the
      future, so it drops none. The rows' own times travel as plain microseconds.
    - The function judges lateness with GroupState.getCurrentWatermarkMs() (the watermark the
      batch runs with): first the timers the watermark passed (on-time firings at end - 1 ms, state
      purged at end - 1 ms + allowed lateness), then the rows in arrival order.
    - The event-time timeout is set 1 ms before the next due time: GroupState times out when the
      watermark is strictly above it, a Flink timer fires when the watermark reaches it.
    - Early firings need no timer: the element that fills the pane fires it, in the batch that reads it.
    - The processing-time triggers (`early_delay`, `late_delay`) are not here: a query has one kind of
      GroupState timeout, and the event-time one drives the on-time firings (the contract's
      `model_only` of each says why); set away from their default they are refused, never ignored.
    """
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    for name in ("early_delay", "late_delay"):
        if params[name].total_us:
            raise ValueError(f"lateness_count on Spark has no processing-time trigger: parameter {name!r} is "
                             f"{params[name]}, only its default (0 seconds) runs here; `eventtime check-model` "
                             "judges such scenarios")
    windowing = _Windowing(params.window.total_us, params.allowed_lateness.total_ms,
                           early_count=params.early_count, discarding=params.accumulation == "discarding")
    delay_ms = params.bound.total_ms + 1
    events = sources["events"].withWatermark("ts", f"{delay_ms} milliseconds")
    rows = events.select(
        "key",
        F.lit(_NEVER_LATE).cast("timestamp").alias("never_late", metadata={"spark.watermarkDelayMs": delay_ms}),
        F.expr("unix_micros(ts)").alias("ts_us"))

    def windows(key, frames: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        # {window start (µs): [count, fired, pane]}, as JSON: array-typed state trips some pyspark versions
        open_ = {int(s): _window(v) for s, v in json.loads(state.get[0]).items()} if state.exists else {}
        watermark = state.getCurrentWatermarkMs()
        out = windowing.timers(open_, watermark)
        if not state.hasTimedOut:
            out += windowing.arrivals(open_, frames, watermark)
        if out:
            yield windowing.frame(pd, key, out)
        if not open_:
            state.remove()
            return
        state.update((json.dumps({str(s): v for s, v in open_.items()}),))
        state.setTimeoutTimestamp(windowing.next_timeout(open_))

    return rows.groupBy("key").applyInPandasWithState(
        windows, "key string, window_start timestamp, window_end timestamp, count long, firing string, "
                 "result_ts timestamp",
        "windows string", "append", GroupStateTimeout.EventTimeTimeout)


def _window(v: list) -> list:
    """A window's state as stored: [count, fired, pane]; a state written before panes ([count, fired],
    the default trigger) has an empty pane once fired, else every element in it."""
    return v if len(v) == 3 else [v[0], v[1], 0 if v[1] else v[0]]


class _Windowing:
    """Flink's tumbling event-time windows with allowed lateness, over a key's open windows
    (`{start µs: [count, fired, pane]}`, changed in place: the elements so far, whether the watermark
    passed its end, the elements since the previous firing); each firing is (start µs, count, firing,
    result_ts µs). The trigger and panes follow `eventtime.semantics.triggers`: an early firing when the
    pane holds `early_count` elements before the on-time one; a firing counts the window so far
    (accumulating) or its pane (discarding), and starts a new pane."""

    def __init__(self, window_us: int, lateness_ms: int, *, early_count: int = 0, discarding: bool = False):
        self.window_us, self.lateness_ms = window_us, lateness_ms
        self.early_count, self.discarding = early_count, discarding

    def max_ts_ms(self, start_us: int) -> int:
        return (start_us + self.window_us) // _US_PER_MS - 1

    def fire(self, start: int, w: list, firing: str) -> tuple:
        count = w[2] if self.discarding else w[0]
        w[2] = 0
        return (start, count, firing, self.max_ts_ms(start) * _US_PER_MS)

    def timers(self, open_: dict[int, list], watermark: int) -> list[tuple]:
        """The timers the watermark reached: on-time firings (even of an empty pane), then the windows
        purged (cleanup timers)."""
        out: list[tuple] = []
        for start in sorted(open_):
            if not open_[start][1] and self.max_ts_ms(start) <= watermark:
                open_[start][1] = True
                out.append(self.fire(start, open_[start], "on_time"))
        for start in [s for s in open_ if self.max_ts_ms(s) + self.lateness_ms <= watermark]:
            del open_[start]
        return out

    def arrivals(self, open_: dict[int, list], frames: Iterator, watermark: int) -> list[tuple]:
        """The rows in arrival order: each to the late side output, or counted in its window (a window
        the watermark passed fires again at once: a late firing; one before it fires early when its pane
        holds `early_count` elements)."""
        out: list[tuple] = []
        for frame in frames:
            for us in frame["ts_us"]:
                us = int(us)
                start = us - us % self.window_us
                if self.max_ts_ms(start) + self.lateness_ms <= watermark:  # the late side output
                    out.append((start, 1, "dropped", us))
                    continue
                w = open_.setdefault(start, [0, False, 0])
                w[0] += 1
                w[2] += 1
                if self.max_ts_ms(start) <= watermark:  # a late firing, at once
                    w[1] = True
                    out.append(self.fire(start, w, "late"))
                elif self.early_count and w[2] >= self.early_count:
                    out.append(self.fire(start, w, "early"))
        return out

    def frame(self, pd, key, out: list[tuple]):
        return pd.DataFrame({
            "key": [key[0]] * len(out),
            "window_start": [_ts(pd, s) for s, _, _, _ in out],
            "window_end": [_ts(pd, s + self.window_us) for s, _, _, _ in out],
            "count": [n for _, n, _, _ in out],
            "firing": [f for _, _, f, _ in out],
            "result_ts": [_ts(pd, t) for _, _, _, t in out]})

    def next_timeout(self, open_: dict[int, list]) -> int:
        """1 ms before the next due timer (a window's firing, else its cleanup): GroupState times out when
        the watermark is strictly above it, a Flink timer fires when the watermark reaches it."""
        due = min(self.max_ts_ms(s) + (self.lateness_ms if w[1] else 0) for s, w in open_.items())
        return due - 1
