"""The dataflow profile: event time as Flink and the Dataflow model define it (the seed texts), run on micro-batches.

Seed texts in `seeds/` of the shared reference folder (see docs/scenario-format.md, "Profiles"):
000 "Event-time details" and 001 "Generating watermarks" (Flink), 002 (course transcript), 003.

- Watermark generation, per input: per source, or per partition of a source that declares
  `partitions` (Flink: per source split / Kafka partition, seed 000 "Watermarks per Kafka
  partition"); a source's watermark is the minimum over its partitions. Bounded
  out-of-orderness emits `max event time - bound - 1 ms` ("no more elements with timestamp
  <= t"); before any element it is the minimum long (Long.MIN_VALUE). A periodic generator emits
  it at each micro-batch boundary (Flink: every auto-watermark interval); a punctuated one after
  every element. A generator's watermark never goes back.
- The operator's watermark is the minimum over its active inputs. An input that received no
  element for `idle_timeout` of processing time is idle and left out of the minimum until it
  receives an element again (WatermarkStrategy.withIdleness); with every input idle the
  watermark stays where it is.
- Event-time windows with EventTimeTrigger and allowed lateness L (WindowOperator): a window
  [start, end) has maxTimestamp end - 1 ms. An element whose window has maxTimestamp + L <=
  watermark is late: it goes to the late side output and not into any window. Otherwise it is
  added; if maxTimestamp <= watermark the window fires at once with its new count (a late
  firing), else it fires when the watermark reaches maxTimestamp (the on-time firing). The
  window's state is purged when the watermark reaches maxTimestamp + L. A firing's result
  timestamp is maxTimestamp (end - 1 ms).
- Elements of a micro-batch are judged against the watermark emitted after the previous batch;
  the batch's own watermark is emitted when it ends and fires the timers it passes right away
  (no separate no-data batch). Watermarks are not checkpointed: after a restart every
  generator, and the operator's watermark, start again from Long.MIN_VALUE; window state survives.

Observations are in the harness's shape; a watermark of Long.MIN_VALUE is reported as 0, what a
scenario calls `initial`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from eventtime.harness.observations import BatchObservation

from .. import spec as m
from .lateness import DROPPED, LATE, ON_TIME, Firing, LatenessWindows
from .microbatch import MicroBatchDriver, ModelError, rows_as_dicts
from .watermark import us_to_ms

__all__ = ["input_name", "MIN_WATERMARK", "BoundedOutOfOrderness", "CombinedWatermark", "LatenessWindows", "Firing",
           "DataflowQuery", "DataflowDriver", "dataflow_query", "ON_TIME", "LATE", "DROPPED", "DATAFLOW_CONTRACTS"]

MIN_WATERMARK = -(2 ** 63)  # Long.MIN_VALUE


@dataclass
class BoundedOutOfOrderness:
    """One input's watermark generator (BoundedOutOfOrdernessWatermarks), in epoch milliseconds."""

    bound_ms: int
    punctuated: bool = False
    max_ts: int | None = None
    emitted: int = MIN_WATERMARK

    def on_event(self, ts_ms: int) -> None:
        self.max_ts = ts_ms if self.max_ts is None else max(self.max_ts, ts_ms)
        if self.punctuated:
            self.on_periodic_emit()

    def on_periodic_emit(self) -> int:
        if self.max_ts is not None:
            self.emitted = max(self.emitted, self.max_ts - self.bound_ms - 1)
        return self.emitted


@dataclass
class CombinedWatermark:
    """The minimum over an operator's active inputs, with idleness by processing time."""

    generators: Mapping[str, BoundedOutOfOrderness]
    idle_timeout_ms: int | None = None
    current: int = MIN_WATERMARK
    last_event_at: dict[str, int] = field(default_factory=dict)  # processing time of each input's last element

    def mark_active(self, name: str, now_ms: int) -> None:
        self.last_event_at[name] = now_ms

    def idle(self, name: str, now_ms: int) -> bool:
        if self.idle_timeout_ms is None:
            return False
        since = self.last_event_at.get(name)
        return since is not None and now_ms - since >= self.idle_timeout_ms

    def update(self, now_ms: int) -> int:
        active = [g.emitted for n, g in self.generators.items() if not self.idle(n, now_ms)]
        if active:
            self.current = max(self.current, min(active))
        return self.current


def _reported(ms: int) -> int:
    return 0 if ms == MIN_WATERMARK else ms


