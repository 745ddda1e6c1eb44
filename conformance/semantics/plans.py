"""Each bundled contract as a plan of the model's operators: what its reference pipeline computes, per batch.

A plan mirrors the contract's reference implementation (`conformance/pipelines/reference.py`,
`stateful.py`): which inputs carry a watermark and with which delay, its stateful operators in
plan order (upstream first), and how one micro-batch's input flows through them to the output
columns the contract promises. Plans hold the operators' state, so one plan lives as long as
the query's checkpoint does (restarts included).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from eventtime.harness.errors import EventtimeError

from ..spec import Scenario
from .aggregation import Aggregates, CountRows, StreamingAggregation, Sum
from .triggers import ACCUMULATING, TriggeredWindows
from .dedup import Deduplicate, DeduplicateWithinWatermark
from .joins import IntervalJoin
from .sessions import SESSION_OUTPUT_MODES, SessionAggregation
from .state import OperatorWatermarks, StatefulOperator, StateLayout
from .stateful import HoldTimer, InactivityTimeout
from .windows import parse_gap, time_windows, window_time

__all__ = ["Plan", "NotCovered", "plan_for", "PLANS"]

Partitions = Sequence[Sequence[dict]]  # one input partition per `add` of a source


class NotCovered(EventtimeError):
    """The model does not cover this scenario (a contract, mode or check it has no rules for)."""


class Plan:
    """The model of one contract's pipeline. Subclasses set `operators` and implement `execute`."""

    def __init__(self, delays_ms: Mapping[str, int]):
        self.delays_ms = dict(delays_ms)  # watermarked inputs, in plan order, and their delays
        self.operators: list[StatefulOperator] = []

    def input_watermarks(self, global_ms: int) -> list[int]:
        """Each stateful operator's input watermark, given the global one (a linear chain)."""
        out, wm = [], global_ms
        for op in self.operators:
            out.append(wm)
            wm = op.output_watermark(wm)
        return out

    def execute(self, inputs: Mapping[str, Partitions], wms: Sequence[OperatorWatermarks],
                batch_time_us: int) -> list[tuple]:
        raise NotImplementedError


def _all_rows(inputs: Mapping[str, Partitions], *names: str) -> list[dict]:
    return [row for name in names for part in inputs.get(name, ()) for row in part]


# -- what Spark's state reader shows of each operator (`expect: {state: ...}`): the fields are named after
#    the reference pipeline's columns, as Spark 4.3.0's reader gives them (the dynamic-gap session and the
#    union's count too) ---------------------------------------------------------------------------------------

def _window_layout(key_field: str, values: Sequence[str]) -> StateLayout:
    """An aggregation by (window, key): the grouping key, then each aggregate buffer (a count, a sum of longs)."""
    return StateLayout((("key.window.start", "timestamp"), ("key.window.end", "timestamp"), (key_field, "string"))
                       + tuple((f"value.{v}", "bigint") for v in values),
                       lambda key, acc: (key[1].start, key[1].end, key[0]) + tuple(acc))


SESSION_LAYOUT = StateLayout(  # a row per open session, keyed by its start; the value is the whole session row
    (("key.key", "string"), ("key.sessionStartTime", "timestamp"), ("value.session_window.start", "timestamp"),
     ("value.session_window.end", "timestamp"), ("value.key", "string"), ("value.count", "bigint")),
    lambda key, s: (key, s.start, s.start, s.end, key) + tuple(s.acc))

# per side: the join key (unnamed: field0), the side's row as the reference renames its columns
JOIN_LAYOUTS: dict[tuple[str | None, str | None], StateLayout] = {
    (side, None): StateLayout((("key.field0", "string"), (f"value.{p}key", "string"), (f"value.{side}_ts", "timestamp")),
                              lambda key, row: (key, row["key"], row["ts"]))
    for side, p in (("left", "l"), ("right", "r"))}


class WindowAggregate(Plan):
    """tumbling_count, tumbling_sum, sliding_count, union_tumbling_count: groupBy(window(ts), key)."""

    def __init__(self, delays_ms, sources: Sequence[str], length: int, slide: int | None,
                 aggregates: Aggregates, mode: str):
        super().__init__(delays_ms)
        self.sources, self.length, self.slide = tuple(sources), length, slide
        self.agg = StreamingAggregation(aggregates, lambda k: k[1].end, mode)
        self.agg.layouts[None, None] = _window_layout(
            "key.key", ["count", "sum"][:len(aggregates.functions)])
        self.operators = [self.agg]

    def execute(self, inputs, wms, batch_time_us):
        pairs = [((row["key"], w), row) for row in _all_rows(inputs, *self.sources) if row["ts"] is not None
                 for w in time_windows(row["ts"], self.length, self.slide)]
        return [(key, w.start, w.end) + values for (key, w), values in self.agg.run(pairs, wms[0])]


