"""The one interpreter of a scenario's steps, over a small driver protocol that Spark and the model implement.

`drive` turns each step into calls on a `Driver` (start, add, process, advance, stop) and keeps the
batches an `expect` step looks at; a `StepHandler` decides how each step's action is run (what an
exception means, what is recorded) and judges the `expect` steps. The Spark harness
(`eventtime.runner`) and the model (`eventtime.semantics.simulate`, both profiles) are drivers.
`rows_seen` is the one definition of the rows an `expect` check sees.

This module imports nothing of Spark: the model uses it.
"""
from __future__ import annotations

from typing import Callable, Mapping, Protocol, Sequence

from eventtime.harness.observations import BatchObservation

from . import spec as m

__all__ = ["Driver", "StepHandler", "Action", "drive", "step_action", "rows_seen"]

Rows = Sequence[tuple]
Action = Callable[[], list[BatchObservation]]


class Driver(Protocol):
    """What a scenario's steps do to a streaming query; each method returns the batches it ran."""

    def start(self, conf: Mapping[str, str], *, new_session: bool = False, query: str | None = None
              ) -> list[BatchObservation]:
        """Start the query with these SQL settings (in a new session of the same cluster when asked);
        `query`: only that query of a job that starts several."""

    def add(self, source: str, rows: Rows, partitions: Sequence[Rows] | None) -> None:
        """Add rows to a source: as one input, or, for a source with partitions, one input per partition."""

    def replace_static(self, name: str, rows: Rows) -> None:
        """Write a static input anew with these rows (a table or folder the query reads with spark.read)."""

    def process(self) -> list[BatchObservation]:
        """Run batches until the query has nothing left to do."""

    def advance(self, ms: int) -> list[BatchObservation]:
        """Move processing time on by `ms` milliseconds (with the query running or stopped)."""

    def stop(self, query: str | None = None) -> None:
        """Stop the query (its checkpoint stays); `query`: only that query of a job."""

    def uncommit_last(self, query: str | None = None) -> None:
        """With the query stopped: forget the last batch's commit, so the next start runs it again."""


class StepHandler(Protocol):
    """What the caller of `drive` does around each step."""

    def skips(self, step: m.Step) -> bool:
        """Whether `step` is not run (and not judged, for an expect); the handler records why."""

    def run(self, step: m.Step | None, action: Action) -> list[BatchObservation]:
        """Run one step's action (`step` None: the implicit start) and record it; the batches that
        count as observed ([] when the step failed)."""

    def expect(self, step: m.ExpectStep, since_expect: list[BatchObservation]) -> bool:
        """Judge an expect step on the batches run since the previous judged one; False when the step
        was not judged, so those batches stay for the next."""


def drive(scenario: m.Scenario, driver: Driver, conf: Mapping[str, str], handler: StepHandler) -> None:
    """Run `scenario`'s steps on `driver`: the implicit start (with `conf`), then each step in order."""
    since_expect = list(handler.run(None, lambda: driver.start(conf)))
    pending: list[tuple[str, tuple]] = []  # rows added that no batch has read yet
    for step in scenario.steps:
        if handler.skips(step):
            continue
        if isinstance(step, m.ExpectStep):
            if handler.expect(step, since_expect):
                since_expect = []
            continue
        batches = handler.run(step, step_action(step, driver, conf))
        if isinstance(step, m.AddStep):
            pending += [(name, row) for name, rows in step.rows.items() for row in rows]
        elif batches:
            groups = ([pending + [(step.source, r) for r in rows] for rows in step.batch_rows()]
                      if isinstance(step, m.GenerateStep) else [pending])
            pending = _read_by(groups, batches)
        since_expect += batches


def _read_by(groups: list[list[tuple[str, tuple]]], batches: list[BatchObservation]) -> list[tuple[str, tuple]]:
    """Mark which data batch read which group of added rows (`BatchObservation.inputs`): a batch reads
    every row there is when it starts (the kit's sources hand a batch all they hold), so the n-th data
    batch of a step reads the n-th group, where its row count says so; the rows still unread.

    A job of several queries (each may read a source) is not told apart: its batches keep None."""
    data = [b for b in batches if b.input_rows]
    if any(b.query is not None for b in batches):
        return []
    for group, batch in zip(groups, data):
        if batch.input_rows == len(group):
            batch.inputs = group
    return groups[-1] if not data else []


