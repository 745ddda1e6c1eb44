"""The one seam between a pipeline and a job for running a scenario: what builds the query (or queries)
at each start and knows them afterwards (`QueryBuild`, made of small Protocols), which the runner and its
step handler ask, never which kind it is. `PipelineBuild` calls a pipeline function on the sources'
DataFrames: one query. `jobbuild.JobBuild` calls a job as it ships, under the substitution: the queries
it starts. The runner chooses one once, from the prepared implementation.

A query's output is checked against the contract and put in its column order in one place
(`projection`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, MutableMapping, Protocol

from eventtime.harness.jobpaths import kept_path

from . import spec as m
from .contracts import Contract
from .topics import Topics
from .userpipeline import PipelineError, PipelineRaised, check_output
from .written import Written

__all__ = ["QueryBuild", "Queries", "Sinks", "RunPlace", "JobQuery", "Output", "PipelineBuild", "JobDatabase",
           "StreamRunMaker", "projection"]

# makes one query's run on the run's backend: (session, its build, its checkpoint folder) -> a QueryRun
StreamRunMaker = Callable[[Any, Callable[[], tuple[Any, ...]], Path], Any]


@dataclass(frozen=True)
class Output:
    """What a pipeline may return instead of a bare DataFrame, to choose its own output mode."""

    df: Any
    output_mode: str | None = None


@dataclass
class JobQuery:
    """One query of a job, as the kit knows it at its latest start."""

    name: str
    writer: Any = None
    sink: Any = None  # its BatchFunctionSink, when the job's sink is a batch function, table or folder
    schema: list[tuple[str, str, bool]] | None = None
    output_mode: str = "append"
    declared: bool = False  # its rows are checked and read in the columns the contract declares for it
    anew: bool = False  # no checkpoint location: each start begins anew, on a new checkpoint (`jobs.checkpoint_anew`)
    reads: Mapping[str, Any] = field(default_factory=dict)  # source name -> the job's ReaderCall of it


class Queries(Protocol):
    """The queries the build makes, and what the latest one built is."""

    output_mode: str  # of the query built last
    schema: list[tuple[str, str, bool]] | None  # its output's (name, type, nullable), as built

    @property
    def queries(self) -> Mapping[str, JobQuery]:
        """A job's queries by name, in the order it starts them (empty for a pipeline's one query)."""
        ...

    def new_run(self, spark: Any, stream_run: StreamRunMaker) -> Any:
        """The run of the build's queries (`backend.QueryRun`'s methods): one query's, or a job's as one
        `jobrun.QueryGroup` on one clock."""
        ...

    def contract_of(self, name: str) -> Contract | None:
        """The contract as query `name` must keep it (None: the contract promises nothing of its output)."""
        ...


class Sinks(Protocol):
    """Where the queries' rows go besides the kit's memory sink: a job's batch functions and topics."""

    @property
    def topics(self) -> Topics | None:
        """What a job's Kafka sinks published, across its restarts (None: a pipeline publishes nothing)."""
        ...

    def sink_of(self, query: str | None) -> Any:
        """The BatchFunctionSink of the query that failed, if it has one."""
        ...

    def writer_of(self, query: str | None) -> Any:
        """The job's writer of that query, as it wrote it (None: a pipeline's)."""
        ...

    def sinks(self) -> list[Any]:
        """Every BatchFunctionSink of the latest starts."""
        ...


class RunPlace(Protocol):
    """What the build keeps to the scenario's run: its folder, its database, its static inputs, its settings."""

    impl_name: str  # the implementation building the query now (a run across a change hands over at the restart)
    call: Callable[..., Any]
    sources: MutableMapping[str, Any]  # the run's sources, as the build and the driver share them
    workdir: str
    written: Written  # what the queries wrote, read back
    notes: list[str]  # what the build says of the implementation's code, for the result
    run_conf: Mapping[str, str]  # the SQL settings of the run's queries: a job's own do not replace them
    timeout: float | None  # how long the implementation may take to build its query

    def enter(self, spark: Any) -> JobDatabase | None:
        """Make the scenario's own database current where the run keeps tables (a job's, or the contract's
        static tables); that database, or None."""
        ...

    def leave(self, drop: bool = True) -> None:
        """The database current before `enter` made current again; the scenario's dropped when `drop`."""
        ...

    def statics(self, spark: Any) -> dict[str, tuple[Any, Any]]:
        """The contract's static inputs, each with the rows the scenario gives it at the first start."""
        ...

    def restore_sessions(self) -> None:
        """The settings the implementation changed in its sessions, as they were before it ran."""
        ...


