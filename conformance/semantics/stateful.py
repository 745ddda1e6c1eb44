"""Arbitrary stateful operators on event time: GroupState event-time timeouts and transformWithState timers.

Spark guide, "Arbitrary Stateful Operations" (mapGroupsWithState / applyInPandasWithState with
GroupStateTimeout.EventTimeTimeout) and "transformWithState" (event-time timers, Spark 4.0+).
Both run per key a user function; the model runs the function of the contract. Per batch:

- Input rows at or below the watermark for late events are dropped per row, before the
  function sees them, and counted in `numRowsDroppedByWatermark` (lateness is per row here, not
  per group as in a window aggregate).
- The function is called for every key with rows in the batch, then the expired keys are handled.
- GroupState event-time timeout: a key times out when the eviction watermark is STRICTLY above its
  timeout timestamp (`timeoutTimestamp < watermark`).
- transformWithState event-time timer: it fires when the eviction watermark REACHES it
  (`timer <= watermark`), inclusive.
- Both want a no-data batch whenever the watermark moved, to fire what the move expired.
- GroupState refuses a timeout timestamp below the eviction watermark (`setTimeoutTimestamp`
  raises INVALID_TIMEOUT_TIMESTAMP, documented on GroupState: "less than the current
  watermark"): the batch fails and the query with it. Rows between the two watermarks reach the
  function when the late filter lags the eviction watermark (no-data batches off, or the first
  batch after a restart), so a group whose last row is old enough sets such a timeout.

The contracts' functions compute their timeouts in whole milliseconds as the bundled pipelines
do (`micros // 1000`). `state_rows` is one row per key with state, as GroupState keeps it; the
suite pins no state size for transformWithState, whose state variables and timers Spark counts
its own way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable

from .state import OperatorWatermarks, QueryFailure, StatefulOperator

__all__ = ["InactivityTimeout", "HoldTimer"]


def _by_key(rows: Iterable[dict], key: str) -> dict[Hashable, list[dict]]:
    groups: dict[Hashable, list[dict]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return groups


@dataclass
class _Activity:
    first_us: int
    last_us: int
    count: int
    timeout_ms: int


class InactivityTimeout(StatefulOperator):
    """The `inactivity_timeout` contract's function under GroupStateTimeout.EventTimeTimeout: per key,
    count rows and remember the first and last event time; the timeout is last_ts + `timeout`."""

    name = "flatMapGroupsWithState"

    def __init__(self, *, key: str, ts: str, timeout_ms: int):
        super().__init__()
        self.key, self.ts, self.timeout_ms = key, ts, timeout_ms
        self.groups: dict[Hashable, _Activity] = {}

    @property
    def state_rows(self) -> int:
        return len(self.groups)

    def run(self, rows: Iterable[dict], wm: OperatorWatermarks) -> list[tuple[Hashable, _Activity]]:
        """Returns the (key, group) pairs that timed out in this batch."""
        self.begin(wm)
        on_time = self.on_time(rows, self.ts, wm)
        for key, group in _by_key(on_time, self.key).items():
            times = [r[self.ts] for r in group]
            g = self.groups.get(key)
            first_us = min(times + ([g.first_us] if g else []))
            last_us = max(times + ([g.last_us] if g else []))
            count = len(times) + (g.count if g else 0)
            timeout = last_us // 1000 + self.timeout_ms
            if timeout < wm.evict_ms:  # GroupState.setTimeoutTimestamp
                raise QueryFailure("INVALID_TIMEOUT_TIMESTAMP", f"Timeout timestamp ({timeout}) cannot be earlier "
                                                                f"than the current watermark ({wm.evict_ms}).")
            self.groups[key] = _Activity(first_us, last_us, count, timeout)
        expired = [(k, g) for k, g in self.groups.items() if g.timeout_ms < wm.evict_ms]
        for k, _ in expired:
            del self.groups[k]
        return expired


@dataclass
class _Hold:
    first_us: int
    count: int
    timer_ms: int


class HoldTimer(StatefulOperator):
    """The `hold_timer` contract's processor under transformWithState with event-time timers: a key's
    first row (the earliest of its batch) registers a timer at first_ts + `hold`; rows are counted
    until the timer fires, then the state is cleared."""

    name = "transformWithStateExec"

    def __init__(self, *, key: str, ts: str, hold_ms: int):
        super().__init__()
        self.key, self.ts, self.hold_ms = key, ts, hold_ms
        self.groups: dict[Hashable, _Hold] = {}

    @property
    def state_rows(self) -> int:
        return len(self.groups)

    def state_entries(self, side: str | None, variable: str | None) -> Iterable[tuple]:
        """The processor's value state per key: (key, its group)."""
        return list(self.groups.items())

    def run(self, rows: Iterable[dict], wm: OperatorWatermarks) -> list[tuple[Hashable, _Hold]]:
        """Returns the (key, group) pairs whose timer fired in this batch."""
        self.begin(wm)
        on_time = self.on_time(rows, self.ts, wm)
        for key, group in _by_key(on_time, self.key).items():
            g = self.groups.get(key)
            if g is None:
                first_us = min(r[self.ts] for r in group)
                self.groups[key] = _Hold(first_us, len(group), first_us // 1000 + self.hold_ms)
            else:
                g.count += len(group)
        fired = [(k, g) for k, g in self.groups.items() if g.timer_ms <= wm.evict_ms]
        for k, _ in fired:
            del self.groups[k]
        return fired
