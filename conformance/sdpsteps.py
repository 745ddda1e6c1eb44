"""A scenario's steps run as updates of a Spark Declarative Pipeline bound by its spec (docs/pipelines.md,
*What runs*): the definition files registered unchanged on the kit's Spark Connect session, each contract
source standing in for what a definition reads (its `from:`, as for a job), each `process` one update.

- `add` stages rows on the scenario's sources; `process` releases them and runs one update
  (`harness.pipelinerun.PipelineRun`) with the flows' checkpoints under a storage root of the run's own,
  so their offsets, state and watermark carry over to the next update as in production. Every update is
  a new run of the pipeline on that storage (a new dataflow graph, the definitions registered again), as
  each `spark-pipelines run` is: so a plain `restart` (or `stop` then `start`) changes nothing more.
- The pipeline's datasets live in a database of the run's own (the graph's default database instead of
  the spec's), dropped afterwards, so no two runs share a table.
- `expect: {table: NAME}` reads the dataset (a streaming table or materialized view) back: `rows` and
  `output` are its whole content, as for a job's table. `expect: {query: FLOW}` looks at one streaming
  flow (a `@dp.table`'s flow has the table's name): `rows` are what the flow appended to its table since
  the previous expect of it (the table's content then taken from its content now, row by row), `output`
  the table's content, `watermark`/`batch_watermark`/`batches: N` from the flow's checkpoint (its commit
  and offset logs), `dropped`, `state_rows`, `updated`, `operators`, `event_time` from Spark's progress of
  its batches (`pipelinerun.FlowProgress`); the `*_since_check` span restarts at every update, which
  starts each flow's query anew. Without `query:` the pipeline's only streaming flow is meant.
- What is not supported yet is an error at the step's line, never a pass: the checks listed in
  `_UNSUPPORTED`, `advance`, static inputs, a restart with options, `run: once` (`run: available_now`
  is one update, as `process`).
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from eventtime.harness.observations import BatchObservation

from . import spec as m
from .drive import drive
from .judge import Observed, judge_expect
from .results import ERROR, FAILED, SKIPPED, CheckFailure, FailureInfo, ScenarioResult, StepResult, conclude
from .upgrade import restart_step, upgrade_verdict
from .written import Written

__all__ = ["run_declarative"]

_DOCS = "docs/pipelines.md, *What runs*"
# the expect checks a pipeline's run cannot judge yet (field -> its key in the scenario file)
_UNSUPPORTED = {"batches": "batches: [...]", "failure": "failure", "schema": "schema", "state": "state",
                "watermarks": "watermarks", "statuses": "statuses", "topic": "topic"}


class StepError(Exception):
    """A step of a pipeline's run that cannot run or be judged as written: an error at its line."""


class StepNotSupported(StepError):
    """A step a pipeline's run does not do yet."""


def run_declarative(result: ScenarioResult, spec: str, spark: Any, *, timeout: float,
                    conf: Mapping[str, str] | None = None, previous: tuple[str, str] | None = None) -> None:
    """Run `result.scenario`'s steps against the pipeline whose spec is `spec`, into `result`. `previous`:
    (its name, its spec) of a run across a change (docs/upgrade.md): the updates before the scenario's first
    `start`/`restart` run the previous definitions, the later ones the current, on the same storage and
    database; the outcome is `upgrade.upgrade_verdict`'s."""
    from eventtime.harness.connect import ConnectSource, ConnectStaging
    from eventtime.harness.pipelinerun import FlowProgress, PipelineRun, PipelineSource

    from .jobs import reads_of

    scenario = result.scenario
    staging = ConnectStaging(spark)
    sources = {name: ConnectSource(staging, name, [(c.name, c.ctype.ddl) for c in src.columns])
               for name, src in scenario.sources.items()}
    declared = {s.name: s for s in scenario.contract.sources}
    piped = [PipelineSource(name, reads_of(declared[name]) if name in declared else (), source)
             for name, source in sources.items()]
    database = _Database(spark)
    storage = _uri(f"{staging.root}/pipeline-storage")
    run_conf = {"spark.sql.shuffle.partitions": str(spark.conf.get("spark.sql.shuffle.partitions")),
                **dict(conf or {}), **scenario.query_conf()}
    restart = restart_step(scenario) if previous is not None else None
    run = PipelineRun(spark, previous[1] if previous else spec, storage, piped, conf=run_conf, timeout=timeout,
                      database=database.name)
    progress = FlowProgress(spark)
    driver = PipelineDriver(run, sources, progress)
    steps = PipelineSteps(result, driver, (restart.index, spec) if restart is not None else None)
    result.notes.append("a pipeline's batches are read from its flows' checkpoints and progress: the rows each "
                        "wrote to its table are not known per batch (shown as 0 out; a flow's `rows` are its "
                        f"table's new rows since the previous expect, {_DOCS})")
    try:
        database.enter()
        drive(scenario, driver, {}, steps)
    finally:
        progress.close()
        database.leave()
    result.notes.extend(driver.notes)
    conclude(result)
    if previous is not None and restart is not None:
        upgrade_verdict(result, previous[0], restart, steps.failure, False)


