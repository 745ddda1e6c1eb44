"""Runs a scenario against a pipeline on the harness and produces a `ScenarioResult`: the assembly of a
run from its parts. Whether it applies and what runs (`applicability`, `binding`), what builds the query
(`querybuild.QueryBuild`: a pipeline's, or a job's in `jobbuild`), the harness's query run and driver
(`eventtime.harness.backend`, `driver`), what a run across a change does (`crossing.Crossing`), the step
interpreter (`drive`) and the runner's side of it on Spark (`sparksteps`)."""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from eventtime.harness.driver import QueryDriver
from eventtime.harness.jobpaths import forget_paths
from eventtime.harness.waits import DEFAULT_TIMEOUT

from . import spec as m
from .applicability import applicability, connect_applicability
from .binding import prepare
from .crossing import Crossing, Straight
from .drive import drive
from .faults import classify_os_error
from .jobbuild import JobBuild
from .querybuild import Output, PipelineBuild, QueryBuild
from .results import DRIVER_DIED, ERROR, PASSED, ScenarioResult
from .sparksteps import SparkSteps, conclude_run
from .userpipeline import DeclarativePipeline, Pipeline

__all__ = ["Output", "run_scenario", "applicability", "connect_applicability", "DEFAULT_TIMEOUT"]


def run_scenario(scenario: m.Scenario, pipeline: Pipeline | str | None = None, *, session: Any = None,
                 timeout: float = DEFAULT_TIMEOUT, implementation: str | None = None,
                 rerun: str | None = None, conf: Mapping[str, str] | None = None,
                 crossing: Crossing | None = None) -> ScenarioResult:
    """Run `scenario` against `pipeline` (default: the contract's reference implementation).

    `crossing`: a run across a change (`eventtime.crossing.Crossing`): a new version of the job restarted
    from the previous version's checkpoint (`eventtime.upgrade.NewVersion(previous)`: the previous version
    runs the steps before the scenario's first `start`/`restart`, the result's `upgrade` says whether the
    new one restarts, differs or cannot restart; a scenario without such a step is not applicable), or one
    side of a run across Spark lines (`eventtime.crossline`). None: the run crosses nothing.

    Returns a ScenarioResult with a verdict per step; never raises for a failing or broken
    pipeline (those become `failed` / `error` verdicts). `conf` adds Spark SQL settings for the
    query (e.g. from `--spark-conf`); the scenario's own `conf` wins over it.

    When the Spark driver JVM dies under the scenario, the result is an `error` whose `cause` is
    DRIVER_DIED and whose reason is one message (what died, in which step, what is known of why,
    what to try); the session is dead from then on (`eventtime.harness.session.fresh_session`).
    A fault of the run's surroundings (an unwritable checkpoint, a full temporary directory, py4j's
    callback server gone; `eventtime.faults`) is an `error` with that cause and the step saying it;
    a stopped callback server is started again before the next scenario.
    """
    from eventtime.harness.session import driver_death, get_session

    started = time.monotonic()
    ref = pipeline if isinstance(pipeline, str) else None
    impl_name = implementation or ref or (getattr(pipeline, "__module__", "") + ":" + getattr(
        pipeline, "__qualname__", "") if pipeline is not None else scenario.contract.reference)
    spark = session or get_session()
    died: list[Any] = []  # (DriverDeath, step) once the driver JVM is found dead
    try:
        return _run_scenario(_Run(scenario, impl_name, spark, timeout, rerun, conf, crossing or Straight(), died),
                             pipeline, started)
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


@dataclass
class _Run:
    """What one scenario's run is given: the scenario, who runs it and on what, and how long a wait may take."""

    scenario: m.Scenario
    impl_name: str
    spark: Any
    timeout: float
    rerun: str | None
    conf: Mapping[str, str] | None
    crossing: Crossing
    died: list[Any]  # (DriverDeath, step) once the driver JVM is found dead: the caller says it


