"""Runs a scenario against a pipeline on the harness and produces a `ScenarioResult`."""
from __future__ import annotations

import importlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from . import model as m
from .contracts import implementation_info
from .judge import Observed, judge_expect
from .results import (DRIVER_DIED, ERROR, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, CheckFailure, FailureInfo,
                      ScenarioResult, StepResult, conclude)
from .signatures import OutputMismatch, PipelineRaised, SignatureError, check_output, pipeline_caller

__all__ = ["Output", "Pipeline", "PipelineError", "resolve_pipeline", "run_scenario", "applicability",
           "connect_applicability", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 60.0
Pipeline = Callable[[Mapping[str, Any], m.Params], Any]


@dataclass(frozen=True)
class Output:
    """What a pipeline may return instead of a bare DataFrame, to choose its own output mode."""

    df: Any
    output_mode: str | None = None


class PipelineError(Exception):
    """A pipeline reference that cannot be resolved, or a pipeline that breaks its contract."""


def resolve_pipeline(ref: str) -> Pipeline:
    """`module:function` (or `module.function`) -> the callable; raises PipelineError saying why not."""
    module_name, sep, attr = ref.partition(":")
    if not sep:
        module_name, _, attr = ref.rpartition(".")
    if not module_name or not attr:
        raise PipelineError(f"pipeline {ref!r} is not of the form 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PipelineError(f"cannot import module {module_name!r} for pipeline {ref!r}: {exc}") from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            from .problems import did_you_mean

            names = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None))]
            raise PipelineError(f"module {module_name!r} has no {attr!r}{did_you_mean(attr, names)} (pipeline {ref!r})")
    if not callable(fn):
        raise PipelineError(f"pipeline {ref!r} is not callable")
    return fn


def applicability(scenario: m.Scenario, spark_version: str, features: frozenset[str]) -> str | None:
    """Why the scenario does not apply to this Spark (None when it does)."""
    if scenario.requires_spark:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        version = Version(spark_version.split("-")[0].split("+")[0])
        if version not in SpecifierSet(scenario.requires_spark):
            return f"needs Spark {scenario.requires_spark}, this is {spark_version}"
    missing = [f for f in dict.fromkeys(scenario.requires_features + scenario.contract.requires)
               if f not in features]
    if missing:
        return f"needs Spark feature(s) {', '.join(missing)}, not available in Spark {spark_version}"
    return None


# -- Spark Connect (a session with no JVM in this process; see docs/connect.md) -------------------------
NO_CLOCK = "needs the manual processing-time clock, which Spark Connect does not offer"


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
    if any(isinstance(step, m.StartStep) and step.new_session for step in scenario.steps):
        return "starts the query in a new session, which the Spark Connect harness does not do"
    return None


def _connect_staging(spark: Any) -> Any:
    from eventtime.harness.connect import ConnectStaging

    return ConnectStaging(spark)


def _new_source(spark: Any, staging: Any, name: str, columns: list[tuple[str, str]]) -> Any:
    """A MemoryStream source, or over Spark Connect a staged one (`staging` set)."""
    if staging is not None:
        from eventtime.harness.connect import ConnectSource

        return ConnectSource(staging, name, columns)
    from eventtime.harness.stream import MemorySource

    return MemorySource(spark, name, columns)


def _connect_runtime(spark: Any) -> dict[str, str]:
    import pyspark

    return {"spark_version": spark.version, "pyspark_version": pyspark.__version__,
            "master": "spark connect (client has no JVM)"}


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


