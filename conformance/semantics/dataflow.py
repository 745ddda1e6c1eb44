"""The dataflow profile: event time as Flink and the Dataflow model define it (the seed texts), run on micro-batches.

Seed texts in `seeds/` of the shared reference folder (see docs/scenario-format.md, "Profiles"):
000 "Event-time details" and 001 "Generating watermarks" (Flink), 002 (course transcript), 003.

- Watermark generation, per input: per source, or per partition of a source that declares
  `partitions` (Flink: per source split / Kafka partition, seed 000 "Watermarks per Kafka
  partition"). Bounded out-of-orderness emits `max event time - bound - 1 ms` (seed 002: Flink
  "subtracts one millisecond" more; seed 003: Watermark(t) means no more elements with timestamp
  <= t; seed 001's example generator subtracts the bound alone); before any element it is the minimum long (Long.MIN_VALUE). A periodic
  generator emits it at each micro-batch boundary (Flink: every auto-watermark interval); a
  punctuated one after every element; a source with `generator: none` only emits the watermarks
  its `watermark` steps give (a source that emits its own, seed 001); a `time_lag` generator emits
  processing time - lag (seed 001's TimeLagWatermarkGenerator), and a periodic one with `idle_after`
  proposes processing time - lag once its input had no element for that long (seed 000 "Stalled
  Watermarks", seed 003): both also emit at the end of each `advance` (once: not one per
  auto-watermark interval). A `watermark` step is a
  watermark emitted on the input, in the stream after the rows added before it. An input's
  watermark never goes back: a watermark not above its last is not emitted (seed 001).
- Stream status: an input is idle after an `idle` step, or once it has had no element for its
  source's `idle_timeout` of processing time since its last element (or since the query started;
  WatermarkStrategy.withIdleness); an element, a watermark or an `active` step makes it active.
- A source subtask combines its partitions as Flink's WatermarkOutputMultiplexer does: the
  minimum over its active partitions, never going back; with every partition idle the subtask is
  idle, at the maximum over its partitions. Partition k is read by subtask k mod `subtasks` (default 1), as in seed 002's example; a
  subtask assigned no partition is idle from the start (seed 000: the Kafka source marks it so).
- The window operator combines its input channels (the source subtasks) as Flink's
  StatusWatermarkValve does: its watermark is the minimum over the active channels that are
  aligned, and only moves forward; a channel that goes idle leaves the minimum; a channel that
  becomes active again below the operator's watermark is not aligned (left out, so it does not
  move it back) until its own watermark catches up; when the last active channel goes idle
  holding the minimum, the maximum over all channels is forwarded; watermarks of an idle channel
  are ignored. The watermarks of a subtask listed in `ignore_watermarks` never reach the valve (its
  rows count): a two-input operator that ignores one input's watermarks (seed 000,
  SingleWatermarkCoFlatMap overrides processWatermark2 only). Its stream status still counts: the
  operator is idle only when every subtask is idle; with the other subtasks idle and an ignored one
  active, the operator stays active and its watermark where the others left it.
- Each watermark the operator's watermark advances to fires the window timers it reaches first,
  then is forwarded downstream (seed 000 "Watermark handling", seed 003): a batch's `forwarded`
  lists them in order, and its `emitted` is the output stream, firings and watermarks interleaved.
- Event-time windows with EventTimeTrigger and allowed lateness L (WindowOperator): a window
  [start, end) has maxTimestamp end - 1 ms. An element whose window has maxTimestamp + L <=
  watermark is late: it goes to the late side output and not into any window. Otherwise it is
  added; if maxTimestamp <= watermark the window fires at once with its new count (a late
  firing), else it fires when the watermark reaches maxTimestamp (the on-time firing). The
  window's state is purged when the watermark reaches maxTimestamp + L. A firing's result
  timestamp is maxTimestamp (end - 1 ms). That is the default of the window operator
  (`triggers.TriggeredWindows`), which also has sessions that merge, early firings, processing-time
  late firings and discarding panes (the contracts' trigger parameters); its processing-time timers
  fire on `advance`.
- A micro-batch reads what each input holds, input by input in the order the sources and
  partitions are declared: rows, watermarks and status changes in the order the steps gave them.
  An element is judged against the operator's watermark at that point; the periodic generators
  emit when the batch ends, and the timers their watermark passes fire in that batch (no
  separate no-data batch). Watermarks and stream statuses are not checkpointed: after a restart
  every generator, and the operator's watermark, start again from Long.MIN_VALUE with every
  input active; window state survives.

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
from .triggers import TriggeredWindows
from .watermark import us_to_ms

__all__ = ["input_name", "MIN_WATERMARK", "BoundedOutOfOrderness", "CombinedWatermark", "StatusWatermarkValve",
           "LatenessWindows", "Firing", "DataflowBatch", "DataflowQuery", "DataflowDriver", "dataflow_query",
           "ON_TIME", "LATE", "DROPPED", "DATAFLOW_CONTRACTS", "GENERATORS"]

MIN_WATERMARK = -(2 ** 63)  # Long.MIN_VALUE
GENERATORS = ("periodic", "punctuated", "none", "time_lag")


@dataclass
class BoundedOutOfOrderness:
    """One input's watermark generator (BoundedOutOfOrdernessWatermarks), in epoch milliseconds.

    `bound_ms` None: no generator, only the watermarks given to the input (`emit`). `time_lag`: seed 001's
    TimeLagWatermarkGenerator, processing time - `lag_ms` at each periodic emit, whatever the elements.
    `idle_after_ms` (a periodic generator): once no element came for that long of processing time (since
    the last one, or since `last_event_ms` at the start), it proposes processing time - `lag_ms` too
    (seed 000 "Stalled Watermarks", seed 003 "Idling sources"). A proposal not above the last is not
    emitted (seed 001)."""

    bound_ms: int | None
    punctuated: bool = False
    max_ts: int | None = None
    emitted: int = MIN_WATERMARK
    lag_ms: int | None = None
    idle_after_ms: int | None = None
    time_lag: bool = False
    last_event_ms: int = 0  # processing time of the input's last element (the start before any)

    @property
    def clocked(self) -> bool:
        """Its watermark follows processing time (so a periodic emit without elements can move it)."""
        return self.time_lag or self.idle_after_ms is not None

    def on_event(self, ts_ms: int, now_ms: int | None = None) -> None:
        self.max_ts = ts_ms if self.max_ts is None else max(self.max_ts, ts_ms)
        if now_ms is not None:
            self.last_event_ms = now_ms
        if self.punctuated:
            self.on_periodic_emit()

    def on_periodic_emit(self, now_ms: int | None = None) -> int:
        if self.time_lag:
            if now_ms is not None and self.lag_ms is not None:
                self.emitted = max(self.emitted, now_ms - self.lag_ms)
            return self.emitted
        if self.max_ts is not None and self.bound_ms is not None:
            self.emitted = max(self.emitted, self.max_ts - self.bound_ms - 1)
        if (self.idle_after_ms is not None and self.lag_ms is not None and now_ms is not None
                and now_ms - self.last_event_ms >= self.idle_after_ms):
            self.emitted = max(self.emitted, now_ms - self.lag_ms)
        return self.emitted

    def emit(self, watermark_ms: int) -> None:
        """A watermark given to the input: emitted only when above the last (seed 001)."""
        self.emitted = max(self.emitted, watermark_ms)


@dataclass
class CombinedWatermark:
    """A source subtask's watermark over its inputs (WatermarkOutputMultiplexer): the minimum over the
    active inputs, never going back; idle when every input is idle, and then the maximum over them
    (nothing active will move the minimum any more). Without inputs it is neither.

    An input is idle when marked so (`mark_idle`), or, with `idle_timeout_ms`, once it had no element
    for that long since its last one (since `started_ms` before the first: WatermarksWithIdleness)."""

    generators: Mapping[str, BoundedOutOfOrderness]
    idle_timeout_ms: int | None = None
    current: int = MIN_WATERMARK
    last_event_at: dict[str, int] = field(default_factory=dict)  # processing time of each input's last element
    started_ms: int = 0
    marked_idle: set[str] = field(default_factory=set)

    def mark_active(self, name: str, now_ms: int) -> None:
        self.last_event_at[name] = now_ms
        self.marked_idle.discard(name)

    def mark_idle(self, name: str) -> None:
        self.marked_idle.add(name)

    def idle(self, name: str, now_ms: int) -> bool:
        if name in self.marked_idle:
            return True
        if self.idle_timeout_ms is None:
            return False
        return now_ms - self.last_event_at.get(name, self.started_ms) >= self.idle_timeout_ms

    def all_idle(self, now_ms: int) -> bool:
        return bool(self.generators) and all(self.idle(n, now_ms) for n in self.generators)

    def update(self, now_ms: int) -> int:
        active = [g.emitted for n, g in self.generators.items() if not self.idle(n, now_ms)]
        if active:
            self.current = max(self.current, min(active))
        elif self.generators:  # every input idle: the maximum over them
            self.current = max(self.current, max(g.emitted for g in self.generators.values()))
        return self.current


@dataclass
class _Channel:
    watermark: int = MIN_WATERMARK
    active: bool = True
    aligned: bool = True
    ignored: bool = False  # its stream status counts, its watermarks never reach the operator


class StatusWatermarkValve:
    """An operator's watermark over its input channels, as Flink's StatusWatermarkValve computes it.

    `input_watermark` and `input_status` return the watermark the operator forwards, or None; `outputs`
    records everything it emitted, in order: ("watermark", ms) and ("status", "idle" | "active").

    An `ignored` channel is an input whose watermarks the operator drops (seed 000's SingleWatermarkCoFlatMap
    overrides processWatermark2 only): it never enters the minimum nor the maximum, but its stream status
    still counts, since a two-input operator's inputs combine their statuses: the operator is idle only
    when every channel is idle. `idle` is the status of the channels whose watermarks count (Flink: the
    first input's valve); when they are all idle and the ignored ones active, the operator stays active
    and its watermark stays where those channels left it."""

    def __init__(self, channels: int, ignored: Iterable[int] = ()):
        self.channels = [_Channel() for _ in range(channels)]
        for i in ignored:
            self.channels[i].ignored, self.channels[i].aligned = True, False
        self.last_output = MIN_WATERMARK
        self.idle = False  # every channel whose watermarks count is idle
        self.status_idle = False  # the stream status the operator emitted last: idle when every channel is
        self.outputs: list[tuple[str, object]] = []

    def input_watermark(self, i: int, watermark: int) -> int | None:
        ch = self.channels[i]
        if ch.ignored or self.idle or not ch.active or watermark <= ch.watermark:
            return None  # an ignored channel's, an idle one's, or one not above the channel's last: ignored
        ch.watermark = watermark
        if not ch.aligned and watermark >= self.last_output:
            ch.aligned = True  # caught up
        return self._new_min()

    def input_status(self, i: int, idle: bool) -> int | None:
        ch = self.channels[i]
        out = None
        if idle and ch.active:
            ch.active, ch.aligned = False, False
            if not ch.ignored and not any(c.active for c in self.channels if not c.ignored):
                if ch.watermark == self.last_output:  # flush: nothing active will move it any more
                    out = self._max_all()
                self.idle = True
            elif not ch.ignored and ch.watermark == self.last_output:
                out = self._new_min()
        elif not idle and not ch.active:
            ch.active = True
            if not ch.ignored:
                if ch.watermark >= self.last_output:
                    ch.aligned = True
                self.idle = False
        self._status()
        return out

    def _status(self) -> None:
        """Emit the operator's stream status when it changes: idle when every channel is idle."""
        idle = not any(c.active for c in self.channels)
        if idle != self.status_idle:
            self.status_idle = idle
            self.outputs.append(("status", "idle" if idle else "active"))

    def _new_min(self) -> int | None:
        aligned = [c.watermark for c in self.channels if c.aligned]
        if aligned and min(aligned) > self.last_output:
            self.last_output = min(aligned)
            self.outputs.append(("watermark", self.last_output))
            return self.last_output
        return None

    def _max_all(self) -> int | None:
        top = max(c.watermark for c in self.channels if not c.ignored)
        if top > self.last_output:
            self.last_output = top
            self.outputs.append(("watermark", top))
            return top
        return None


def _reported(ms: int) -> int:
    return 0 if ms == MIN_WATERMARK else ms


@dataclass
class DataflowBatch(BatchObservation):
    """A dataflow micro-batch: besides what Spark shows, the watermarks the window operator forwarded
    (in order) and its output stream in order (("row", row) and ("watermark", ms) items)."""

    forwarded: list[int] = field(default_factory=list)
    emitted: list[tuple] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)  # the stream statuses it emitted ("idle", "active"), in order