class DataflowQuery:
    """A lateness_count query under the dataflow profile, driven by the scenario's steps."""

    def __init__(self, sources: Sequence[str], bound_ms: int, length_us: int, lateness_ms: int, *,
                 clock_start_ms: int, trigger_ms: int | None, idle_timeout_ms: int | None = None,
                 punctuated: bool = False, partitions: Mapping[str, int | None] | None = None):
        self.sources = tuple(sources)
        # One watermark generator per input: a source, or each partition of a source with partitions.
        self.inputs = tuple(input_name(n, p) for n in self.sources
                            for p in (range((partitions or {}).get(n) or 0) or (None,)))
        self.bound_ms, self.punctuated, self.idle_timeout_ms = bound_ms, punctuated, idle_timeout_ms
        self.windows = LatenessWindows(length_us, lateness_ms)
        self.now_ms = clock_start_ms
        self.trigger_ms = trigger_ms
        self.history: list[BatchObservation] = []
        self.running = False
        self.runs = 0
        self._pending: dict[str, list[dict]] = {n: [] for n in self.inputs}
        self._due_ms: int | None = None
        self._new_watermark()

    def _new_watermark(self) -> None:
        gens = {n: BoundedOutOfOrderness(self.bound_ms, self.punctuated) for n in self.inputs}
        self.watermark = CombinedWatermark(gens, self.idle_timeout_ms)

    # -- steps ---------------------------------------------------------------------------------------
    def add(self, source: str, rows: Sequence[dict], partition: int | None = None) -> None:
        self._pending[input_name(source, partition)] += rows

    def start(self) -> list[BatchObservation]:
        if self.running:
            raise ModelError("the query is already running")
        self.running = True
        self.runs += 1
        self._new_watermark()  # watermarks are not part of a checkpoint
        return self._trigger()

    def stop(self) -> None:
        self.running = False
        self._due_ms = None

    def process(self) -> list[BatchObservation]:
        if not self.running:
            raise ModelError("`process` while the query is stopped: the query is not running (add a start step)")
        out: list[BatchObservation] = []
        while True:
            batches = self._trigger()
            if not batches:
                return out
            out += batches

    def advance(self, ms: int) -> list[BatchObservation]:
        self.now_ms += ms
        if self.running and self.trigger_ms and self._due_ms is not None and self._due_ms <= self.now_ms:
            return self._trigger()
        if self.running and self.idle_timeout_ms is not None:  # idleness is noticed on processing time
            return self._idle_check()
        return []

    # -- batches -------------------------------------------------------------------------------------
    def _trigger(self) -> list[BatchObservation]:
        if self.trigger_ms:
            self._due_ms = (self.now_ms // self.trigger_ms + 1) * self.trigger_ms
        if any(self._pending.values()):
            taken, self._pending = self._pending, {n: [] for n in self.inputs}
            return [self._batch(taken)]
        return self._idle_check() if self.idle_timeout_ms is not None else []

    def _idle_check(self) -> list[BatchObservation]:
        before = self.watermark.current
        if self.watermark.update(self.now_ms) == before:
            return []
        return [self._observe(0, before, self.windows.on_watermark(self.watermark.current))]

    def _batch(self, inputs: Mapping[str, list[dict]]) -> BatchObservation:
        before = self.watermark.current
        out: list[Firing] = []
        for name in self.inputs:
            rows = inputs.get(name, [])
            if rows:
                self.watermark.mark_active(name, self.now_ms)
            for row in rows:
                if row["ts"] is None:
                    continue
                out += self.windows.on_element(row["key"], row["ts"], self.watermark.current)
                self.watermark.generators[name].on_event(us_to_ms(row["ts"]))
                if self.punctuated:
                    self.watermark.update(self.now_ms)
                    out += self.windows.on_watermark(self.watermark.current)
        for g in self.watermark.generators.values():
            g.on_periodic_emit()
        self.watermark.update(self.now_ms)
        out += self.windows.on_watermark(self.watermark.current)
        return self._observe(sum(len(r) for r in inputs.values()), before, out)

    def _observe(self, input_rows: int, before: int, firings: Iterable[Firing]) -> BatchObservation:
        rows = [(f.key, f.start_us, f.end_us, f.count, f.kind, f.result_ts_us) for f in firings]
        obs = BatchObservation(
            batch_id=len(self.history), input_rows=input_rows, timestamp_ms=self.now_ms,
            watermark_before_ms=_reported(before), watermark_after_ms=_reported(self.watermark.current),
            rows=rows, dropped=0, state_rows=self.windows.keys_with_state,
            operators=[{"operatorName": "windowOperator", "numRowsTotal": self.windows.keys_with_state,
                        "numLateRecordsDropped": self.windows.side_output}],
            run=self.runs - 1)
        self.history.append(obs)
        return obs


DATAFLOW_CONTRACTS = ("lateness_count",)


def input_name(source: str, partition: int | None) -> str:
    """The name of one watermark generator's input: the source, or `source#k` for its partition k."""
    return source if partition is None else f"{source}#{partition}"


class DataflowDriver(MicroBatchDriver):
    """A DataflowQuery as a step driver: a source with partitions gets one input (watermark generator) per
    partition; the query takes no SQL settings."""

    def start(self, conf: Mapping[str, str], *, new_session: bool = False, query: str | None = None
              ) -> list[BatchObservation]:
        if query is not None:
            return super().start(conf, query=query)  # the model's refusal
        return self.query.start()

    def add(self, source: str, rows: Sequence[tuple], partitions: Sequence[Sequence[tuple]] | None) -> None:
        cols = self.columns[source]
        if partitions is None:
            self.query.add(source, rows_as_dicts(cols, rows))
        else:
            for k, part in enumerate(partitions):
                self.query.add(source, rows_as_dicts(cols, part), partition=k)


def dataflow_query(scenario: m.Scenario) -> DataflowDriver:
    """The scenario's query under the dataflow profile, ready for the step interpreter (`eventtime.drive`)."""
    from .plans import NotCovered

    if scenario.contract.name not in DATAFLOW_CONTRACTS:
        raise NotCovered(f"the dataflow profile has no model of contract {scenario.contract.name!r} "
                         f"(it covers {', '.join(DATAFLOW_CONTRACTS)})")
    p = scenario.params
    query = DataflowQuery(tuple(scenario.sources), p["bound"].total_ms, p["window"].total_us,
                          p["allowed_lateness"].total_ms, clock_start_ms=scenario.clock_start_us // 1000,
                          trigger_ms=scenario.trigger.total_ms if scenario.trigger else None,
                          partitions={name: src.partitions for name, src in scenario.sources.items()})
    return DataflowDriver(query, {name: src.column_names for name, src in scenario.sources.items()})
