"""Runs a scenario's steps on the model and records what each step observes, in the harness's shape."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from eventtime.harness.observations import BatchObservation

from .. import spec as m
from ..drive import Action, drive
from .microbatch import MicroBatchDriver, MicroBatchQuery, ModelError
from .plans import NotCovered, plan_for
from .state import QueryFailure

__all__ = ["PROFILES", "StepObservation", "Simulation", "PredictedFailure", "simulate", "NotCovered", "ModelError"]

PROFILES = ("spark", "dataflow")


@dataclass
class StepObservation:
    """What one step did on the model: the batches it ran and the global watermark after it.

    `index` 0 with `step` None is the implicit start before the first step (Spark runs one
    trigger at once at start).
    """

    index: int
    kind: str
    step: m.Step | None
    batches: list[BatchObservation] = field(default_factory=list)
    watermark_ms: int = 0
    ran: bool = True  # False for a step after the query failed (the harness does not run it)
    state: Any = None  # an expect's `state` check: the model's state table then (a ModelState), or why not


@dataclass(frozen=True)
class PredictedFailure:
    """The model predicts that the query fails at step `index` with Spark's `error_class`."""

    index: int
    error_class: str
    message: str


@dataclass
class Simulation:
    """The model's run of a scenario: one StepObservation per step (plus the implicit start)."""

    scenario: m.Scenario
    profile: str
    steps: list[StepObservation]
    failure: PredictedFailure | None = None

    @property
    def history(self) -> list[BatchObservation]:
        return [b for s in self.steps for b in s.batches]

    def observed_by_expects(self) -> list[tuple[m.ExpectStep, list[BatchObservation], list[BatchObservation]]]:
        """For each `expect`: (the step, batches since the previous expect, every batch so far)."""
        out, since_expect, history = [], [], []
        for s in self.steps:
            since_expect += s.batches
            history += s.batches
            if isinstance(s.step, m.ExpectStep):
                out.append((s.step, since_expect, list(history)))
                since_expect = []
        return out

    def expect_watermarks(self) -> list[int]:
        """The watermark each `expect` observes, in step order: the query's at that step (under the
        dataflow profile `initial` after a restart until a watermark is emitted, where the last batch's
        was higher)."""
        return [s.watermark_ms for s in self.steps if isinstance(s.step, m.ExpectStep)]


@dataclass
class ModelState:
    """The model's answer to a `state` check: as `eventtime.statecheck.StateRows`."""

    operator: str
    fields: dict[str, str]
    rows: list[tuple]


def _state_checks(scenario: m.Scenario) -> list[m.StateCheck]:
    return [s.state for s in scenario.steps if isinstance(s, m.ExpectStep) and s.state is not None]


def _chosen(plan: Any, check: m.StateCheck) -> tuple[int, Any] | None:
    """The operator a state check names, numbered as Spark's progress lists them (nearest the sink first)."""
    ops = list(reversed(plan.operators))
    if isinstance(check.operator, int) and not isinstance(check.operator, bool):
        return (check.operator, ops[check.operator]) if check.operator < len(ops) else None
    named = [(i, op) for i, op in enumerate(ops) if check.operator is None or op.name == check.operator]
    return named[0] if len(named) == 1 else None


def _state_covered(scenario: m.Scenario, plan: Any) -> None:
    for check in _state_checks(scenario):
        chosen = _chosen(plan, check)
        if chosen is None or chosen[1].state_table(check.side, check.variable) is None:
            raise NotCovered(f"{check.where}: the model gives the state contents (`state` check) of an aggregation "
                             "by window, a session window, dropDuplicates, each side of a "
                             "stream-stream join and hold_timer's variable `group`, not of this operator or store")