def step_action(step: m.Step, driver: Driver, conf: Mapping[str, str]) -> Action:
    """What one non-expect step does on `driver`; the action returns the batches it ran."""
    if isinstance(step, m.AddStep):
        return _add_action(step, driver)
    if isinstance(step, m.GenerateStep):
        return _generate_action(step, driver)
    if isinstance(step, m.AdvanceStep):
        return lambda: driver.advance(step.by.total_ms)
    if isinstance(step, m.StartStep):
        return _start_action(step, driver, conf)
    if isinstance(step, m.StopStep):
        return _stop_action(step, driver)
    if isinstance(step, m.StaticStep):
        return _static_action(step, driver)
    if isinstance(step, m.UpdateStep) and step.selective:
        # a pipeline's selection or full refresh: only a pipeline's driver has `update` (a job's run refuses
        # the scenario first: `spec.pipeline_only`)
        update = getattr(driver, "update", None)
        if update is None:
            raise TypeError(f"this driver takes no `update` with a selection or a full refresh ({step.where})")
        return lambda: update(step)
    if isinstance(step, m.ProcessStep):  # `update` without options too
        return driver.process
    if isinstance(step, m.InputStep):
        # watermarks and stream statuses as input: only the dataflow profile's model takes them (the
        # runner finds such a scenario not applicable first: `spec.model_only`)
        signal = getattr(driver, "signal", None)
        if signal is None:
            raise TypeError(f"this driver takes no `{step.kind}` step (a watermark or stream status as input)")
        return lambda: signal(step)
    if isinstance(step, m.RunStep):
        return _scheduled_run_action(step, driver, conf)
    raise TypeError(f"no action for step kind {step.kind!r}")


def _add_action(step: m.AddStep, driver: Driver) -> Action:
    def add() -> list[BatchObservation]:
        for name, rows in step.rows.items():
            driver.add(name, rows, step.parts.get(name))
        return []
    return add


def _generate_action(step: m.GenerateStep, driver: Driver) -> Action:
    def generate() -> list[BatchObservation]:  # per batch: one add, one process
        out: list[BatchObservation] = []
        for rows in step.batch_rows():
            driver.add(step.source, rows, step.batch_parts(rows))
            out += driver.process()
        return out
    return generate


def _start_action(step: m.StartStep, driver: Driver, conf: Mapping[str, str]) -> Action:
    def start() -> list[BatchObservation]:
        if step.query is not None:  # one query of a job; the others run on
            if step.restart:
                driver.stop(step.query)
            if step.rerun_last_batch:
                driver.uncommit_last(step.query)
            return driver.start({**conf, **step.conf}, query=step.query)
        if step.restart:
            driver.stop()
        if step.rerun_last_batch:
            driver.uncommit_last()
        return driver.start({**conf, **step.conf}, new_session=step.new_session)
    return start


def _stop_action(step: m.StopStep, driver: Driver) -> Action:
    def stop() -> list[BatchObservation]:
        if step.query is not None:
            driver.stop(step.query)
        else:
            driver.stop()
        return []
    return stop


def _static_action(step: m.StaticStep, driver: Driver) -> Action:
    def replace_static() -> list[BatchObservation]:
        for name, rows in step.rows.items():
            driver.replace_static(name, rows)
        return []
    return replace_static


def _scheduled_run_action(step: m.RunStep, driver: Driver, conf: Mapping[str, str]) -> Action:
    def run_scheduled() -> list[BatchObservation]:
        # a run from the checkpoint, then stopped: a start runs one trigger, which is all Trigger.Once
        # runs; trigger(availableNow=True) goes on until what is there is processed
        if step.was_running:
            driver.stop()
        out = driver.start(conf)
        if step.trigger == "available_now":
            out += driver.process()
        driver.stop()
        return out
    return run_scheduled


def rows_seen(scope: str, output_mode: str, since_expect: Sequence[BatchObservation],
              history: Sequence[BatchObservation]) -> list[tuple]:
    """The rows an expect check of `scope` sees, as Spark's sink shows them.

    `rows`: what the batches since the previous expect wrote; `last_batch`: what the latest batch
    wrote; `output`: everything in the sink, which in complete mode is the latest batch's table
    (the sink keeps only that; a latest batch that wrote nothing leaves it empty) and otherwise
    every row written so far. `history` is every batch so far, in batch order."""
    if scope == "rows":
        return [r for b in since_expect for r in b.rows]
    if scope == "last_batch" or output_mode == "complete":
        return list(history[-1].rows) if history else []
    return [r for b in history for r in b.rows]