def _uri(path: str) -> str:
    """A storage root as Spark's pipelines take it: an absolute URI (a bare absolute path gets `file:`)."""
    return path if ":" in path.split("/", 1)[0] else f"file://{path}"


class _Database:
    """The run's own database on the server (its warehouse), current for the run, dropped afterwards."""

    def __init__(self, spark: Any):
        import uuid

        self.spark, self.name = spark, f"eventtime_{uuid.uuid4().hex[:12]}"
        self.previous: str | None = None

    def enter(self) -> None:
        self.previous = self.spark.catalog.currentDatabase()
        self.spark.sql(f"CREATE DATABASE `{self.name}`")
        self.spark.catalog.setCurrentDatabase(self.name)

    def leave(self) -> None:
        try:
            if self.previous is not None:
                self.spark.catalog.setCurrentDatabase(self.previous)
            self.spark.sql(f"DROP DATABASE IF EXISTS `{self.name}` CASCADE")
        except Exception:  # noqa: BLE001 - a server gone keeps nothing to drop
            pass


class PipelineDriver:
    """The step driver (`drive.Driver`) of a pipeline: adds staged, each `process` one update, the batches
    each streaming flow committed in it read from its checkpoint, with Spark's progress report of each
    (`pipelinerun.FlowProgress`: rows read, dropped by the watermark, in state)."""

    def __init__(self, run: Any, sources: Mapping[str, Any], progress: Any):
        self.run, self.sources, self.progress = run, sources, progress
        self.graph: Any = None  # the graph the latest update registered
        self.replaced: set[str] = set()  # the streaming flows whose table the latest update emptied (a full refresh)
        self.history: dict[str, list[BatchObservation]] = {}  # flow -> every batch it committed
        self.notes: dict[str, None] = {}  # what of the definitions' reads the kit did not exercise, in order

    def start(self, conf: Mapping[str, str], *, new_session: bool = False, query: str | None = None
              ) -> list[BatchObservation]:
        return []  # each update is a new run of the pipeline on the same storage: nothing runs between them

    def stop(self, query: str | None = None) -> None:
        return None

    def add(self, source: str, rows: Sequence[Sequence[Any]], partitions: Any) -> None:
        for part in [rows] if partitions is None else partitions:
            self.sources[source].add(part)

    def process(self) -> list[BatchObservation]:
        return self._update()

    def update(self, step: m.UpdateStep) -> list[BatchObservation]:
        """`update` with a selection or a full refresh: one update as `spark-pipelines run --refresh` /
        `--full-refresh` / `--full-refresh-all` runs it; a name the pipeline does not define is an error
        at the step's line, before the update starts."""
        from eventtime.harness.pipelinerun import SelectionError

        try:
            return self._update(refresh=step.refresh, full_refresh=step.full_refresh,
                                full_refresh_all=step.full_refresh_all)
        except SelectionError as exc:
            raise StepError(f"{exc}: `refresh` and `full_refresh` name the pipeline's datasets") from exc

    def _update(self, **options: Any) -> list[BatchObservation]:
        from eventtime.harness.pipelinerun import flow_batches

        update = self.run.update(**options)
        self.graph = update.graph
        self.notes.update(dict.fromkeys(update.notes))  # each update registers the definitions again
        self.replaced = _replaced(self.graph, options.get("full_refresh", ()), options.get("full_refresh_all", False))
        out: list[BatchObservation] = []
        for flow in streaming_flows(self.graph):
            known = self.history.setdefault(flow, [])
            seen = {(b.checkpoint, b.batch_id) for b in known}
            new = [fb for fb in flow_batches(self.run.spark, self.run.storage, flow)
                   if (fb.checkpoint, fb.batch_id) not in seen]
            for query_id in dict.fromkeys(fb.query_id for fb in new):  # a full refresh: a new checkpoint, ids anew
                batches = [fb for fb in new if fb.query_id == query_id]
                out += self._observed(flow, batches, query_id)
            known += [b for b in out if b.query == flow]
        return out

    def _observed(self, flow: str, batches: list[Any], query_id: str | None) -> list[BatchObservation]:
        """One checkpoint's new batches of `flow`, with Spark's progress report of each."""
        from eventtime.harness.stream import observation

        reports = self.progress.reports(flow, [fb.batch_id for fb in batches], self.run.timeout, query_id)
        out = []
        for fb in batches:
            offsets = {"batchWatermarkMs": fb.watermark_before_ms, "batchTimestampMs": fb.timestamp_ms}
            obs = observation(fb.batch_id, offsets=offsets, commit={"nextBatchWatermarkMs": fb.watermark_after_ms},
                              progress=reports[fb.batch_id], rows=[], run=len(self.run.updates) - 1)
            obs.checkpoint, obs.query = fb.checkpoint, flow
            out.append(obs)
        return out

    def advance(self, ms: int) -> list[BatchObservation]:
        raise StepNotSupported("`advance` moves the manual processing-time clock, which a pipeline's updates "
                               "(Trigger.AvailableNow over Spark Connect) do not have")

    def replace_static(self, name: str, rows: Any) -> None:
        raise StepNotSupported("static inputs of a pipeline are not supported yet")

    def uncommit_last(self, query: str | None = None) -> None:
        raise StepNotSupported("`restart: {rerun_last_batch: true}` is not supported for pipelines yet")


