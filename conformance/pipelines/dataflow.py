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
def _keyed_events(contract: str, sources, params) -> DataFrame:
    """The events of `contract` as its state functions read them: key, the event time in µs and a column that
    carries the watermark's delay (bound + 1 ms) for the state functions. The processing-time triggers are
    refused, never ignored: only their default (0 seconds) runs on Spark."""
    for name in ("early_delay", "late_delay"):
        if params[name].total_us:
            raise ValueError(f"{contract} on Spark has no processing-time trigger: parameter {name!r} is "
                             f"{params[name]}, only its default (0 seconds) runs here; `eventtime check-model` "
                             "judges such scenarios")
    delay_ms = params.bound.total_ms + 1
    events = sources["events"].withWatermark("ts", f"{delay_ms} milliseconds")
    return events.select(
        "key",
        F.lit(_NEVER_LATE).cast("timestamp").alias("never_late", metadata={"spark.watermarkDelayMs": delay_ms}),
        F.expr("unix_micros(ts)").alias("ts_us"))


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

    windowing = _Windowing(params.window.total_us, params.allowed_lateness.total_ms,
                           early_count=params.early_count, discarding=params.accumulation == "discarding")
    rows = _keyed_events("lateness_count", sources, params)

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


@implementation(requires=("apply_in_pandas_with_state",))
def session_lateness_count(sources, params) -> DataFrame:
    """Reference of `session_lateness_count`: Flink's WindowOperator over merging session windows
    (EventTimeSessionWindows, MergingWindowSet) with EventTimeTrigger, allowed lateness and a late side
    output, written with applyInPandasWithState, with the contract's element-count early trigger
    (`early_count`) and accumulating or discarding panes (`accumulation`).

    As `lateness_count` (the watermark at bound + 1 ms, every row reaching the function, the event-time
    timeout 1 ms before the next due time), over a key's sessions instead of its tumbling windows
    (`_Sessions`): an element's window [ts, ts + gap) merges with every session of the key it overlaps
    or touches, and the merged session is judged late or not, so an element too late for its own window
    is accepted when it bridges into a session still within the allowed lateness. Spark judges every row
    of a batch against the watermark the batch runs with, as the model's periodic generator has it (the
    watermark moves at the end of a batch); a per-element watermark (`generator: punctuated`) is the
    dataflow profile's only. The processing-time triggers are refused, as in `lateness_count`.
    """
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    sessions = _Sessions(params.gap.total_us, params.allowed_lateness.total_ms,
                         early_count=params.early_count, discarding=params.accumulation == "discarding")
    rows = _keyed_events("session_lateness_count", sources, params)

    def merge(key, frames: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        # [[start µs, end µs, count, pane, fired], ...], as JSON: array-typed state trips some pyspark versions
        open_ = json.loads(state.get[0]) if state.exists else []
        watermark = state.getCurrentWatermarkMs()
        out = sessions.timers(open_, watermark)
        if not state.hasTimedOut:
            out += sessions.arrivals(open_, frames, watermark)
        if out:
            yield sessions.frame(pd, key, out)
        if not open_:
            state.remove()
            return
        state.update((json.dumps(open_),))
        state.setTimeoutTimestamp(sessions.next_timeout(open_))

    return rows.groupBy("key").applyInPandasWithState(
        merge, "key string, session_start timestamp, session_end timestamp, count long, firing string, "
               "result_ts timestamp",
        "sessions string", "append", GroupStateTimeout.EventTimeTimeout)


class _Sessions:
    """Flink's merging session windows with allowed lateness, over a key's open sessions (a list of
    `[start µs, end µs, count, pane, fired]`, changed in place: the elements so far, the elements since
    the previous firing, whether it fired on time); each firing is (start µs, end µs, count, firing,
    result_ts µs). The rules are `eventtime.semantics.triggers`' (TriggeredWindows with `gap_us`):

    - an element's window [ts, ts + gap) merges with every session it overlaps or touches
      (TimeWindow.intersects); the merged session keeps their elements and panes, and has fired on time
      only if one of them had and the watermark is at or past its end - 1 ms;
    - the merged session is judged: end - 1 ms + allowed lateness <= the watermark sends the element to
      the late side output (and merges nothing); else, end - 1 ms <= the watermark fires it at once
      (`late`), or an early firing when its pane holds `early_count` elements;
    - the on-time firing when the watermark reaches end - 1 ms (even of an empty pane), the purge when
      it reaches end - 1 ms + allowed lateness."""

    def __init__(self, gap_us: int, lateness_ms: int, *, early_count: int = 0, discarding: bool = False):
        self.gap_us, self.lateness_ms = gap_us, lateness_ms
        self.early_count, self.discarding = early_count, discarding

    @staticmethod
    def max_ts_ms(end_us: int) -> int:
        return end_us // _US_PER_MS - 1

    def fire(self, s: list, firing: str) -> tuple:
        count = s[3] if self.discarding else s[2]
        s[3] = 0
        return (s[0], s[1], count, firing, self.max_ts_ms(s[1]) * _US_PER_MS)

    def timers(self, open_: list[list], watermark: int) -> list[tuple]:
        """The timers the watermark reached: on-time firings (even of an empty pane), then the sessions
        purged (cleanup timers)."""
        out = []
        for s in sorted(open_):
            if not s[4] and self.max_ts_ms(s[1]) <= watermark:
                s[4] = True
                out.append(self.fire(s, "on_time"))
        open_[:] = [s for s in open_ if self.max_ts_ms(s[1]) + self.lateness_ms > watermark]
        return out

    def merged(self, open_: list[list], us: int) -> tuple[list, list[list]]:
        """The session an element at `us` makes, [start, end, count, pane, fired] before the element is
        counted, and the open sessions it merges."""
        start, end = us, us + self.gap_us
        into = [s for s in open_ if s[0] <= end and start <= s[1]]  # TimeWindow.intersects
        return [min([start] + [s[0] for s in into]), max([end] + [s[1] for s in into]),
                sum(s[2] for s in into), sum(s[3] for s in into), any(s[4] for s in into)], into

    def arrivals(self, open_: list[list], frames: Iterator, watermark: int) -> list[tuple]:
        """The rows in arrival order: each to the late side output, or merged into its session (a session
        the watermark passed fires again at once: a late firing; one before it fires early when its pane
        holds `early_count` elements)."""
        out: list[tuple] = []
        for frame in frames:
            for us in frame["ts_us"]:
                us = int(us)
                session, into = self.merged(open_, us)
                max_ts = self.max_ts_ms(session[1])
                if max_ts + self.lateness_ms <= watermark:  # the late side output
                    out.append((session[0], session[1], 1, "dropped", us))
                    continue
                open_[:] = [s for s in open_ if all(s is not m for m in into)] + [session]
                session[2] += 1
                session[3] += 1
                session[4] = session[4] and max_ts <= watermark
                if max_ts <= watermark:  # a late firing, at once
                    session[4] = True
                    out.append(self.fire(session, "late"))
                elif self.early_count and session[3] >= self.early_count:
                    out.append(self.fire(session, "early"))
        return out

    @staticmethod
    def frame(pd, key, out: list[tuple]):
        return pd.DataFrame({
            "key": [key[0]] * len(out),
            "session_start": [_ts(pd, s) for s, _, _, _, _ in out],
            "session_end": [_ts(pd, e) for _, e, _, _, _ in out],
            "count": [n for _, _, n, _, _ in out],
            "firing": [f for _, _, _, f, _ in out],
            "result_ts": [_ts(pd, t) for _, _, _, _, t in out]})

    def next_timeout(self, open_: list[list]) -> int:
        """1 ms before the next due timer (a session's on-time firing, else its cleanup): GroupState times
        out when the watermark is strictly above it, a Flink timer fires when the watermark reaches it."""
        return min(self.max_ts_ms(s[1]) + (self.lateness_ms if s[4] else 0) for s in open_) - 1
