"""Structured results of running scenarios: per step, what ran, what was checked, and the verdict."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eventtime.harness.observations import BatchObservation

from .spec import Scenario, Where

__all__ = ["PASSED", "FAILED", "ERROR", "NOT_APPLICABLE", "SKIPPED", "STATUSES", "FAILING", "PROPERTY_VERDICTS", "PROPERTY_FAILING", "judged_ways", "DRIVER_DIED", "CheckFailure", "FailureInfo",
           "StepResult", "ScenarioResult", "conclude"]

PASSED, FAILED, ERROR, NOT_APPLICABLE, SKIPPED = "passed", "failed", "error", "not_applicable", "skipped"
STATUSES = (PASSED, FAILED, ERROR, NOT_APPLICABLE)  # a scenario's verdict (SKIPPED is a step's only)
FAILING = (FAILED, ERROR)  # the verdicts that fail a run
# A property's verdict over a check on generated streams (`eventtime.properties`), and those that fail it
PROPERTY_VERDICTS = ("held", "broken", "not_checked", "judged_nothing", "does_not_apply")
PROPERTY_FAILING = ("broken", "not_checked", "judged_nothing")


def judged_ways(ways: Any) -> str:
    """How a property's streams were judged, as its line says it: ` (judged by a split on 8, a merge on 2)`."""
    if not isinstance(ways, dict) or not ways:
        return ""
    return " (judged by " + ", ".join(f"a {how} on {n}" for how, n in sorted(ways.items(), reverse=True)) + ")"


# The cause of an `error` that is not the pipeline's: the Spark driver JVM died under the run.
DRIVER_DIED = "driver_died"


@dataclass
class CheckFailure:
    """One expectation that did not hold."""

    check: str  # rows | output | last_batch | watermark | dropped | state_rows | batches | event_time | failure
    where: Where
    message: str
    expected: Any = None
    actual: Any = None
    missing: list[tuple] = field(default_factory=list)
    unexpected: list[tuple] = field(default_factory=list)
    columns: tuple[str, ...] = ()
    part: str | None = None  # for a `batches` failure: which field of the batch (rows, dropped, ...)
    types: tuple[str, ...] = ()  # the types of `columns` where they are not the contract's output's (state rows)
    explanation: str = ""  # why, in event-time terms (`eventtime.explain`): lines shown below the message

    def to_dict(self) -> dict:
        return {"check": self.check, "where": str(self.where), "message": self.message,
                "expected": self.expected, "actual": self.actual,
                "missing": [list(r) for r in self.missing], "unexpected": [list(r) for r in self.unexpected],
                "columns": list(self.columns), "part": self.part, **({"types": list(self.types)} if self.types else {}),
                **({"explanation": self.explanation} if self.explanation else {})}


@dataclass
class FailureInfo:
    """A failure of the query or of the pipeline, kept for `expect: failure` and for reports."""

    summary: str
    error_classes: list[str] = field(default_factory=list)
    exception_names: list[str] = field(default_factory=list)
    text: str = ""
    step: int = 0
    query: str | None = None  # the query of a job's several that failed (None: the only one, or not known)

    def __str__(self) -> str:
        return self.summary


@dataclass
class StepResult:
    index: int  # 1-based position in the file's step list; 0 = the implicit start
    kind: str
    where: Where | None
    status: str = PASSED  # passed | failed | error | skipped
    batches: list[BatchObservation] = field(default_factory=list)
    failures: list[CheckFailure] = field(default_factory=list)
    message: str | None = None
    watermark_ms: int | None = None  # global watermark after the step
    seconds: float = 0.0
    # what an expect step looked at (`judge.Observed`, or a topic's records): what a snapshot writes
    observed: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"index": self.index, "kind": self.kind, "where": str(self.where) if self.where else None,
                "status": self.status, "message": self.message, "watermark_ms": self.watermark_ms,
                "seconds": round(self.seconds, 4), "batches": [b.to_dict() for b in self.batches],
                "failures": [f.to_dict() for f in self.failures]}


@dataclass
class ScenarioResult:
    scenario: Scenario
    implementation: str
    status: str
    steps: list[StepResult] = field(default_factory=list)
    reason: str | None = None  # for error / not applicable
    seconds: float = 0.0
    spark_version: str | None = None
    rerun: str | None = None
    notes: list[str] = field(default_factory=list)  # e.g. checks the implementation is not judged on
    runtime: dict[str, str] = field(default_factory=dict)  # Spark / PySpark / Java versions, master
    cause: str | None = None  # for an `error` not of the pipeline's making: DRIVER_DIED
    # run across a change (`run_scenario(previous=...)`): the previous version, the restart step and
    # the outcome (`eventtime.upgrade`)
    upgrade: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def failed_steps(self) -> list[StepResult]:
        return [s for s in self.steps if s.status in (FAILED, ERROR)]

    @property
    def batches(self) -> int:
        return sum(len(s.batches) for s in self.steps)

    def to_dict(self) -> dict:
        sc = self.scenario
        return {"scenario": sc.name, "file": sc.path, "contract": sc.contract.name, "tags": list(sc.tags),
                "implementation": self.implementation, "status": self.status, "reason": self.reason,
                "seconds": round(self.seconds, 3), "spark_version": self.spark_version, "rerun": self.rerun,
                "notes": list(self.notes), "steps": [s.to_dict() for s in self.steps],
                **({"cause": self.cause} if self.cause else {}),
                **({"upgrade": dict(self.upgrade)} if self.upgrade is not None else {})}


def conclude(result: ScenarioResult, expected_failure_step: int | None = None) -> None:
    """Set the scenario's verdict from its steps' (the one aggregation the Spark runner and the model
    share): `error` if a step erred (the reason names the first), else `failed` if a check failed,
    else `passed`. `expected_failure_step`: the step where the query failed when a `failure` check
    expected that failure; that step did its job, so its error becomes a pass."""
    if expected_failure_step is not None:
        for sr in result.steps:
            if sr.status == ERROR and sr.index == expected_failure_step:
                sr.status = PASSED
    first_error = next((s for s in result.steps if s.status == ERROR), None)
    if first_error is not None:
        result.status = ERROR
        result.reason = f"step {first_error.index} ({first_error.kind}): {first_error.message}"
    elif any(s.status == FAILED for s in result.steps):
        result.status = FAILED
    else:
        result.status = PASSED
