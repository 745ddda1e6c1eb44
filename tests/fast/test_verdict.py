"""The scenario verdict from step verdicts (`results.conclude`), the one aggregation the Spark runner
and the model's check share."""
from __future__ import annotations

import pytest

from eventtime.results import ERROR, FAILED, PASSED, SKIPPED, ScenarioResult, StepResult, conclude


def _result(*statuses: str) -> ScenarioResult:
    steps = [StepResult(i, "process", None, status=s, message=f"m{i}") for i, s in enumerate(statuses)]
    return ScenarioResult(None, "impl", PASSED, steps=steps)  # type: ignore[arg-type]


@pytest.mark.parametrize("statuses, verdict", [
    ((PASSED, PASSED), PASSED),
    ((PASSED, SKIPPED), PASSED),
    ((PASSED, FAILED), FAILED),
    ((FAILED, ERROR, PASSED), ERROR),  # an error outranks a failed check
])
def test_the_worst_step_decides(statuses, verdict):
    r = _result(*statuses)
    conclude(r)
    assert r.status == verdict


def test_the_reason_names_the_first_error():
    r = _result(PASSED, ERROR, ERROR)
    conclude(r)
    assert r.reason == "step 1 (process): m1"


def test_an_expected_failure_passes_only_the_step_that_hit_it():
    r = _result(PASSED, ERROR, PASSED)
    conclude(r, expected_failure_step=1)
    assert (r.status, [s.status for s in r.steps]) == (PASSED, [PASSED, PASSED, PASSED])
    other = _result(ERROR, ERROR, PASSED)  # control: an error at another step still decides
    conclude(other, expected_failure_step=1)
    assert (other.status, other.reason) == (ERROR, "step 0 (process): m0")