def model_state(plan: Any, check: m.StateCheck) -> ModelState | str:
    """The state a `state` check names, as the model holds it after the step."""
    chosen = _chosen(plan, check)
    assert chosen is not None  # _state_covered
    position, op = chosen
    table = op.state_table(check.side, check.variable)
    assert table is not None
    fields, rows = table
    missing = [c for c in check.columns if c not in fields]
    label = f"{op.name} (operator {position}{', ' + check.side + ' side' if check.side else ''}"
    label += f", variable {check.variable!r})" if check.variable else ")"
    if missing:
        return f"the state of {label} has no field {missing[0]!r} (fields: {', '.join(fields)})"
    return ModelState(label, fields, [tuple(r[c] for c in check.columns) for r in rows])


def _uncovered_checks(scenario: m.Scenario, spark_profile: bool = False) -> list[str]:
    return [f"{s.where}: the model does not predict failures (`failure` check) other than a GroupState "
            "timeout below the watermark, and predicts none here"
            for s in scenario.steps if isinstance(s, m.ExpectStep) and s.failure is not None] + [
        f"{s.where}: the model does not see what a job writes (`table`/`written`/`topic` check)"
        for s in scenario.steps if isinstance(s, m.ExpectStep) and (s.written is not None or s.topic is not None)] + [
        f"{s.where}: the model does not predict a pipeline's output schema (`schema` check: nullability is "
        "Spark's planner's)" for s in scenario.steps if isinstance(s, m.ExpectStep) and s.schema is not None] + [
        f"{s.where}: the model does not count rows updated in state (`updated`: numRowsUpdated)"
        for s in scenario.steps if isinstance(s, m.ExpectStep) and not spark_profile and _checks_updated(s)] + [
        f"{c.where}: the dataflow profile does not model Spark's state store (`state` check)"
        for c in _state_checks(scenario) if not spark_profile]


def _checks_updated(step: m.ExpectStep) -> bool:
    return (step.updated is not None or step.updated_since_check is not None
            or any(o.updated is not None or o.updated_since_check is not None for o in step.operators or ())
            or any(b.updated is not None for b in step.batches or ()))


def simulate(scenario: m.Scenario, profile: str | None = None) -> Simulation:
    """Run `scenario` on the model under `profile` (default: the scenario's own, `spark` unless it
    states `profile: dataflow`); raises NotCovered when the model has no rules for it, and
    ModelError for a step the query cannot take (as the harness would report an error)."""
    profile = profile or scenario.profile
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    payloads = [src for src in scenario.sources.values() if src.kind != "rows"]
    if payloads:  # checked first: it holds for a bundled contract too, and says why more precisely
        src = payloads[0]
        raise NotCovered(f"source {src.name!r} is a {src.kind} source: its event time is inside a payload the "
                         "pipeline parses, which the model cannot know, so it predicts nothing here (run the "
                         "scenario on Spark)")
    if not scenario.contract.bundled:  # the model knows the bundled contracts' pipelines, not the user's
        raise NotCovered(f"contract {scenario.contract.name!r} is yours: the model implements the bundled "
                         "contracts only, so it predicts nothing for your pipeline (run the scenario on Spark)")
    reruns = [s for s in scenario.steps if isinstance(s, m.StartStep) and s.rerun_last_batch]
    if reruns:
        raise NotCovered(f"{reruns[0].where}: the model does not re-run a batch after a crash (`rerun_last_batch`)")
    selective = m.pipeline_only(scenario)
    if selective is not None:
        raise NotCovered(f"{selective.where}: the model does not model a pipeline update's selection or full refresh")
    if profile == "dataflow":
        return _simulate_dataflow(scenario)
    settings = [f"{src.where}: source {src.name!r} sets {', '.join(src.dataflow_keys)}: dataflow-only source "
                "settings (Flink's sources and watermark generators)" for src in scenario.sources.values()
                if src.dataflow_keys]
    only = [f"{s.where}: step {s.kind!r} gives a watermark or a stream status as input" for s in scenario.steps
            if isinstance(s, m.InputStep)] + [
        f"{s.watermarks_where}: `watermarks` checks the watermarks an operator forwarded" for s in scenario.steps
        if isinstance(s, m.ExpectStep) and s.watermarks is not None] + [
        f"{s.statuses_where}: `statuses` checks the stream statuses an operator emitted" for s in scenario.steps
        if isinstance(s, m.ExpectStep) and s.statuses is not None]
    if settings or only:  # a dataflow scenario asked under the spark profile: every such source, the first step
        raise NotCovered(f"{'; '.join(settings + only[:1])}, which the spark profile's model does not take: Spark "
                         "derives its watermark from the data and has no stream status (judge it under the dataflow "
                         "profile)")
    plan = plan_for(scenario)
    _state_covered(scenario, plan)
    uncounted = [op.name for op in plan.operators if not op.counts_updates]
    if uncounted and any(_checks_updated(s) for s in scenario.steps if isinstance(s, m.ExpectStep)):
        raise NotCovered(f"the model does not count rows updated in state (`updated`: numRowsUpdated) by "
                         f"{', '.join(uncounted)}")
    query = MicroBatchQuery(plan, tuple(scenario.sources), clock_start_ms=scenario.clock_start_us // 1000,
                            trigger_ms=scenario.trigger.total_ms if scenario.trigger else None)
    recorder = _Recorder(lambda: query.global_ms, query.stop, lambda check: model_state(plan, check))
    drive(scenario, MicroBatchDriver(query, _columns(scenario)), scenario.query_conf(), recorder)
    if recorder.failure is None:
        problems = _uncovered_checks(scenario, spark_profile=True)
        if problems:
            raise NotCovered("; ".join(problems))
    return Simulation(scenario, profile, recorder.steps, recorder.failure)


