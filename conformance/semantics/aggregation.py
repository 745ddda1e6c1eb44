"""Streaming aggregation with a watermark: windows or the raw event time as grouping key; append, update, complete.

Spark guide, "Window Operations on Event Time", "Handling Late Data and Watermarking",
"Conditions for watermarking to clean aggregation state" and "Output Modes". Spark plans a
streaming aggregation as partial aggregate -> shuffle -> merge -> StateStoreRestore ->
merge with the state -> StateStoreSave. The rules the save operator applies, per batch:

- The group's event time is the window's END for a window key, the timestamp itself for a raw
  event-time key. A group is late when that event time is <= the watermark for late events.
- Lateness is judged per group, not per row: a row older than the watermark still counts while
  its window is open, and a sliding-window row expanded into several windows can be partly late.
- `numRowsDroppedByWatermark` counts late GROUPS as they reach the save operator, after partial
  aggregation and the shuffle; with one shuffle partition (the harness's setting) that is the
  number of distinct late groups in the batch, not the number of late rows (SPARK-24634).
- append: late groups are dropped; the rest is merged into state; then every group whose event
  time is <= the eviction watermark is removed and emitted, once, with its final value.
- update: late groups are dropped; every group the batch changed is emitted with its new value;
  then groups at or below the eviction watermark are removed without output.
- complete: no lateness and no eviction; every batch emits the whole result table.
- A no-data batch is wanted in append and update mode when the watermark moved
  (StateStoreSaveExec.shouldRunAnotherBatch); never in complete mode.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Sequence

from .state import OperatorWatermarks, StatefulOperator, is_late, ms_to_us

__all__ = ["AggregateFunction", "CountRows", "Sum", "Aggregates", "StreamingAggregation", "OUTPUT_MODES"]

GroupKey = Any  # a hashable grouping key, e.g. (key, Window) or (key, ts)

OUTPUT_MODES = ("append", "update", "complete")


class AggregateFunction:
    """One aggregate: a buffer, how a row updates it, how two buffers merge, its result."""

    def zero(self) -> Any:
        raise NotImplementedError

    def add(self, acc: Any, row: dict) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def result(self, acc: Any) -> Any:
        return acc


class CountRows(AggregateFunction):
    """count(*) (or count(lit(1))): every row counts, whatever its values."""

    def zero(self) -> int:
        return 0

    def add(self, acc: int, row: dict) -> int:
        return acc + 1

    def merge(self, a: int, b: int) -> int:
        return a + b


@dataclass(frozen=True)
class Sum(AggregateFunction):
    """sum(column): nulls are skipped; null when no value was non-null."""

    column: str

    def zero(self) -> Any:
        return None

    def add(self, acc: Any, row: dict) -> Any:
        value = row.get(self.column)
        if value is None:
            return acc
        return value if acc is None else acc + value

    def merge(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        return a if b is None else a + b


@dataclass(frozen=True)
class Aggregates:
    """Several aggregate functions over the same groups; buffers and results are tuples."""

    functions: tuple[AggregateFunction, ...]

    def zero(self) -> tuple:
        return tuple(f.zero() for f in self.functions)

    def add(self, acc: tuple, row: dict) -> tuple:
        return tuple(f.add(a, row) for f, a in zip(self.functions, acc))

    def merge(self, a: tuple, b: tuple) -> tuple:
        return tuple(f.merge(x, y) for f, x, y in zip(self.functions, a, b))

    def result(self, acc: tuple) -> tuple:
        return tuple(f.result(a) for f, a in zip(self.functions, acc))


class StreamingAggregation(StatefulOperator):
    """groupBy(keys).agg(...) on a stream with a watermark (StateStoreRestoreExec + StateStoreSaveExec).

    `event_time_of(key)` gives the group's event time in microseconds (a window's end, or the
    raw timestamp), the value the watermark predicates compare.
    """

    name = "stateStoreSave"
    counts_updates = True  # StateStoreSaveExec puts each group the batch aggregated once: numRowsUpdated

    def __init__(self, aggregates: Aggregates, event_time_of: Callable[[GroupKey], int | None],
                 output_mode: str):
        super().__init__()
        if output_mode not in OUTPUT_MODES:
            raise ValueError(f"output mode must be one of {', '.join(OUTPUT_MODES)}, not {output_mode!r}")
        self.aggregates = aggregates
        self.event_time_of = event_time_of
        self.output_mode = output_mode
        self.groups: dict[Hashable, tuple] = {}

    @property
    def state_rows(self) -> int:
        return len(self.groups)

    def evicts_by_watermark(self) -> bool:
        return self.output_mode in ("append", "update")

    def state_entries(self, side: str | None, variable: str | None) -> Iterable[tuple]:
        """StateStoreSaveExec keeps a row per group: the grouping key, the aggregate buffers."""
        return list(self.groups.items())

    def run(self, rows: Iterable[tuple[Hashable, dict]], wm: OperatorWatermarks
            ) -> list[tuple[Hashable, tuple]]:
        """Aggregate one batch of (group key, row) pairs; returns the emitted (key, result) pairs."""
        self.begin(wm)
        agg = self.aggregates
        batch: dict[Hashable, tuple] = {}
        late: set[Hashable] = set()
        for key, row in rows:
            if self.output_mode != "complete" and is_late(self.event_time_of(key), wm.late_ms):
                late.add(key)
                continue
            batch[key] = agg.add(batch.get(key, agg.zero()), row)
        self.dropped = len(late)
        self.updated = len(batch)
        for key, acc in batch.items():
            self.groups[key] = agg.merge(self.groups[key], acc) if key in self.groups else acc
        if self.output_mode == "complete":
            return [(k, agg.result(v)) for k, v in self.groups.items()]
        emitted = []
        if self.output_mode == "update":
            emitted = [(k, agg.result(self.groups[k])) for k in batch]
        evicted = self._evict(wm.evict_ms)
        if self.output_mode == "append":
            emitted = [(k, agg.result(v)) for k, v in evicted]
        return emitted

    def _evict(self, watermark_ms: int) -> Sequence[tuple[Hashable, tuple]]:
        bound = ms_to_us(watermark_ms)
        gone = [(k, v) for k, v in self.groups.items()
                if (t := self.event_time_of(k)) is not None and t <= bound]
        for k, _ in gone:
            del self.groups[k]
        return gone
