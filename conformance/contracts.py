"""Contracts: the pipeline shapes the kit certifies, their sources, parameters and promised output."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Column", "ParamSpec", "SourceSpec", "Contract", "CONTRACTS", "get_contract", "COLUMN_TYPES",
           "ImplementationInfo", "implementation", "implementation_info", "UNJUDGEABLE"]

# Column types a scenario may use, with the Spark SQL type each stands for.
COLUMN_TYPES: dict[str, str] = {
    "string": "string",
    "int": "int",
    "long": "bigint",
    "double": "double",
    "boolean": "boolean",
    "timestamp": "timestamp",
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # a key of COLUMN_TYPES


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str  # "duration" | "choice"
    doc: str
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()
    conf: str | None = None  # the Spark SQL conf this parameter sets for the query, if any


@dataclass(frozen=True)
class SourceSpec:
    name: str
    columns: tuple[Column, ...]  # columns the source must have (it may have more)
    event_time: bool = True  # whether the source must name an event-time column


@dataclass(frozen=True)
class Contract:
    name: str
    title: str
    description: str
    sources: tuple[SourceSpec, ...]
    params: tuple[ParamSpec, ...]
    output: tuple[Column, ...]
    reference: str  # "module:function" of the bundled reference implementation
    alternatives: tuple[str, ...] = field(default=())  # further bundled implementations
    requires: tuple[str, ...] = ()  # Spark features (eventtime.harness.features) every implementation needs

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def source(self, name: str) -> SourceSpec | None:
        return next((s for s in self.sources if s.name == name), None)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.output)

    @property
    def implementations(self) -> tuple[str, ...]:
        return (self.reference,) + self.alternatives


# Checks an implementation may declare it cannot be judged on: they read the metrics of Spark's
# built-in stateful operators, which a hand-written operator does not have in the same shape.
UNJUDGEABLE = ("dropped", "state_rows")


@dataclass(frozen=True)
class ImplementationInfo:
    """What an implementation declares about itself with `@implementation(...)`."""

    requires: tuple[str, ...] = ()  # Spark features (eventtime.harness.features) it needs
    supports: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # param -> values it handles
    unjudged: tuple[str, ...] = ()  # checks of UNJUDGEABLE that do not apply to it
    note: str = ""  # why, shown next to its verdicts
    conf: Mapping[str, str] = field(default_factory=dict)  # Spark SQL settings its queries need

    def not_applicable(self, params: Mapping[str, Any], features: frozenset[str]) -> str | None:
        """Why a scenario with `params` is outside what this implementation handles (None if inside)."""
        missing = [f for f in self.requires if f not in features]
        if missing:
            return f"the implementation needs Spark feature(s) {', '.join(missing)}"
        for name, allowed in self.supports.items():
            if name in params and params[name] not in allowed:
                return (f"the implementation supports {name} {', '.join(map(str, allowed))}, "
                        f"the scenario uses {params[name]}")
        return None


def implementation(*, requires: tuple[str, ...] | list[str] = (), supports: Mapping[str, Any] | None = None,
                   unjudged: tuple[str, ...] | list[str] = (), note: str = "",
                   conf: Mapping[str, str] | None = None):
    """Decorate a pipeline function to declare the features it needs, the parameter values it handles
    (scenarios outside them are *not applicable* to it, never failures) and the operator-metric
    checks (`dropped`, `state_rows`) that do not apply to it, with a note saying why. `conf` holds
    Spark SQL settings its queries need (a scenario's own `conf` still wins)."""
    from eventtime.harness.features import FEATURES

    for f in requires:
        if f not in FEATURES:
            raise ValueError(f"unknown Spark feature {f!r} (known: {', '.join(sorted(FEATURES))})")
    for c in unjudged:
        if c not in UNJUDGEABLE:
            raise ValueError(f"unjudged takes {', '.join(UNJUDGEABLE)}, not {c!r}")
    if unjudged and not note:
        raise ValueError("say in `note` why the checks do not apply to this implementation")
    info = ImplementationInfo(tuple(requires), {k: tuple(v) for k, v in (supports or {}).items()},
                              tuple(unjudged), note, dict(conf or {}))

    def mark(fn):
        fn.__eventtime_implementation__ = info
        return fn

    return mark


def implementation_info(fn: Any) -> ImplementationInfo:
    return getattr(fn, "__eventtime_implementation__", None) or ImplementationInfo()


_OUTPUT_MODE = ParamSpec("output_mode", "choice", "Spark output mode the pipeline promises",
                         required=False, default="append", choices=("append", "update", "complete"))
_APPEND_UPDATE = ParamSpec("output_mode", "choice", "Spark output mode the pipeline promises",
                           required=False, default="append", choices=("append", "update"))
_APPEND_COMPLETE = ParamSpec("output_mode", "choice", "Spark output mode the pipeline promises (session windows "
                             "reject update mode)", required=False, default="append", choices=("append", "complete"))
_APPEND = ParamSpec("output_mode", "choice", "Spark output mode the pipeline promises",
                    required=False, default="append", choices=("append",))
_WINDOW = ParamSpec("window", "duration", "window length")
_DELAY = ParamSpec("watermark_delay", "duration", "watermark delay (withWatermark)")
_LEFT_DELAY = ParamSpec("left_delay", "duration", "watermark delay on the left input")
_RIGHT_DELAY = ParamSpec("right_delay", "duration", "watermark delay on the right input")
_KEY_TS = (Column("key", "string"), Column("ts", "timestamp"))
_WINDOW_COUNT = (Column("key", "string"), Column("window_start", "timestamp"),
                 Column("window_end", "timestamp"), Column("count", "long"))

_REF = "eventtime.pipelines.reference"
_SQL = "eventtime.pipelines.sql"
_STATEFUL = "eventtime.pipelines.stateful"

CONTRACTS: Mapping[str, Contract] = {c.name: c for c in (
    Contract(
        name="tumbling_count",
        title="Event-time tumbling window count per key, with a watermark",
        description=("events(key, ts) -> withWatermark(ts, watermark_delay) -> count per key and "
                     "tumbling window of length `window` on ts."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(_WINDOW, _DELAY, _OUTPUT_MODE),
        output=_WINDOW_COUNT,
        reference=f"{_REF}:tumbling_count",
        alternatives=(f"{_SQL}:tumbling_count", f"{_STATEFUL}:tumbling_count"),
    ),
    Contract(
        name="tumbling_sum",
        title="Event-time tumbling window count and sum of an amount per key",
        description=("events(key, ts, amount) -> withWatermark(ts, watermark_delay) -> per key and "
                     "tumbling window: count(*) and sum(amount)."),
        sources=(SourceSpec("events", _KEY_TS + (Column("amount", "long"),)),),
        params=(_WINDOW, _DELAY, _OUTPUT_MODE),
        output=_WINDOW_COUNT + (Column("total", "long"),),
        reference=f"{_REF}:tumbling_sum",
        alternatives=(f"{_SQL}:tumbling_sum",),
    ),
    Contract(
        name="sliding_count",
        title="Event-time sliding (hopping) window count per key",
        description=("events(key, ts) -> withWatermark(ts, watermark_delay) -> count per key and "
                     "sliding window of length `window` every `slide`; a row lands in window/slide windows."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(_WINDOW, ParamSpec("slide", "duration", "slide interval"), _DELAY, _OUTPUT_MODE),
        output=_WINDOW_COUNT,
        reference=f"{_REF}:sliding_count",
        alternatives=(f"{_SQL}:sliding_count",),
    ),
    Contract(
        name="session_count",
        title="Event-time session window count per key, fixed gap",
        description=("events(key, ts) -> withWatermark(ts, watermark_delay) -> session_window(ts, gap) "
                     "per key: a session ends `gap` after its last event; rows closer than `gap` merge."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(ParamSpec("gap", "duration", "session gap"), _DELAY, _APPEND_COMPLETE),
        output=(Column("key", "string"), Column("session_start", "timestamp"),
                Column("session_end", "timestamp"), Column("count", "long")),
        reference=f"{_REF}:session_count",
        alternatives=(f"{_SQL}:session_count",),
    ),
    Contract(
        name="session_count_dynamic_gap",
        title="Event-time session window count per key, with a gap taken from each row",
        description=("events(key, ts, gap) where gap is an interval string ('5 seconds') -> "
                     "session_window(ts, gap column) per key: each row extends its session by its own gap."),
        sources=(SourceSpec("events", _KEY_TS + (Column("gap", "string"),)),),
        params=(_DELAY, _APPEND_COMPLETE),
        output=(Column("key", "string"), Column("session_start", "timestamp"),
                Column("session_end", "timestamp"), Column("count", "long")),
        reference=f"{_REF}:session_count_dynamic_gap",
        alternatives=(f"{_SQL}:session_count_dynamic_gap",),
        requires=("session_window_dynamic_gap",),
    ),
    Contract(
        name="event_time_count",
        title="Count per key and raw event-time value (no window)",
        description=("events(key, ts) -> withWatermark(ts, watermark_delay) -> groupBy(key, ts).count(): "
                     "the event-time column itself is the grouping key, so each distinct ts is its own group."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(_DELAY, _OUTPUT_MODE),
        output=(Column("key", "string"), Column("ts", "timestamp"), Column("count", "long")),
        reference=f"{_REF}:event_time_count",
        alternatives=(f"{_SQL}:event_time_count",),
    ),
    Contract(
        name="dedup",
        title="Deduplication on (id, event time) with a watermark",
        description=("events(id, ts) -> withWatermark(ts, watermark_delay) -> dropDuplicates([id, ts]): "
                     "the first row of each (id, ts) passes at once; state for a pair is dropped once "
                     "the watermark passes its ts, and late rows are dropped."),
        sources=(SourceSpec("events", (Column("id", "string"), Column("ts", "timestamp"))),),
        params=(_DELAY, _APPEND),
        output=(Column("id", "string"), Column("ts", "timestamp")),
        reference=f"{_REF}:dedup",
    ),
    Contract(
        name="dedup_within_watermark",
        title="Deduplication on id within the watermark delay (dropDuplicatesWithinWatermark)",
        description=("events(id, ts) -> withWatermark(ts, watermark_delay) -> "
                     "dropDuplicatesWithinWatermark([id]): a duplicate id is dropped while the watermark "
                     "is below the first row's ts + watermark_delay; later rows with that id pass again."),
        sources=(SourceSpec("events", (Column("id", "string"), Column("ts", "timestamp"))),),
        params=(_DELAY, _APPEND),
        output=(Column("id", "string"), Column("ts", "timestamp")),
        reference=f"{_REF}:dedup_within_watermark",
        requires=("drop_duplicates_within_watermark",),
    ),
    Contract(
        name="interval_join",
        title="Stream-stream join on key with an event-time range condition",
        description=("left(key, ts) with watermark left_delay JOIN right(key, ts) with watermark right_delay "
                     "ON key AND right.ts BETWEEN left.ts - bound AND left.ts + bound; join_type inner, "
                     "left_outer, right_outer or full_outer. Outer rows with nulls are emitted only once "
                     "the watermark guarantees no match can come."),
        sources=(SourceSpec("left", _KEY_TS), SourceSpec("right", _KEY_TS)),
        params=(_LEFT_DELAY, _RIGHT_DELAY, ParamSpec("bound", "duration", "how far apart matching ts may be"),
                ParamSpec("join_type", "choice", "join type", required=False, default="inner",
                          choices=("inner", "left_outer", "right_outer", "full_outer")),
                _APPEND),
        output=(Column("key", "string"), Column("left_ts", "timestamp"), Column("right_ts", "timestamp")),
        reference=f"{_REF}:interval_join",
        alternatives=(f"{_SQL}:interval_join",),
    ),
    Contract(
        name="union_tumbling_count",
        title="Two inputs, each with its own watermark, unioned under one global watermark",
        description=("left(key, ts) with watermark left_delay, right(key, ts) with watermark "
                     "right_delay, unioned, then counted per key and tumbling window; the global "
                     "watermark follows spark.sql.streaming.multipleWatermarkPolicy (`policy`)."),
        sources=(SourceSpec("left", _KEY_TS), SourceSpec("right", _KEY_TS)),
        params=(_WINDOW, _LEFT_DELAY, _RIGHT_DELAY,
                ParamSpec("policy", "choice", "how the global watermark combines the inputs",
                          required=False, default="min", choices=("min", "max"),
                          conf="spark.sql.streaming.multipleWatermarkPolicy"),
                _OUTPUT_MODE),
        output=_WINDOW_COUNT,
        reference=f"{_REF}:union_tumbling_count",
    ),
    Contract(
        name="chained_window_count",
        title="Window aggregate feeding a second window aggregate (chained stateful operators)",
        description=("events(key, ts) -> withWatermark -> count per key and tumbling `window` -> "
                     "per tumbling `outer_window` of the first windows' window_time: how many (key, window) "
                     "groups and how many events. Append mode; each stage emits when the watermark passes."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(_WINDOW, ParamSpec("outer_window", "duration", "length of the second window"), _DELAY, _APPEND),
        output=(Column("window_start", "timestamp"), Column("window_end", "timestamp"),
                Column("groups", "long"), Column("events", "long")),
        reference=f"{_REF}:chained_window_count",
        alternatives=(f"{_SQL}:chained_window_count",),
        requires=("multiple_stateful_operators",),
    ),
    Contract(
        name="join_then_count",
        title="Stream-stream inner join feeding a window count (chained stateful operators)",
        description=("left(key, ts) JOIN right(key, ts) ON key AND right.ts BETWEEN left.ts AND left.ts + "
                     "bound, then count of matches per key and tumbling `window` of the left ts; append mode."),
        sources=(SourceSpec("left", _KEY_TS), SourceSpec("right", _KEY_TS)),
        params=(_LEFT_DELAY, _RIGHT_DELAY, ParamSpec("bound", "duration", "how long after left.ts a match may come"),
                _WINDOW, _APPEND),
        output=_WINDOW_COUNT,
        reference=f"{_REF}:join_then_count",
        requires=("multiple_stateful_operators", "join_then_stateful"),
    ),
    Contract(
        name="inactivity_timeout",
        title="Per-key activity groups closed by an event-time timeout (applyInPandasWithState)",
        description=("events(key, ts) -> withWatermark -> per key: count events; the group closes when the "
                     "watermark passes (strictly) last_ts + timeout, emitting key, first_ts, last_ts, count. "
                     "A timeout on event time, as GroupStateTimeout.EventTimeTimeout gives."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(ParamSpec("timeout", "duration", "event-time inactivity before a group closes"), _DELAY, _APPEND),
        output=(Column("key", "string"), Column("first_ts", "timestamp"), Column("last_ts", "timestamp"),
                Column("count", "long")),
        reference=f"{_STATEFUL}:inactivity_timeout",
        alternatives=(f"{_STATEFUL}:inactivity_timeout_tws",),
        requires=("apply_in_pandas_with_state",),
    ),
    Contract(
        name="lateness_count",
        title="Flink-style tumbling count: allowed lateness, late firings, a late side output (dataflow profile)",
        description=("events(key, ts) -> per key and tumbling `window`, Flink's WindowOperator with "
                     "EventTimeTrigger: watermark = max ts - bound - 1 ms; a window fires (firing `on_time`) "
                     "when the watermark reaches its end - 1 ms; an element for a fired window within "
                     "`allowed_lateness` fires it again at once with the new count (`late`); an element for "
                     "a window whose end - 1 ms + allowed_lateness is <= the watermark goes to the late side "
                     "output (`dropped`, count 1, result_ts its own ts). result_ts of a firing is end - 1 ms. "
                     "Built with applyInPandasWithState; its scenarios state dataflow-profile expectations."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(ParamSpec("bound", "duration", "bounded out-of-orderness of the watermark generator"),
                ParamSpec("allowed_lateness", "duration", "how long after its on-time firing a window still "
                          "accepts late elements"), _WINDOW, _APPEND),
        output=_WINDOW_COUNT + (Column("firing", "string"), Column("result_ts", "timestamp")),
        reference="eventtime.pipelines.dataflow:lateness_count",
        requires=("apply_in_pandas_with_state",),
    ),
    Contract(
        name="hold_timer",
        title="Per-key event-time timer set by the first event (transformWithState)",
        description=("events(key, ts) -> withWatermark -> per key: the first event registers an event-time "
                     "timer at first_ts + hold; events until it fires are counted; when the watermark reaches "
                     "the timer, emit key, first_ts, count and start over. Needs transformWithStateInPandas."),
        sources=(SourceSpec("events", _KEY_TS),),
        params=(ParamSpec("hold", "duration", "how long after a key's first event its timer fires"), _DELAY,
                _APPEND),
        output=(Column("key", "string"), Column("first_ts", "timestamp"), Column("count", "long")),
        reference=f"{_STATEFUL}:hold_timer",
        requires=("transform_with_state",),
    ),
    Contract(
        name="processing_time_stamp",
        title="Stamp each row with the processing time of the micro-batch that read it",
        description=("events(key, ts) -> each row with processed_at = current_timestamp(), which "
                     "Spark fixes per micro-batch from the trigger clock."),
        sources=(SourceSpec("events", _KEY_TS, event_time=False),),
        params=(_OUTPUT_MODE,),
        output=(Column("key", "string"), Column("ts", "timestamp"), Column("processed_at", "timestamp")),
        reference=f"{_REF}:processing_time_stamp",
    ),
)}


def get_contract(name: str) -> Contract | None:
    return CONTRACTS.get(name)


def contracts_markdown() -> str:
    """The contracts reference as Markdown (what docs/contracts.md holds; a test keeps them equal)."""
    from eventtime.harness.features import FEATURES

    out = ["# Contracts", "",
           "Generated by `eventtime list --markdown`; do not edit by hand.", "",
           "A contract names a pipeline shape: its input sources, its parameters and the output columns it "
           "promises. Scenarios name a contract; implementations (`module:function`) are certified against "
           "every scenario of their contract with `eventtime certify --contract NAME --pipeline module:function`.",
           ""]
    for c in sorted(CONTRACTS.values(), key=lambda c: c.name):
        out += [f"## `{c.name}`", "", c.title + ".", "", c.description, ""]
        out.append("| | |")
        out.append("|---|---|")
        for s in c.sources:
            cols = ", ".join(f"`{col.name}` {col.type}" for col in s.columns)
            out.append(f"| source `{s.name}` | {cols}{'' if s.event_time else ' (no event-time column needed)'} |")
        for p in c.params:
            kind = ("one of " + ", ".join(f"`{v}`" for v in p.choices)) if p.kind == "choice" else "duration"
            default = "required" if p.required else f"default `{p.default}`"
            conf = f"; sets `{p.conf}`" if p.conf else ""
            out.append(f"| param `{p.name}` | {p.doc}: {kind}, {default}{conf} |")
        out.append("| output | " + ", ".join(f"`{col.name}` {col.type}" for col in c.output) + " |")
        if c.requires:
            out.append("| requires | " + "; ".join(FEATURES[f] for f in c.requires) + " |")
        out.append(f"| reference | `{c.reference}` |")
        if c.alternatives:
            out.append("| also bundled | " + ", ".join(f"`{a}`" for a in c.alternatives) + " |")
        out.append("")
    return "\n".join(out)