def _run_scenario(run: _Run, pipeline: Pipeline | str | None, started: float) -> ScenarioResult:
    from eventtime.harness.backend import backend_for
    from eventtime.harness.compat import compat_for

    spark, crossing = run.spark, run.crossing
    compat, backend = compat_for(spark), backend_for(spark)
    scenario = m.for_spark_version(run.scenario, spark.version)  # `on_spark` expectations of this version
    result = ScenarioResult(scenario, run.impl_name, PASSED, spark_version=spark.version, rerun=run.rerun,
                            runtime=backend.runtime())
    prepared = prepare(result, pipeline, compat)
    if prepared is None:
        return result
    call, info, job = prepared
    if isinstance(call, DeclarativePipeline):
        _run_declarative(run, result, call)
        result.seconds = time.monotonic() - started
        return result
    if crossing.refuses(result, job, compat):
        return result
    unjudged = frozenset(info.unjudged) | crossing.unjudged
    if unjudged:
        result.notes.append(f"not judged on {', '.join(sorted(unjudged))}: {info.note}")
    mended = backend.prepare()
    if mended:
        result.notes.append(mended)
    try:
        workdir = crossing.workdir()
    except OSError as exc:  # a temporary directory that takes no new files: the run's, not the pipeline's
        fault = classify_os_error(exc, directory=tempfile.gettempdir())
        if fault is None:
            raise
        result.status, result.cause, result.reason = ERROR, fault.cause, fault.reason
        return result
    sources = {name: backend.source(name, [(c.name, c.ctype.ddl) for c in src.columns])
               for name, src in scenario.sources.items()}
    build: QueryBuild = (JobBuild if job else PipelineBuild)(scenario, call, sources, run.impl_name, workdir=workdir)

    def stream_run(session: Any, make: Callable[[], tuple[Any, ...]], checkpoint: Path) -> Any:
        """One query's run on the backend (harness.backend: classic or Connect)."""
        return backend.query_run(session, make, checkpoint=str(checkpoint), clock_start_ms=scenario.clock_start_us // 1000,
                                 trigger_ms=scenario.trigger.total_ms if scenario.trigger else None, timeout=run.timeout)

    query_run = build.new_run(spark, stream_run)
    query_conf = {**dict(run.conf or {}), **info.conf, **scenario.query_conf(), **build.written.path_conf()}
    build.run_conf, build.timeout = query_conf, run.timeout
    steps = SparkSteps(scenario, result, query_run, compat, run.impl_name, unjudged, build, run.died)
    _drive(run, build, steps, query_conf, workdir)
    result.notes.extend(build.notes)
    conclude_run(result, steps, run.died)
    crossing.finish(result, steps)
    result.seconds = time.monotonic() - started
    return result


def _run_declarative(run: _Run, result: ScenarioResult, pipeline: DeclarativePipeline) -> None:
    """A Spark Declarative Pipeline's run: its steps as updates (`sdpsteps`); across a change of its
    definitions (`upgrade.NewVersion`) the previous ones run the updates before the first restart. Not
    across Spark lines."""
    from eventtime.harness.compat import compat_for

    from .sdpsteps import run_declarative
    from .upgrade import NewVersion

    previous: tuple[str, str] | None = None
    if isinstance(run.crossing, NewVersion):
        spec = run.crossing.previous_pipeline(result, compat_for(run.spark))
        if spec is None:
            return
        previous = (run.crossing.name, spec)
    elif type(run.crossing) is not Straight:  # Resume and Keep (crossline) are Straight too
        result.status, result.reason = ERROR, (f"pipeline {pipeline.ref!r} is a Spark Declarative Pipeline: a run "
                                               "across Spark lines is not supported for pipelines (docs/pipelines.md)")
        return
    run_declarative(result, pipeline.spec, run.spark, timeout=run.timeout, conf=run.conf, previous=previous)


def _drive(run: _Run, build: QueryBuild, steps: SparkSteps, query_conf: Mapping[str, str], workdir: str) -> None:
    """The scenario's steps driven on Spark (`drive`, on the crossing's driver and handler), the query
    stopped however they end, and the run's place left as the crossing says."""
    query_run, crossing = steps.query_run, run.crossing
    try:
        database = build.enter(run.spark)
        if database is not None:
            crossing.entered(database)
        driver = QueryDriver(query_run, build.sources, build.statics(run.spark),
                             on_new_session=database.follow if database is not None else None)
        crossed, handler = crossing.around(driver, steps)
        drive(steps.scenario, crossed, query_conf, handler)
        crossing.ended(steps)  # before the paths the job named are forgotten
    except BaseException:
        # Ctrl-C, SIGTERM or a bug on the way out: stop the query, but an error while stopping
        # (py4j's connection cut by the interrupt) must not replace what is unwinding
        try:
            query_run.close()
        except Exception:  # noqa: BLE001
            pass
        raise
    else:
        query_run.close()
    finally:
        build.restore_sessions()
        crossing.leave(build, workdir)
        forget_paths(workdir)
