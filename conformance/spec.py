"""The scenario specification (`eventtime.spec`): what a scenario file says, typed and checked, independent of Spark."""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from .contracts import Column, Contract
from .problems import Where
from .generate import GenerateSpec, generate_batches, round_robin
from .timeparse import Duration

__all__ = [
    "Where", "Params", "SourceDef", "Step", "AddStep", "GenerateStep", "ProcessStep", "UpdateStep", "pipeline_only", "AdvanceStep", "StopStep",
    "StartStep", "RunStep", "ExpectStep", "InputStep", "INPUT_STEPS", "model_only", "RowsCheck", "BatchCheck", "OperatorCheck", "FailureCheck", "EventTimeCheck", "SchemaCheck",
    "Scenario", "Value",
]

Value = Any  # str | int | float | bool | None; timestamps are epoch microseconds (int)


class Params(Mapping[str, Any]):
    """A contract's parameters as the scenario sets them, defaults filled in.

    Read them as attributes (`params.watermark_delay.interval`) or as a mapping.
    """

    def __init__(self, values: Mapping[str, Any]):
        self._values = dict(values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r}; parameters: {', '.join(self._values)}") from None

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return "Params(" + ", ".join(f"{k}={v}" for k, v in self._values.items()) + ")"


# A source's keys only the dataflow profile's model reads (`eventtime.semantics.dataflow`).
DATAFLOW_SOURCE_KEYS = ("idle_timeout", "generator", "subtasks", "lag", "idle_after", "ignore_watermarks")


@dataclass(frozen=True)
class SourceDef:
    name: str
    columns: tuple[Column, ...]
    event_time: str | None
    where: Where
    partitions: int | None = None  # `partitions: N`: each add reaches Spark as N input partitions
    kind: str = "rows"  # rows | kafka | text (`sourcekinds`): how an add's rows are read
    topic: str | None = None  # a kafka source's topic
    headers: bool = False  # a kafka source with the `headers` column
    # dataflow profile only (the model's Flink-style sources, `eventtime.semantics.dataflow`):
    idle_timeout: Duration | None = None  # `idle_timeout`: an input without elements that long is idle
    generator: str | None = None  # `generator`: periodic (default), punctuated, none (only `watermark` steps)
    subtasks: int | None = None  # `subtasks: N`: partition k is read by source subtask k mod N
    lag: Duration | None = None  # `lag`: a time_lag generator's, or idle_after's, processing time - lag
    idle_after: Duration | None = None  # `idle_after`: a periodic generator idle that long proposes now - lag
    # `ignore_watermarks: [k, ...]`: the window operator ignores the watermarks of these source subtasks
    # (their rows and stream status count): a two-input operator such as SingleWatermarkCoFlatMap
    ignore_watermarks: tuple[int, ...] | None = None

    @property
    def dataflow_keys(self) -> tuple[str, ...]:
        """The keys only the dataflow profile's model reads, that this source gives."""
        return tuple(k for k in DATAFLOW_SOURCE_KEYS if getattr(self, k) is not None)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Step:
    where: Where

    kind = "step"

    @property
    def index(self) -> int:  # set by the loader through object.__setattr__
        return getattr(self, "_index", 0)


@dataclass(frozen=True)
class AddStep(Step):
    rows: Mapping[str, tuple[tuple[Value, ...], ...]] = field(default_factory=dict)
    # For a source with `partitions: N`: its rows as N input partitions (`rows` has them all, in
    # partition order); listed rows without partitions are spread round-robin.
    parts: Mapping[str, tuple[tuple[tuple[Value, ...], ...], ...]] = field(default_factory=dict)
    kind = "add"


@dataclass(frozen=True)
class GenerateStep(Step):
    """`generate`: seeded rows for one source, `spec.batches` times an `add` and a `process`."""

    source: str = ""
    spec: GenerateSpec = GenerateSpec(rows=1, batches=1, start=0, step=0)
    columns: tuple[Column, ...] = ()
    partitions: int | None = None
    kind = "generate"

    def batch_rows(self) -> tuple[tuple[tuple[Value, ...], ...], ...]:
        """The rows of each batch, in column order (timestamps as epoch microseconds)."""
        return generate_batches(self.spec, self.columns)

    def batch_parts(self, rows: tuple[tuple[Value, ...], ...]) -> tuple[tuple[tuple[Value, ...], ...], ...] | None:
        """One batch's rows as input partitions (round-robin), or None for a source without partitions."""
        return round_robin(rows, self.partitions) if self.partitions else None


