"""Contracts: the pipeline shapes the kit certifies, their sources, parameters and promised output.

Contracts are data: `*.contract.yaml` files read by `contractfile` (the bundled ones included) and
looked up by `registry`; this module holds their shape and the `@implementation` declaration.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .coltypes import ColumnType, parse_type
from .problems import Where

__all__ = ["Column", "ParamSpec", "SourceSpec", "Contract", "QuerySpec", "StaticSpec", "InvariantSpec", "ValueRange",
           "declared_pools"]


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # a Spark type as `coltypes` writes it: long, decimal(12,2), array<string>, ...

    @property
    def ctype(self) -> "ColumnType":
        """The parsed type (`coltypes.ColumnType`): DDL, value reading, comparison, printing."""
        return parse_type(self.type)


@dataclass(frozen=True)
class ValueRange:
    """`generate: {COLUMN: {min: LOW, max: HIGH}}`: a number column's generated values drawn between LOW and
    HIGH (both drawn as edges, as a type's bounds are) in place of its type's whole range. A decimal's
    bounds are text, as a scenario file writes a decimal."""

    low: Any
    high: Any


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str  # duration | choice | string | int | double | bool | path
    doc: str
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()
    conf: str | None = None  # the Spark SQL conf this parameter sets for the query, if any
    profile: str | None = None  # `dataflow`: a setting only the dataflow profile's model takes (a trigger's)
    # `model_only:`: why the contract's Spark implementations do not have this setting (a scenario that sets
    # it away from its default is judged by `eventtime check-model` only); None when they have it
    model_only: str | None = None


@dataclass(frozen=True)
class SourceSpec:
    name: str
    columns: tuple[Column, ...]  # columns the source must have (a scenario may give it more)
    event_time: str | None = None  # the source's event-time column, if it has one
    # `from:`: the job's reader this source stands in for (format, path, table, options; text compared
    # exactly, option keys regardless of case), for a pipeline written as a job (`eventtime.jobs`)
    reads: tuple[tuple[str, str], ...] = ()
    kind: str = "rows"  # rows | kafka | text (`sourcekinds`): kafka and text have fixed columns
    topic: str | None = None  # a kafka source's topic (default: the source's name)
    headers: bool = False  # a kafka source with the `headers` column (Spark's includeHeaders=true)
    # `value: {columns, event_time, malformed}` of a kafka source (or a text source: each line): the JSON payload the job parses, from
    # which streams are generated (`strategies`); its event-time field, and whether some generated
    # payloads are not JSON at all (a producer's mistake)
    value: tuple[Column, ...] = ()
    value_event_time: str | None = None
    malformed: bool = True
    # `generate:`: generated values narrowed per column (a kafka or text source's: per payload field), as
    # (name, pool) pairs: a pool is a tuple of values as a scenario writes them, or a `ValueRange`
    generate: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Contract:
    name: str
    title: str
    description: str
    sources: tuple[SourceSpec, ...]
    params: tuple[ParamSpec, ...]
    output: tuple[Column, ...]
    reference: str  # "module:function" of its first declared implementation ("" if it declares none)
    alternatives: tuple[str, ...] = field(default=())  # further declared implementations
    requires: tuple[str, ...] = ()  # Spark features (eventtime.harness.features) every implementation needs
    key: tuple[str, ...] = ()  # output columns that identify a row, if declared
    where: Where | None = field(default=None, compare=False)  # where it is declared
    output_where: Where | None = field(default=None, compare=False)  # where its output columns are declared
    bundled: bool = False  # one of the kit's own contracts (scenarios/*.contract.yaml)
    # `queries:` of a job that starts several streaming queries: the output each named query promises
    # (name as the user knows the query: its queryName, else the path, table or topic it writes)
    queries: tuple["QuerySpec", ...] = ()
    # `static:` inputs a job reads with `spark.read` (a dimension table, a reference file), whose rows
    # each scenario gives (`static:`, and `- static:` steps that replace them)
    statics: tuple["StaticSpec", ...] = ()
    # `model_only:`: why no Spark run can judge its scenarios (`eventtime check-model` does), e.g. no
    # implementation is bundled yet; None for a contract Spark runs
    model_only: str | None = None
    # `invariants:`: the job's own properties `eventtime check-properties` checks on generated streams
    invariants: tuple["InvariantSpec", ...] = ()

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)

    def source(self, name: str) -> SourceSpec | None:
        return next((s for s in self.sources if s.name == name), None)

    def static(self, name: str) -> "StaticSpec | None":
        return next((s for s in self.statics if s.name == name), None)

    def query(self, name: str) -> "QuerySpec | None":
        return next((q for q in self.queries if q.name == name), None)

    def for_query(self, name: str | None) -> "Contract":
        """The contract as one of its queries sees it: that query's output in place of `output` (the
        contract itself when `name` is None or names no declared query)."""
        spec = self.query(name) if name is not None else None
        if spec is None:
            return self
        return replace(self, output=spec.output, key=spec.key, output_where=spec.where)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.output)

    @property
    def implementations(self) -> tuple[str, ...]:
        return ((self.reference,) if self.reference else ()) + self.alternatives

    @property
    def output_modes(self) -> tuple[str, ...]:
        spec = self.param("output_mode")
        return tuple(spec.choices) if spec is not None else ("append",)


@dataclass(frozen=True)
class QuerySpec:
    """One streaming query a job promises: its name and output columns (`queries: {NAME: {columns: ...}}`)."""

    name: str
    output: tuple[Column, ...]
    key: tuple[str, ...] = ()
    where: Where | None = field(default=None, compare=False)


@dataclass(frozen=True)
class InvariantSpec:
    """One of the job's own invariants (`invariants: {NAME: {FORM: {...}}}`, `eventtime.properties`):
    `form` is conserve, disjoint, not_null or hook; `sources` the inputs a conservation counts, `outputs`
    the sinks it reads (a query, a `kind: path` parameter, `output`, or `table:NAME`), `columns` the key
    (disjoint) or the columns (not_null), `relation` a conservation's count relation (None: each row in
    exactly one output), `hook` a "module:function"."""

    name: str
    form: str
    outputs: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    relation: str | None = None
    hook: str | None = None
    doc: str = ""
    where: Where | None = field(default=None, compare=False)


@dataclass(frozen=True)
class StaticSpec:
    """A static input of a job (`static: {NAME: {columns, table | path + format, options}}`): the table
    or folder its `spark.read` reads, written by the kit with a scenario's rows, as a batch job would
    write it (`options`: the writer options the job's reader expects, e.g. a CSV header)."""

    name: str
    columns: tuple[Column, ...]
    table: str | None = None
    path: str | None = None
    format: str = "parquet"
    options: tuple[tuple[str, str], ...] = ()
    where: Where | None = field(default=None, compare=False)
    generate: tuple[tuple[str, Any], ...] = ()  # `generate:` as a source's


def declared_pools(contract: Contract, given: Any = None) -> dict[str, Any]:
    """The contract's `generate:` declarations as the strategies' pools (`{"SOURCE.COLUMN": pool}`, for its
    sources, a payload field named as a column, and its static inputs), with the `given` ones (code's
    `pools=`) over them: a given pool named by the column alone (`{"amount": ...}`) replaces every source's
    declared one of that column."""
    given = dict(given or {})
    specs: list[SourceSpec | StaticSpec] = [*contract.sources, *contract.statics]
    declared = {f"{spec.name}.{col}": pool for spec in specs for col, pool in spec.generate if col not in given}
    return {**declared, **given}