def _replaced(graph: Any, full_refresh: Sequence[str], full_refresh_all: bool) -> set[str]:
    """The streaming flows whose table a full refresh emptied (recomputed on a new checkpoint)."""
    tables = {t.rsplit(".", 1)[-1].strip("`").lower() for t in full_refresh}
    targets = {f.name: f.target for f in graph.flows}
    return {f for f in streaming_flows(graph) if full_refresh_all or targets[f].lower() in tables}


def streaming_flows(graph: Any) -> list[str]:
    """The flows of `graph` that write a streaming table (the ones with a checkpoint), in registration order."""
    if graph is None:
        return []
    return [f.name for f in graph.flows
            if f.target in graph.datasets and graph.datasets[f.target].kind == "streaming_table"]


def _step_not_supported(step: m.Step) -> str | None:
    """Why a step does not run on a pipeline yet; None when it does."""
    if isinstance(step, m.StartStep) and (step.query is not None or step.new_session or step.conf
                                          or step.rerun_last_batch):
        return (f"`{step.kind}` with options is not supported for pipelines yet: a plain `restart` is a new run "
                "of the pipeline on the same storage, which every update is")
    if isinstance(step, m.StopStep) and step.query is not None:
        return "`stop: {query: ...}` is not supported for pipelines yet"
    if isinstance(step, m.RunStep) and step.trigger != "available_now":
        return (f"`run: {step.trigger}` is not supported for pipelines yet: a pipeline's update runs its flows "
                "Trigger.AvailableNow (`process` or `run: available_now`)")
    return None


def _checks_not_supported(step: m.ExpectStep) -> list[str]:
    """The checks of an expect a pipeline's run does not judge yet, by their keys in the file."""
    keys = [key for field, key in _UNSUPPORTED.items() if getattr(step, field) not in (None, ())]
    if any(c.scope == "last_batch" for c in step.rows):
        keys.append("last_batch")
    if step.written is not None and step.written.table is None:
        keys.append("written: PATH (a pipeline's datasets are tables: `table: NAME`)")
    return keys


