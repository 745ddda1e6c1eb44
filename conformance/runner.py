"""Runs a scenario against a pipeline on the harness and produces a `ScenarioResult`."""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from eventtime.harness.driver import QueryDriver
from eventtime.harness.jobpaths import (FILES, PathOutside, forget_paths, kept_path, named_paths, written_paths,
                                       written_with)
from eventtime.harness.readback import ReadBackMismatch, cross_check, read_folder
from eventtime.harness.waits import DEFAULT_TIMEOUT

from . import spec as m
from .contracts import Contract
from .faults import Fault, classify_failure, classify_os_error
from .drive import drive
from .judge import Observed, judge_expect
from .results import (DRIVER_DIED, ERROR, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, CheckFailure, FailureInfo,
                      ScenarioResult, StepResult, conclude)
from .userpipeline import (OutputMismatch, Pipeline, PipelineError, PipelineRaised, SignatureError, check_output,
                           implementation_info, is_job, pipeline_caller, resolve_pipeline)

__all__ = ["Output", "run_scenario", "applicability", "connect_applicability", "DEFAULT_TIMEOUT"]



@dataclass(frozen=True)
class Output:
    """What a pipeline may return instead of a bare DataFrame, to choose its own output mode."""

    df: Any
    output_mode: str | None = None


def applicability(scenario: m.Scenario, spark_version: str, features: frozenset[str], *,
                  connect: bool = False) -> str | None:
    """Why the scenario does not apply to this Spark (None when it does). `connect`: the features are
    a Spark Connect client's, which can lack what the same Spark offers a classic session (the reason
    says so)."""
    only = m.model_only(scenario)
    if only:
        return only
    if scenario.requires_spark:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        version = Version(spark_version.split("-")[0].split("+")[0])
        if version not in SpecifierSet(scenario.requires_spark):
            return f"needs Spark {scenario.requires_spark}, this is {spark_version}"
    missing = [f for f in dict.fromkeys(scenario.requires_features + scenario.contract.requires)
               if f not in features]
    if missing:
        return (f"needs Spark feature(s) {', '.join(missing)}, not available in Spark {spark_version}"
                + (f" {OVER_CONNECT}" if connect else ""))
    return None


# -- Spark Connect (a session with no JVM in this process; see docs/connect.md) -------------------------
NO_CLOCK = "needs the manual processing-time clock, which Spark Connect does not offer"
OVER_CONNECT = "over Spark Connect"  # ends the reason of a feature the Connect client lacks


def connect_applicability(scenario: m.Scenario) -> str | None:
    """Why the scenario cannot run over Spark Connect (None when it can): the harness drives no clock
    there (no `advance`, no processing-time trigger, no `current_timestamp()` to pin) and cannot start
    the query in a second session."""
    if any(isinstance(step, m.AdvanceStep) for step in scenario.steps):
        return f"{NO_CLOCK} (it advances processing time)"
    if scenario.trigger is not None:
        return f"{NO_CLOCK} (it uses a processing-time trigger)"
    if "processing-time" in scenario.tags:
        return f"{NO_CLOCK} (it observes processing time)"
    if any(isinstance(step, m.StartStep) and step.rerun_last_batch for step in scenario.steps):
        return "re-runs a batch after a crash, which needs the checkpoint on this machine (rerun_last_batch)"
    if any(isinstance(step, m.StartStep) and step.new_session for step in scenario.steps):
        return "starts the query in a new session, which the Spark Connect harness does not do"
    return None


