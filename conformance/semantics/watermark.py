"""The global watermark of a micro-batch query: per-input watermarks, the multiple-watermark policy, restarts.

Spark guide, "Handling Late Data and Watermarking" and "Policy for handling multiple watermarks".
The rules, as Spark's WatermarkTracker applies them at the end of every micro-batch:

- Each watermarked input (`withWatermark(col, delay)`) records the event-time statistics of the
  rows the batch read from it. Event times are kept in whole milliseconds: a microsecond timestamp
  is divided by 1000 and truncated toward zero, as a Scala `Long` division does.
- An input that read rows proposes `max event time - delay`; its watermark takes the proposal
  only when it is higher than what it had (an input's watermark never decreases).
- An input that has not read a single row since the query (re)started counts as 0.
- The global watermark is the minimum (policy `min`, the default) or the maximum (`max`) of the
  inputs' watermarks, and it too only moves forward. It starts at 0 (1970-01-01T00:00:00Z):
  a computed value below 0 leaves it at 0.
- The batch that read the rows never runs with the watermark derived from them: the value is
  written to the commit log (`nextBatchWatermarkMs`) and the *next* batch runs with it.
- Only the global watermark is checkpointed. A restart restores it and starts every input afresh
  (counted as 0 again), so under `min` it cannot move until every input has read new rows.
- The policy is recorded by the first micro-batch in the offset log; from then on the
  checkpoint's policy wins over the session's at every start.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from itertools import permutations
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["INITIAL_WATERMARK_MS", "MAX_ORDERED_PARTITIONS", "EventTimeStats", "WatermarkTracker", "us_to_ms", "POLICIES",
           "first_stats_with_rows"]

INITIAL_WATERMARK_MS = 0
POLICIES = ("min", "max")


def us_to_ms(micros: int) -> int:
    """Epoch microseconds -> milliseconds, truncated toward zero (Spark: `eventTime / 1000` on a Long)."""
    return -((-micros) // 1000) if micros < 0 else micros // 1000


# Up to this many input partitions with rows, every order Spark's tasks may finish in is tried.
MAX_ORDERED_PARTITIONS = 7


@dataclass
class EventTimeStats:
    """Event-time statistics of one input in one batch (EventTimeStatsAccum), in milliseconds.

    The mean is Spark's arithmetic, not the exact one. Each task keeps a running double,
    `avg += (t - avg) / count` per row; the driver merges the tasks' statistics as the tasks finish,
    `avg += (task.avg - avg) * task.count / count`; the progress prints `avg.toLong`. So the printed
    avg can be 1 ms off the truncated exact mean (typically a mean of exactly ...08.000 computed as
    ...07.9999998), and with rows in more than one input partition it can depend on which task
    finished first. `avg` is None then, and `avg_range` gives the values the orders produce.
    """

    count: int = 0
    max: int | None = None
    min: int | None = None
    # per input partition (task) that read rows: (running mean as Spark's double, rows)
    partitions: list[tuple[float, int]] = field(default_factory=list)

    def add_partition(self, micros: Iterable[int | None]) -> None:
        """The event times one input partition read, in the order its task reads them."""
        mean, n = 0.0, 0
        for us in micros:
            if us is None:
                continue
            ms = us_to_ms(us)
            n += 1
            mean += (ms - mean) / n
            self.max = ms if self.max is None else max(self.max, ms)
            self.min = ms if self.min is None else min(self.min, ms)
        if n:
            self.count += n
            self.partitions.append((mean, n))

    def add(self, micros: int | None) -> None:
        """One row read by a task of its own (a partition of one row)."""
        self.add_partition([micros])

    def _merged(self, order: Sequence[tuple[float, int]]) -> int:
        mean, n = 0.0, 0
        for task_mean, task_n in order:
            if n == 0:
                mean, n = task_mean, task_n
            else:
                n += task_n
                mean += (task_mean - mean) * task_n / n
        return int(mean)  # int() truncates toward zero, like Double.toLong

    @property
    def avg_range(self) -> tuple[int, int] | None:
        """The lowest and highest avg the progress can print, over the orders the tasks can finish in."""
        if not self.count:
            return None
        if self.max == self.min:  # a running mean of equal values is exact in any order
            return (self.min, self.min)  # type: ignore[return-value]
        if len(self.partitions) > MAX_ORDERED_PARTITIONS:
            # too many orders to try; the merged mean stays within a ms of the exact one
            exact = Fraction(sum(Fraction(m) * n for m, n in self.partitions), self.count)
            return (int(exact) - 1, int(exact) + 1)
        values = {self._merged(order) for order in permutations(self.partitions)}
        return (min(values), max(values))

    @property
    def avg(self) -> int | None:
        """The avg the progress prints, or None when it depends on the order the tasks finish in."""
        r = self.avg_range
        return r[0] if r is not None and r[0] == r[1] else None

    def as_progress(self) -> dict[str, Any]:
        """The `eventTime` entries of a query progress (min, max, avg), empty without rows. An avg that
        depends on the order of the tasks is left out, and `avg_range` (lowest, highest) is given instead."""
        if not self.count or self.min is None or self.max is None:
            return {}
        low, high = self.avg_range or (None, None)
        return {"min": self.min, "max": self.max, **({"avg": low} if low == high else {"avg_range": (low, high)})}


@dataclass
class WatermarkTracker:
    """The driver's watermark state for one run of the query (recreated at every start).

    `delays_ms` maps each watermarked input to its delay; `global_ms` is restored from the
    checkpoint at start (0 for a new query).
    """

    delays_ms: Mapping[str, int]
    policy: str = "min"
    global_ms: int = INITIAL_WATERMARK_MS
    per_input_ms: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"multipleWatermarkPolicy must be one of {', '.join(POLICIES)}, not {self.policy!r}")

    @property
    def inputs(self) -> Sequence[str]:
        return tuple(self.delays_ms)

    def update(self, stats: Mapping[str, EventTimeStats]) -> int:
        """Fold one batch's statistics in (WatermarkTracker.updateWatermark); returns the global watermark."""
        if not self.delays_ms:
            return self.global_ms  # no watermarked input: the watermark stays where it is
        for name, delay in self.delays_ms.items():
            s = stats.get(name)
            if s is not None and s.max is not None:
                proposed = s.max - delay
                if name not in self.per_input_ms or proposed > self.per_input_ms[name]:
                    self.per_input_ms[name] = proposed
            elif name not in self.per_input_ms:
                self.per_input_ms[name] = INITIAL_WATERMARK_MS  # "0 if we haven't seen any data yet"
        values = self.per_input_ms.values()
        chosen = min(values) if self.policy == "min" else max(values)
        if chosen > self.global_ms:
            self.global_ms = chosen
        return self.global_ms


def first_stats_with_rows(order: Iterable[str], stats: Mapping[str, EventTimeStats]) -> dict[str, Any]:
    """The `eventTime` progress entries: those of the first watermark operator (in plan order) that read rows."""
    for name in order:
        s = stats.get(name)
        if s is not None and s.count:
            return s.as_progress()
    return {}