class PipelineSteps:
    """The step handler (`drive.StepHandler`) of a pipeline's run: each step's action with its errors as
    verdicts (what a pipeline cannot do yet at the step's line), each expect judged on a dataset read back
    or on one flow's batches."""

    def __init__(self, result: ScenarioResult, driver: PipelineDriver, switch: tuple[int, str] | None = None):
        self.result, self.driver, self.scenario = result, driver, result.scenario
        # a run across a change: at this step (the first `start`/`restart`) the current definitions take over
        self.switch = switch
        self.failure: FailureInfo | None = None  # the update that failed, for the verdict of a run across a change
        self.written = Written(result.scenario, "", lambda: ())  # a table read back as a job's is
        self.current = StepResult(0, "start", self.scenario.where)
        self.fatal = False  # an update failed or a step could not run: nothing runs or is judged after it
        self.pending: dict[str, list[BatchObservation]] = {}  # flow -> its batches since its previous expect
        self.seen: dict[str, list[tuple]] = {}  # flow -> its table's rows at its previous expect
        # flow -> its batches since its previous `*_since_check` check or its query's latest start: every
        # update starts each flow's query anew (its recentProgress begins again), as StreamTest's span does
        self.since_check: dict[str, list[BatchObservation]] = {}

    def skips(self, step: m.Step) -> bool:
        sr = self.current = StepResult(step.index, step.kind, step.where)
        self.result.steps.append(sr)
        if self.fatal:
            sr.status, sr.message = SKIPPED, "not run: an earlier step of the pipeline's run failed"
        return self.fatal

    def run(self, step: m.Step | None, action: Callable[[], list[BatchObservation]]) -> list[BatchObservation]:
        sr = self.current
        if step is None:  # the implicit start
            self.result.steps.append(sr)
        why = _step_not_supported(step) if step is not None else None
        if why is not None:
            assert step is not None
            return self._error(sr, f"{step.where}: {why} ({_DOCS})")
        if step is not None and self.switch is not None and step.index == self.switch[0]:
            self.driver.run.path = self.switch[1]  # the next update registers the current definitions
        t0 = time.monotonic()
        try:
            batches = action()
        except StepNotSupported as exc:
            return self._error(sr, f"{step.where if step else self.scenario.where}: {exc} ({_DOCS})")
        except StepError as exc:
            return self._error(sr, f"{step.where if step else self.scenario.where}: {exc}")
        except Exception as exc:  # noqa: BLE001 - an update that failed, a read no source stands in for: its verdict
            self.failure = update_failure(exc, sr.index)
            return self._error(sr, _said(exc))
        finally:
            sr.seconds = time.monotonic() - t0
        flows = streaming_flows(self.driver.graph)
        if isinstance(step, (m.ProcessStep, m.GenerateStep, m.RunStep)):  # the latest update's batches only
            last = max((b.run for b in batches), default=None)
            self.since_check = {flow: [b for b in batches if b.query == flow and b.run == last] for flow in flows}
        for flow in self.driver.replaced:  # its table was emptied: what it holds now is all new (docs/pipelines.md)
            self.seen[flow] = []
        self.driver.replaced = set()
        for b in batches:
            self.pending.setdefault(str(b.query), []).append(b)
        sr.batches.extend(batches)
        if len(flows) == 1 and self.driver.history.get(flows[0]):  # a pipeline of one flow: its watermark
            sr.watermark_ms = self.driver.history[flows[0]][-1].watermark_after_ms
        return batches

    def _error(self, sr: StepResult, message: str) -> list[BatchObservation]:
        sr.status, sr.message, self.fatal = ERROR, message, True
        return []

    def expect(self, step: m.ExpectStep, since_expect: list[BatchObservation]) -> bool:
        sr = self.current
        unsupported = _checks_not_supported(step)
        if unsupported:
            sr.status, sr.message = ERROR, (f"{step.where}: not supported for pipelines yet: "
                                            f"{', '.join(unsupported)} ({_DOCS})")
            return True
        try:
            if step.written is not None:
                self._expect_table(sr, step)
            else:
                self._expect_flow(sr, step)
        except StepError as exc:
            sr.status, sr.message, sr.failures = ERROR, f"{step.where}: {exc}", []
        return True

    def _expect_table(self, sr: StepResult, step: m.ExpectStep) -> None:
        """`table: NAME`: the dataset's whole content after the step, as a job's table is checked; it closes
        "since the previous expect" of the flow writing it, as any expect of what a job wrote does."""
        check = step.written
        assert check is not None and check.table is not None
        graph = self.driver.graph
        if graph is not None and not graph.sql_files and check.table not in graph.datasets:
            raise StepError(f"pipeline {graph.name!r} defines no dataset {check.table!r} (it defines "
                            f"{', '.join(sorted(graph.datasets)) or 'none'})")
        contract = m.checked_contract(self.scenario.contract, step)
        rows = self._read(sr, check, contract)
        if rows is None:
            return
        batch = BatchObservation(0, 0, None, None, None, rows=rows)
        judge_expect(sr, step, Observed([batch], [batch], "append", contract.output_names), self._with(contract))
        flow = next((f.name for f in graph.flows if f.target == check.table), None) if graph is not None else None
        if flow is not None and flow in streaming_flows(graph) and not check.filter:
            self.pending[flow], self.seen[flow] = [], rows

    def _expect_flow(self, sr: StepResult, step: m.ExpectStep) -> None:
        """`query: FLOW` (or the only streaming flow): its batches from its checkpoint; `rows` what it
        appended to its table since its previous expect, `output` the table's content."""
        flow, target = self._flow(step)
        contract = m.checked_contract(self.scenario.contract, step)
        now = self._read(sr, m.WrittenCheck(step.where, table=target), contract)
        if now is None:
            return
        observed = _FlowObserved(self.pending.get(flow, []), self.driver.history.get(flow, []), "append",
                                 contract.output_names, since_check=self.since_check.get(flow, []), now=now,
                                 before=self.seen.get(flow, []))
        judge_expect(sr, step, observed, self._with(contract))
        sr.watermark_ms = observed.watermark_ms
        self.pending[flow], self.seen[flow] = [], now
        if m.checks_since_check(step):
            self.since_check[flow] = []

    def _flow(self, step: m.ExpectStep) -> tuple[str, str]:
        """The streaming flow an expect looks at, and the table it writes."""
        graph = self.driver.graph
        if graph is None:
            raise StepError("the pipeline has run no update yet: its flows are known from the first `process`")
        flows = streaming_flows(graph)
        targets = {f.name: f.target for f in graph.flows}
        if step.query is None and len(flows) != 1:
            raise StepError(f"pipeline {graph.name!r} has {len(flows)} streaming flows ({', '.join(flows)}): say "
                            "which one this expect checks with `query: FLOW` (a `@dp.table`'s flow has its name)")
        name = step.query or flows[0]
        if name in targets and name not in flows:
            raise StepError(f"flow {name!r} writes {targets[name]!r}, which is not a streaming table: it has no "
                            f"checkpoint to check; check its rows with `table: {targets[name]}`")
        if name not in flows:
            raise StepError(f"pipeline {graph.name!r} has no streaming flow {name!r} (its streaming flows: "
                            f"{', '.join(flows) or 'none'})")
        return name, targets[name]

    def _read(self, sr: StepResult, check: m.WrittenCheck, contract: Any) -> list[tuple] | None:
        """A dataset's rows read back in the contract's output columns; None (the step failed, saying
        why) when it cannot be read."""
        try:
            return self.written.rows(self.driver.run.spark, check, contract)
        except Exception as exc:  # noqa: BLE001 - a table not created (yet): the step says so
            sr.status = FAILED
            sr.failures = [CheckFailure("rows", check.where, f"cannot read table {check.table!r}: "
                                                             f"{(str(exc).strip().splitlines() or [''])[0]}")]
            return None

    def _with(self, contract: Any) -> m.Scenario:
        return self.scenario if contract is self.scenario.contract else replace(self.scenario, contract=contract)


