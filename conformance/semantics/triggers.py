"""Event-time windows with triggers as the Dataflow model and Flink define them: early, on-time and late
firings, accumulating or discarding panes, allowed lateness, a late side output, merging sessions.

The dataflow profile's window operator (`dataflow.DataflowQuery`). Times of windows and elements are
epoch microseconds; watermarks and processing time epoch milliseconds. The rules:

- Windows per key: tumbling of `length_us`, or sessions of `gap_us` (each element's proto window
  [ts, ts + gap), merged with every window of its key it overlaps or touches, as Flink's MergingWindowSet
  does (TimeWindow.intersects: start <= other end and end >= other start)). A window [start, end) has maxTimestamp end - 1 ms; every firing's result
  timestamp is maxTimestamp (seed 000 "Timestamp handling"), however often the window fires.
- Lateness (WindowOperator.isWindowLate): an element whose window (after merging) has maxTimestamp +
  allowed lateness <= the watermark goes to the late side output (`dropped`, count 1, its own
  timestamp) and into no window. A late element may bridge two sessions the watermark already passed:
  the merged window is judged, so within allowed lateness it merges them (seed 000 "Session windows
  represent a special case").
- The trigger is the event-time trigger with optional early firings (Beam's AfterWatermark
  .pastEndOfWindow().withEarlyFirings(...).withLateFirings(AfterPane.elementCountAtLeast(1)); Flink's
  EventTimeTrigger plus an early trigger): before the on-time firing, an element-count early trigger
  fires the window (`early`) once its pane holds `early_count` elements, and a processing-time early
  trigger fires it `early_delay_ms` of processing time after the first element of its pane
  (AfterProcessingTime.pastFirstElementInPane().plusDelayOf). The on-time firing (`on_time`) is when
  the watermark reaches maxTimestamp; it always fires (Beam's OnTimeBehavior.FIRE_ALWAYS), even with
  an empty pane. After it, each element accepted fires the window at once (`late`): a late firing per
  late element (seed 000 "Allowed lateness"); or, with `late_delay_ms`, `late_delay_ms` of processing
  time after the first late element of its pane (Beam's withLateFirings(AfterProcessingTime...)). A
  late pane still pending when the window expires fires then (Beam's ClosingBehavior.FIRE_IF_NON_EMPTY).
- Panes: `accumulating` (Flink's default, Beam's accumulatingFiredPanes) fires the window's count so
  far; `discarding` (Beam's discardingFiredPanes, Flink's PurgingTrigger) fires the elements since the
  previous firing only, so a window's discarding panes sum to its last accumulating pane.
- The window's state is purged when the watermark reaches maxTimestamp + allowed lateness.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from .lateness import DROPPED, LATE, ON_TIME, Firing
from .watermark import us_to_ms

__all__ = ["EARLY", "ON_TIME", "LATE", "DROPPED", "ACCUMULATING", "DISCARDING", "TriggeredWindows"]

EARLY = "early"
ACCUMULATING, DISCARDING = "accumulating", "discarding"


@dataclass
class _Window:
    start_us: int
    end_us: int
    count: int = 0  # elements in the window so far
    pane: int = 0  # elements since the previous firing
    on_time_fired: bool = False
    due_ms: int | None = None  # the processing-time trigger's timer (early, or late with late_delay_ms)

    @property
    def max_ts_ms(self) -> int:
        return us_to_ms(self.end_us) - 1


class TriggeredWindows:
    """Count windows per key with the event-time trigger, early firings, allowed lateness, a late side
    output and accumulating or discarding panes (the module's rules). Exactly one of `length_us`
    (tumbling) and `gap_us` (sessions)."""

    def __init__(self, *, lateness_ms: int, length_us: int | None = None, gap_us: int | None = None,
                 early_count: int = 0, early_delay_ms: int = 0, late_delay_ms: int = 0,
                 accumulation: str = ACCUMULATING):
        if (length_us is None) == (gap_us is None):
            raise ValueError("windows are tumbling (length_us) or sessions (gap_us)")
        if accumulation not in (ACCUMULATING, DISCARDING):
            raise ValueError(f"accumulation is {ACCUMULATING} or {DISCARDING}, not {accumulation!r}")
        self.length_us, self.gap_us = length_us, gap_us
        self.lateness_ms = lateness_ms
        self.early_count, self.early_delay_ms = early_count, early_delay_ms
        self.late_delay_ms = late_delay_ms
        self.discarding = accumulation == DISCARDING
        self.windows: dict[Hashable, list[_Window]] = {}
        self.side_output = 0

    # -- firings -------------------------------------------------------------------------------------
    def _fire(self, key: Hashable, w: _Window, kind: str) -> Firing:
        count = w.pane if self.discarding else w.count
        w.pane = 0
        w.due_ms = None  # a new pane starts: its timer is set by its first element
        return Firing(key, w.start_us, w.end_us, count, kind, w.max_ts_ms * 1000)

    def _assign(self, key: Hashable, ts_us: int) -> tuple[_Window, list[_Window]]:
        """The window the element belongs to and the existing windows of its key it merges (sessions)."""
        if self.length_us is not None:
            start = ts_us - ts_us % self.length_us
            for w in self.windows.get(key, []):
                if w.start_us == start:
                    return w, []
            return _Window(start, start + self.length_us), []
        assert self.gap_us is not None
        start, end = ts_us, ts_us + self.gap_us
        merged = [w for w in self.windows.get(key, []) if w.start_us <= end and start <= w.end_us]  # TimeWindow.intersects
        if not merged:
            return _Window(start, end), []
        return _Window(min([start] + [w.start_us for w in merged]), max([end] + [w.end_us for w in merged])), merged

    def on_element(self, key: Hashable, ts_us: int, watermark_ms: int, now_ms: int = 0) -> list[Firing]:
        window, merged = self._assign(key, ts_us)
        if window.max_ts_ms + self.lateness_ms <= watermark_ms:  # isWindowLate: the side output
            self.side_output += 1
            return [Firing(key, window.start_us, window.end_us, 1, DROPPED, ts_us)]
        if merged:  # sessions merge: their elements, panes and firings become the merged window's
            window.count = sum(w.count for w in merged)
            window.pane = sum(w.pane for w in merged)
            window.on_time_fired = any(w.on_time_fired for w in merged) and window.max_ts_ms <= watermark_ms
            dues = [w.due_ms for w in merged if w.due_ms is not None]
            window.due_ms = min(dues) if dues else None
            self.windows[key] = [w for w in self.windows[key] if all(w is not m for m in merged)]
        if not any(w is window for w in self.windows.get(key, [])):
            self.windows.setdefault(key, []).append(window)
        window.count += 1
        window.pane += 1
        if window.max_ts_ms <= watermark_ms:  # the watermark passed its end: a late element
            window.on_time_fired = True
            if not self.late_delay_ms:  # a late firing, at once
                return [self._fire(key, window, LATE)]
            if window.due_ms is None:
                window.due_ms = now_ms + self.late_delay_ms
            return []
        if self.early_count and window.pane >= self.early_count:
            return [self._fire(key, window, EARLY)]
        if self.early_delay_ms and window.due_ms is None:
            window.due_ms = now_ms + self.early_delay_ms
        return []

    def on_watermark(self, watermark_ms: int) -> list[Firing]:
        """Timers up to the watermark: on-time firings at maxTimestamp, then purges at maxTimestamp + L."""
        out = []
        for key, w in self._in_order():
            if not w.on_time_fired and w.max_ts_ms <= watermark_ms:
                w.on_time_fired = True
                out.append(self._fire(key, w, ON_TIME))
        for key, w in self._in_order():  # expiry: a pending late pane fires first (FIRE_IF_NON_EMPTY)
            if w.max_ts_ms + self.lateness_ms <= watermark_ms and w.pane:
                out.append(self._fire(key, w, LATE))
        for key in list(self.windows):
            self.windows[key] = [w for w in self.windows[key] if w.max_ts_ms + self.lateness_ms > watermark_ms]
            if not self.windows[key]:
                del self.windows[key]
        return out

    def on_processing_time(self, now_ms: int) -> list[Firing]:
        """Processing-time timers due by `now_ms`, in the order they are due: early firings before the
        on-time one, late firings after it."""
        due = [(key, w) for key, w in self._in_order() if w.due_ms is not None and w.due_ms <= now_ms]
        due.sort(key=lambda kw: kw[1].due_ms or 0)  # stable: windows due together in window order
        return [self._fire(key, w, LATE if w.on_time_fired else EARLY) for key, w in due]

    def _in_order(self) -> list[tuple[Hashable, _Window]]:
        return sorted(((k, w) for k, ws in self.windows.items() for w in ws), key=lambda kw: (kw[1].start_us, str(kw[0])))

    @property
    def keys_with_state(self) -> int:
        return len(self.windows)