class QueryBuild(Queries, Sinks, RunPlace, Protocol):
    """Builds the scenario's query at each start and knows it afterwards: a pipeline's or a job's."""


class JobDatabase:
    """A job's tables kept to its scenario: for the run, the session's current database is one of the
    scenario's own, stored in its temporary folder, so `saveAsTable("t")` and `spark.table("t")` name a
    table no other scenario sees; dropped afterwards, the previous current database restored."""

    def __init__(self, spark: Any, workdir: str):
        import uuid

        self.spark, self.name = spark, f"eventtime_{uuid.uuid4().hex[:12]}"
        self.location = str(Path(workdir) / "warehouse")
        self.previous: str | None = None

    def enter(self) -> None:
        self.previous = self.spark.catalog.currentDatabase()
        self.spark.sql(f"CREATE DATABASE `{self.name}` LOCATION '{Path(self.location).as_uri()}'")
        self.spark.catalog.setCurrentDatabase(self.name)

    def follow(self, spark: Any) -> None:
        """A new session of the run (`restart: {session: new}`) works in the scenario's database too."""
        spark.catalog.setCurrentDatabase(self.name)

    def leave(self, drop: bool = True) -> None:
        try:
            if self.previous is not None:
                self.spark.catalog.setCurrentDatabase(self.previous)
            if drop:
                self.spark.sql(f"DROP DATABASE IF EXISTS `{self.name}` CASCADE")
        except Exception:  # noqa: BLE001 - a dead driver keeps nothing; the folder goes with the workdir
            pass


def projection(schema: list[tuple[str, str, bool]], contract: Contract) -> Callable[[Any], Any]:
    """How a query's frame is put in `contract`'s output columns, once its output (`schema`) is checked
    against them (OutputMismatch: a failed verdict); by position, so that an output with two columns of
    one name stays readable."""
    fields = [(name, type_name) for name, type_name, _ in schema]
    positions = check_output(fields, contract)
    names = contract.output_names

    def project(frame: Any) -> Any:
        positional = frame.toDF(*[f"_{i}" for i in range(len(fields))])
        return positional.select(*[f"_{i}" for i in positions]).toDF(*names)
    return project


def static_inputs(spark: Any, scenario: m.Scenario, workdir: str) -> dict[str, tuple[Any, Any]]:
    """The contract's static inputs, each with the rows the scenario gives it at the first start: a table in the
    scenario's own database, a folder at its path as the job names it, kept in the run folder `workdir`."""
    from eventtime.harness.statics import StaticInput

    out: dict[str, tuple[Any, Any]] = {}
    for spec in scenario.contract.statics:
        static = StaticInput(spark, spec.name, [(c.name, c.ctype.ddl) for c in spec.columns], table=spec.table,
                             path=kept_path(spec.path, workdir) if spec.path is not None else None,
                             format=spec.format, options=dict(spec.options))
        out[spec.name] = (static, scenario.statics.get(spec.name, ()))
    return out


class _RunPlace:
    """What both builds keep to the run in the same way (`RunPlace`)."""

    def __init__(self, scenario: m.Scenario, call: Callable[..., Any], sources: MutableMapping[str, Any], impl_name: str,
                 workdir: str, writers: Callable[[], Any], *, keeps_tables: bool):
        self.scenario, self.call, self.sources, self.impl_name = scenario, call, sources, impl_name
        self.workdir, self.keeps_tables = workdir, keeps_tables
        self.written = Written(scenario, workdir, writers)
        self.notes: list[str] = []
        self.run_conf: Mapping[str, str] = {}
        self.timeout: float | None = None
        self.session_before: dict[Any, dict[str, str | None]] = {}  # per session: the settings a job changed
        self.database: JobDatabase | None = None

    def enter(self, spark: Any) -> JobDatabase | None:
        if self.keeps_tables:
            self.database = JobDatabase(spark, self.workdir)
            self.database.enter()
        return self.database

    def leave(self, drop: bool = True) -> None:
        if self.database is not None:
            self.database.leave(drop=drop)

    def statics(self, spark: Any) -> dict[str, tuple[Any, Any]]:
        return static_inputs(spark, self.scenario, self.workdir)

    def restore_sessions(self) -> None:
        if self.session_before:
            from eventtime.harness.jobsession import restore_session

            for session, before in self.session_before.items():
                restore_session(session, before)