@dataclass(frozen=True)
class InputStep(Step):
    """`watermark: {INPUT: TIME}`, `idle: INPUT` or `active: INPUT`: a watermark or a stream status given
    to inputs, as a source emits them (dataflow profile only: Spark derives its watermark from the data
    and has no stream status). An input is a source (each of its partitions) or one partition."""

    signal: str = "watermark"  # watermark | idle | active
    inputs: tuple[tuple[str, int | None, int | None], ...] = ()  # (source, partition, watermark µs)

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.signal


INPUT_STEPS = ("watermark", "idle", "active")


def model_only(scenario: "Scenario") -> str | None:
    """Why a scenario can be judged by the model only (None when Spark can run it): it gives watermarks
    or stream statuses as input, checks the watermarks an operator forwarded, binds a contract declared
    `model_only`, or sets a parameter declared `model_only` away from its default."""
    given = next((s for s in scenario.steps if isinstance(s, InputStep)), None)
    if given is not None:
        return (f"model only: step {given.index} ({given.kind}) gives a {'watermark' if given.signal == 'watermark' else 'stream status'} "
                "as input, which Spark cannot take (it derives its watermark from the data); "
                "`eventtime check-model` judges it")
    checks = next((s for s in scenario.steps if isinstance(s, ExpectStep) and s.watermarks is not None), None)
    if checks is not None:
        return (f"model only: step {checks.index} checks the watermarks an operator forwarded (`watermarks`), "
                "which a Spark run does not show; `eventtime check-model` judges it")
    checks = next((s for s in scenario.steps if isinstance(s, ExpectStep) and s.statuses is not None), None)
    if checks is not None:
        return (f"model only: step {checks.index} checks the stream statuses an operator emitted (`statuses`), "
                "which Spark does not have; `eventtime check-model` judges it")
    if scenario.contract.model_only:
        return f"model only: contract {scenario.contract.name!r}: {scenario.contract.model_only}"
    trigger = next((p for p in scenario.contract.params
                    if p.model_only and scenario.params.get(p.name, p.default) != p.default), None)
    if trigger is not None:
        return (f"model only: parameter {trigger.name!r} ({trigger.doc}) is set away from its default, and the "
                f"contract's Spark implementations cannot have it: {trigger.model_only}; `eventtime check-model` judges it")
    src = next((s for s in scenario.sources.values() if s.dataflow_keys), None)
    if src is not None:
        return (f"model only: source {src.name!r} sets {', '.join(src.dataflow_keys)}, which Spark's sources "
                "do not have; `eventtime check-model` judges it")
    return None


@dataclass(frozen=True)
class StaticStep(Step):
    """`static: {NAME: rows}`: the contract's static inputs written anew with these rows (`StaticSpec`)."""

    rows: Mapping[str, tuple[tuple[Value, ...], ...]] = field(default_factory=dict)
    kind = "static"


@dataclass(frozen=True)
class ProcessStep(Step):
    kind = "process"


@dataclass(frozen=True)
class UpdateStep(ProcessStep):
    """`update`: one update of a Spark Declarative Pipeline, as one `spark-pipelines run` with its options
    (docs/pipelines.md, *Updates*): `refresh` runs only the named datasets' flows (`--refresh`),
    `full_refresh` empties the named datasets and recomputes them on new checkpoints (`--full-refresh`),
    `full_refresh_all` every dataset (`--full-refresh-all`). Without options it is `process`: one update
    of everything, which is also what `process` means for a job."""

    refresh: tuple[str, ...] = ()
    full_refresh: tuple[str, ...] = ()
    full_refresh_all: bool = False
    kind = "update"

    @property
    def selective(self) -> bool:
        """Whether it asks more than `process` does (a selection or a full refresh)."""
        return bool(self.refresh or self.full_refresh or self.full_refresh_all)


def pipeline_only(scenario: "Scenario") -> "UpdateStep | None":
    """The first step only a Spark Declarative Pipeline can run (an `update` with a selection or a full
    refresh: a job or a function has one query and nothing to select), None when there is none."""
    return next((s for s in scenario.steps if isinstance(s, UpdateStep) and s.selective), None)


@dataclass(frozen=True)
class AdvanceStep(Step):
    by: Duration = Duration(0)
    kind = "advance"


@dataclass(frozen=True)
class StopStep(Step):
    query: str | None = None  # `stop: {query: NAME}`: only that query of a job; the others run on
    kind = "stop"