class EventTimeAggregate(Plan):
    """event_time_count: groupBy(key, ts).count(), the event-time column itself as a key."""

    def __init__(self, delays_ms, mode: str):
        super().__init__(delays_ms)
        self.agg = StreamingAggregation(Aggregates((CountRows(),)), lambda k: k[1], mode)
        self.operators = [self.agg]

    def execute(self, inputs, wms, batch_time_us):
        pairs = [((row["key"], row["ts"]), row) for row in _all_rows(inputs, "events")]
        return [key + values for key, values in self.agg.run(pairs, wms[0])]


class SessionCount(Plan):
    """session_count and session_count_dynamic_gap: groupBy(session_window(ts, gap), key).count()."""

    def __init__(self, delays_ms, gap_of: Callable[[dict], int | None], mode: str):
        super().__init__(delays_ms)
        self.gap_of = gap_of
        self.agg = SessionAggregation(Aggregates((CountRows(),)), mode)
        self.agg.layouts[None, None] = SESSION_LAYOUT
        self.operators = [self.agg]

    def execute(self, inputs, wms, batch_time_us):
        partitions = [[(row["key"], row["ts"], self.gap_of(row), row) for row in part]
                      for part in inputs.get("events", ())]
        return [(key, s.start, s.end) + self.agg.aggregates.result(s.acc)
                for key, s in self.agg.run(partitions, wms[0])]


class Dedup(Plan):
    """dedup (dropDuplicates([id, ts])) and dedup_within_watermark (dropDuplicatesWithinWatermark([id]))."""

    def __init__(self, delays_ms, within_watermark: bool):
        super().__init__(delays_ms)
        if within_watermark:
            self.op: StatefulOperator = DeduplicateWithinWatermark(
                lambda r: r["id"], "ts", delays_ms["events"] * 1000)
        else:
            self.op = Deduplicate(lambda r: (r["id"], r["ts"]), "ts")
            self.op.layouts[None, None] = StateLayout((("key.id", "string"), ("key.ts", "timestamp")), lambda key: key)
        self.operators = [self.op]

    def execute(self, inputs, wms, batch_time_us):
        return [(row["id"], row["ts"]) for row in self.op.run(_all_rows(inputs, "events"), wms[0])]


class Join(Plan):
    """interval_join: left JOIN right ON key AND right.ts BETWEEN left.ts - bound AND left.ts + bound."""

    def __init__(self, delays_ms, bound_us: int, join_type: str):
        super().__init__(delays_ms)
        self.join = IntervalJoin(key="key", ts="ts", lower_us=-bound_us, upper_us=bound_us, join_type=join_type)
        self.join.layouts.update(JOIN_LAYOUTS)
        self.operators = [self.join]

    def execute(self, inputs, wms, batch_time_us):
        out = []
        for j in self.join.run(_all_rows(inputs, "left"), _all_rows(inputs, "right"), wms[0]):
            key = j.left["key"] if j.left is not None else j.right["key"]
            out.append((key, j.left["ts"] if j.left else None, j.right["ts"] if j.right else None))
        return out


class JoinThenCount(Plan):
    """join_then_count: inner join ON key AND right.ts BETWEEN left.ts AND left.ts + bound, then a
    tumbling count per key and window of the left ts (two chained stateful operators)."""

    def __init__(self, delays_ms, bound_us: int, length: int):
        super().__init__(delays_ms)
        self.length = length
        self.join = IntervalJoin(key="key", ts="ts", lower_us=0, upper_us=bound_us, join_type="inner")
        self.join.layouts.update(JOIN_LAYOUTS)
        self.agg = StreamingAggregation(Aggregates((CountRows(),)), lambda k: k[1].end, "append")
        self.agg.layouts[None, None] = _window_layout("key.lkey", ["count"])
        self.operators = [self.join, self.agg]

    def execute(self, inputs, wms, batch_time_us):
        matches = self.join.run(_all_rows(inputs, "left"), _all_rows(inputs, "right"), wms[0])
        pairs = [((j.left["key"], w), {}) for j in matches for w in time_windows(j.left["ts"], self.length)]
        return [(key, w.start, w.end) + values for (key, w), values in self.agg.run(pairs, wms[1])]


