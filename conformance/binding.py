"""The implementation a scenario runs, prepared: resolved from its binding (or the contract's reference),
found applicable here, its caller made (a pipeline's, or a job's entry point); the previous version of a
run across a change is prepared the same way (`upgrade.NewVersion`)."""
from __future__ import annotations

from typing import Any, Callable

from . import spec as m
from .applicability import OVER_CONNECT, applicability, connect_applicability
from .results import ERROR, NOT_APPLICABLE, ScenarioResult
from .userpipeline import (DeclarativePipeline, Pipeline, PipelineError, SignatureError, implementation_info, is_job,
                           pipeline_caller, resolve_pipeline)

__all__ = ["prepare"]


def prepare(result: ScenarioResult, pipeline: Pipeline | str | None, compat: Any
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
    if isinstance(fn, DeclarativePipeline):  # its steps run as updates (`sdpsteps`), not as a query's
        return (fn, None, False) if _declarative(result, fn, compat) else None
    if _pipeline_only(result):
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


def _pipeline_only(result: ScenarioResult) -> bool:
    """Whether the scenario has a step only a Spark Declarative Pipeline runs (an error at its line then):
    the implementation bound is a job or a function."""
    only = m.pipeline_only(result.scenario)
    if only is not None:
        result.status = ERROR
        result.reason = (f"{only.where}: `update` with a selection or a full refresh runs on a Spark Declarative "
                         f"Pipeline only (bound by its spec, docs/pipelines.md), and {result.implementation} is not "
                         "one: a job or a function has no datasets to select (a plain `update` or `process` is one "
                         "run of all it does)")
    return only is not None


def _declarative(result: ScenarioResult, pipeline: DeclarativePipeline, compat: Any) -> bool:
    """Whether a Spark Declarative Pipeline (docs/pipelines.md) runs here: not applicable without
    `pyspark.pipelines` or on a classic session (the reason from the version seam); what its files make
    untestable (a SQL file reading a source) is an error at the file's line, whatever the session."""
    from eventtime.harness.pipelinegraph import PipelineLoadError, available, check_definitions

    reason = compat.pipelines_not_applicable()
    if not available():
        result.status, result.reason = NOT_APPLICABLE, reason
        return False
    try:
        check_definitions(pipeline.spec)
    except PipelineLoadError as exc:
        result.status, result.reason = ERROR, str(exc)
        return False
    if reason:
        result.status, result.reason = NOT_APPLICABLE, reason
        return False
    return True