@dataclass(frozen=True)
class StartStep(Step):
    conf: Mapping[str, str] = field(default_factory=dict)
    restart: bool = False  # `restart` = stop, then start
    new_session: bool = False  # `session: new`: start in another SparkSession; only the checkpoint carries over
    # `rerun_last_batch: true`: restart as after a crash between the last batch's sink write and its
    # commit: the last batch runs again, with the same input (what an idempotent sink must survive)
    rerun_last_batch: bool = False
    query: str | None = None  # `{query: NAME}`: only that query of a job; the others run on

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "restart" if self.restart else "start"


@dataclass(frozen=True)
class RowsCheck:
    scope: str  # "rows" (since the previous expect) | "output" (whole sink) | "last_batch"
    rows: tuple[tuple[Value, ...], ...]
    where: Where


@dataclass(frozen=True)
class WrittenCheck:
    """`expect: {table: NAME}` / `{written: PARAM, format: F}`: what a job wrote, read back after the step
    (only the rows whose columns have the values of `filter`); the step's row checks compare its rows."""

    where: Where
    table: str | None = None
    path: str | None = None  # a `kind: path` parameter of the contract, or a path as the job writes it
    format: str = ""  # "": the format of the job's file sink writing the path, else parquet
    filter: tuple[tuple[str, Value], ...] = ()  # (output column, value): `where: {page: home}`


RECORD_KEYS = ("value", "key", "headers", "partition")  # of an expected record


@dataclass(frozen=True)
class ExpectedRecord:
    """A record an expect says an output topic holds, each field as written in the scenario (`eventtime.topics`)."""

    value: Any
    key: Any = None
    headers: Any = None  # a mapping {key: value} or a list of [key, value] pairs; None: not given
    partition: int | None = None


@dataclass(frozen=True)
class TopicCheck:
    """`expect: {topic: T, records: [...]}`: what the output topic holds after the step."""

    where: Where
    topic: str
    records: tuple[ExpectedRecord, ...]
    ordered: bool = False

    @property
    def fields(self) -> tuple[str, ...]:
        """What is compared: key and value, and headers or partition when any expected record gives them."""
        return ("key", "value") + tuple(f for f in ("headers", "partition")
                                        if any(getattr(r, f) is not None for r in self.records))


@dataclass(frozen=True)
class BatchCheck:
    where: Where
    data: bool | None = None
    rows: tuple[tuple[Value, ...], ...] | None = None
    watermark_before_us: int | None = None  # epoch microseconds, 0 = `initial`
    watermark_after_us: int | None = None
    dropped: int | None = None
    state_rows: int | None = None
    updated: int | None = None  # numRowsUpdated, summed over the batch's stateful operators


@dataclass(frozen=True)
class EventTimeCheck:
    where: Where
    min_us: int | None = None  # epoch microseconds
    max_us: int | None = None
    avg_us: int | None = None
    watermark_us: int | None = None  # the watermark the statistics carry: what that batch ran with
    none: bool = False  # `event_time: none`: no batch since the previous expect reported statistics


@dataclass(frozen=True)
class StateCheck:
    """`state: {operator, side, variable, rows}`: the rows a stateful operator keeps after the step, as
    Spark's state reader gives them (`eventtime.harness.stateread`), compared on the leaf fields the
    rows name (`key.id`, `value.count`). Values are read by the field's type once Spark gives it."""

    where: Where
    columns: tuple[str, ...]  # dotted paths into the reader's `key` and `value` structs
    rows: tuple[tuple[Any, ...], ...]  # YAML values, in `columns` order
    row_wheres: tuple[Where, ...] = ()
    operator: str | int | None = None  # operatorName or operatorId; None: the only stateful operator
    side: str | None = None  # a join's `left` or `right`
    variable: str | None = None  # a transformWithState state variable


@dataclass(frozen=True)
class OperatorCheck:
    """One entry of `operators: [...]`: the stateful operator at this position of the query's progress
    (`stateOperators`, in Spark's order), optionally its name as Spark gives it."""

    where: Where
    position: int  # 0-based
    name: str | None = None  # operatorName: stateStoreSave, dedupe, symmetricHashJoin, ...
    state_rows: int | None = None  # numRowsTotal after the last batch
    updated: int | None = None  # numRowsUpdated, summed over the batches since the previous expect
    dropped: int | None = None  # numRowsDroppedByWatermark, summed over the same batches
    # the same two summed over the batches since the previous check of either (`since_check_span`)
    updated_since_check: int | None = None
    dropped_since_check: int | None = None