class ChainedWindows(Plan):
    """chained_window_count: a count per key and `window`, then per `outer_window` of the first
    windows' window_time: how many (key, window) groups and how many events (append mode)."""

    def __init__(self, delays_ms, length: int, outer: int):
        super().__init__(delays_ms)
        self.length, self.outer = length, outer
        self.inner = StreamingAggregation(Aggregates((CountRows(),)), lambda k: k[1].end, "append")
        self.outer_agg = StreamingAggregation(Aggregates((CountRows(), Sum("count"))), lambda k: k.end, "append")
        self.operators = [self.inner, self.outer_agg]

    def execute(self, inputs, wms, batch_time_us):
        pairs = [((row["key"], w), row) for row in _all_rows(inputs, "events") if row["ts"] is not None
                 for w in time_windows(row["ts"], self.length)]
        inner_rows = [{"w": w, "count": values[0]} for (key, w), values in self.inner.run(pairs, wms[0])]
        outer_pairs = [(ow, row) for row in inner_rows for ow in time_windows(window_time(row["w"]), self.outer)]
        return [(ow.start, ow.end) + values for ow, values in self.outer_agg.run(outer_pairs, wms[1])]


class Inactivity(Plan):
    """inactivity_timeout: per key, a group closed by GroupState's event-time timeout."""

    def __init__(self, delays_ms, timeout_ms: int):
        super().__init__(delays_ms)
        self.op = InactivityTimeout(key="key", ts="ts", timeout_ms=timeout_ms)
        self.operators = [self.op]

    def execute(self, inputs, wms, batch_time_us):
        return [(key, g.first_us, g.last_us, g.count) for key, g in self.op.run(_all_rows(inputs, "events"), wms[0])]


class Hold(Plan):
    """hold_timer: per key, an event-time timer of transformWithState set by the first row."""

    def __init__(self, delays_ms, hold_ms: int):
        super().__init__(delays_ms)
        self.op = HoldTimer(key="key", ts="ts", hold_ms=hold_ms)
        self.op.layouts[None, "group"] = StateLayout(  # the processor's value state `group` (first µs, n)
            (("key.key", "string"), ("value.first", "bigint"), ("value.n", "bigint")), lambda key, g: (key, g.first_us, g.count))
        self.operators = [self.op]

    def execute(self, inputs, wms, batch_time_us):
        return [(key, g.first_us, g.count) for key, g in self.op.run(_all_rows(inputs, "events"), wms[0])]


class FlinkWindows(StatefulOperator):
    """The lateness_count and session_lateness_count pipelines' applyInPandasWithState function, as Spark
    runs it: Flink's window operator (tumbling windows of `length_us`, or merging sessions of `gap_us`)
    with the pipeline's triggers (`triggers.TriggeredWindows`: element-count early firings,
    accumulating or discarding panes) driven by Spark's global watermark, whose delay the
    pipeline sets to bound + 1 ms so that it equals Flink's bounded-out-of-orderness watermark.

    The operator's input has no event-time column Spark could filter by, so Spark drops nothing:
    every row reaches the function, which judges lateness itself against the batch's watermark
    (GroupState.getCurrentWatermarkMs, the eviction watermark). Per batch it first fires and
    purges what the watermark passed (the EventTimeTimeout set at the next due time), then takes
    the rows. GroupState keeps one state row per key."""

    name = "flatMapGroupsWithState"

    def __init__(self, length_us: int | None, lateness_ms: int, early_count: int = 0,
                 accumulation: str = ACCUMULATING, gap_us: int | None = None):
        super().__init__()
        self.windows = TriggeredWindows(length_us=length_us, gap_us=gap_us, lateness_ms=lateness_ms,
                                        early_count=early_count, accumulation=accumulation)

    @property
    def state_rows(self) -> int:
        return self.windows.keys_with_state

    def run(self, rows: Sequence[dict], wm: OperatorWatermarks) -> list:
        self.begin(wm)
        out = self.windows.on_watermark(wm.evict_ms)
        for row in rows:
            if row["ts"] is not None:
                out += self.windows.on_element(row["key"], row["ts"], wm.evict_ms)
        return out


class LatenessCount(Plan):
    """lateness_count (tumbling windows of `length_us`) and session_lateness_count (sessions of `gap_us`) on
    Spark: a Flink-style count with allowed lateness and a late side output."""

    def __init__(self, bound_ms: int, length_us: int | None, lateness_ms: int, early_count: int = 0,
                 accumulation: str = ACCUMULATING, gap_us: int | None = None):
        super().__init__({"events": bound_ms + 1})
        self.op = FlinkWindows(length_us, lateness_ms, early_count, accumulation, gap_us)
        self.operators = [self.op]

    def execute(self, inputs, wms, batch_time_us):
        return [(f.key, f.start_us, f.end_us, f.count, f.kind, f.result_ts_us)
                for f in self.op.run(_all_rows(inputs, "events"), wms[0])]


class ProcessingTimeStamp(Plan):
    """processing_time_stamp: each row with current_timestamp(), fixed per batch from the trigger clock."""

    def execute(self, inputs, wms, batch_time_us):
        return [(row["key"], row["ts"], batch_time_us) for row in _all_rows(inputs, "events")]


