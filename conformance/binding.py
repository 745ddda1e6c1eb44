"""The implementation a scenario runs, prepared: resolved from its binding (or the contract's reference),
found applicable here, its caller made (a pipeline's, or a job's entry point); and the previous version
of a run across a change, prepared as the current one is."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import spec as m
from .applicability import OVER_CONNECT, applicability, connect_applicability
from .results import ERROR, NOT_APPLICABLE, ScenarioResult
from .userpipeline import (Pipeline, PipelineError, SignatureError, implementation_info, is_job, pipeline_caller,
                           resolve_pipeline)

__all__ = ["prepare", "Previous", "previous_version"]


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
class Previous:
    """The previous version of a run across a change: its caller and name, the step where it hands over."""

    call: Callable[..., Any]
    name: str
    restart: m.StartStep
    unjudged: frozenset[str]


def previous_version(result: ScenarioResult, previous: Pipeline | str, name: str | None, compat: Any, job: bool
                      ) -> Previous | None:
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
    prepared = prepare(result, previous, compat)
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
    return Previous(call, name, restart, frozenset(info.unjudged))
