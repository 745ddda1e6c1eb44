"""Runs a scenario's steps on the model and records what each step observes, in the harness's shape."""
from __future__ import annotations

from dataclasses import dataclass, field
from eventtime.harness.observations import BatchObservation

from .. import model as m
from .microbatch import MicroBatchQuery, ModelError, rows_as_dicts
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
    running: bool = True
    ran: bool = True  # False for a step after the query failed (the harness does not run it)


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


def _uncovered_checks(scenario: m.Scenario) -> list[str]:
    return [f"{s.where}: the model does not predict failures (`failure` check) other than a GroupState "
            "timeout below the watermark, and predicts none here"
            for s in scenario.steps if isinstance(s, m.ExpectStep) and s.failure is not None]


def simulate(scenario: m.Scenario, profile: str | None = None) -> Simulation:
    """Run `scenario` on the model under `profile` (default: the scenario's own, `spark` unless it
    states `profile: dataflow`); raises NotCovered when the model has no rules for it, and
    ModelError for a step the query cannot take (as the harness would report an error)."""
    profile = profile or scenario.profile
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (profiles: {', '.join(PROFILES)})")
    if not scenario.contract.bundled:  # the model knows the bundled contracts' pipelines, not the user's
        raise NotCovered(f"contract {scenario.contract.name!r} is yours: the model implements the bundled "
                         "contracts only, so it predicts nothing for your pipeline (run the scenario on Spark)")
    if profile == "dataflow":
        return _simulate_dataflow(scenario)
    plan = plan_for(scenario)
    query = MicroBatchQuery(plan, tuple(scenario.sources), clock_start_ms=scenario.clock_start // 1000,
                            trigger_ms=scenario.trigger.total_ms if scenario.trigger else None)
    columns = {name: src.column_names for name, src in scenario.sources.items()}
    base_conf = scenario.query_conf()
    start = StepObservation(0, "start", None)
    start.batches = query.start(base_conf)
    start.watermark_ms = query.global_ms
    steps = [start]
    failure: PredictedFailure | None = None
    for step in scenario.steps:
        obs = StepObservation(step.index, step.kind, step)
        if failure is not None:  # the harness runs nothing after a failure (expects only look)
            obs.watermark_ms, obs.running, obs.ran = query.global_ms, False, isinstance(step, m.ExpectStep)
            steps.append(obs)
            continue
        try:
            _run_step(query, step, obs, columns, base_conf)
        except QueryFailure as exc:
            failure = PredictedFailure(step.index, exc.error_class, str(exc))
            query.stop()
            obs.batches = []  # the step raised: the batches it ran are not reported
        obs.watermark_ms = query.global_ms
        obs.running = query.running
        steps.append(obs)
    if failure is None:
        problems = _uncovered_checks(scenario)
        if problems:
            raise NotCovered("; ".join(problems))
    return Simulation(scenario, profile, steps, failure)


def _run_step(query: MicroBatchQuery, step: m.Step, obs: StepObservation, columns: dict, base_conf: dict) -> None:
    if isinstance(step, m.AddStep):  # each input partition is one addData, as the harness adds it
        for name, rows in step.rows.items():
            for part in step.parts.get(name, (rows,)):
                query.add(name, rows_as_dicts(columns[name], part))
    elif isinstance(step, m.ProcessStep):
        obs.batches = query.process()
    elif isinstance(step, m.GenerateStep):  # per batch: one add (one addData per partition), one process
        for rows in step.batch_rows():
            for part in step.batch_parts(rows) or (rows,):
                query.add(step.source, rows_as_dicts(columns[step.source], part))
            obs.batches += query.process()
    elif isinstance(step, m.AdvanceStep):
        obs.batches = query.advance(step.by.total_ms)
    elif isinstance(step, m.StopStep):
        query.stop()
    elif isinstance(step, m.StartStep):
        if step.restart:
            query.stop()
        obs.batches = query.start({**base_conf, **step.conf})


def _simulate_dataflow(scenario: m.Scenario) -> Simulation:
    """The dataflow profile (`dataflow`): Flink's event-time rules on the scenario's micro-batches."""
    from .dataflow import dataflow_steps

    problems = _uncovered_checks(scenario)
    if problems:
        raise NotCovered("; ".join(problems))
    query, ran = dataflow_steps(scenario)
    steps = []
    for step, batches in ran:
        obs = StepObservation(step.index if step else 0, step.kind if step else "start", step, list(batches))
        steps.append(obs)
    wm = 0
    for obs in steps:  # the watermark after each step: what the last batch so far left
        if obs.batches:
            wm = obs.batches[-1].watermark_after_ms or 0
        obs.watermark_ms = wm
    return Simulation(scenario, "dataflow", steps)
