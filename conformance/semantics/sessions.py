"""Session window aggregation on a stream: per-row sessions, lateness before merging, merging with state.

Spark guide, "Types of time windows" (session windows, fixed and dynamic gap) and "Handling Late
Data and Watermarking". Spark plans it as partial aggregate per (key, row session) in each input
partition -> shuffle -> SessionWindowStateStoreRestoreExec -> MergingSessionsExec ->
SessionWindowStateStoreSaveExec. The rules, per batch:

- Each row opens its own session [ts, ts + gap); rows with a gap that is not positive are not
  aggregated at all (not a late drop).
- Lateness is checked by the restore operator on each row's OWN session, before any merging:
  late when its end is <= the watermark for late events, even if it overlaps a session of its key
  that is still open. It counts the partial aggregates that reach it: rows of one key with the
  same session in the same input partition count once. This holds in complete mode too (unlike a
  time-window aggregate, which keeps late rows there), although the guide says only that complete
  mode keeps all aggregate state (scenario `session/complete-mode-drops-late-rows` pins it on Spark).
- The rest merges with the key's sessions in state (touching sessions merge; see `windows`).
- append: sessions whose end is <= the eviction watermark are removed and emitted, once.
  complete: nothing is evicted (late rows are still dropped); every batch emits every session. Update mode is rejected by
  Spark at start (SPARK-36463): the model does not cover it.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Sequence

from .aggregation import Aggregates
from .state import OperatorWatermarks, StatefulOperator, is_late, ms_to_us
from .windows import Session, merge_sessions

__all__ = ["SessionAggregation", "SESSION_OUTPUT_MODES"]

SESSION_OUTPUT_MODES = ("append", "complete")


class SessionAggregation(StatefulOperator):
    """groupBy(session_window(ts, gap), key).agg(...) with a watermark."""

    name = "sessionWindowStateStoreSaveExec"

    def __init__(self, aggregates: Aggregates, output_mode: str):
        super().__init__()
        if output_mode not in SESSION_OUTPUT_MODES:
            raise ValueError(f"session windows support output modes {', '.join(SESSION_OUTPUT_MODES)}, "
                             f"not {output_mode!r}")
        self.aggregates = aggregates
        self.output_mode = output_mode
        self.sessions: dict[Hashable, list[Session]] = {}

    @property
    def state_rows(self) -> int:
        return sum(len(v) for v in self.sessions.values())

    def evicts_by_watermark(self) -> bool:
        return self.output_mode == "append"

    def state_entries(self, side: str | None, variable: str | None) -> Iterable[tuple]:
        """SessionWindowStateStoreSaveExec keeps a row per open session: (key, session)."""
        return [(key, s) for key, sessions in self.sessions.items() for s in sessions]

    def run(self, partitions: Sequence[Iterable[tuple[Hashable, int, int, dict]]], wm: OperatorWatermarks
            ) -> list[tuple[Hashable, Session]]:
        """One batch: `partitions` of (key, ts, gap, row) in µs; returns emitted (key, session) pairs."""
        self.begin(wm)
        agg = self.aggregates
        incoming: dict[Hashable, list[Session]] = {}
        for partition in partitions:
            partial: dict[tuple[Hashable, int, int], tuple] = {}
            for key, ts, gap, row in partition:
                if ts is None or gap is None or gap <= 0:
                    continue  # not part of any session
                k = (key, ts, ts + gap)
                partial[k] = agg.add(partial.get(k, agg.zero()), row)
            for (key, start, end), acc in partial.items():
                if is_late(end, wm.late_ms):  # in every output mode
                    self.dropped += 1
                    continue
                incoming.setdefault(key, []).append(Session(start, end, acc))
        for key, new in incoming.items():
            self.sessions[key] = merge_sessions(self.sessions.get(key, []) + new, agg.merge)
        if self.output_mode == "complete":
            return [(k, s) for k, ss in self.sessions.items() for s in ss]
        bound = ms_to_us(wm.evict_ms)
        emitted = []
        for key, sessions in list(self.sessions.items()):
            emitted += [(key, s) for s in sessions if s.end <= bound]
            rest = [s for s in sessions if s.end > bound]
            if rest:
                self.sessions[key] = rest
            else:
                del self.sessions[key]
        return emitted