def _failure_from(exc: BaseException, compat: Any, step_index: int) -> FailureInfo:
    from eventtime.harness.stream import QueryFailed

    if isinstance(exc, QueryFailed):
        classes = [c for _, c, _ in exc.chain if c]
        names = [n for n, _, _ in exc.chain]
        text = "\n".join(msg for _, _, msg in exc.chain)
        return FailureInfo(str(exc), classes, names, text, step_index)
    names = [type(exc).__module__ + "." + type(exc).__name__]
    classes = []
    err = compat.error_class(exc) if compat is not None else None
    if err:
        classes.append(err)
    java = getattr(exc, "java_exception", None)
    if java is not None and compat is not None:
        chain = compat.java_error_classes(java)
        names += [n for n, _, _ in chain]
        classes += [c for _, c, _ in chain if c and c not in classes]
    text = str(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return FailureInfo(f"{type(exc).__name__}: {first}", classes, names, text, step_index)


def _fault_of(chain: Any, spark: Any, checkpoint: str) -> Fault | None:
    """The fault of the run's surroundings behind a failed query (`eventtime.faults`), if any."""
    from eventtime.harness.session import callback_server_stopped

    return classify_failure(chain, checkpoint=checkpoint, tempdir=tempfile.gettempdir(),
                            device_full=_device_full(checkpoint), callback_stopped=callback_server_stopped(spark),
                            load=_load())


def _load() -> tuple[float, int] | None:
    """This machine's load average over the last minute and its cores (None where the system has none)."""
    try:
        return os.getloadavg()[0], os.cpu_count() or 1
    except OSError:
        return None


def _device_full(path: str) -> bool:
    """Whether the file system holding `path` (or its nearest existing parent) has no free block or file."""
    while path and not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        stat = os.statvfs(path)
    except OSError:
        return False
    return stat.f_bavail == 0 or (stat.f_files > 0 and stat.f_favail == 0)


def run_scenario(scenario: m.Scenario, pipeline: Pipeline | str | None = None, *, session: Any = None,
                 timeout: float = DEFAULT_TIMEOUT, implementation: str | None = None,
                 rerun: str | None = None, conf: Mapping[str, str] | None = None,
                 previous: Pipeline | str | None = None, previous_name: str | None = None,
                 line: Any = None) -> ScenarioResult:
    """Run `scenario` against `pipeline` (default: the contract's reference implementation).

    `previous`: the previous version of the implementation, which runs the steps before the scenario's
    first `start`/`restart`; from that step on the query is built with `pipeline`, from the same
    checkpoint (`previous_name`: how the result names it). The result's `upgrade` says whether the new version restarts, differs or cannot restart
    (`eventtime.upgrade`); a scenario without such a step is not applicable.

    Returns a ScenarioResult with a verdict per step; never raises for a failing or broken
    pipeline (those become `failed` / `error` verdicts). `conf` adds Spark SQL settings for the
    query (e.g. from `--spark-conf`); the scenario's own `conf` wins over it.

    When the Spark driver JVM dies under the scenario, the result is an `error` whose `cause` is
    DRIVER_DIED and whose reason is one message (what died, in which step, what is known of why,
    what to try); the session is dead from then on (`eventtime.harness.session.fresh_session`).
    A fault of the run's surroundings (an unwritable checkpoint, a full temporary directory, py4j's
    callback server gone; `eventtime.faults`) is an `error` with that cause and the step saying it;
    a stopped callback server is started again before the next scenario.

    `line`: a run across Spark lines (`eventtime.crossline`): the run folder the two sides share, the
    steps before the restart taken from the earlier side, the outcome.
    """
    from eventtime.harness.session import driver_death, get_session

    started = time.monotonic()
    ref = pipeline if isinstance(pipeline, str) else None
    impl_name = implementation or ref or (getattr(pipeline, "__module__", "") + ":" + getattr(
        pipeline, "__qualname__", "") if pipeline is not None else scenario.contract.reference)
    spark = session or get_session()
    died: list[Any] = []  # (DriverDeath, step) once the driver JVM is found dead
    try:
        return _run_scenario(scenario, pipeline, spark, impl_name, started, timeout, rerun, conf, died,
                             (previous, previous_name), line)
    except Exception as exc:
        # outside a step (the sources, the runtime info): a dead driver is said as such, anything
        # else is the kit's own bug and keeps its traceback
        death = driver_death(spark, after=exc)
        if death is None:
            raise
        result = ScenarioResult(scenario, impl_name, ERROR, rerun=rerun)
        result.cause = DRIVER_DIED
        step = died[0][1] if died else None
        result.reason = death.message(f"during step {step.index} ({step.kind}) of scenario {scenario.name} "
                                      f"[{impl_name}]" if step else
                                      f"before scenario {scenario.name} [{impl_name}] started its query")
        result.seconds = time.monotonic() - started
        return result


def _run_scenario(scenario: m.Scenario, pipeline: Pipeline | str | None, spark: Any, impl_name: str,
                  started: float, timeout: float, rerun: str | None, conf: Mapping[str, str] | None,
                  died: list[Any], previous: tuple[Pipeline | str | None, str | None] = (None, None),
                  line: Any = None) -> ScenarioResult:
    from eventtime.harness.backend import backend_for
    from eventtime.harness.compat import compat_for

    compat, backend = compat_for(spark), backend_for(spark)
    scenario = m.for_spark_version(scenario, spark.version)  # `on_spark` expectations of this version
    result = ScenarioResult(scenario, impl_name, PASSED, spark_version=spark.version, rerun=rerun,
                            runtime=backend.runtime())
    prepared = _prepare(result, pipeline, compat)
    if prepared is None:
        return result
    call, info, job = prepared
    refused = line.refuses(job, compat) if line is not None else None
    if refused:
        result.status, result.reason = NOT_APPLICABLE, refused
        return result
    unjudged = frozenset(info.unjudged)
    change = None
    if previous[0] is not None:
        change = _previous_version(result, previous[0], previous[1], compat, job)
        if change is None:
            return result
        unjudged |= change.unjudged
    if unjudged:
        result.notes.append(f"not judged on {', '.join(sorted(unjudged))}: {info.note}")

    mended = backend.prepare()
    if mended:
        result.notes.append(mended)
    try:
        workdir = line.workdir if line is not None else tempfile.mkdtemp(prefix="eventtime-")
    except OSError as exc:  # a temporary directory that takes no new files: the run's, not the pipeline's
        fault = classify_os_error(exc, directory=tempfile.gettempdir())
        if fault is None:
            raise
        result.status, result.cause, result.reason = ERROR, fault.cause, fault.reason
        return result
    sources: dict[str, Any] = {name: backend.source(name, [(c.name, c.ctype.ddl) for c in src.columns])
                               for name, src in scenario.sources.items()}
    if job:
        from eventtime.harness.jobrun import SourceCopies

        sources = {name: SourceCopies(src) for name, src in sources.items()}
    first_call, first_name = (change.call, change.name) if change is not None else (call, impl_name)
    build = (_JobBuild(scenario, first_call, sources, first_name, workdir=workdir) if job
             else _Build(scenario, first_call, sources, first_name, workdir=workdir))
    run = _new_run(scenario, spark, build, backend, workdir, timeout)
    query_conf = {**dict(conf or {}), **info.conf, **scenario.query_conf(), **build.path_conf()}
    build.run_conf, build.timeout = query_conf, timeout
    steps = _SparkSteps(scenario, result, run, compat, first_name, unjudged, build, died)
    if change is not None:
        def take_over() -> None:  # the current version builds the query from this start on
            build.call, build.impl_name, steps.impl_name = call, impl_name, impl_name
        steps.switch = (change.restart.index, take_over)
    database = _JobDatabase(spark, workdir) if job or scenario.contract.statics else None
    try:
        if database is not None:
            database.enter()
            if line is not None:
                line.entered(database)
        driver: Any = QueryDriver(run, sources, _statics(scenario, spark, workdir),
                                  on_new_session=database.follow if database is not None else None)
        handler: Any = steps
        if line is not None:
            driver, handler = line.around(driver, steps, run)
        drive(scenario, driver, query_conf, handler)
        if line is None or not line.keep:  # the earlier side of a run across lines runs only part of it
            steps.settle_written()  # before the paths the job named are forgotten
    except BaseException:
        # Ctrl-C, SIGTERM or a bug on the way out: stop the query, but an error while stopping
        # (py4j's connection cut by the interrupt) must not replace what is unwinding
        try:
            run.close()
        except Exception:  # noqa: BLE001
            pass
        raise
    else:
        run.close()
    finally:
        if database is not None:  # the earlier side of a run across Spark lines leaves its tables to the other
            database.leave(drop=line is None or not line.keep)
        if build.session_before:
            from eventtime.harness.jobsession import restore_session

            for session, before in build.session_before.items():
                restore_session(session, before)
        if line is None or not line.keep:  # the earlier side of a run across Spark lines leaves it to the other
            shutil.rmtree(workdir, ignore_errors=True)
        forget_paths(workdir)
    result.notes.extend(build.notes)
    _conclude(result, steps, died)
    if line is not None:
        line.finish(result, steps)
    if change is not None:
        from .upgrade import upgrade_verdict

        upgrade_verdict(result, change.name, change.restart, steps.failure, steps.failure_consumed)
    result.seconds = time.monotonic() - started
    return result


def _statics(scenario: m.Scenario, spark: Any, workdir: str) -> dict[str, tuple[Any, Any]]:
    """The contract's static inputs, each with the rows the scenario gives it at the first start: a table
    in the scenario's own database, a folder at its path as the job names it, kept in the run folder."""
    from eventtime.harness.statics import StaticInput

    out: dict[str, tuple[Any, Any]] = {}
    for spec in scenario.contract.statics:
        static = StaticInput(spark, spec.name, [(c.name, c.ctype.ddl) for c in spec.columns], table=spec.table,
                             path=kept_path(spec.path, workdir) if spec.path is not None else None,
                             format=spec.format, options=dict(spec.options))
        out[spec.name] = (static, scenario.statics.get(spec.name, ()))
    return out


class _JobDatabase:
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


def _prepare(result: ScenarioResult, pipeline: Pipeline | str | None, compat: Any
             ) -> tuple[Callable[..., Any], Any, bool] | None:
    """The pipeline's caller and its implementation info; None when the scenario does not run here
    (the result then says why: not applicable, or an error in the pipeline's binding)."""
    scenario = result.scenario
    reason = applicability(scenario, result.spark_version or "", compat.features, connect=compat.connect) or (
        connect_applicability(scenario) if compat.connect else None)
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return None
    if pipeline is None and not scenario.contract.reference:
        result.status = ERROR
        result.reason = (f"no pipeline is bound to contract {scenario.contract.name!r}: pass one (--pipeline "
                         f"MODULE:FUNCTION, run_scenario(scenario, fn)), or bind it in pytest (ini eventtime_pipelines "
                         f"'{scenario.contract.name} = MODULE:FUNCTION', --eventtime-pipeline, or bind() in conftest.py)")
        return None
    try:
        fn = resolve_pipeline(pipeline or scenario.contract.reference) if pipeline is None or isinstance(
            pipeline, str) else pipeline
    except PipelineError as exc:
        result.status, result.reason = ERROR, str(exc)
        return None
    info = implementation_info(fn)
    if is_job(fn, scenario.contract):
        if compat.connect:
            result.status = NOT_APPLICABLE
            result.reason = ("a job's own readers and writers are substituted in classic PySpark only, not over "
                             "Spark Connect (docs/jobs.md)")
            return None
        from .jobs import job_entry

        return job_entry(fn), info, True
    if scenario.job_args or scenario.job_env:
        result.status = ERROR
        result.reason = (f"{scenario.job_where}: `job:` gives a job's arguments and environment, but pipeline "
                         f"{result.implementation} is not a job (docs/jobs.md, *Entry points*)")
        return None
    try:
        call = pipeline_caller(fn, scenario.contract)
    except SignatureError as exc:
        result.status, result.reason = ERROR, str(exc)
        return None
    reason = info.not_applicable(scenario.params, compat.features)
    if reason and compat.connect and any(f not in compat.features for f in info.requires):
        reason += f", not available {OVER_CONNECT}"
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return None
    return call, info, False


@dataclass
class _Previous:
    """The previous version of a run across a change: its caller and name, the step where it hands over."""

    call: Callable[..., Any]
    name: str
    restart: m.StartStep
    unjudged: frozenset[str]


def _previous_version(result: ScenarioResult, previous: Pipeline | str, name: str | None, compat: Any, job: bool
                      ) -> _Previous | None:
    """The previous version, prepared as the current one is; None when the run across the change cannot
    happen (the result says why: no restart step, the previous version's binding, a job against a pipeline)."""
    from .upgrade import NO_RESTART, restart_step

    restart = restart_step(result.scenario)
    if restart is None:
        result.status, result.reason = NOT_APPLICABLE, f"a run across a change {NO_RESTART}"
        return None
    name = name or (previous if isinstance(previous, str) else (
        getattr(previous, "__module__", "") + ":" + getattr(previous, "__qualname__", "")))
    current = result.implementation
    result.implementation = name  # errors in preparing it name the previous version
    prepared = _prepare(result, previous, compat)
    result.implementation = current
    if prepared is None:
        result.reason = f"the previous version {name}: {result.reason}"
        return None
    call, info, previous_job = prepared
    if previous_job != job:
        result.status = ERROR
        result.reason = (f"the previous version {name} is {'a job' if previous_job else 'a pipeline'} and the current "
                         f"{current} is {'a job' if job else 'a pipeline'}: both must be of one kind")
        return None
    return _Previous(call, name, restart, frozenset(info.unjudged))


class _Build:
    """Builds the query at each start: the pipeline called on the sources' DataFrames, its output
    checked against the contract and put in the contract's column order; remembers the output mode."""

    def __init__(self, scenario: m.Scenario, call: Callable[..., Any], sources: Mapping[str, Any], impl_name: str,
                 *, job: bool = False, workdir: str = ""):
        self.scenario, self.call, self.sources, self.impl_name = scenario, call, sources, impl_name
        self.default_mode = scenario.params.get("output_mode", "append")
        self.output_mode = self.default_mode
        self.job, self.workdir = job, workdir
        self.writer: Any = None  # a job's writer, as it wrote it
        self.notes: list[str] = []  # what the job's substitution says of its code, for the result
        self.sink: Any = None  # the BatchFunctionSink of a job's batch function, at the latest start
        self.run_conf: Mapping[str, str] = {}  # the SQL settings of the run's queries: a job's own do not replace them
        self.timeout: float | None = None  # how long a job's entry point may run while it builds its queries
        self.session_before: dict[Any, dict[str, str | None]] = {}  # per session: the settings a job changed
        self.schema: list[tuple[str, str, bool]] | None = None  # the pipeline's output as last built
        self.unwritten: list[tuple[m.WrittenCheck, str]] = []  # `written:` checks of a path not named so far

    def sink_of(self, query: str | None) -> Any:
        """The BatchFunctionSink of the query that failed (a pipeline has one query)."""
        return self.sink

    def writer_of(self, query: str | None) -> Any:
        return self.writer

    def path_conf(self) -> dict[str, str]:
        """The Spark settings of the contract's `kind: path` parameters: a folder of this run's own each."""
        return {p.conf: self.path(p.name) for p in self.scenario.contract.params if p.kind == "path" and p.conf}

    def path(self, param: str) -> str:
        return str(Path(self.workdir) / "paths" / param)

    def written_folder(self, name: str) -> str:
        """The folder `expect: {written: NAME}` reads: a `kind: path` parameter's, else the path NAME as
        the job writes it, kept to this run as the job's own paths are (`jobpaths.kept_path`)."""
        spec = self.scenario.contract.param(name)
        return (self.path(name) if spec is not None and spec.kind == "path"
                else kept_path(name, self.workdir, record=False))

    def _unnamed(self, check: m.WrittenCheck, folder: str) -> None:
        """Remember a `written: PATH` that read as no rows while the job had named no such path so far:
        at the end of the run it is an error if the job never named it (`unwritten`), since a misspelt path
        would otherwise pass `rows: []`."""
        if self.scenario.contract.param(str(check.path)) is not None:
            return
        if not self._names(folder):
            self.unwritten.append((check, folder))

    def _names(self, folder: str) -> bool:
        """Whether the job has named `folder`, a folder inside it or one that holds it (to write or read)."""
        named = named_paths(self.workdir)
        return any(n == folder or n.startswith(folder + os.sep) or folder.startswith(n + os.sep) for n in named)

    def unwritten_error(self, check: m.WrittenCheck, folder: str) -> str | None:
        """At the end of the run: why `written: PATH` names a path no query of the job wrote or named in the
        whole run, naming the paths it does write (None when it did name it, or wrote something there)."""
        if self._names(folder) or not nothing_written(folder):
            return None
        files = os.path.join(self.workdir, FILES)
        names = sorted(os.path.relpath(n, files) if n.startswith(files + os.sep) else n
                       for n in written_paths(self.workdir))
        writes = ("it writes " + ", ".join(names)) if names else "it writes no path (its sinks are tables, topics " \
            "or a batch function that writes none)"
        return (f"{check.where}: `written: {check.path}` names a path no query of the job writes ({writes}): is it "
                "spelt as the job writes it? A check of a path nothing writes would pass `rows: []` whatever the job "
                "did (docs/jobs.md, *Where the job writes*)")

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
        fields = [(name, type_name) for name, type_name, _ in self.schema]
        positions = check_output(fields, self.scenario.contract)  # OutputMismatch: a failed verdict
        self.output_mode = mode
        # by position, so that an output with two columns of one name stays readable
        positional = df.toDF(*[f"_{i}" for i in range(len(fields))])
        return positional.select(*[f"_{i}" for i in positions]).toDF(*self.scenario.contract.output_names), mode

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

    def format_written(self, folder: str) -> str:
        """The format the job writes `folder` in (`written:` without `format:`): its file sink's or batch
        write's, else parquet."""
        how = written_with(self.workdir, folder)
        if how is not None:
            return how.format
        for query in getattr(self, "queries", {}).values():
            writer = query.writer
            if writer is not None and writer.path and writer.table is None:
                try:
                    if kept_path(writer.path, self.workdir, record=False) == folder:
                        return writer.format or "parquet"
                except PathOutside:
                    continue
        return "parquet"

    def written_rows(self, spark: Any, check: m.WrittenCheck, contract: Contract) -> list[tuple]:
        """The rows a job left in a table or a path parameter's folder, as rows of `contract`'s output
        columns (by name; a column the table lacks is None), only those with `check.filter`'s values."""
        from eventtime.harness.stream import read_rows

        what = f"table {check.table!r}" if check.table is not None else f"the folder of {check.path!r}"
        if check.table is not None:
            spark.catalog.refreshTable(check.table)  # the job wrote it from the query's session: no stale listing
            frame = spark.table(check.table)
        else:
            folder = self.written_folder(str(check.path))
            if nothing_written(folder):
                self._unnamed(check, folder)
                return []
            fmt = check.format or self.format_written(folder)
            how = written_with(self.workdir, folder)
            frame = read_folder(spark, folder, fmt, how, [(c.name, c.ctype.ddl) for c in contract.output])
            if how is not None and how.format == fmt:
                cross_check(frame, how, str(check.path))  # ReadBackMismatch: the kit's error, not a verdict
        names = list(contract.output_names)
        present = [n for n in names if n in frame.columns]
        wanted = [n for n, _ in check.filter if n not in present]
        if wanted:
            raise PipelineError(f"{what} has no column {', '.join(map(repr, wanted))} to filter on "
                                f"(it has {', '.join(frame.columns)})")
        types = {c.name: c.ctype for c in contract.output}
        if check.table is None:  # in the output's types (a partition column as written, a CSV's text)
            frame = frame.selectExpr(*[f"CAST(`{c}` AS {types[c].ddl}) AS `{c}`" for c in present])
        rows = [dict(zip(present, r)) for r in read_rows(frame.select(*[f"`{c}`" for c in present]))]
        rows = [r for r in rows if all(types[n].equal(types[n].canonical(r[n]), v) for n, v in check.filter)]
        return [tuple(r.get(n) for n in names) for r in rows]


@dataclass
class _Query:
    """One query of a job, as the kit knows it at its latest start."""

    name: str
    writer: Any = None
    sink: Any = None  # its BatchFunctionSink, when the job's sink is a batch function, table or folder
    schema: list[tuple[str, str, bool]] | None = None
    output_mode: str = "append"
    declared: bool = False  # its rows are checked and read in the columns the contract declares for it
    anew: bool = False  # no checkpoint location: each start begins anew, on a new checkpoint (`jobs.checkpoint_anew`)
    reads: Mapping[str, Any] = field(default_factory=dict)  # source name -> the job's ReaderCall of it


class _JobBuild(_Build):
    """A job's queries, built at each start: the job called under the substitution on sources of the
    query's own (`jobrun.SourceCopies`: a MemoryStream has one reader), its `index`-th query taken. A
    query's output is checked against what the contract declares for it (`queries: {NAME: ...}`, or
    `output` for a job of one query) and put in those columns; an undeclared query's rows stay as its
    sink gets them (checked through what it wrote)."""

    def __init__(self, scenario: m.Scenario, call: Callable[..., Any], sources: Mapping[str, Any], impl_name: str,
                 *, workdir: str):
        super().__init__(scenario, call, sources, impl_name, job=True, workdir=workdir)
        from .jobs import JobTopics
        from .topics import Topics

        self.queries: dict[str, _Query] = {}
        self.topics = Topics()  # what the job's Kafka sinks published, across its restarts
        self.clock: Any = None  # the QueryGroup, whose clock stamps a published record
        self.output = JobTopics(self.topics, lambda: self.clock.now_ms if self.clock is not None else None,
                                self._topic_reader)
        self._index = 0  # the query being built
        self._first: list[Any] | None = None  # what discovering the queries built, for query 0
        self.reads_own = False  # a query reads a folder or table another query of the job writes

    def sink_of(self, query: str | None) -> Any:
        found = self.queries.get(query) if query is not None else (
            next(iter(self.queries.values())) if len(self.queries) == 1 else None)
        return found.sink if found is not None else None

    def writer_of(self, query: str | None) -> Any:
        found = self.queries.get(query) if query is not None else (
            next(iter(self.queries.values())) if len(self.queries) == 1 else None)
        return found.writer if found is not None else None

    def contract_of(self, name: str) -> Contract | None:
        """The contract as query `name` must keep it (None: the contract promises nothing of its output)."""
        contract = self.scenario.contract
        if contract.query(name) is not None:
            return contract.for_query(name)
        return contract if len(self.queries) == 1 and contract.output else None

    def _call(self, index: int) -> list[Any]:
        """The job called as it ships (`jobs.run_job`: its entry point, arguments, environment and own
        session), its readers given query `index`'s copies of the sources."""
        from eventtime.harness.jobsession import SessionBefore

        from .jobs import JobEntry, SubstitutionError, run_job

        frames = {name: src.copy(index).dataframe() for name, src in self.sources.items()
                  if name in self.scenario.sources}
        spark = next(iter(self.sources.values())).spark
        self._index = index
        assert isinstance(self.call, JobEntry)
        try:
            outs = run_job(self.call, spark, frames, self.scenario.contract, self.impl_name, self.workdir,
                           scenario_conf=self.run_conf, args=self.scenario.job_args, env=self.scenario.job_env,
                           before=self.session_before.setdefault(spark, SessionBefore()), output=self.output,
                           timeout=self.timeout)
        except SubstitutionError as exc:
            raise PipelineError(f"job {self.impl_name}: {exc}") from None
        for out in outs:
            self.notes.extend(n for n in out.notes if n not in self.notes)
        self.reads_own = self.reads_own or any(o.chained for o in outs)
        return outs

    def _topic_reader(self, topic: str, call: Any) -> Any:
        """The stream of an output topic, for a query of the job that reads it: a source of Kafka's
        columns (`headers` with includeHeaders) fed each record as the topic gets it, kept with the
        scenario's sources (so it is replayed like them at a restart that re-runs a batch)."""
        from eventtime.harness.jobrun import SourceCopies
        from eventtime.harness.stream import MemorySource

        from .sourcekinds import source_columns

        headers = (call.option("includeHeaders") or "").lower() == "true"
        key = f"topic {topic}"  # never a contract source's name, which is a word
        sources = self.sources  # the run's own mapping, shared with its driver (which replays it)
        assert isinstance(sources, dict)
        if key not in sources:
            spark = next(iter(sources.values())).spark
            columns = [(c.name, c.ctype.ddl) for c in source_columns("kafka", headers=headers)]
            sources[key] = SourceCopies(MemorySource(spark, key, columns))

            def feed(records: list[Any]) -> None:
                sources[key].add([(r.key, r.value, r.topic, r.partition, r.offset, (r.timestamp_ms or 0) * 1000, 0)
                                  + ((r.headers,) if headers else ()) for r in records])
            self.topics.subscribe(topic, feed)
        return sources[key].copy(self._index).dataframe()

    def anew(self, index: int) -> bool:
        """Before query `index` starts again: whether it starts anew (it has no checkpoint location, so
        Spark gives it a new checkpoint); if so its sources are given as a first start reads them: a Kafka
        reader from `latest` (its default) none of what was added so far, any other (files, a table,
        Kafka from `earliest`) all of it again."""
        query = list(self.queries.values())[index] if index < len(self.queries) else None
        if query is None or not query.anew:
            return False
        for name, source in self.sources.items():
            call = query.reads.get(name)
            latest = call is not None and call.format == "kafka" and \
                (call.option("startingOffsets") or "latest").strip().lower() == "latest"
            if latest:
                source.restart_empty(index)
            else:
                source.replay(index)
        return True

    def discover(self) -> list[str]:
        """The queries the job starts, by name, in the order it starts them (at the first start)."""
        self._first = self._call(0)  # query 0's build at this start: the job need not be called again for it
        names = [o.name for o in self._first]
        contract = self.scenario.contract
        missing = [q.name for q in contract.queries if q.name not in names]
        if missing:
            raise PipelineError(f"job {self.impl_name} starts no query named {', '.join(map(repr, missing))}, which "
                                f"contract {contract.name!r} declares under `queries:`; it starts "
                                f"{', '.join(map(repr, names))} (a query is known by its queryName, else the path, "
                                "table or topic it writes)")
        self.queries = {n: _Query(n) for n in names}
        return names

    def build_query(self, index: int) -> tuple[Any, ...]:
        """Query `index` of the job, built anew (at every start)."""
        from eventtime.harness.stream import BatchFunctionSink, read_rows

        outs, self._first = (self._first, None) if index == 0 and self._first is not None else (self._call(index), None)
        names = [o.name for o in outs]
        if names != list(self.queries):
            raise PipelineError(f"job {self.impl_name} started the queries {', '.join(map(repr, names))} this time and "
                                f"{', '.join(map(repr, self.queries))} at its first start: the kit calls the job at "
                                "each start of each query, so it must start the same queries every time")
        out = outs[index]
        query = self.queries[out.name]
        query.writer, query.output_mode, query.anew, query.reads = out.writer, out.output_mode, out.anew, out.reads
        df = out.df
        if not hasattr(df, "isStreaming") or not df.isStreaming:
            raise PipelineError(f"job {self.impl_name} writes {type(df).__name__} in query {out.name!r}, not a "
                                "streaming DataFrame")
        query.schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
        self.schema, self.output_mode, self.writer = query.schema, out.output_mode, out.writer
        contract = self.contract_of(out.name)
        query.declared = contract is not None
        project: Callable[[Any], Any] = lambda frame: frame  # noqa: E731 - undeclared: as the sink gets it
        if contract is not None:
            fields = [(name, type_name) for name, type_name, _ in query.schema]
            positions = check_output(fields, contract)  # OutputMismatch: a failed verdict
            names_out = contract.output_names

            def project(frame: Any) -> Any:
                positional = frame.toDF(*[f"_{i}" for i in range(len(fields))])
                return positional.select(*[f"_{i}" for i in positions]).toDF(*names_out)

        if out.sink is None:  # a memory or console sink: the kit's own memory sink observes it
            return project(df), out.output_mode
        query.sink = BatchFunctionSink(next(iter(self.sources.values())).spark, out.sink, lambda batch: read_rows(project(batch)))
        self.sink = query.sink
        return df, out.output_mode, query.sink


_MISSING_PATH = re.compile(r"Path does not exist: (\S+?)\.?(?:\s|$)")


def _in_query(exc: BaseException, message: str) -> str:
    """`message` with the job's query it is about first (`jobrun.QueryGroup` notes it on the exception),
    unless it names it already."""
    name = getattr(exc, "eventtime_query", None) or getattr(exc, "query", None)
    if not isinstance(name, str) or f"query {name!r}" in message:
        return message
    return f"query {name!r}: {message}"


def _user_entry(exc: BaseException) -> tuple[str, str] | None:
    """The user's function the kit called that `exc` unwound, and `file:line` of its definition: the
    outermost frame of the traceback that is the user's code (`jobs.users_code`)."""
    import traceback

    from .jobs import users_code

    for frame, _ in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if users_code(code.co_filename):
            return code.co_qualname, f"{code.co_filename}:{code.co_firstlineno}"
    return None


def nothing_written(folder: str) -> bool:
    """Whether a folder holds nothing Spark's readers would read: it does not exist, or it has Spark's
    file sink log (`_spark_metadata`) and that log records no file, or it has no data file at all
    (readers skip names starting with `_` or `.`: `_SUCCESS`, `.crc` files). Such a folder reads as
    no rows, not as the schema error Spark raises for it."""
    if not os.path.isdir(folder):
        return not os.path.exists(folder)
    log = os.path.join(folder, "_spark_metadata")
    if os.path.isdir(log):  # readers then read the files the log records, and only those
        return not any(_records_a_file(os.path.join(log, name)) for name in os.listdir(log)
                       if name.split(".")[0].isdigit() and not name.endswith(".crc"))
    for _, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        if any(not f.startswith(("_", ".")) for f in files):
            return False
    return True


def _records_a_file(entry: str) -> bool:
    """Whether one file of a `_spark_metadata` log (a version line, then one JSON object per line)
    adds a file."""
    with open(entry, encoding="utf-8") as fh:
        lines = fh.read().splitlines()[1:]
    return any(line.strip().startswith("{") and json.loads(line).get("action") == "add" for line in lines)


def _new_run(scenario: m.Scenario, spark: Any, build: _Build, backend: Any, workdir: str, timeout: float) -> Any:
    """The query run `backend` makes (harness.backend: classic or Connect), a job's queries as a QueryGroup."""

    def stream_run(session: Any, make: Callable[[], tuple[Any, ...]], checkpoint: Path) -> Any:
        return backend.query_run(session, make, checkpoint=str(checkpoint), clock_start_ms=scenario.clock_start_us // 1000,
                                 trigger_ms=scenario.trigger.total_ms if scenario.trigger else None, timeout=timeout)

    if isinstance(build, _JobBuild):
        from eventtime.harness.jobrun import QueryGroup

        job = build
        group = QueryGroup(spark, job.discover, lambda i, _name, session: stream_run(
            session, lambda: job.build_query(i), Path(workdir) / "checkpoint" / str(i)),
            checkpoint=str(Path(workdir) / "checkpoint"), chained=lambda: bool(job.topics.listeners) or job.reads_own,
            anew=job.anew)
        job.clock = group
        return group
    return stream_run(spark, build, Path(workdir) / "checkpoint")


class _SparkSteps:
    """The runner's side of `drive`: each step's action run on Spark with its errors turned into verdicts,
    each expect judged on what the sink showed."""

    def __init__(self, scenario: m.Scenario, result: ScenarioResult, run: Any, compat: Any, impl_name: str,
                 unjudged: frozenset[str], build: _Build, died: list[Any]):
        self.scenario, self.result, self.query_run, self.compat = scenario, result, run, compat
        self.impl_name, self.unjudged, self.build, self.died = impl_name, unjudged, build, died
        self.failure: FailureInfo | None = None
        self.failure_consumed = False
        self.fatal = False  # nothing runs or is judged after this
        self.limit: list[str] = []  # over Spark Connect: why the run cannot be reproduced there (not applicable)
        self.faults: list[Fault] = []  # what of the run's surroundings failed it (a checkpoint, the disk, py4j)
        self.current = StepResult(0, "start", scenario.where)  # the step being run: skips() makes each
        self.pending: dict[str, list[Any]] = {}  # a job's query -> its batches since its previous expect
        # a query (None: a pipeline's one) -> its batches since its previous `*_since_check` check or start
        self.since_check: dict[str | None, list[Any]] = {}
        self.replaced: list[tuple[str, int]] = []  # static inputs written anew since the query last started
        self.switch: tuple[int, Callable[[], None]] | None = None  # (step, the current version takes over)
        self.unwritten: list[tuple[StepResult, m.WrittenCheck, str]] = []  # `written:` of a path not named then

    def settle_written(self) -> None:
        """At the end of the run: a `written:` check of a path no query of the job wrote or named in the whole
        run is the kit's error at its line, not a verdict (a misspelt path reads as no rows)."""
        for sr, check, folder in self.unwritten:
            why = self.build.unwritten_error(check, folder)
            if why is not None:
                sr.status, sr.message, sr.failures = ERROR, why, []

    def skips(self, step: m.Step) -> bool:
        sr = self.current = StepResult(step.index, step.kind, step.where)
        if self.switch is not None and step.index == self.switch[0]:
            self.switch[1]()
        self.result.steps.append(sr)
        if isinstance(step, (m.StartStep, m.RunStep)):
            self.replaced = []
            # a started query's progresses begin anew, and with them StreamTest's span since its last check
            for query in [step.query] if isinstance(step, m.StartStep) and step.query is not None else list(
                    self.since_check):
                self.since_check[query] = []
        elif isinstance(step, m.StaticStep):
            self.replaced += [(name, step.where.line) for name in step.rows]
        if self.fatal:
            sr.status = SKIPPED
            return True
        if self.failure is not None and not isinstance(step, m.ExpectStep):
            sr.status, sr.message = SKIPPED, "not run: the query failed earlier"
            return True
        return False

    def expect(self, step: m.ExpectStep, since_expect: list[Any]) -> bool:
        sr = self.current
        contract = m.checked_contract(self.scenario.contract, step)
        if step.topic is not None or step.written is not None:
            judged = (self._expect_topic(sr, step.topic) if step.topic is not None
                      else self._expect_written(sr, step, contract))
            if judged:  # like any expect, it closes "since the previous expect" of the query it reads
                closed = self._closed_by(step)
                if closed is not None:
                    self.pending[closed] = []
            return judged
        try:
            run, name = self._looked_at(step)
        except PipelineError as exc:
            sr.status, sr.message = ERROR, str(exc)
            return True
        mode, schema = self.build.output_mode, self.build.schema
        if name is not None:  # one query of a job's: its batches since its own previous expect
            assert isinstance(self.build, _JobBuild)
            query = self.build.queries[name]
            mode, schema, since_expect = query.output_mode, query.schema, self.pending.get(name, [])
            if not query.declared and any(c.rows for c in step.rows):
                sr.status, sr.message = ERROR, (f"query {name!r} of the job writes rows whose columns contract "
                                                f"{contract.name!r} does not declare: declare them under `queries: "
                                                f"{{{name}: {{columns: ...}}}}` to check its rows")
                return True
        observed = Observed(since_expect, [*getattr(run, "earlier", []), *run.history.values()], mode,
                            [c.name for c in contract.output], self.failure, schema,
                            since_check=self.since_check.get(name, []))
        judge_expect(sr, step, observed, self.scenario if contract is self.scenario.contract
                     else replace(self.scenario, contract=contract), self.unjudged)
        if sr.status == SKIPPED:
            return False
        self._judge_state(sr, step, run)
        sr.watermark_ms = observed.watermark_ms
        if name is not None:
            self.pending[name] = []
        if m.checks_since_check(step):
            self.since_check[name] = []
        if step.failure is not None and self.failure is not None:
            self.failure_consumed = True
        return True

    def _judge_state(self, sr: StepResult, step: m.ExpectStep, run: Any) -> None:
        """`state:` read from the query's checkpoint after the step (only for an expect that has one)."""
        if step.state is None or self.failure is not None or "state_rows" in self.unjudged:
            return  # an implementation that keeps its state in another shape is not judged on it
        from .statecheck import read_and_judge

        checkpoint = getattr(run, "checkpoint", None)
        sr.failures += read_and_judge(step.state, run.spark, checkpoint, self.scenario, step.tolerance, sr.observed)
        sr.status = FAILED if sr.failures else sr.status
        if sr.observed is not None and checkpoint is not None and (
                not step.state.columns or any(f.check == "state" for f in sr.failures)):
            sr.observed.state = _state_every_field(step.state, run.spark, checkpoint)

    def _closed_by(self, step: m.ExpectStep) -> str | None:
        """The query whose "since the previous expect" an expect of what was written or published closes:
        the one it names (`query:`), else the one named after the path or topic it reads, else a job's
        only query; None when it reads something no single query of several is known by."""
        if not isinstance(self.build, _JobBuild):
            return None
        queries = list(self.build.queries)
        read = step.topic.topic if step.topic is not None else m.checked_query(step)
        for name in (step.query, read):
            if name in queries:
                return name
        return queries[0] if len(queries) == 1 else None

    def _run_of(self, step: m.ExpectStep) -> Any:
        """The run whose watermark an expect of what was written shows: its query's, when it names one."""
        if isinstance(self.build, _JobBuild) and step.query in self.build.queries:
            return self.query_run.query(step.query)
        return self.query_run

    def _looked_at(self, step: m.ExpectStep) -> tuple[Any, str | None]:
        """The run an expect's checks look at, and the name of the job's query it is (None: a pipeline's
        one query)."""
        if not isinstance(self.build, _JobBuild) or not self.build.queries:
            return self.query_run, None
        names = list(self.build.queries)
        if step.query is not None:
            if step.query not in names:
                raise PipelineError(f"the job started no query named {step.query!r}; it started "
                                    f"{', '.join(map(repr, names))} (a query is known by its queryName, else the "
                                    "path, table or topic it writes)")
            return self.query_run.query(step.query), step.query
        if len(names) > 1:
            raise PipelineError(f"the job started {len(names)} queries ({', '.join(map(repr, names))}): say which one "
                                "this expect checks with `query: NAME`")
        return self.query_run.query(names[0]), names[0]

    def _expect_topic(self, sr: StepResult, check: m.TopicCheck) -> bool:
        """Judge what an output topic holds after the step (every record the job's Kafka sinks published)."""
        from .topics import judge_records

        if self.failure is not None:
            sr.status, sr.message = SKIPPED, "not checked: the query failed earlier"
            return False
        topics = self.build.topics if isinstance(self.build, _JobBuild) else None
        if topics is None:
            sr.status, sr.message = ERROR, f"topic {check.topic!r}: only a job's Kafka sink publishes to a topic"
            return True
        sr.observed = list(topics.records.get(check.topic, []))  # what a snapshot writes
        sr.failures = judge_records(check, sr.observed)
        sr.status = FAILED if sr.failures else PASSED
        sr.watermark_ms = _current_watermark(self.query_run)
        return True

    def _expect_written(self, sr: StepResult, step: m.ExpectStep, contract: Contract) -> bool:
        """Judge an expect of what the job wrote (a table, a path parameter's folder) on its rows read back
        now; like any expect it closes "since the previous expect" once judged."""
        from eventtime.harness.observations import BatchObservation

        if self.failure is not None and step.failure is None:
            sr.status, sr.message = SKIPPED, "not checked: the query failed earlier"
            return False
        names = list(contract.output_names)
        check = step.written
        assert check is not None
        if check.table is None and not check.format:  # read as the job's sink writes it: its failure says how
            check = replace(check, format=self.build.format_written(self.build.written_folder(str(check.path))))
            step, index = replace(step, written=check), step.index
            object.__setattr__(step, "_index", index)
        unwritten = len(self.build.unwritten)
        try:
            rows = self.build.written_rows(self.query_run.spark, check, contract)
            self.unwritten += [(sr, c, folder) for c, folder in self.build.unwritten[unwritten:]]
        except ReadBackMismatch as exc:  # the kit misread the folder: its own error, never a verdict on the job
            sr.status, sr.message = ERROR, f"{check.where}: {exc}"
            return True
        except Exception as exc:  # noqa: BLE001 - a missing table, a folder Spark cannot read: the step says so
            what = f"table {check.table!r}" if check.table is not None else f"what was written to {check.path!r}"
            sr.status = FAILED
            sr.failures = [CheckFailure("rows", check.where, f"cannot read {what}: {str(exc).strip().splitlines()[0]}")]
            return True
        batch = BatchObservation(batch_id=0, input_rows=0, timestamp_ms=None, watermark_before_ms=None,
                                 watermark_after_ms=None, rows=rows)
        judge_expect(sr, step, Observed([batch], [batch], "append", names, None), self.scenario
                     if contract is self.scenario.contract else replace(self.scenario, contract=contract), self.unjudged)
        sr.watermark_ms = _current_watermark(self._run_of(step))
        return True

    def run(self, step: m.Step | None, action: Callable[[], list[Any]]) -> list[Any]:
        sr = self.current
        if step is None:  # the implicit start
            self.result.steps.append(sr)
        t0 = time.monotonic()
        try:
            batches = self._attempt(sr, action)
            for b in batches:
                if b.query is not None:
                    self.pending.setdefault(b.query, []).append(b)
                self.since_check.setdefault(b.query, []).append(b)
            return batches
        finally:
            sr.seconds = time.monotonic() - t0
            sr.watermark_ms = _current_watermark(self.query_run)

    def _replaced_hint(self, message: str) -> str:
        """Why a query that reads a static input replaced while it ran finds its files gone."""
        if not self.replaced or not any(k in message for k in ("FILE_NOT_EXIST", "FileNotFoundException")):
            return ""
        which = ", ".join(f"{name!r} (line {line})" for name, line in self.replaced)
        were = "inputs " + which + " were" if len(self.replaced) > 1 else "input " + which + " was"
        return (f" (the static {were} written anew while the query ran: Spark lists a static table's "
                "or folder's files when the query starts and a stream-static join keeps that listing, so the files "
                "it listed are gone, as when a batch job overwrites them under a running stream in production; "
                "stop the query before the `static` step and start it after, or read the input in foreachBatch; "
                "docs/jobs.md, *Static inputs*)")

    def _paths_hint(self, message: str) -> str:
        """Where a path Spark did not find came from, when it is one of the job's paths kept to the run
        folder (`jobpaths.kept_path`): the name the job gave it, the working directory a relative one
        starts at, and where it landed; the message of Spark's PATH_NOT_FOUND says none of that."""
        if "PATH_NOT_FOUND" not in message and "Path does not exist" not in message:
            return ""
        files = os.path.join(os.path.realpath(self.build.workdir), FILES)
        found = []
        for match in _MISSING_PATH.finditer(message):
            path = os.path.realpath(match.group(1).removeprefix("file://").removeprefix("file:"))
            if path.startswith(files + os.sep):
                found.append((os.path.relpath(path, files), path))
        if not found:
            return ""
        name, path = found[0]
        return (f" (the kit keeps every path a job names inside the scenario's own run folder, keeping its name: "
                f"{name!r} is kept at {path}; a relative path is named from the working directory, {os.getcwd()}, "
                "an absolute one from the root. Neither the job nor the scenario put anything there: an input the "
                "job reads is a contract `static:` input the scenario gives rows (docs/jobs.md, *Static inputs*), "
                "or what the job's own queries write before it reads it (docs/jobs.md, *Where the job writes*))")

    def _stop_batch_functions(self) -> list[str]:
        """A wait that ran out while a job's foreachBatch function ran: where each such function is, each
        stopped (`jobs.BatchFunction`), so that none is left running after the scenario."""
        from .jobs import BatchFunction

        queries = getattr(self.build, "queries", {})
        sinks = [q.sink for q in queries.values()] if queries else [self.build.sink]
        said = [s.function.stop_running() for s in sinks
                if s is not None and isinstance(getattr(s, "function", None), BatchFunction)]
        return [s for s in said if s]

    def _surroundings_failed(self, sr: StepResult, chain: Any) -> bool:
        """Whether the query failed for a fault of the run's surroundings, not the pipeline's; if so the
        step says what it is, later steps are skipped and no expect of a failure can consume it."""
        # over Connect the checkpoint, the callback server and the load are the server's: only what the chain says
        fault = (classify_failure(chain, checkpoint=None) if self.compat.connect
                 else _fault_of(chain, self.query_run.spark, self.query_run.checkpoint))
        if fault is not None:
            self.faults.append(fault)
            sr.status, sr.message, self.fatal = ERROR, fault.reason, True
        return fault is not None

    def _attempt(self, sr: StepResult, action: Callable[[], list[Any]]) -> list[Any]:
        """The batches the action ran, into `sr`; [] when it failed, with the failure as a verdict."""
        from eventtime.harness.connect import ConnectLimit
        from eventtime.harness.session import driver_death
        from eventtime.harness.stream import HarnessError, HarnessTimeout, QueryFailed

        try:
            try:
                batches = action()
            except Exception as exc:
                # whatever py4j raised when the JVM went away, the fact is one: the driver died
                death = driver_death(self.query_run.spark, after=exc)
                if death is None:
                    raise
                self.died.append((death, sr))
                sr.status, sr.message = ERROR, "the Spark driver died during this step"
                self.fatal = True
                return []
            sr.batches.extend(batches)
            return batches
        except ConnectLimit as exc:
            sr.status, sr.message = SKIPPED, str(exc)
            self.limit.append(str(exc))
            self.fatal = True
        except QueryFailed as exc:
            if self._surroundings_failed(sr, exc.chain):
                return []
            self.failure = _failure_from(exc, self.compat, sr.index)
            self.failure.query = exc.query
            sink = self.build.sink_of(exc.query)
            raised = sink.raised if sink is not None else None
            if raised is not None:  # the job's batch function raised: its batch and its frames, not Java's
                from .jobs import batch_error

                self.failure.summary = _in_query(exc, batch_error(raised[0], raised[1], self.build.writer_of(exc.query)))
                sink.raised = None
            sr.message = (str(self.failure) + self._replaced_hint(str(self.failure))
                          + self._paths_hint(f"{exc}\n{self.failure}"))
            sr.status = ERROR
        except HarnessTimeout as exc:
            stopped = self._stop_batch_functions()
            sr.status, sr.message = ERROR, str(exc) + (f": {'; '.join(stopped)}" if stopped else "")
            self.fatal = True
        except (HarnessError, PipelineError) as exc:
            sr.status, sr.message = ERROR, _in_query(exc, str(exc))
            self.fatal = isinstance(exc, HarnessError) and not isinstance(exc, QueryFailed)
            if isinstance(exc, PipelineError):
                self.failure = FailureInfo(str(exc), [], ["eventtime.runner.PipelineError"], str(exc), sr.index)
        except OutputMismatch as exc:  # the pipeline breaks its contract: it fails, naming each column
            self.failure = FailureInfo(str(exc), [], ["eventtime.userpipeline.OutputMismatch"], str(exc), sr.index)
            contract = self.scenario.contract
            sr.status, sr.message = FAILED, "the output does not match the contract"
            sr.failures = [CheckFailure("output_schema", contract.output_where or contract.where or self.scenario.where,
                                        _in_query(exc, f"pipeline {self.impl_name}: {exc}"))]
        except PipelineRaised as exc:  # the user's pipeline raised while the query was built
            self.failure = _failure_from(exc.original, self.compat, sr.index)
            self.failure.summary = _in_query(exc, str(exc))
            sr.status, sr.message = ERROR, self.failure.summary + self._paths_hint(str(exc))
        except Exception as exc:  # noqa: BLE001 - a pipeline or Spark error at start: a verdict, not a crash
            java = getattr(exc, "java_exception", None)
            if self._surroundings_failed(sr, [(type(exc).__name__, None, str(exc)),
                                              *(self.compat.java_error_classes(java) if java is not None else [])]):
                return []
            self.failure = _failure_from(exc, self.compat, sr.index)
            self.failure.summary = _in_query(exc, self.failure.summary)
            sr.status, sr.message = ERROR, str(self.failure) + self._paths_hint(str(exc))
        return []


def _conclude(result: ScenarioResult, steps: _SparkSteps, died: list[Any]) -> None:
    """The scenario's verdict from its steps: a dead driver says so; over Spark Connect a run that
    could not be reproduced there is not applicable, never passed."""
    if died:
        death, step = died[0]
        result.status, result.cause = ERROR, DRIVER_DIED
        result.reason = death.message(f"during step {step.index} ({step.kind}) of scenario {result.scenario.name} "
                                      f"[{result.implementation}]")
        return
    failure = steps.failure
    conclude(result, failure.step if failure is not None and steps.failure_consumed else None)
    if steps.faults:
        result.cause = steps.faults[0].cause
    if steps.limit:
        result.status, result.reason = NOT_APPLICABLE, f"over Spark Connect: {steps.limit[0]}"


def _current_watermark(run: Any) -> int | None:
    """The watermark the run's query left (0: none yet); None for a job's several queries, which have one each."""
    from eventtime.harness.jobrun import QueryGroup

    if not run.history:
        return None if isinstance(run, QueryGroup) and len(run.query_runs) > 1 else 0
    last = run.history[max(run.history)]
    return last.watermark_after_ms


def _state_every_field(check: m.StateCheck, spark: Any, checkpoint: str) -> Any:
    """The state a `state` check that disagreed (or names no field) looked at, with every field: what
    a snapshot writes (`snapshotedit`); read only then, so a check that agrees costs one read. A state
    that cannot be read gives the reason."""
    from eventtime.harness.stateread import StateReadError, read_state

    try:
        return read_state(spark, checkpoint, None, operator=check.operator, side=check.side, variable=check.variable)
    except StateReadError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - Spark's reader refused: its first line says why
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