class _FlowObserved(Observed):
    """A flow's batches with the rows of its table: `rows` what it appended since its previous expect (the
    table's content at that expect taken from its content now, row by row), else the whole table."""

    def __init__(self, *args: Any, now: list[tuple], before: list[tuple], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.now, self.before = now, before

    def rows(self, scope: str) -> list[tuple]:
        if scope != "rows":
            return list(self.now)
        left = Counter(repr(r) for r in self.before)
        out = []
        for row in self.now:
            if left[repr(row)]:
                left[repr(row)] -= 1
            else:
                out.append(row)
        return out


_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


def update_failure(exc: Exception, step: int) -> FailureInfo | None:
    """A failed update as a query's failure (`results.FailureInfo`): the error classes Spark's messages in
    it name (the server's and its flows' events: a flow's failure is an event of the update), in order,
    each message starting a line of `text` so that `upgrade.spark_message` finds it. None for anything but
    an update that ran and failed (a definition that does not load is no failure of the pipeline's run)."""
    from eventtime.harness.pipelinerun import UpdateFailed

    if not isinstance(exc, UpdateFailed):
        return None
    text = str(exc)
    classes = list(dict.fromkeys(c for c in _ERROR_CLASS.findall(text) if c != "STREAM_FAILED"))
    lines = _ERROR_CLASS.sub(lambda found: "\n" + found.group(0), text)
    first = text.strip().splitlines()[0] if text.strip() else "UpdateFailed"
    return FailureInfo(first, classes, ["eventtime.harness.pipelinerun.UpdateFailed"], lines, step)


def _said(exc: Exception) -> str:
    """A step's exception as its message: the kit's own errors say it all (an update's failure with its
    last events, a read no source stands in for at the definition's line); anything else by its type."""
    from eventtime.harness.errors import EventtimeError
    from eventtime.harness.stream import HarnessTimeout

    from .projectconfig import TIMEOUT_SETTING

    if isinstance(exc, HarnessTimeout):
        return f"{exc} ({TIMEOUT_SETTING})"
    if isinstance(exc, EventtimeError):
        return str(exc)
    return f"{type(exc).__name__}: {str(exc).split(chr(10) + chr(10) + 'JVM stacktrace:')[0].strip()}"
