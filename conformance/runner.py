"""Runs a scenario against a pipeline on the harness and produces a `ScenarioResult`: the assembly of a
run from its parts. Whether it applies and what runs (`applicability`, `binding`), what builds the query
(`querybuild.QueryBuild`: a pipeline's, or a job's in `jobbuild`), the harness's query run and driver
(`eventtime.harness.backend`, `driver`), the step interpreter (`drive`) and the runner's side of it on
Spark (`sparksteps`)."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from eventtime.harness.driver import QueryDriver
from eventtime.harness.jobpaths import forget_paths
from eventtime.harness.waits import DEFAULT_TIMEOUT

from . import spec as m
from .applicability import applicability, connect_applicability
from .binding import prepare, previous_version
from .drive import drive
from .faults import classify_os_error
from .jobbuild import JobBuild
from .querybuild import Output, PipelineBuild, QueryBuild
from .results import DRIVER_DIED, ERROR, NOT_APPLICABLE, PASSED, ScenarioResult
from .sparksteps import SparkSteps, conclude_run
from .userpipeline import Pipeline

__all__ = ["Output", "run_scenario", "applicability", "connect_applicability", "DEFAULT_TIMEOUT"]


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
    prepared = prepare(result, pipeline, compat)
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
        change = previous_version(result, previous[0], previous[1], compat, job)
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
    sources = {name: backend.source(name, [(c.name, c.ctype.ddl) for c in src.columns])
               for name, src in scenario.sources.items()}
    first_call, first_name = (change.call, change.name) if change is not None else (call, impl_name)
    build: QueryBuild = (JobBuild if job else PipelineBuild)(scenario, first_call, sources, first_name, workdir=workdir)

    def stream_run(session: Any, make: Callable[[], tuple[Any, ...]], checkpoint: Path) -> Any:
        """One query's run on the backend (harness.backend: classic or Connect)."""
        return backend.query_run(session, make, checkpoint=str(checkpoint), clock_start_ms=scenario.clock_start_us // 1000,
                                 trigger_ms=scenario.trigger.total_ms if scenario.trigger else None, timeout=timeout)

    run = build.new_run(spark, stream_run)
    query_conf = {**dict(conf or {}), **info.conf, **scenario.query_conf(), **build.written.path_conf()}
    build.run_conf, build.timeout = query_conf, timeout
    steps = SparkSteps(scenario, result, run, compat, first_name, unjudged, build, died)
    if change is not None:
        def take_over() -> None:  # the current version builds the query from this start on
            build.call, build.impl_name, steps.impl_name = call, impl_name, impl_name
        steps.switch = (change.restart.index, take_over)
    try:
        database = build.enter(spark)
        if database is not None and line is not None:
            line.entered(database)
        driver: Any = QueryDriver(run, build.sources, build.statics(spark),
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
        # the earlier side of a run across Spark lines leaves its tables to the other
        build.leave(drop=line is None or not line.keep)
        build.restore_sessions()
        if line is None or not line.keep:  # the earlier side of a run across Spark lines leaves it to the other
            shutil.rmtree(workdir, ignore_errors=True)
        forget_paths(workdir)
    result.notes.extend(build.notes)
    conclude_run(result, steps, died)
    if line is not None:
        line.finish(result, steps)
    if change is not None:
        from .upgrade import upgrade_verdict

        upgrade_verdict(result, change.name, change.restart, steps.failure, steps.failure_consumed)
    result.seconds = time.monotonic() - started
    return result
