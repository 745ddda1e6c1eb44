"""Flink's event-time window operator with allowed lateness: EventTimeTrigger, late firings, a late side output.

The firing kinds and the default trigger alone; both profiles run `triggers.TriggeredWindows`, which
adds early firings and panes to these rules (the dataflow profile's driver, `dataflow`, and the Spark
profile's `lateness_count` plan, `plans.FlinkWindows`, the same operator under Spark's global
watermark). Times of windows and elements are epoch microseconds, watermarks epoch milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from .watermark import us_to_ms

__all__ = ["ON_TIME", "LATE", "DROPPED", "Firing", "LatenessWindows"]

ON_TIME, LATE, DROPPED = "on_time", "late", "dropped"


@dataclass(frozen=True)
class Firing:
    """One output row of the window operator: a firing of a window, or a late element sent to the side output."""

    key: Hashable
    start_us: int
    end_us: int
    count: int
    kind: str  # ON_TIME, LATE or DROPPED
    result_ts_us: int  # window end - 1 ms for a firing, the element's own timestamp for the side output


@dataclass
class _Window:
    count: int = 0
    fired: bool = False


class LatenessWindows:
    """Tumbling event-time count windows per key with EventTimeTrigger, allowed lateness and a late side output."""

    def __init__(self, length_us: int, allowed_lateness_ms: int):
        self.length_us = length_us
        self.lateness_ms = allowed_lateness_ms
        self.windows: dict[tuple[Hashable, int], _Window] = {}  # (key, start µs)
        self.side_output = 0

    def _max_ts_ms(self, start_us: int) -> int:
        return us_to_ms(start_us + self.length_us) - 1

    def on_element(self, key: Hashable, ts_us: int, watermark_ms: int) -> list[Firing]:
        start = ts_us - ts_us % self.length_us
        max_ts = self._max_ts_ms(start)
        if max_ts + self.lateness_ms <= watermark_ms:  # isWindowLate: the side output
            self.side_output += 1
            return [Firing(key, start, start + self.length_us, 1, DROPPED, ts_us)]
        w = self.windows.setdefault((key, start), _Window())
        w.count += 1
        if max_ts <= watermark_ms:  # EventTimeTrigger.onElement: FIRE at once
            w.fired = True
            return [Firing(key, start, start + self.length_us, w.count, LATE, max_ts * 1000)]
        return []

    def on_watermark(self, watermark_ms: int) -> list[Firing]:
        """Timers up to the watermark: on-time firings at maxTimestamp, then purges at maxTimestamp + L."""
        out = []
        for (key, start), w in sorted(self.windows.items(), key=lambda kv: (kv[0][1], str(kv[0][0]))):
            max_ts = self._max_ts_ms(start)
            if not w.fired and max_ts <= watermark_ms:
                w.fired = True
                out.append(Firing(key, start, start + self.length_us, w.count, ON_TIME, max_ts * 1000))
        for (key, start) in [k for k in self.windows if self._max_ts_ms(k[1]) + self.lateness_ms <= watermark_ms]:
            del self.windows[(key, start)]
        return out

    @property
    def keys_with_state(self) -> int:
        return len({key for key, _ in self.windows})
