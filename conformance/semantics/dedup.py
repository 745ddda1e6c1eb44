"""Streaming deduplication: dropDuplicates on columns including the event time, and dropDuplicatesWithinWatermark.

Spark guide, "Streaming Deduplication". Both operators work row by row (no partial
aggregation), so `numRowsDroppedByWatermark` counts late rows. Per batch:

- A row whose event time is <= the watermark for late events is dropped and counted, before
  deduplication: a copy of an expired pair is dropped as late, not as a duplicate.
- dropDuplicates([id, ts]): the first row of each (id, ts) is emitted at once (append mode does
  not wait for the watermark), later copies are dropped (not counted as late). A pair's state is
  evicted once the eviction watermark reaches its ts (ts <= watermark, inclusive).
- dropDuplicatesWithinWatermark([id]) (Spark 3.5+): the first row of an id is emitted and the id
  is kept until `its ts + the watermark delay`; until then every row with that id is dropped,
  whatever its ts, and a dropped duplicate does not push the expiry back. The state goes once
  the eviction watermark reaches the expiry (inclusive); the id then passes again.
"""
from __future__ import annotations

from typing import Callable, Hashable, Iterable

from .state import OperatorWatermarks, StatefulOperator, ms_to_us

__all__ = ["Deduplicate", "DeduplicateWithinWatermark"]


class Deduplicate(StatefulOperator):
    """dropDuplicates(keys) where the keys include the event-time column (StreamingDeduplicateExec)."""

    name = "dedupe"
    counts_updates = True  # each new key is put once: numRowsUpdated

    def __init__(self, key_of: Callable[[dict], Hashable], event_time_column: str):
        super().__init__()
        self.key_of = key_of
        self.event_time_column = event_time_column
        self.seen: dict[Hashable, int | None] = {}  # key -> its event time (µs), what eviction compares

    @property
    def state_rows(self) -> int:
        return len(self.seen)

    def state_entries(self, side: str | None, variable: str | None) -> Iterable[tuple]:
        """StreamingDeduplicateExec keeps each key (the deduplicated columns) with an empty value."""
        return [(key,) for key in self.seen]

    def run(self, rows: Iterable[dict], wm: OperatorWatermarks) -> list[dict]:
        self.begin(wm)
        out = []
        for row in self.on_time(rows, self.event_time_column, wm):
            ts = row[self.event_time_column]
            key = self.key_of(row)
            if key in self.seen:
                continue
            self.seen[key] = ts
            self.updated += 1
            out.append(row)
        bound = ms_to_us(wm.evict_ms)
        self.seen = {k: t for k, t in self.seen.items() if t is None or t > bound}
        return out


class DeduplicateWithinWatermark(StatefulOperator):
    """dropDuplicatesWithinWatermark(keys) (StreamingDeduplicateWithinWatermarkExec)."""

    name = "dedupeWithinWatermark"
    counts_updates = True  # each new key is put once: numRowsUpdated

    def __init__(self, key_of: Callable[[dict], Hashable], event_time_column: str, delay_us: int):
        super().__init__()
        self.key_of = key_of
        self.event_time_column = event_time_column
        self.delay_us = delay_us
        self.expires: dict[Hashable, int] = {}  # key -> first ts + delay (µs)

    @property
    def state_rows(self) -> int:
        return len(self.expires)

    def run(self, rows: Iterable[dict], wm: OperatorWatermarks) -> list[dict]:
        self.begin(wm)
        out = []
        for row in self.on_time(rows, self.event_time_column, wm):
            ts = row[self.event_time_column]
            key = self.key_of(row)
            if key in self.expires or ts is None:
                continue
            self.expires[key] = ts + self.delay_us
            self.updated += 1
            out.append(row)
        bound = ms_to_us(wm.evict_ms)
        self.expires = {k: t for k, t in self.expires.items() if t > bound}
        return out
