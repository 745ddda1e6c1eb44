"""check-model: the judge applied to the model's observations, so the suite and the model keep each other honest.

A scenario's expectations were confirmed on Spark; the model computes its own observations for
the same steps. Judging the model's observations with the same judge that judges Spark runs
(`eventtime.judge.judge`) gives, per scenario, `passed` (the model agrees with every
expectation), `failed` (a disagreement, located at the expectation's file:line) or
`not_applicable` (the model does not cover the scenario, with the reason).
"""
from __future__ import annotations


from eventtime.harness.observations import BatchObservation

from ..judge import Observed, judge_expect
from ..spec import ExpectStep, RunStep, Scenario, StartStep, checks_since_check
from ..statecheck import judge_state
from ..results import ERROR, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, FailureInfo, ScenarioResult, StepResult, conclude
from .simulate import ModelError, NotCovered, PredictedFailure, simulate

__all__ = ["check_scenario", "MODEL_IMPLEMENTATION"]

MODEL_IMPLEMENTATION = "model (spark profile)"


def check_scenario(scenario: Scenario, profile: str | None = None) -> ScenarioResult:
    """Judge the model's observations against every `expect` of `scenario`, under `profile` (default:
    the scenario's own, `spark` unless it states `profile: dataflow`)."""
    profile = profile or scenario.profile
    impl = f"model ({profile} profile)"
    result = ScenarioResult(scenario, impl, PASSED, rerun=f"eventtime check-model {scenario.path}")
    try:
        sim = simulate(scenario, profile)
    except NotCovered as exc:
        result.status, result.reason = NOT_APPLICABLE, f"not covered by the model: {exc}"
        return result
    except ModelError as exc:
        result.status, result.reason = ERROR, str(exc)
        return result
    mode = scenario.params.get("output_mode", "append")
    columns = [c.name for c in scenario.contract.output]
    since_expect: list[BatchObservation] = []
    since_check: list[BatchObservation] = []  # since the previous `*_since_check` check or start
    history: list[BatchObservation] = []
    failed = _failure_info(sim.failure)
    consumed = False
    for obs in sim.steps:
        sr = StepResult(obs.index, obs.kind, obs.step.where if obs.step else scenario.where,
                        batches=list(obs.batches), watermark_ms=obs.watermark_ms)
        result.steps.append(sr)
        if isinstance(obs.step, (StartStep, RunStep)):
            since_check = []  # as the runner: a started query's progresses begin anew
        since_expect += obs.batches
        since_check += obs.batches
        history += obs.batches
        # as the runner does: after a failure only `failure` checks are judged, other steps are skipped
        failure_now = failed if sim.failure is not None and obs.index >= sim.failure.index else None
        if isinstance(obs.step, ExpectStep):
            judge_expect(sr, obs.step, Observed(since_expect, history, mode, columns, failure_now,
                                                since_check=since_check, watermark_now_ms=obs.watermark_ms), scenario)
            if sr.status == SKIPPED:
                continue
            if checks_since_check(obs.step):
                since_check = []
            if obs.step.state is not None and failure_now is None:
                sr.failures += judge_state(obs.step.state, obs.state, scenario, obs.step.tolerance)
                sr.observed.state_judged = obs.state  # what `eventtime.teeth` judges mutated rows on
                sr.status = FAILED if sr.failures else sr.status
            consumed = consumed or (obs.step.failure is not None and failure_now is not None)
            since_expect = []
        elif sim.failure is not None and obs.index == sim.failure.index:
            sr.status, sr.message = ERROR, f"the model predicts the query fails here: {sim.failure.message}"
        elif not obs.ran:
            sr.status, sr.message = SKIPPED, "not run: the query failed earlier"
    conclude(result, sim.failure.index if sim.failure is not None and consumed else None)
    return result


def _failure_info(failure: PredictedFailure | None) -> FailureInfo | None:
    """The predicted failure as the judge reads a query's failure for `failure` checks."""
    if failure is None:
        return None
    return FailureInfo(failure.message, [failure.error_class], [], failure.message, failure.index)
