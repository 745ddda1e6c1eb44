"""Runs a scenario against a pipeline on the harness and produces a `ScenarioResult`."""
from __future__ import annotations

import importlib
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from . import model as m
from .contracts import implementation_info
from .judge import Observed, judge
from .results import ERROR, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, ScenarioResult, StepResult

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
            raise PipelineError(f"module {module_name!r} has no {attr!r} (pipeline {ref!r})")
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


@dataclass
class FailureInfo:
    """A failure of the query or of the pipeline, kept for `expect: failure` and for reports."""

    summary: str
    error_classes: list[str] = field(default_factory=list)
    exception_names: list[str] = field(default_factory=list)
    text: str = ""
    step: int = 0

    def __str__(self) -> str:
        return self.summary


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
    """
    from eventtime.harness.compat import compat_for
    from eventtime.harness.session import get_session, runtime_info
    from eventtime.harness.connect import ConnectLimit
    from eventtime.harness.stream import HarnessError, HarnessTimeout, QueryFailed, StreamRun

    started = time.monotonic()
    ref = pipeline if isinstance(pipeline, str) else None
    impl_name = implementation or ref or (getattr(pipeline, "__module__", "") + ":" + getattr(
        pipeline, "__qualname__", "") if pipeline is not None else scenario.contract.reference)
    spark = session or get_session()
    compat = compat_for(spark)
    result = ScenarioResult(scenario, impl_name, PASSED, spark_version=spark.version, rerun=rerun,
                            runtime=_connect_runtime(spark) if compat.connect else runtime_info(spark))

    reason = applicability(scenario, spark.version, compat.features) or (
        connect_applicability(scenario) if compat.connect else None)
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return result
    try:
        fn = resolve_pipeline(pipeline or scenario.contract.reference) if pipeline is None or isinstance(
            pipeline, str) else pipeline
    except PipelineError as exc:
        result.status, result.reason = ERROR, str(exc)
        return result
    info = implementation_info(fn)
    reason = info.not_applicable(scenario.params, compat.features)
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return result
    unjudged = frozenset(info.unjudged)
    if unjudged:
        result.notes.append(f"not judged on {', '.join(sorted(unjudged))}: {info.note}")

    workdir = tempfile.mkdtemp(prefix="eventtime-")
    staging = _connect_staging(spark) if compat.connect else None
    sources = {name: _new_source(spark, staging, name, [(c.name, c.type) for c in src.columns])
               for name, src in scenario.sources.items()}
    default_mode = scenario.params.get("output_mode", "append")
    mode_used = [default_mode]

    def build() -> tuple[Any, str]:
        frames = {name: src.dataframe() for name, src in sources.items()}
        value = fn(frames, scenario.params)
        df, mode = (value.df, value.output_mode or default_mode) if isinstance(value, Output) else (value, default_mode)
        if not hasattr(df, "isStreaming") or not df.isStreaming:
            raise PipelineError(f"pipeline {impl_name} returned {type(df).__name__}, not a streaming DataFrame")
        have = [f.name for f in df.schema.fields]
        lacking = [c.name for c in scenario.contract.output if c.name not in have]
        if lacking:
            raise PipelineError(f"pipeline {impl_name} does not produce column(s) {', '.join(lacking)} that "
                                f"contract {scenario.contract.name!r} promises (it produces: {', '.join(have)})")
        wanted = [c.name for c in scenario.contract.output]
        mode_used[0] = mode
        return df.select(*wanted), mode

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
    window: list[Any] = []
    failure: FailureInfo | None = None
    failure_consumed = False
    fatal = False
    limit: list[str] = []  # over Spark Connect: why the run cannot be reproduced there (not applicable)

    def execute(step_result: StepResult, action: Callable[[], list[Any]]) -> None:
        nonlocal failure, fatal
        t0 = time.monotonic()
        try:
            batches = action()
            step_result.batches.extend(batches)
            window.extend(batches)
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
        result.output_columns = run.output_columns
        for step in scenario.steps:
            sr = StepResult(step.index, step.kind, step.where)
            result.steps.append(sr)
            if fatal:
                sr.status = SKIPPED
                continue
            if isinstance(step, m.ExpectStep):
                if failure is not None and step.failure is None:
                    sr.status, sr.message = SKIPPED, "not checked: the query failed earlier"
                    continue
                observed = Observed(window, list(run.history.values()), mode_used[0],
                                    [c.name for c in scenario.contract.output], failure)
                sr.failures = judge(step, observed, scenario, unjudged)
                sr.status = FAILED if sr.failures else PASSED
                sr.watermark_ms = observed.watermark_ms
                if step.failure is not None and failure is not None:
                    failure_consumed = True
                window = []
                continue
            if failure is not None:
                sr.status, sr.message = SKIPPED, "not run: the query failed earlier"
                continue
            execute(sr, _action(step, run, sources, query_conf))
    finally:
        run.close()
        shutil.rmtree(workdir, ignore_errors=True)

    if failure is not None and failure_consumed:
        for sr in result.steps:  # the failure was expected: the step that hit it did its job
            if sr.status == ERROR and sr.index == failure.step:
                sr.status = PASSED
    statuses = {s.status for s in result.steps}
    if limit:
        result.status, result.reason = NOT_APPLICABLE, f"over Spark Connect: {limit[0]}"
    elif ERROR in statuses:
        result.status = ERROR
        first = next(s for s in result.steps if s.status == ERROR)
        result.reason = f"step {first.index} ({first.kind}): {first.message}"
    elif FAILED in statuses:
        result.status = FAILED
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