def run_scenario(scenario: m.Scenario, pipeline: Pipeline | str | None = None, *, session: Any = None,
                 timeout: float = DEFAULT_TIMEOUT, implementation: str | None = None,
                 rerun: str | None = None, conf: Mapping[str, str] | None = None) -> ScenarioResult:
    """Run `scenario` against `pipeline` (default: the contract's reference implementation).

    Returns a ScenarioResult with a verdict per step; never raises for a failing or broken
    pipeline (those become `failed` / `error` verdicts). `conf` adds Spark SQL settings for the
    query (e.g. from `--spark-conf`); the scenario's own `conf` wins over it.

    When the Spark driver JVM dies under the scenario, the result is an `error` whose `cause` is
    DRIVER_DIED and whose reason is one message (what died, in which step, what is known of why,
    what to try); the session is dead from then on (`eventtime.harness.session.fresh_session`).
    """
    from eventtime.harness.session import driver_death, get_session

    started = time.monotonic()
    ref = pipeline if isinstance(pipeline, str) else None
    impl_name = implementation or ref or (getattr(pipeline, "__module__", "") + ":" + getattr(
        pipeline, "__qualname__", "") if pipeline is not None else scenario.contract.reference)
    spark = session or get_session()
    died: list[Any] = []  # (DriverDeath, step) once the driver JVM is found dead
    try:
        return _run_scenario(scenario, pipeline, spark, impl_name, started, timeout, rerun, conf, died)
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
                  died: list[Any]) -> ScenarioResult:
    from eventtime.harness.compat import compat_for
    from eventtime.harness.connect import ConnectLimit
    from eventtime.harness.session import driver_death, runtime_info
    from eventtime.harness.stream import HarnessError, HarnessTimeout, QueryFailed, StreamRun

    compat = compat_for(spark)
    result = ScenarioResult(scenario, impl_name, PASSED, spark_version=spark.version, rerun=rerun,
                            runtime=_connect_runtime(spark) if compat.connect else runtime_info(spark))

    reason = applicability(scenario, spark.version, compat.features) or (
        connect_applicability(scenario) if compat.connect else None)
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return result
    if pipeline is None and not scenario.contract.reference:
        result.status = ERROR
        result.reason = (f"no pipeline is bound to contract {scenario.contract.name!r}: pass one (--pipeline "
                         f"MODULE:FUNCTION, run_scenario(scenario, fn)), or bind it in pytest (ini eventtime_pipelines "
                         f"'{scenario.contract.name} = MODULE:FUNCTION', --eventtime-pipeline, or bind() in conftest.py)")
        return result
    try:
        fn = resolve_pipeline(pipeline or scenario.contract.reference) if pipeline is None or isinstance(
            pipeline, str) else pipeline
    except PipelineError as exc:
        result.status, result.reason = ERROR, str(exc)
        return result
    info = implementation_info(fn)
    try:
        call = pipeline_caller(fn, scenario.contract)
    except SignatureError as exc:
        result.status, result.reason = ERROR, str(exc)
        return result
    reason = info.not_applicable(scenario.params, compat.features)
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return result
    unjudged = frozenset(info.unjudged)
    if unjudged:
        result.notes.append(f"not judged on {', '.join(sorted(unjudged))}: {info.note}")

    workdir = tempfile.mkdtemp(prefix="eventtime-")
    staging = _connect_staging(spark) if compat.connect else None
    sources = {name: _new_source(spark, staging, name, [(c.name, c.ctype.ddl) for c in src.columns])
               for name, src in scenario.sources.items()}
    default_mode = scenario.params.get("output_mode", "append")
    mode_used = [default_mode]

    def build() -> tuple[Any, str]:
        frames = {name: src.dataframe() for name, src in sources.items()}
        try:
            value = call(frames, scenario.params)
        except Exception as exc:  # noqa: BLE001 - the user's code raised: show its frames, not ours
            raise PipelineRaised(impl_name, exc) from exc
        df, mode = (value.df, value.output_mode or default_mode) if isinstance(value, Output) else (value, default_mode)
        if not hasattr(df, "isStreaming") or not df.isStreaming:
            raise PipelineError(f"pipeline {impl_name} returned {type(df).__name__}, not a streaming DataFrame")
        fields = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        positions = check_output(fields, scenario.contract)  # OutputMismatch: a failed verdict
        mode_used[0] = mode
        # by position, so that an output with two columns of one name stays readable
        positional = df.toDF(*[f"_{i}" for i in range(len(fields))])
        return positional.select(*[f"_{i}" for i in positions]).toDF(*scenario.contract.output_names), mode

    trigger_ms = scenario.trigger.total_ms if scenario.trigger else None
    run: Any
    if staging is not None:
        from eventtime.harness.connect import ConnectStreamRun

        run = ConnectStreamRun(spark, build, staging, timeout=timeout)
    else:
        run = StreamRun(spark, build, checkpoint=str(Path(workdir) / "checkpoint"),
                        clock_start_ms=scenario.clock_start // 1000, trigger_ms=trigger_ms, timeout=timeout,
                        name=None)
    query_conf = {**dict(conf or {}), **info.conf, **scenario.query_conf()}
    since_expect: list[Any] = []
    failure: FailureInfo | None = None
    failure_consumed = False
    fatal = False
    limit: list[str] = []  # over Spark Connect: why the run cannot be reproduced there (not applicable)

    def execute(step_result: StepResult, action: Callable[[], list[Any]]) -> None:
        nonlocal failure, fatal
        t0 = time.monotonic()
        try:
            try:
                batches = action()
            except Exception as exc:
                # whatever py4j raised when the JVM went away, the fact is one: the driver died
                death = driver_death(spark, after=exc)
                if death is None:
                    raise
                died.append((death, step_result))
                step_result.status, step_result.message = ERROR, "the Spark driver died during this step"
                fatal = True
                return
            step_result.batches.extend(batches)
            since_expect.extend(batches)
        except ConnectLimit as exc:
            step_result.status, step_result.message = SKIPPED, str(exc)
            limit.append(str(exc))
            fatal = True
        except QueryFailed as exc:
            failure = _failure_from(exc, compat, step_result.index)
            step_result.message = str(failure)
            step_result.status = ERROR
        except HarnessTimeout as exc:
            step_result.status, step_result.message = ERROR, str(exc)
            fatal = True
        except (HarnessError, PipelineError) as exc:
            step_result.status, step_result.message = ERROR, str(exc)
            fatal = isinstance(exc, HarnessError) and not isinstance(exc, QueryFailed)
            if isinstance(exc, PipelineError):
                failure = FailureInfo(str(exc), [], ["eventtime.runner.PipelineError"], str(exc), step_result.index)
        except OutputMismatch as exc:  # the pipeline breaks its contract: it fails, naming each column
            failure = FailureInfo(str(exc), [], ["eventtime.signatures.OutputMismatch"], str(exc), step_result.index)
            contract = scenario.contract
            step_result.status, step_result.message = FAILED, "the output does not match the contract"
            step_result.failures = [CheckFailure("output_schema", contract.output_where or contract.where or scenario.where,
                                                 f"pipeline {impl_name}: {exc}")]
        except PipelineRaised as exc:  # the user's pipeline raised while the query was built
            failure = _failure_from(exc.original, compat, step_result.index)
            failure.summary = str(exc)
            step_result.status, step_result.message = ERROR, str(exc)
        except Exception as exc:  # noqa: BLE001 - a pipeline or Spark error at start: a verdict, not a crash
            failure = _failure_from(exc, compat, step_result.index)
            step_result.status, step_result.message = ERROR, str(failure)
        finally:
            step_result.seconds = time.monotonic() - t0
            step_result.watermark_ms = _current_watermark(run)

    try:
        start = StepResult(0, "start", scenario.where)
        result.steps.append(start)
        execute(start, lambda: run.start(query_conf))
        for step in scenario.steps:
            sr = StepResult(step.index, step.kind, step.where)
            result.steps.append(sr)
            if fatal:
                sr.status = SKIPPED
                continue
            if isinstance(step, m.ExpectStep):
                observed = Observed(since_expect, list(run.history.values()), mode_used[0],
                                    [c.name for c in scenario.contract.output], failure)
                judge_expect(sr, step, observed, scenario, unjudged)
                if sr.status == SKIPPED:
                    continue
                sr.watermark_ms = observed.watermark_ms
                if step.failure is not None and failure is not None:
                    failure_consumed = True
                since_expect = []
                continue
            if failure is not None:
                sr.status, sr.message = SKIPPED, "not run: the query failed earlier"
                continue
            execute(sr, _action(step, run, sources, query_conf))
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
        shutil.rmtree(workdir, ignore_errors=True)

    if died:
        death, step = died[0]
        result.status, result.cause = ERROR, DRIVER_DIED
        result.reason = death.message(f"during step {step.index} ({step.kind}) of scenario {scenario.name} "
                                      f"[{impl_name}]")
        result.seconds = time.monotonic() - started
        return result
    conclude(result, failure.step if failure is not None and failure_consumed else None)
    if limit:  # Spark Connect could not reproduce what the scenario needs: not applicable, never passed
        result.status, result.reason = NOT_APPLICABLE, f"over Spark Connect: {limit[0]}"
    result.seconds = time.monotonic() - started
    return result


