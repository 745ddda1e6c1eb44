"""Contracts: the pipeline shapes the kit certifies, their sources, parameters and promised output."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Column", "ParamSpec", "SourceSpec", "Contract", "CONTRACTS", "get_contract", "COLUMN_TYPES"]

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


_OUTPUT_MODE = ParamSpec("output_mode", "choice", "Spark output mode the pipeline promises",
                         required=False, default="append", choices=("append", "update", "complete"))
_WINDOW = ParamSpec("window", "duration", "tumbling window length")
_DELAY = ParamSpec("watermark_delay", "duration", "watermark delay (withWatermark)")
_KEY_TS = (Column("key", "string"), Column("ts", "timestamp"))
_WINDOW_COUNT = (Column("key", "string"), Column("window_start", "timestamp"),
                 Column("window_end", "timestamp"), Column("count", "long"))

_REF = "conformance.pipelines.reference"

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
        alternatives=(f"{_REF}:tumbling_count_sql",),
    ),
    Contract(
        name="union_tumbling_count",
        title="Two inputs, each with its own watermark, unioned under one global watermark",
        description=("left(key, ts) with watermark left_delay, right(key, ts) with watermark "
                     "right_delay, unioned, then counted per key and tumbling window; the global "
                     "watermark follows spark.sql.streaming.multipleWatermarkPolicy (`policy`)."),
        sources=(SourceSpec("left", _KEY_TS), SourceSpec("right", _KEY_TS)),
        params=(_WINDOW,
                ParamSpec("left_delay", "duration", "watermark delay on the left input"),
                ParamSpec("right_delay", "duration", "watermark delay on the right input"),
                ParamSpec("policy", "choice", "how the global watermark combines the inputs",
                          required=False, default="min", choices=("min", "max"),
                          conf="spark.sql.streaming.multipleWatermarkPolicy"),
                _OUTPUT_MODE),
        output=_WINDOW_COUNT,
        reference=f"{_REF}:union_tumbling_count",
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
