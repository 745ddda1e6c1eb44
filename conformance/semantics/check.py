"""check-model: the judge applied to the model's observations, so the suite and the model keep each other honest.

A scenario's expectations were confirmed on Spark; the model computes its own observations for
the same steps. Judging the model's observations with the same judge that judges Spark runs
(`conformance.judge.judge`) gives, per scenario, `passed` (the model agrees with every
expectation), `failed` (a disagreement, located at the expectation's file:line) or
`not_applicable` (the model does not cover the scenario, with the reason).
"""
from __future__ import annotations

from ..judge import Observed, judge
from ..model import ExpectStep, Scenario
from ..results import ERROR, FAILED, NOT_APPLICABLE, PASSED, ScenarioResult, StepResult
from .simulate import ModelError, NotCovered, simulate

__all__ = ["check_scenario", "MODEL_IMPLEMENTATION"]

MODEL_IMPLEMENTATION = "model (spark profile)"


def check_scenario(scenario: Scenario, profile: str = "spark") -> ScenarioResult:
    """Judge the model's observations against every `expect` of `scenario`."""
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
    window: list = []
    history: list = []
    for obs in sim.steps:
        sr = StepResult(obs.index, obs.kind, obs.step.where if obs.step else scenario.where,
                        batches=list(obs.batches), watermark_ms=obs.watermark_ms)
        result.steps.append(sr)
        window += obs.batches
        history += obs.batches
        if isinstance(obs.step, ExpectStep):
            sr.failures = judge(obs.step, Observed(window, history, mode, columns), scenario)
            sr.status = FAILED if sr.failures else PASSED
            window = []
    if any(s.status == FAILED for s in result.steps):
        result.status = FAILED
    return result