@dataclass(frozen=True)
class FailureCheck:
    where: Where
    error_class: str | None = None
    exception: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class RunStep(Step):
    """`run: available_now`: the query runs as `trigger(availableNow=True)` runs it: started from its
    checkpoint (stopped first when it is running), every batch of what is available then (the data
    batch and the no-data batch a watermark advance needs), then stopped. `run: once`: as
    `Trigger.Once` runs it: started from its checkpoint, one trigger (at most one batch), stopped."""

    trigger: str = "available_now"  # available_now | once
    was_running: bool = False  # the query was running before the step (it is stopped first)
    kind = "run"


def step_features(steps: tuple[Step, ...]) -> tuple[str, ...]:
    """The Spark features a scenario's steps need, besides those it `requires`: `run: once` needs a
    Spark that still has Trigger.Once (`trigger_once`), a `state` check Spark's state reader."""
    out = []
    if any(isinstance(s, RunStep) and s.trigger == "once" for s in steps):
        out.append("trigger_once")
    if any(isinstance(s, ExpectStep) and (s.state is not None or any(v.state is not None for _, v in s.variants))
           for s in steps):
        out.append("state_reader")
    return tuple(out)


@dataclass(frozen=True)
class SchemaCheck:
    """`schema: DDL`: the pipeline's output columns, in this order, of these types; NOT NULL where given."""

    where: Where
    columns: tuple[tuple[str, str, bool], ...]  # (name, type as coltypes writes it, NOT NULL asked)


@dataclass(frozen=True)
class ExpectStep(Step):
    rows: tuple[RowsCheck, ...] = ()
    ordered: bool = False
    watermark_us: int | None = None  # epoch microseconds, 0 = `initial`
    watermark_where: Where | None = None
    # `watermark: {at_least: T, at_most: T}`: the bounds (epoch microseconds, None: that side open)
    watermark_range: tuple[int | None, int | None] | None = None
    dropped: int | None = None
    state_rows: int | None = None
    batch_count: int | None = None
    batches: tuple[BatchCheck, ...] | None = None
    event_time: EventTimeCheck | None = None
    failure: FailureCheck | None = None
    schema: SchemaCheck | None = None
    # `columns:` / `ignore:`: the output columns its row checks give and compare, in that order (None: all)
    columns: tuple[str, ...] | None = None
    tolerance: float | None = None  # relative, for float/double values in row checks (None: the default)
    # `on_spark: {SPEC: {...}}`: what this step checks instead on the Spark versions SPEC matches (the
    # first that matches, in file order); the step's own checks hold on every other version, and are
    # what the model of the semantics predicts
    variants: tuple[tuple[str, "ExpectStep"], ...] = ()
    written: WrittenCheck | None = None  # the row checks read what a job wrote, not the sink
    # `query: NAME`: the query of a job that starts several whose batches the checks look at (None: the
    # only one)
    query: str | None = None
    topic: TopicCheck | None = None  # `topic: T, records: [...]`: what a job's Kafka sink published
    updated: int | None = None  # numRowsUpdated summed over operators and the batches since the previous expect
    # numRowsUpdated / numRowsDroppedByWatermark summed over operators and the batches since the
    # previous expect that checked either (or an `operators` entry's), as Spark's StreamTest sums them
    updated_since_check: int | None = None
    dropped_since_check: int | None = None
    batch_watermark_us: int | None = None  # the watermark the last batch ran with (its batchWatermarkMs)
    batch_watermark_where: Where | None = None
    operators: tuple[OperatorCheck, ...] | None = None  # `operators: [...]`: one per stateful operator
    state: StateCheck | None = None  # `state: {...}`: what an operator keeps, read from the checkpoint
    # `watermarks: [...]`: the watermarks the operator forwarded since the previous expect, in order
    # (epoch microseconds; dataflow profile only)
    watermarks: tuple[int, ...] | None = None
    watermarks_where: Where | None = None
    # `statuses: [idle, active]`: the stream statuses the window operator emitted since the previous
    # expect, in order (dataflow profile only; seed 000 "Stream Status")
    statuses: tuple[str, ...] | None = None
    statuses_where: Where | None = None
    # where each of the step's own keys is written (`dropped`, `state_rows`, ...): a check's failure names
    # the line of its key, not only of the step
    key_places: tuple[tuple[str, Where], ...] = field(default=(), compare=False)
    kind = "expect"

    def at(self, key: str) -> Where:
        """Where the step's own `key:` is written; the step's place when it is not (a check built otherwise)."""
        return next((where for name, where in self.key_places if name == key), self.where)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    tags: tuple[str, ...]
    contract: Contract
    params: Params
    sources: Mapping[str, SourceDef]
    steps: tuple[Step, ...]
    path: str
    where: Where
    requires_spark: str | None = None
    requires_features: tuple[str, ...] = ()
    date: _dt.date = _dt.date(2024, 1, 1)
    timezone: str = "UTC"
    conf: Mapping[str, str] = field(default_factory=dict)
    clock_start_us: int = 0  # epoch microseconds
    trigger: Duration | None = None
    lines: tuple[str, ...] = ()  # the file's text, for showing a failing step
    # first line -> last line of each step in `lines`, when a step's end is known (a scenario built in
    # Python: the call's lines in the test file); else a step runs to the next step's first line
    spans: Mapping[int, int] = field(default_factory=dict)
    profile: str = "spark"  # the semantics its expectations state: "spark" or "dataflow"
    # `job: {args: [...], env: {...}}`: a job's command-line arguments (after its script) and environment
    job_args: tuple[str, ...] = ()
    job_env: Mapping[str, str] = field(default_factory=dict)
    job_where: Where | None = None
    # `static: {NAME: rows}`: each static input's rows when the query first starts (a static input the
    # contract declares and the scenario does not give is empty)
    statics: Mapping[str, tuple[tuple[Value, ...], ...]] = field(default_factory=dict)

    @property
    def output_columns(self) -> tuple[Column, ...]:
        return self.contract.output

    def query_conf(self) -> dict[str, str]:
        """Spark SQL settings for the query: the scenario's `conf` plus conf-backed parameters."""
        conf = dict(self.conf)
        for spec in self.contract.params:
            if spec.conf and spec.name in self.params:
                conf[spec.conf] = str(self.params[spec.name])
        return conf

    def step_text(self, step: Step, context: int = 0) -> list[tuple[int, str]]:
        """The lines of `step` in its file (numbered), for failure output."""
        start = step.where.line
        nxt = [s.where.line for s in self.steps if s.where.line > start]
        end = self.spans.get(start, min(nxt) - 1 if nxt else len(self.lines))
        while end > start and not self.lines[end - 1].strip():
            end -= 1
        return [(n, self.lines[n - 1]) for n in range(max(1, start - context), end + 1)
                if n - 1 < len(self.lines)]