def _action(step: m.Step, run: Any, sources: dict[str, Any],
            query_conf: Mapping[str, str]) -> Callable[[], list[Any]]:
    """What the harness does for one non-expect step; the action returns the batches it ran."""
    if isinstance(step, m.AddStep):
        rows, parts = step.rows, step.parts

        def add() -> list[Any]:
            for name, batch in rows.items():
                if name in parts:
                    sources[name].add_partitions(parts[name])
                else:
                    sources[name].add(batch)
            return []
        return add
    if isinstance(step, m.GenerateStep):
        gen = step

        def generate() -> list[Any]:
            out: list[Any] = []
            source = sources[gen.source]
            for batch in gen.batch_rows():
                placed = gen.batch_parts(batch)
                if placed is None:
                    source.add(batch)
                else:
                    source.add_partitions(placed)
                out += run.process()
            return out
        return generate
    if isinstance(step, m.AdvanceStep):
        ms = step.by.total_ms

        def advance() -> list[Any]:
            if run.running:
                return list(run.advance(ms))
            run.advance_stopped(ms)
            return []
        return advance
    if isinstance(step, m.StartStep):
        conf, restart, new_session = {**query_conf, **step.conf}, step.restart, step.new_session

        def start() -> list[Any]:
            if restart:
                run.stop()
            if new_session:
                from eventtime.harness.session import other_session

                spark = other_session(run.spark)
                for name in list(sources):  # the build closure reads the (mutable) mapping at each start
                    sources[name] = sources[name].replayed_in(spark)
                run.move_to(spark)
            return list(run.start(conf))
        return start
    if isinstance(step, m.StopStep):
        def stop() -> list[Any]:
            run.stop()
            return []
        return stop
    if isinstance(step, m.ProcessStep):
        return lambda: list(run.process())
    raise TypeError(f"no action for step kind {step.kind!r}")


def _current_watermark(run: Any) -> int | None:
    if not run.history:
        return 0
    last = run.history[max(run.history)]
    return last.watermark_after_ms
