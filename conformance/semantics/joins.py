"""Stream-stream time-interval joins: buffered state on both sides, state watermarks, outer rows with nulls.

Spark guide, "Stream-stream Joins" ("Inner Joins with optional Watermarking", "Outer Joins with
Watermarking"); StreamingSymmetricHashJoinExec and StreamingJoinHelper. The condition is
`l.key = r.key AND r.ts BETWEEN l.ts + lower AND l.ts + upper` (both ends inclusive). Per batch:

- Input rows at or below the watermark for late events are dropped, per row, on either side,
  and counted in `numRowsDroppedByWatermark`, even when a buffered row of the other side would
  have matched them.
- The left rows are joined with the right side's state, then the right rows with the left
  side's state (which now holds this batch's left rows): a match is emitted once, in the batch
  that finds it, whichever side came first.
- What is buffered (SPARK-49829: Spark 3.4.4, 3.5.4, 4.0.0 and later): every left row, even one already at or
  below its side's state watermark, since this batch's right rows may still match it; a right row
  unless it is at or below its side's state watermark, except that in a right or full outer join
  an unmatched right row is buffered anyway, so that its eviction at the end of the batch emits
  its null row. Spark without that fix (3.4.3, 3.5.3 and older) buffers no row below its state
  watermark: such a left row cannot match this batch's right rows, and no such row gets a null
  row. The model follows the fixed Spark (scenario `join/outer-row-evicted-on-arrival`).
- State watermarks (getStateValueWatermark), from the eviction watermark W: a left row can only
  match right rows above W, so it is kept while `l.ts > W - upper - 1 ms`; a right row while
  `r.ts > W + lower - 1 ms`. The extra millisecond is Spark's: for an inclusive bound it subtracts
  1 ms. Rows at or below their side's state watermark are removed after the batch's joining.
- Outer joins: an unmatched row of the outer side(s) is emitted with nulls when it is removed
  from state, i.e. one millisecond after the watermark has made a match impossible. A row that
  matched (in any batch) never gets a null row.
- The join's output watermark (for an operator downstream of it) is the lower of the two state
  watermarks: it may still emit rows as old as its state keeps.
- `numRowsTotal` counts the buffered rows of both sides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable

from .state import OperatorWatermarks, StatefulOperator, is_late, ms_to_us

__all__ = ["IntervalJoin", "JOIN_TYPES", "JoinedRow"]

JOIN_TYPES = ("inner", "left_outer", "right_outer", "full_outer")
MS = 1000  # microseconds


@dataclass
class _Buffered:
    key: Hashable
    ts: int
    row: dict
    matched: bool = False


@dataclass(frozen=True)
class JoinedRow:
    """A join result: either side may be None (an outer row)."""

    left: dict | None
    right: dict | None


class IntervalJoin(StatefulOperator):
    """left JOIN right ON key AND right.ts BETWEEN left.ts + lower AND left.ts + upper (µs)."""

    name = "symmetricHashJoin"

    def __init__(self, *, key: str, ts: str, lower_us: int, upper_us: int, join_type: str = "inner"):
        super().__init__()
        if join_type not in JOIN_TYPES:
            raise ValueError(f"join type must be one of {', '.join(JOIN_TYPES)}, not {join_type!r}")
        if lower_us > upper_us:
            raise ValueError("the lower bound of the time range is above its upper bound")
        self.key, self.ts = key, ts
        self.lower_us, self.upper_us = lower_us, upper_us
        self.join_type = join_type
        self.left: list[_Buffered] = []
        self.right: list[_Buffered] = []

    @property
    def state_rows(self) -> int:
        return len(self.left) + len(self.right)

    def state_entries(self, side: str | None, variable: str | None) -> Iterable[tuple]:
        """Each side keeps its buffered rows (the reader's `key` the join key, `value` the side's row)."""
        return [(b.key, b.row) for b in (self.left if side == "left" else self.right)]

    # -- state watermarks ---------------------------------------------------------------------------
    def left_state_watermark_us(self, watermark_ms: int) -> int:
        return ms_to_us(watermark_ms) - self.upper_us - MS

    def right_state_watermark_us(self, watermark_ms: int) -> int:
        return ms_to_us(watermark_ms) + self.lower_us - MS

    def output_watermark(self, input_ms: int) -> int:
        lowest = min(self.left_state_watermark_us(input_ms), self.right_state_watermark_us(input_ms))
        return lowest // MS

    # -- one batch ------------------------------------------------------------------------------------
    def _matches(self, left_ts: int, right_ts: int) -> bool:
        return left_ts + self.lower_us <= right_ts <= left_ts + self.upper_us

    def _on_time(self, rows: Iterable[dict], late_ms: int) -> list[dict]:
        out = []
        for row in rows:
            if is_late(row[self.ts], late_ms):
                self.dropped += 1
            else:
                out.append(row)
        return out

    def run(self, left_rows: Iterable[dict], right_rows: Iterable[dict], wm: OperatorWatermarks
            ) -> list[JoinedRow]:
        self.begin(wm)
        left_in = self._on_time(left_rows, wm.late_ms)
        right_in = self._on_time(right_rows, wm.late_ms)
        left_floor = self.left_state_watermark_us(wm.evict_ms)
        right_floor = self.right_state_watermark_us(wm.evict_ms)
        out: list[JoinedRow] = []
        for row in left_in:
            new = _Buffered(row[self.key], row[self.ts], row)
            for other in self.right:
                if other.key == new.key and self._matches(new.ts, other.ts):
                    out.append(JoinedRow(row, other.row))
                    new.matched = other.matched = True
            self.left.append(new)  # even below left_floor: this batch's right rows may match it
        for row in right_in:
            new = _Buffered(row[self.key], row[self.ts], row)
            for other in self.left:
                if other.key == new.key and self._matches(other.ts, new.ts):
                    out.append(JoinedRow(other.row, row))
                    new.matched = other.matched = True
            if new.ts > right_floor or (self.join_type in ("right_outer", "full_outer") and not new.matched):
                self.right.append(new)  # an unmatched outer row is evicted below, with its null row
        gone_left = [b for b in self.left if b.ts <= left_floor]
        gone_right = [b for b in self.right if b.ts <= right_floor]
        self.left = [b for b in self.left if b.ts > left_floor]
        self.right = [b for b in self.right if b.ts > right_floor]
        if self.join_type in ("left_outer", "full_outer"):
            out += [JoinedRow(b.row, None) for b in gone_left if not b.matched]
        if self.join_type in ("right_outer", "full_outer"):
            out += [JoinedRow(None, b.row) for b in gone_right if not b.matched]
        return out