def _columns(scenario: m.Scenario) -> dict[str, tuple[str, ...]]:
    return {name: tuple(src.column_names) for name, src in scenario.sources.items()}


class _Recorder:
    """The model's side of `drive`: one StepObservation per step. A predicted failure (QueryFailure)
    stops the query; the steps after it do not run (expects only look), as on the harness."""

    def __init__(self, watermark_ms: Callable[[], int], stop: Callable[[], None],
                 state_of: Callable[[m.StateCheck], Any] | None = None):
        self.watermark_ms, self.stop, self.state_of = watermark_ms, stop, state_of
        self.steps: list[StepObservation] = []
        self.failure: PredictedFailure | None = None

    def _record(self, obs: StepObservation) -> None:
        self.steps.append(obs)
        obs.watermark_ms = self.watermark_ms()

    def skips(self, step: m.Step) -> bool:
        if self.failure is None:
            return False
        self._record(StepObservation(step.index, step.kind, step, ran=isinstance(step, m.ExpectStep)))
        return True

    def expect(self, step: m.ExpectStep, since_expect: list[BatchObservation]) -> bool:
        obs = StepObservation(step.index, step.kind, step)
        if step.state is not None and self.state_of is not None:
            obs.state = self.state_of(step.state)
        self._record(obs)
        return True

    def run(self, step: m.Step | None, action: Action) -> list[BatchObservation]:
        if step is None:  # the implicit start
            obs = StepObservation(0, "start", None, action())
        else:
            obs = StepObservation(step.index, step.kind, step)
            try:
                obs.batches = action()
            except QueryFailure as exc:  # the step raised: the batches it ran are not reported
                self.failure = PredictedFailure(step.index, exc.error_class, str(exc))
                self.stop()
        self._record(obs)
        return obs.batches


def _simulate_dataflow(scenario: m.Scenario) -> Simulation:
    """The dataflow profile (`dataflow`): Flink's event-time rules on the scenario's micro-batches."""
    from .dataflow import dataflow_query

    problems = _uncovered_checks(scenario)
    if problems:
        raise NotCovered("; ".join(problems))
    driver = dataflow_query(scenario)

    # the operator's watermark now: after a restart it starts again (not checkpointed), before any batch
    recorder = _Recorder(lambda: driver.query.reported_watermark, driver.stop)
    drive(scenario, driver, scenario.query_conf(), recorder)
    return Simulation(scenario, "dataflow", recorder.steps)
