"""The runner's side of `drive` on Spark (`SparkSteps`, a `drive.StepHandler`): each step's action run with
its errors turned into verdicts, each expect judged on what the query's sink showed (or what the job
wrote or published), and the scenario's verdict from its steps (`conclude_run`). What it asks of the
pipeline or job under test it asks of the `querybuild.QueryBuild`, never which kind it is."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from eventtime.harness.readback import ReadBackMismatch

from . import spec as m
from .contracts import Contract
from .faults import Fault, classify_failure
from .judge import Observed, judge_expect
from .querybuild import QueryBuild
from .results import (DRIVER_DIED, ERROR, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, CheckFailure, FailureInfo,
                      ScenarioResult, StepResult, conclude)
from .stepfailures import failure_from, fault_of, in_query, paths_hint, replaced_hint, started_at
from .userpipeline import OutputMismatch, PipelineError, PipelineRaised

__all__ = ["SparkSteps", "StepOutcome", "conclude_run", "current_watermark"]


class SparkSteps:
    """The runner's side of `drive`: each step's action run on Spark with its errors turned into verdicts,
    each expect judged on what the sink showed."""

    def __init__(self, scenario: m.Scenario, result: ScenarioResult, run: Any, compat: Any, impl_name: str,
                 unjudged: frozenset[str], build: QueryBuild, died: list[Any]):
        self.scenario, self.result, self.query_run, self.compat = scenario, result, run, compat
        self.impl_name, self.unjudged, self.build, self.died = impl_name, unjudged, build, died
        self.failure: FailureInfo | None = None
        self.failure_consumed = False
        self.fatal = False  # nothing runs or is judged after this
        self.limit: list[str] = []  # over Spark Connect: why the run cannot be reproduced there (not applicable)
        self.faults: list[Fault] = []  # what of the run's surroundings failed it (a checkpoint, the disk, py4j)
        self.current = StepResult(0, "start", scenario.where)  # the step being run: skips() makes each
        self.pending: dict[str, list[Any]] = {}  # a job's query -> its batches since its previous expect
        # a query (None: a pipeline's one) -> its batches since its previous `*_since_check` check or start
        self.since_check: dict[str | None, list[Any]] = {}
        self.replaced: list[tuple[str, int]] = []  # static inputs written anew since the query last started
        self.switch: tuple[int, Callable[[], None]] | None = None  # (step, the current version takes over)
        self.unwritten: list[tuple[StepResult, m.WrittenCheck, str]] = []  # `written:` of a path not named then

    def settle_written(self) -> None:
        """At the end of the run: a `written:` check of a path no query of the job wrote or named in the whole
        run is the kit's error at its line, not a verdict (a misspelt path reads as no rows)."""
        for sr, check, folder in self.unwritten:
            why = self.build.written.unwritten_error(check, folder)
            if why is not None:
                sr.status, sr.message, sr.failures = ERROR, why, []

    def skips(self, step: m.Step) -> bool:
        sr = self.current = StepResult(step.index, step.kind, step.where)
        if self.switch is not None and step.index == self.switch[0]:
            self.switch[1]()
        self.result.steps.append(sr)
        if isinstance(step, (m.StartStep, m.RunStep)):
            self.replaced = []
            # a started query's progresses begin anew, and with them StreamTest's span since its last check
            for query in [step.query] if isinstance(step, m.StartStep) and step.query is not None else list(
                    self.since_check):
                self.since_check[query] = []
        elif isinstance(step, m.StaticStep):
            self.replaced += [(name, step.where.line) for name in step.rows]
        if self.fatal:
            sr.status = SKIPPED
            return True
        if self.failure is not None and not isinstance(step, m.ExpectStep):
            sr.status, sr.message = SKIPPED, "not run: the query failed earlier"
            return True
        return False

    def expect(self, step: m.ExpectStep, since_expect: list[Any]) -> bool:
        sr = self.current
        contract = m.checked_contract(self.scenario.contract, step)
        if step.topic is not None or step.written is not None:
            judged = (self._expect_topic(sr, step.topic) if step.topic is not None
                      else self._expect_written(sr, step, contract))
            if judged:  # like any expect, it closes "since the previous expect" of the query it reads
                closed = self._closed_by(step)
                if closed is not None:
                    self.pending[closed] = []
            return judged
        try:
            run, name = self._looked_at(step)
        except PipelineError as exc:
            sr.status, sr.message = ERROR, str(exc)
            return True
        mode, schema = self.build.output_mode, self.build.schema
        if name is not None:  # one query of a job's: its batches since its own previous expect
            query = self.build.queries[name]
            mode, schema, since_expect = query.output_mode, query.schema, self.pending.get(name, [])
            if not query.declared and any(c.rows for c in step.rows):
                sr.status, sr.message = ERROR, (f"query {name!r} of the job writes rows whose columns contract "
                                                f"{contract.name!r} does not declare: declare them under `queries: "
                                                f"{{{name}: {{columns: ...}}}}` to check its rows")
                return True
        observed = Observed(since_expect, [*getattr(run, "earlier", []), *run.history.values()], mode,
                            [c.name for c in contract.output], self.failure, schema,
                            since_check=self.since_check.get(name, []))
        judge_expect(sr, step, observed, self.scenario if contract is self.scenario.contract
                     else replace(self.scenario, contract=contract), self.unjudged)
        if sr.status == SKIPPED:
            return False
        self._judge_state(sr, step, run)
        sr.watermark_ms = observed.watermark_ms
        if name is not None:
            self.pending[name] = []
        if m.checks_since_check(step):
            self.since_check[name] = []
        if step.failure is not None and self.failure is not None:
            self.failure_consumed = True
        return True

    def _judge_state(self, sr: StepResult, step: m.ExpectStep, run: Any) -> None:
        """`state:` read from the query's checkpoint after the step (only for an expect that has one)."""
        if step.state is None or self.failure is not None or "state_rows" in self.unjudged:
            return  # an implementation that keeps its state in another shape is not judged on it
        from .statecheck import read_and_judge

        checkpoint = getattr(run, "checkpoint", None)
        sr.failures += read_and_judge(step.state, run.spark, checkpoint, self.scenario, step.tolerance, sr.observed)
        sr.status = FAILED if sr.failures else sr.status
        if sr.observed is not None and checkpoint is not None and (
                not step.state.columns or any(f.check == "state" for f in sr.failures)):
            sr.observed.state = _state_every_field(step.state, run.spark, checkpoint)

    def _closed_by(self, step: m.ExpectStep) -> str | None:
        """The query whose "since the previous expect" an expect of what was written or published closes:
        the one it names (`query:`), else the one named after the path or topic it reads, else a job's
        only query; None when it reads something no single query of several is known by."""
        queries = list(self.build.queries)
        read = step.topic.topic if step.topic is not None else m.checked_query(step)
        for name in (step.query, read):
            if name in queries:
                return name
        return queries[0] if len(queries) == 1 else None

    def _run_of(self, step: m.ExpectStep) -> Any:
        """The run whose watermark an expect of what was written shows: its query's, when it names one."""
        if step.query in self.build.queries:
            return self.query_run.query(step.query)
        return self.query_run

    def _looked_at(self, step: m.ExpectStep) -> tuple[Any, str | None]:
        """The run an expect's checks look at, and the name of the job's query it is (None: a pipeline's
        one query)."""
        if not self.build.queries:
            return self.query_run, None
        names = list(self.build.queries)
        if step.query is not None:
            if step.query not in names:
                raise PipelineError(f"the job started no query named {step.query!r}; it started "
                                    f"{', '.join(map(repr, names))} (a query is known by its queryName, else the "
                                    "path, table or topic it writes)")
            return self.query_run.query(step.query), step.query
        if len(names) > 1:
            raise PipelineError(f"the job started {len(names)} queries ({', '.join(map(repr, names))}): say which one "
                                "this expect checks with `query: NAME`")
        return self.query_run.query(names[0]), names[0]

    def _expect_topic(self, sr: StepResult, check: m.TopicCheck) -> bool:
        """Judge what an output topic holds after the step (every record the job's Kafka sinks published)."""
        from .topics import judge_records

        if self.failure is not None:
            sr.status, sr.message = SKIPPED, "not checked: the query failed earlier"
            return False
        topics = self.build.topics
        if topics is None:
            sr.status, sr.message = ERROR, f"topic {check.topic!r}: only a job's Kafka sink publishes to a topic"
            return True
        sr.observed = list(topics.records.get(check.topic, []))  # what a snapshot writes
        sr.failures = judge_records(check, sr.observed)
        sr.status = FAILED if sr.failures else PASSED
        sr.watermark_ms = current_watermark(self.query_run)
        return True

    def _expect_written(self, sr: StepResult, step: m.ExpectStep, contract: Contract) -> bool:
        """Judge an expect of what the job wrote (a table, a path parameter's folder) on its rows read back
        now; like any expect it closes "since the previous expect" once judged."""
        from eventtime.harness.observations import BatchObservation

        if self.failure is not None and step.failure is None:
            sr.status, sr.message = SKIPPED, "not checked: the query failed earlier"
            return False
        names = list(contract.output_names)
        check = step.written
        assert check is not None
        if check.table is None and not check.format:  # read as the job's sink writes it: its failure says how
            check = replace(check, format=self.build.written.format(self.build.written.folder(str(check.path))))
            step, index = replace(step, written=check), step.index
            object.__setattr__(step, "_index", index)
        unwritten = len(self.build.written.unwritten)
        try:
            rows = self.build.written.rows(self.query_run.spark, check, contract)
            self.unwritten += [(sr, c, folder) for c, folder in self.build.written.unwritten[unwritten:]]
        except ReadBackMismatch as exc:  # the kit misread the folder: its own error, never a verdict on the job
            sr.status, sr.message = ERROR, f"{check.where}: {exc}"
            return True
        except Exception as exc:  # noqa: BLE001 - a missing table, a folder Spark cannot read: the step says so
            what = f"table {check.table!r}" if check.table is not None else f"what was written to {check.path!r}"
            sr.status = FAILED
            sr.failures = [CheckFailure("rows", check.where, f"cannot read {what}: {str(exc).strip().splitlines()[0]}")]
            return True
        batch = BatchObservation(batch_id=0, input_rows=0, timestamp_ms=None, watermark_before_ms=None,
                                 watermark_after_ms=None, rows=rows)
        judge_expect(sr, step, Observed([batch], [batch], "append", names, None), self.scenario
                     if contract is self.scenario.contract else replace(self.scenario, contract=contract), self.unjudged)
        sr.watermark_ms = current_watermark(self._run_of(step))
        return True

    def run(self, step: m.Step | None, action: Callable[[], list[Any]]) -> list[Any]:
        sr = self.current
        if step is None:  # the implicit start
            self.result.steps.append(sr)
        t0 = time.monotonic()
        try:
            batches = self._attempt(sr, action)
            for b in batches:
                if b.query is not None:
                    self.pending.setdefault(b.query, []).append(b)
                self.since_check.setdefault(b.query, []).append(b)
            return batches
        finally:
            sr.seconds = time.monotonic() - t0
            sr.watermark_ms = current_watermark(self.query_run)

    def _stop_batch_functions(self) -> list[str]:
        """A wait that ran out while a job's foreachBatch function ran: where each such function is, each
        stopped (`jobs.BatchFunction`), so that none is left running after the scenario."""
        from .jobs import BatchFunction

        said = [s.function.stop_running() for s in self.build.sinks()
                if s is not None and isinstance(getattr(s, "function", None), BatchFunction)]
        return [s for s in said if s]

    def _surroundings_failed(self, sr: StepResult, chain: Any) -> bool:
        """Whether the query failed for a fault of the run's surroundings, not the pipeline's; if so the
        step says what it is, later steps are skipped and no expect of a failure can consume it."""
        # over Connect the checkpoint, the callback server and the load are the server's: only what the chain says
        fault = (classify_failure(chain, checkpoint=None) if self.compat.connect
                 else fault_of(chain, self.query_run.spark, self.query_run.checkpoint))
        if fault is not None:
            self.faults.append(fault)
            sr.status, sr.message, self.fatal = ERROR, fault.reason, True
        return fault is not None

    def _attempt(self, sr: StepResult, action: Callable[[], list[Any]]) -> list[Any]:
        """The batches the action ran, into `sr`; [] when it failed, with the failure as a verdict: the
        outcome captured as a value first (`StepOutcome.of`), then classified in one place (`_said`)."""
        outcome = StepOutcome.of(action, self.query_run.spark)
        if outcome.error is None:
            sr.batches.extend(outcome.batches)
            return outcome.batches
        if outcome.death is not None:  # whatever py4j raised when the JVM went away, the fact is one: it died
            self.died.append((outcome.death, sr))
            sr.status, sr.message = ERROR, "the Spark driver died during this step"
            self.fatal = True
            return []
        self._said(sr, outcome.error)
        return []

    def _said(self, sr: StepResult, exc: Exception) -> None:
        """A step's exception as its verdict: the first kind in `_verdicts` that it is says it."""
        for kinds, say in self._verdicts():
            if isinstance(exc, kinds):
                say(sr, exc)
                return

    def _verdicts(self) -> list[tuple[tuple[type, ...], Callable[[StepResult, Any], None]]]:
        """What each kind of exception a step raised means, in the order they are tried (a subclass before
        its base): Spark Connect's limits, a failed query, a wait that ran out, the harness's and the
        pipeline's errors, an output that breaks the contract, the user's code raising, anything else."""
        from eventtime.harness.connect import ConnectLimit
        from eventtime.harness.stream import HarnessError, HarnessTimeout, QueryFailed

        return [((ConnectLimit,), self._connect_limit), ((QueryFailed,), self._query_failed),
                ((HarnessTimeout,), self._timed_out), ((HarnessError, PipelineError), self._harness_error),
                ((OutputMismatch,), self._output_mismatch), ((PipelineRaised,), self._pipeline_raised),
                ((Exception,), self._raised)]

    def _connect_limit(self, sr: StepResult, exc: Any) -> None:
        sr.status, sr.message = SKIPPED, str(exc)
        self.limit.append(str(exc))
        self.fatal = True

    def _query_failed(self, sr: StepResult, exc: Any) -> None:
        if self._surroundings_failed(sr, exc.chain):
            return
        self.failure = failure_from(exc, self.compat, sr.index)
        self.failure.query = exc.query
        sink = self.build.sink_of(exc.query)
        raised = sink.raised if sink is not None else None
        if raised is not None:  # the job's batch function raised: its batch and its frames, not Java's
            from .jobs import batch_error

            self.failure.summary = in_query(exc, batch_error(raised[0], raised[1], self.build.writer_of(exc.query)))
            sink.raised = None
        else:  # Spark's error in the query itself: the job's line that started it
            self.failure.summary = started_at(self.failure.summary, exc.query, self.build.writer_of(exc.query))
        sr.message = (str(self.failure) + replaced_hint(self.replaced, str(self.failure))
                      + paths_hint(self.build.workdir, f"{exc}\n{self.failure}"))
        sr.status = ERROR

    def _timed_out(self, sr: StepResult, exc: Any) -> None:
        stopped = self._stop_batch_functions()
        from .projectconfig import TIMEOUT_SETTING

        sr.status, sr.message = ERROR, str(exc) + (f": {'; '.join(stopped)}" if stopped else "") + f" ({TIMEOUT_SETTING})"
        self.fatal = True

    def _harness_error(self, sr: StepResult, exc: Any) -> None:
        from eventtime.harness.stream import HarnessError, QueryFailed

        sr.status, sr.message = ERROR, in_query(exc, str(exc))
        self.fatal = isinstance(exc, HarnessError) and not isinstance(exc, QueryFailed)
        if isinstance(exc, PipelineError):
            self.failure = FailureInfo(str(exc), [], ["eventtime.runner.PipelineError"], str(exc), sr.index)

    def _output_mismatch(self, sr: StepResult, exc: Any) -> None:
        """The pipeline breaks its contract: it fails, naming each column."""
        self.failure = FailureInfo(str(exc), [], ["eventtime.userpipeline.OutputMismatch"], str(exc), sr.index)
        contract = self.scenario.contract
        sr.status, sr.message = FAILED, "the output does not match the contract"
        sr.failures = [CheckFailure("output_schema", contract.output_where or contract.where or self.scenario.where,
                                    in_query(exc, f"pipeline {self.impl_name}: {exc}"))]

    def _pipeline_raised(self, sr: StepResult, exc: Any) -> None:
        """The user's pipeline raised while the query was built."""
        self.failure = failure_from(exc.original, self.compat, sr.index)
        self.failure.summary = in_query(exc, str(exc))
        sr.status, sr.message = ERROR, self.failure.summary + paths_hint(self.build.workdir, str(exc))

    def _raised(self, sr: StepResult, exc: Any) -> None:
        """A pipeline or Spark error at start: a verdict, not a crash."""
        java = getattr(exc, "java_exception", None)
        if self._surroundings_failed(sr, [(type(exc).__name__, None, str(exc)),
                                          *(self.compat.java_error_classes(java) if java is not None else [])]):
            return
        self.failure = failure_from(exc, self.compat, sr.index)
        self.failure.summary = in_query(exc, self.failure.summary)
        sr.status, sr.message = ERROR, str(self.failure) + paths_hint(self.build.workdir, str(exc))


