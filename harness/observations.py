"""What the harness observes of a micro-batch, as plain data: the vocabulary both the Spark driver
(`stream`) and the pure-Python model produce, and the judge reads.

This module imports nothing of Spark and nothing else of the package, so the model can use it
without loading the driver.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchObservation"]


@dataclass
class BatchObservation:
    """What one micro-batch did, as the harness saw it. Times are epoch milliseconds."""

    batch_id: int
    input_rows: int
    timestamp_ms: int | None
    watermark_before_ms: int | None
    watermark_after_ms: int | None
    rows: list[tuple] = field(default_factory=list)
    dropped: int = 0
    state_rows: int = 0
    operators: list[dict] = field(default_factory=list)
    # min/max/avg event time of the batch (epoch ms); the model gives `avg_range` (lowest, highest)
    # instead of `avg` when the average depends on the order Spark's tasks finish in
    event_time: dict[str, Any] = field(default_factory=dict)
    duration_ms: int | None = None
    run: int = 0  # which start of the query ran it (0 = first)
    # which checkpoint of the query ran it (0 = its first): a query with no checkpoint location gets a new
    # one at every start, as Spark gives it a new temporary checkpoint, so its batch ids count from 0 again
    checkpoint: int = 0
    query: str | None = None  # which query of a job that starts several ran it (`jobrun.QueryGroup`)
    # the scenario's added rows this batch read, as (source, row in its column order), where the step
    # interpreter can tell (`eventtime.drive`); None: not known. Not written to results files.
    inputs: list[tuple[str, tuple]] | None = None

    @property
    def has_data(self) -> bool:
        return self.input_rows > 0

    def to_dict(self) -> dict:
        return {
            "batch_id": self.batch_id, "input_rows": self.input_rows, "data": self.has_data,
            "timestamp_ms": self.timestamp_ms, "watermark_before_ms": self.watermark_before_ms,
            "watermark_after_ms": self.watermark_after_ms, "rows": [list(r) for r in self.rows],
            "dropped": self.dropped, "state_rows": self.state_rows, "operators": self.operators,
            "event_time": self.event_time, "duration_ms": self.duration_ms, "run": self.run,
            **({"checkpoint": self.checkpoint} if self.checkpoint else {}),
            **({"query": self.query} if self.query is not None else {}),
        }