def _mode(params: Mapping[str, Any], allowed: Sequence[str], why: str) -> str:
    mode = params.get("output_mode", "append")
    if mode not in allowed:
        raise NotCovered(f"output mode {mode}: {why}")
    return mode


_ANY_MODE = ("append", "update", "complete")
_SESSION_UPDATE = "Spark rejects update mode for session windows at start (SPARK-36463)"


def _one_input(sc: Scenario) -> dict[str, int]:
    return {"events": sc.params["watermark_delay"].total_ms}


def _two_inputs(sc: Scenario) -> dict[str, int]:
    return {"left": sc.params["left_delay"].total_ms, "right": sc.params["right_delay"].total_ms}


def _window_count(sc: Scenario) -> Plan:
    p = sc.params
    two = sc.contract.name == "union_tumbling_count"
    slide = p["slide"].total_us if "slide" in p else None
    functions = (CountRows(), Sum("amount")) if sc.contract.name == "tumbling_sum" else (CountRows(),)
    return WindowAggregate(_two_inputs(sc) if two else _one_input(sc), ("left", "right") if two else ("events",),
                           p["window"].total_us, slide, Aggregates(functions), _mode(p, _ANY_MODE, ""))


def _session_count(sc: Scenario) -> Plan:
    if sc.contract.name == "session_count_dynamic_gap":
        def gap_of(row: dict) -> int | None:
            return parse_gap(row.get("gap"))
    else:
        fixed = sc.params["gap"].total_us

        def gap_of(row: dict) -> int | None:
            return fixed
    return SessionCount(_one_input(sc), gap_of, _mode(sc.params, SESSION_OUTPUT_MODES, _SESSION_UPDATE))


def _processing_time_stamp(sc: Scenario) -> Plan:
    _mode(sc.params, ("append", "update"), "Spark rejects complete mode without an aggregation")
    return ProcessingTimeStamp({})


PLANS: Mapping[str, Callable[[Scenario], Plan]] = {
    "tumbling_count": _window_count,
    "tumbling_sum": _window_count,
    "sliding_count": _window_count,
    "union_tumbling_count": _window_count,
    "event_time_count": lambda sc: EventTimeAggregate(_one_input(sc), _mode(sc.params, _ANY_MODE, "")),
    "session_count": _session_count,
    "session_count_dynamic_gap": _session_count,
    "dedup": lambda sc: Dedup(_one_input(sc), within_watermark=False),
    "dedup_within_watermark": lambda sc: Dedup(_one_input(sc), within_watermark=True),
    "interval_join": lambda sc: Join(_two_inputs(sc), sc.params["bound"].total_us,
                                     sc.params.get("join_type", "inner")),
    "join_then_count": lambda sc: JoinThenCount(_two_inputs(sc), sc.params["bound"].total_us,
                                                sc.params["window"].total_us),
    "chained_window_count": lambda sc: ChainedWindows(_one_input(sc), sc.params["window"].total_us,
                                                      sc.params["outer_window"].total_us),
    "inactivity_timeout": lambda sc: Inactivity(_one_input(sc), sc.params["timeout"].total_ms),
    "hold_timer": lambda sc: Hold(_one_input(sc), sc.params["hold"].total_ms),
    "processing_time_stamp": _processing_time_stamp,
    "lateness_count": lambda sc: _lateness_count(sc),
    "session_lateness_count": lambda sc: _lateness_count(sc),
}


def _lateness_count(sc: Scenario) -> Plan:
    """The bundled pipeline (lateness_count's tumbling windows, session_lateness_count's sessions) as Spark
    runs it: the event-time trigger, element-count early firings and accumulating or discarding panes. A
    parameter it cannot have (`model_only`, the processing-time triggers) set away from its default is not
    covered rather than ignored."""
    for p in sc.contract.params:
        if p.model_only and sc.params.get(p.name, p.default) != p.default:
            raise NotCovered(f"the spark profile runs {sc.contract.name} as its Spark pipeline does, which cannot "
                             f"have parameter {p.name!r} ({p.doc}): {p.model_only}")
    sessions = "gap" in sc.params
    return LatenessCount(sc.params["bound"].total_ms, None if sessions else sc.params["window"].total_us,
                         sc.params["allowed_lateness"].total_ms, sc.params.get("early_count") or 0,
                         sc.params.get("accumulation") or ACCUMULATING,
                         gap_us=sc.params["gap"].total_us if sessions else None)


def plan_for(scenario: Scenario) -> Plan:
    """A fresh plan (empty state) for the scenario's contract and parameters; NotCovered if none."""
    build = PLANS.get(scenario.contract.name)
    if build is None and scenario.contract.model_only:
        raise NotCovered(f"contract {scenario.contract.name!r} has no Spark side: {scenario.contract.model_only}")
    if build is None:
        raise NotCovered(f"no model of contract {scenario.contract.name!r}")
    return build(scenario)
