"""What every stateful operator shares: the two watermarks it runs with, its metrics, the no-data batch question.

Since Spark 3.4 (SPARK-40925, chained stateful operators) a stateful operator runs each
micro-batch with two watermarks (IncrementalExecution, WatermarkPropagator):

- `late_ms` (eventTimeWatermarkForLateEvents): input rows at or below it are dropped as late and
  counted in `numRowsDroppedByWatermark`. It is the operator's input watermark of the PREVIOUS
  batch (0 for batch 0).
- `evict_ms` (eventTimeWatermarkForEviction): state at or below it is evicted (and, depending on
  the operator and output mode, emitted). It is the operator's input watermark of this batch.

With no-data batches on, a batch that moved the watermark is followed by a no-data batch, so the
two are equal again before new data arrives; with no-data batches off, the first data batch after
a move still judges lateness by the older value (a row between the two passes and its state is
evicted at once). With `spark.sql.streaming.statefulOperator.allowMultiple=false` Spark uses one
watermark, the current one, for both.

An operator's input watermark is the global watermark for the first stateful operator, and the
output watermark of the operator upstream of it for the next one (`output_watermark`): the same
value for an aggregation or a deduplication, less for a stream-stream join, which may still emit
rows as old as its state keeps (watermark propagation, SPARK-42376).

After each batch Spark asks every stateful operator whether the new watermark gives it something
to do (`shouldRunAnotherBatch`); if one says yes and no-data batches are enabled, the next
trigger runs a batch without input.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["OperatorWatermarks", "StatefulOperator", "StateLayout", "QueryFailure", "is_late", "ms_to_us"]


class QueryFailure(Exception):
    """A batch on which Spark fails the query (the model predicts the failure, e.g. an error a
    state API raises); `error_class` is Spark's error class, the message its text."""

    def __init__(self, error_class: str, message: str):
        self.error_class = error_class
        super().__init__(f"[{error_class}] {message}")


def ms_to_us(ms: int) -> int:
    return ms * 1000


def is_late(event_time_us: int | None, watermark_ms: int) -> bool:
    """Spark's watermark predicate `eventTime <= watermark` (inclusive); a null event time is never late."""
    return event_time_us is not None and event_time_us <= ms_to_us(watermark_ms)


@dataclass(frozen=True)
class OperatorWatermarks:
    """The watermarks one operator runs one batch with, in epoch milliseconds."""

    late_ms: int
    evict_ms: int


@dataclass(frozen=True)
class StateLayout:
    """How Spark's state reader (`format("statestore")`) shows one state store of an operator: each
    leaf field of its `key` and `value` structs (`key.window.start`) with its Spark type, and `row`,
    which turns one entry of the operator's state (as `StatefulOperator.state_entries` gives it) into
    those fields' values, in order. The names are the pipeline's (the plan's columns), so the plan of
    a contract, which mirrors its reference implementation, gives them."""

    fields: tuple[tuple[str, str], ...]
    row: Callable[..., tuple]

    def table(self, entries: Iterable[tuple]) -> tuple[dict[str, str], list[dict[str, Any]]]:
        names = [name for name, _ in self.fields]
        return dict(self.fields), [dict(zip(names, self.row(*entry))) for entry in entries]


class StatefulOperator:
    """Base of the model's stateful operators. Subclasses implement `run` and keep their state."""

    name = "stateful operator"
    counts_updates = False  # whether `updated` follows Spark's numRowsUpdated (else the model has no rule)

    def __init__(self) -> None:
        self.dropped = 0  # numRowsDroppedByWatermark of the last batch
        self.updated = 0  # numRowsUpdated of the last batch, where `counts_updates`
        self.ran_with: OperatorWatermarks | None = None  # the watermarks of the last batch
        # (side, variable) -> how the reader shows that state store; set by the plan, which knows the
        # pipeline's column names (a join: one per side; transformWithState: one per state variable)
        self.layouts: dict[tuple[str | None, str | None], StateLayout] = {}

    # -- per batch -------------------------------------------------------------------------------
    def begin(self, wm: OperatorWatermarks) -> None:
        self.dropped = 0
        self.updated = 0
        self.ran_with = wm

    def on_time(self, rows: Iterable[dict], ts_column: str, wm: OperatorWatermarks) -> list[dict]:
        """The rows not late for this batch (in order); each late row counts as dropped."""
        kept = []
        for row in rows:
            if is_late(row[ts_column], wm.late_ms):
                self.dropped += 1
            else:
                kept.append(row)
        return kept

    @property
    def state_rows(self) -> int:  # numRowsTotal
        raise NotImplementedError

    def state_entries(self, side: str | None, variable: str | None) -> Iterable[tuple]:
        """The operator's state entries in that store, each as its layout's `row` takes them."""
        raise NotImplementedError

    def state_table(self, side: str | None = None, variable: str | None = None
                    ) -> tuple[dict[str, str], list[dict[str, Any]]] | None:
        """What Spark's state reader gives for this operator's store (a join's `side`, a
        transformWithState `variable`): each leaf field (`key.id`) -> its Spark type, and the rows
        (field -> value); None where the model does not know that store's layout."""
        layout = self.layouts.get((side, variable))
        return None if layout is None else layout.table(self.state_entries(side, variable))

    # -- watermark propagation and the no-data batch ----------------------------------------------
    def output_watermark(self, input_ms: int) -> int:
        """The watermark of the rows this operator emits, given its input watermark (default: the same)."""
        return input_ms

    def evicts_by_watermark(self) -> bool:
        """Whether a watermark move gives this operator work (evictions, timers); see `wants_another_batch`."""
        return True

    def wants_another_batch(self, new_input_ms: int) -> bool:
        """shouldRunAnotherBatch: the operator evicts by watermark and its new input watermark is above
        the one it just evicted with."""
        return (self.evicts_by_watermark() and self.ran_with is not None
                and new_input_ms > self.ran_with.evict_ms)