# What an input's queue holds besides rows: a watermark, or a stream status change.
WATERMARK, IDLE, ACTIVE = "watermark", "idle", "active"


class DataflowQuery:
    """A lateness_count query under the dataflow profile, driven by the scenario's steps.

    `idle_timeout_ms` and `generator` are per source (a mapping) or one value for every source;
    `subtasks` maps a source with partitions to how many subtasks read them (default 1); `lag`,
    `idle_after` (ms) the time_lag and idle fallback of a source's generator; `ignored` the source subtasks whose
    watermarks the operator ignores (their rows and stream status count): source -> its subtask indexes."""

    def __init__(self, sources: Sequence[str], bound_ms: int, length_us: int, lateness_ms: int, *,
                 clock_start_ms: int, trigger_ms: int | None,
                 idle_timeout_ms: int | None | Mapping[str, int | None] = None,
                 punctuated: bool = False, partitions: Mapping[str, int | None] | None = None,
                 generator: Mapping[str, str] | None = None, subtasks: Mapping[str, int | None] | None = None,
                 windows: TriggeredWindows | None = None, lag_ms: Mapping[str, int | None] | None = None,
                 idle_after_ms: Mapping[str, int | None] | None = None,
                 ignored: Mapping[str, Iterable[int]] | None = None):
        self.sources = tuple(sources)
        self.partitions = {n: (partitions or {}).get(n) for n in self.sources}
        # One watermark generator per input: a source, or each partition of a source with partitions.
        self.inputs = tuple(input_name(n, p) for n in self.sources
                            for p in (range(self.partitions[n] or 0) or (None,)))
        # The channels of the window operator: each source subtask, with the inputs it reads.
        self.channels: list[tuple[str, tuple[str, ...]]] = []
        self.ignored: set[int] = set()  # channels whose watermarks the operator ignores
        for n in self.sources:
            count = (subtasks or {}).get(n) or 1
            for k in range(count):
                # a subtask assigned no partition has no input: idle from the start (seed 000, Kafka source)
                read = (tuple(input_name(n, p) for p in range(self.partitions[n] or 0) if p % count == k)
                        if self.partitions[n] else (n,))
                if k in set((ignored or {}).get(n) or ()):
                    self.ignored.add(len(self.channels))
                self.channels.append((n, read))
        self.channel_of = {i: c for c, (_, read) in enumerate(self.channels) for i in read}
        self.bound_ms, self.punctuated = bound_ms, punctuated
        self.idle_timeout_ms = {n: idle_timeout_ms.get(n) if isinstance(idle_timeout_ms, Mapping) else idle_timeout_ms
                                for n in self.sources}
        self.generator = {n: (generator or {}).get(n) or ("punctuated" if punctuated else "periodic")
                          for n in self.sources}
        self.lag_ms = {n: (lag_ms or {}).get(n) for n in self.sources}
        self.idle_after_ms = {n: (idle_after_ms or {}).get(n) for n in self.sources}
        self.windows = windows or TriggeredWindows(length_us=length_us, lateness_ms=lateness_ms)
        self.now_ms = clock_start_ms
        self.trigger_ms = trigger_ms
        self.history: list[BatchObservation] = []
        self.running = False
        self.runs = 0
        self._pending: dict[str, list[tuple[str, object]]] = {n: [] for n in self.inputs}
        self._due_ms: int | None = None
        self._new_watermark()

    def _source_of(self, name: str) -> str:
        return self.channels[self.channel_of[name]][0]

    def _new_watermark(self) -> None:
        def generator(name: str) -> BoundedOutOfOrderness:
            source = self._source_of(name)
            kind = self.generator[source]
            return BoundedOutOfOrderness(None if kind in ("none", "time_lag") else self.bound_ms, kind == "punctuated",
                                         lag_ms=self.lag_ms[source], idle_after_ms=self.idle_after_ms[source],
                                         time_lag=kind == "time_lag", last_event_ms=self.now_ms)

        self.subtask = [CombinedWatermark({n: generator(n) for n in read},
                                          self.idle_timeout_ms[source], started_ms=self.now_ms)
                        for source, read in self.channels]
        self.subtask_idle = [False] * len(self.channels)
        self.valve = StatusWatermarkValve(len(self.channels), self.ignored)
        self._outputs_seen = 0
        for c in range(len(self.channels)):  # a subtask without partitions says so at once
            if not self.subtask[c].generators:
                self._propagate(c)

    @property
    def watermark(self) -> int:
        """The window operator's current watermark."""
        return self.valve.last_output

    @property
    def reported_watermark(self) -> int:
        """The operator's watermark as an observation reports it (Long.MIN_VALUE: 0, `initial`): after a
        restart, before any watermark is emitted, the restarted one's, not the last batch's."""
        return _reported(self.watermark)

    @property
    def idle_timeouts(self) -> bool:
        return any(t is not None for t in self.idle_timeout_ms.values())

    @property
    def clocked(self) -> bool:
        """Some generator's watermark follows processing time (time_lag, idle_after)."""
        return any(g.clocked for mux in self.subtask for g in mux.generators.values())

    # -- steps ---------------------------------------------------------------------------------------
    def add(self, source: str, rows: Sequence[dict], partition: int | None = None) -> None:
        self._pending[input_name(source, partition)] += [("row", r) for r in rows]

    def signal(self, inputs: Iterable[str], kind: str, watermark_ms: int | None = None) -> None:
        """A watermark (`kind` WATERMARK) or a stream status (IDLE, ACTIVE) on each of `inputs`, in
        the stream after what they hold."""
        for name in inputs:
            self._pending[name].append((kind, watermark_ms))

    def start(self) -> list[BatchObservation]:
        if self.running:
            raise ModelError("the query is already running")
        self.running = True
        self.runs += 1
        self._new_watermark()  # watermarks and statuses are not part of a checkpoint
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
        out: list[BatchObservation] = []
        fired = self.windows.on_processing_time(self.now_ms) if self.running else []
        if fired:  # processing-time triggers (early or late firings) due by now fire first
            out.append(self._observe(0, self.watermark, [("row", f) for f in fired]))
        if self.running and self.trigger_ms and self._due_ms is not None and self._due_ms <= self.now_ms:
            return out + self._trigger()
        if self.running and (self.idle_timeouts or self.clocked):  # idleness is noticed on processing time
            return out + self._idle_check()
        return out

    # -- batches -------------------------------------------------------------------------------------
    def _trigger(self) -> list[BatchObservation]:
        if self.trigger_ms:
            self._due_ms = (self.now_ms // self.trigger_ms + 1) * self.trigger_ms
        if any(self._pending.values()):
            taken, self._pending = self._pending, {n: [] for n in self.inputs}
            return [self._batch(taken)]
        return self._idle_check() if self.idle_timeouts or self.clocked else []

    def _idle_check(self) -> list[BatchObservation]:
        """Processing time moved: generators that follow it emit (periodic), idle timeouts are noticed."""
        before = self.watermark
        out: list[tuple] = []
        for mux in self.subtask:
            for g in mux.generators.values():
                if g.clocked:
                    g.on_periodic_emit(self.now_ms)
        for c in range(len(self.channels)):
            out += self._propagate(c)
        if self.watermark == before and len(self.valve.outputs) == self._outputs_seen:
            return []
        return [self._observe(0, before, out)]

    def _propagate(self, c: int) -> list[tuple]:
        """Pass subtask `c`'s watermark and status on to the window operator: status first when it
        becomes active, watermark first when it becomes idle (SourceOperator's output); the output
        stream items (firings, then each forwarded watermark) this causes."""
        mux = self.subtask[c]
        before = mux.current
        mux.update(self.now_ms)
        idle = mux.all_idle(self.now_ms) or not mux.generators  # no partition: marked idle (seed 000)
        out: list[tuple] = []
        if not idle and self.subtask_idle[c]:
            self.subtask_idle[c] = False
            out += self._forward(self.valve.input_status(c, False))
        if mux.current > before:
            out += self._forward(self.valve.input_watermark(c, mux.current))
        if idle and not self.subtask_idle[c]:
            self.subtask_idle[c] = True
            out += self._forward(self.valve.input_status(c, True))
        return out

    def _forward(self, watermark: int | None) -> list[tuple]:
        """The operator's watermark advanced to `watermark`: its timers fire first, then it is forwarded."""
        if watermark is None:
            return []
        return [("row", f) for f in self.windows.on_watermark(watermark)] + [(WATERMARK, watermark)]

    def _batch(self, inputs: Mapping[str, list[tuple[str, object]]]) -> BatchObservation:
        before = self.watermark
        out: list[tuple] = []
        rows = 0
        for name in self.inputs:
            c = self.channel_of[name]
            mux = self.subtask[c]
            gen = mux.generators[name]
            for kind, value in inputs.get(name, []):
                if kind == "row":
                    row = value if isinstance(value, dict) else {}
                    rows += 1
                    mux.mark_active(name, self.now_ms)
                    out += self._propagate(c)  # an element makes its input active again
                    if row.get("ts") is None:
                        continue
                    out += [("row", f) for f in self.windows.on_element(row["key"], row["ts"], self.watermark, self.now_ms)]
                    gen.on_event(us_to_ms(row["ts"]), self.now_ms)
                    if gen.punctuated:
                        out += self._propagate(c)
                elif kind == WATERMARK:
                    assert isinstance(value, int)
                    mux.mark_active(name, self.now_ms)  # emitting a watermark makes an input active
                    gen.emit(value)
                    out += self._propagate(c)
                else:
                    if kind == IDLE:
                        mux.mark_idle(name)
                    else:
                        mux.mark_active(name, self.now_ms)
                    out += self._propagate(c)
        for mux in self.subtask:
            for g in mux.generators.values():
                g.on_periodic_emit(self.now_ms)
        for c in range(len(self.channels)):
            out += self._propagate(c)
        return self._observe(rows, before, out)

    def _observe(self, input_rows: int, before: int, emitted: list[tuple]) -> BatchObservation:
        firings = [f for kind, f in emitted if kind == "row"]
        statuses = [str(v) for kind, v in self.valve.outputs[self._outputs_seen:] if kind == "status"]
        self._outputs_seen = len(self.valve.outputs)
        rows = [(f.key, f.start_us, f.end_us, f.count, f.kind, f.result_ts_us) for f in firings]
        obs = DataflowBatch(
            batch_id=len(self.history), input_rows=input_rows, timestamp_ms=self.now_ms,
            watermark_before_ms=_reported(before), watermark_after_ms=_reported(self.watermark),
            rows=rows, dropped=0, state_rows=self.windows.keys_with_state,
            operators=[{"operatorName": "windowOperator", "numRowsTotal": self.windows.keys_with_state,
                        "numLateRecordsDropped": self.windows.side_output}],
            run=self.runs - 1, forwarded=[w for kind, w in emitted if kind == WATERMARK], statuses=statuses,
            emitted=[(kind, (f.key, f.start_us, f.end_us, f.count, f.kind, f.result_ts_us) if kind == "row" else f)
                     for kind, f in emitted])
        self.history.append(obs)
        return obs


DATAFLOW_CONTRACTS = ("lateness_count", "session_lateness_count")


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

    def signal(self, step: m.InputStep) -> list[BatchObservation]:
        """A `watermark`, `idle` or `active` step: queued on each input it names (a source: each of its
        partitions), in the stream after the rows added before it; the next batch reads it."""
        for source, partition, watermark_us in step.inputs:
            parts = self.query.partitions.get(source)
            names = ([input_name(source, partition)] if partition is not None or not parts
                     else [input_name(source, k) for k in range(parts)])
            self.query.signal(names, step.signal, None if watermark_us is None else us_to_ms(watermark_us))
        return []


def dataflow_query(scenario: m.Scenario) -> DataflowDriver:
    """The scenario's query under the dataflow profile, ready for the step interpreter (`eventtime.drive`)."""
    from .plans import NotCovered

    if scenario.contract.name not in DATAFLOW_CONTRACTS:
        raise NotCovered(f"the dataflow profile has no model of contract {scenario.contract.name!r} "
                         f"(it covers {', '.join(DATAFLOW_CONTRACTS)})")
    p = scenario.params
    sessions = scenario.contract.name == "session_lateness_count"
    length_us = 0 if sessions else p["window"].total_us
    windows = TriggeredWindows(
        lateness_ms=p["allowed_lateness"].total_ms, length_us=None if sessions else length_us,
        gap_us=p["gap"].total_us if sessions else None, early_count=p.get("early_count") or 0,
        early_delay_ms=p["early_delay"].total_ms if p.get("early_delay") else 0,
        late_delay_ms=p["late_delay"].total_ms if p.get("late_delay") else 0,
        accumulation=p.get("accumulation") or "accumulating")
    query = DataflowQuery(tuple(scenario.sources), p["bound"].total_ms, length_us,
                          p["allowed_lateness"].total_ms, windows=windows, clock_start_ms=scenario.clock_start_us // 1000,
                          trigger_ms=scenario.trigger.total_ms if scenario.trigger else None,
                          partitions={name: src.partitions for name, src in scenario.sources.items()},
                          idle_timeout_ms={name: src.idle_timeout.total_ms if src.idle_timeout else None
                                           for name, src in scenario.sources.items()},
                          generator={name: src.generator or "periodic" for name, src in scenario.sources.items()},
                          subtasks={name: src.subtasks for name, src in scenario.sources.items()},
                          lag_ms={name: src.lag.total_ms if src.lag else None for name, src in scenario.sources.items()},
                          idle_after_ms={name: src.idle_after.total_ms if src.idle_after else None
                                         for name, src in scenario.sources.items()},
                          ignored={name: src.ignore_watermarks or () for name, src in scenario.sources.items()})
    return DataflowDriver(query, {name: src.column_names for name, src in scenario.sources.items()})