@dataclass
class StepOutcome:
    """What one step's action came to, as a value (pytest's `CallInfo`): the batches it ran, or the
    exception it raised and, when the driver JVM is found dead after it, that death."""

    batches: list[Any]
    error: Exception | None = None
    death: Any = None  # harness.driverdeath's DriverDeath

    @classmethod
    def of(cls, action: Callable[[], list[Any]], spark: Any) -> "StepOutcome":
        """Call `action` and capture what it came to; only what is not an Exception (Ctrl-C) goes through."""
        from eventtime.harness.session import driver_death

        try:
            return cls(action())
        except Exception as exc:  # noqa: BLE001 - every exception of a step is its verdict (SparkSteps._said)
            return cls([], exc, driver_death(spark, after=exc))


def conclude_run(result: ScenarioResult, steps: SparkSteps, died: list[Any]) -> None:
    """The scenario's verdict from its steps: a dead driver says so; over Spark Connect a run that
    could not be reproduced there is not applicable, never passed."""
    if died:
        death, step = died[0]
        result.status, result.cause = ERROR, DRIVER_DIED
        result.reason = death.message(f"during step {step.index} ({step.kind}) of scenario {result.scenario.name} "
                                      f"[{result.implementation}]")
        return
    failure = steps.failure
    conclude(result, failure.step if failure is not None and steps.failure_consumed else None)
    if steps.faults:
        result.cause = steps.faults[0].cause
    if steps.limit:
        result.status, result.reason = NOT_APPLICABLE, f"over Spark Connect: {steps.limit[0]}"


def current_watermark(run: Any) -> int | None:
    """The watermark the run's query left (0: none yet); None for a job's several queries, which have one each."""
    from eventtime.harness.jobrun import QueryGroup

    if not run.history:
        return None if isinstance(run, QueryGroup) and len(run.query_runs) > 1 else 0
    last = run.history[max(run.history)]
    return last.watermark_after_ms


def _state_every_field(check: m.StateCheck, spark: Any, checkpoint: str) -> Any:
    """The state a `state` check that disagreed (or names no field) looked at, with every field: what
    a snapshot writes (`snapshotedit`); read only then, so a check that agrees costs one read. A state
    that cannot be read gives the reason."""
    from eventtime.harness.stateread import StateReadError, read_state

    try:
        return read_state(spark, checkpoint, None, operator=check.operator, side=check.side, variable=check.variable)
    except StateReadError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - Spark's reader refused: its first line says why
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