class PipelineBuild(_RunPlace):
    """Builds the query at each start: the pipeline called on the sources' DataFrames, its output
    checked against the contract and put in the contract's column order; remembers the output mode."""

    topics = None  # a pipeline publishes to no topic

    def __init__(self, scenario: m.Scenario, call: Callable[..., Any], sources: MutableMapping[str, Any], impl_name: str,
                 *, workdir: str):
        # the scenario's own database only to hold the contract's static tables
        super().__init__(scenario, call, sources, impl_name, workdir, lambda: (),
                         keeps_tables=bool(scenario.contract.statics))
        self.default_mode = scenario.params.get("output_mode", "append")
        self.output_mode = self.default_mode
        self.schema: list[tuple[str, str, bool]] | None = None  # the pipeline's output as last built

    @property
    def queries(self) -> Mapping[str, JobQuery]:
        return {}

    def new_run(self, spark: Any, stream_run: StreamRunMaker) -> Any:
        return stream_run(spark, self, Path(self.workdir) / "checkpoint")

    def contract_of(self, name: str) -> Contract | None:
        return self.scenario.contract

    def sink_of(self, query: str | None) -> Any:
        return None  # the kit's memory sink observes a pipeline's query

    def writer_of(self, query: str | None) -> Any:
        return None

    def sinks(self) -> list[Any]:
        return []

    def __call__(self) -> tuple[Any, ...]:
        from .jobs import _Bound, _bounded, _Overran, _OverranStill

        frames = {name: src.dataframe() for name, src in self.sources.items()}
        bound = _Bound()
        try:
            with _bounded(self.timeout) as bound:  # the wait for the user's DataFrame, bounded as every wait is
                value = self.call(frames, self.scenario.params)
        except (Exception, _OverranStill) as exc:  # noqa: BLE001 - the user's code raised: its frames, not ours
            if isinstance(exc, (_Overran, _OverranStill)) or bound.overran:
                raise PipelineError(self._overran(exc)) from None
            raise PipelineRaised(self.impl_name, exc) from exc
        df, mode = ((value.df, value.output_mode or self.default_mode) if isinstance(value, Output)
                    else (value, self.default_mode))
        if not hasattr(df, "isStreaming") or not df.isStreaming:
            raise PipelineError(f"pipeline {self.impl_name} returned {type(df).__name__}, not a streaming DataFrame")
        self.schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
        project = projection(self.schema, self.scenario.contract)  # OutputMismatch: a failed verdict
        self.output_mode = mode
        return project(df), mode

    def _overran(self, exc: BaseException) -> str:
        """What a pipeline stopped at the run's bound is told: its function, where it is defined and the
        line it had reached."""
        from .jobs import _exit_place

        at = _exit_place(exc)
        entry = _user_entry(exc)
        function = f" {entry[0]} ({entry[1]})" if entry is not None else ""
        return (f"pipeline {self.impl_name}: its function{function} did not return the query's DataFrame within "
                f"{self.timeout:g}s (the run's timeout: --timeout, in pytest --eventtime-timeout) and was stopped"
                + (f" at {at}" if at is not None else "") + ": the kit waits for a pipeline to build its query "
                "and return it, and a loop waiting for something under test (a file, a table, a flag) never ends "
                "(docs/reliability.md, *No hangs*)")


def _user_entry(exc: BaseException) -> tuple[str, str] | None:
    """The user's function the kit called that `exc` unwound, and `file:line` of its definition: the
    outermost frame of the traceback that is the user's code (`jobs.users_code`)."""
    import traceback

    from eventtime.harness.jobio import shown_file

    from .jobs import users_code

    for frame, _ in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if users_code(code.co_filename):
            return code.co_qualname, f"{shown_file(code.co_filename)}:{code.co_firstlineno}"
    return None