def checks_since_check(step: ExpectStep) -> bool:
    """Whether an expect checks a count summed since the previous such check (`updated_since_check`,
    `dropped_since_check`, at the top or in an `operators` entry): judging it closes that span.

    The span is Spark's StreamTest's (`StateStoreMetricsTest.assertNumStateRows`): the progresses of
    the running query since the previous check, so a check after a start of the query sums the batches
    since that start only (a started query's `recentProgress` begins anew)."""
    return (step.updated_since_check is not None or step.dropped_since_check is not None
            or any(o.updated_since_check is not None or o.dropped_since_check is not None
                   for o in step.operators or ()))


def checked_query(step: ExpectStep) -> str | None:
    """The query an expect names: `query:`, else the path or table it reads (a query is known by it)."""
    written = step.written
    return step.query or (written.path or written.table if written is not None else None)


def checked_contract(contract: Contract, step: ExpectStep) -> Contract:
    """The contract an expect's rows are read with: the output its query declares (`query:`, or a
    `written:` path or `table:` a declared query is named after: `Contract.queries`), else the contract's own."""
    return contract.for_query(checked_query(step))


def for_spark_version(scenario: Scenario, spark_version: str) -> Scenario:
    """The scenario as it runs on `spark_version`: each expect step with `on_spark` variants replaced
    by the first variant whose version specifier matches (same place and index), else kept."""
    if not any(isinstance(s, ExpectStep) and s.variants for s in scenario.steps):
        return scenario
    from dataclasses import replace

    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    version = Version(spark_version.split("-")[0].split("+")[0])
    steps = []
    for step in scenario.steps:
        chosen = step
        if isinstance(step, ExpectStep):
            for spec, variant in step.variants:
                if version in SpecifierSet(spec):
                    chosen = replace(variant, where=step.where, variants=())
                    object.__setattr__(chosen, "_index", step.index)
                    object.__setattr__(chosen, "_spark_variant", spec)
                    break
        steps.append(chosen)
    return replace(scenario, steps=tuple(steps))
