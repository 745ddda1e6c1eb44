"""`stream-equals-batch`: the streaming result after the final watermark equals the transform applied as a
batch to the rows that were not late (docs/properties.md says what it means in Spark's terms).

The stream runs as drawn with the closing events of `bounded-state` (twice a row months later, so the
watermark passes every window), and its final output is read as `batch-boundary-independence` reads it
(append: every row written; complete: the last table; update: the last row per declared key). The same
function is then called on batch DataFrames of the rows it read (the sources' declared columns and
types, the run's Spark settings): on a batch DataFrame `withWatermark` is a no-op and every operator sees
every row at once.

The closing rows are in both runs; what they alone give is taken into account on each side (`compare`):
the stream holds back what the last watermark has not passed (their own window, in append mode), the
batch does not. Which rows were late is read from the run, never guessed (`late_rows`): a row whose event
time is after the watermark its batch ran with is on time for every operator (a window ends after its
rows, a dedup key holds the row's time, a join's bound is behind the watermark); a row at or behind it
may have been dropped. Spark counts the rows its stateful operators drop (`numRowsDroppedByWatermark`):
where a batch dropped none, none of its rows was late; where it dropped as many as it read rows behind
the watermark, those are taken out, and the stream is run again without them: it must drop nothing and
give the same output, or the stream is not judged (the counts cannot say which rows were dropped).

Here are the pieces that read no other property's: which pipelines have a transform, the batch run, the late
rows told from the counts, the comparison. The judge of a drawn stream (`properties.judge_stream_batch`) runs
the streams and writes the counterexample with the steps and files every property shares.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from . import spec as m
from .contracts import Contract

__all__ = ["STREAM_BATCH", "not_a_transform", "BatchRunner", "batch_runner", "Batch", "late_rows", "compare",
           "impure_functions", "unjudged_operators", "kept_rows", "function_of", "BY_DESIGN", "IMPURE"]

STREAM_BATCH = "stream-equals-batch"
# The stateful operators (Spark's progress names) whose result after the final watermark is the batch result
# of the rows they did not drop: an aggregation, a session window, a stream-stream join, a dropDuplicates.
# Not `dedupeWithinWatermark` (a key expires at its first event time plus the delay, and a later duplicate
# on time is emitted again, which a batch dropDuplicatesWithinWatermark never does), nor arbitrary state
# (`flatMapGroupsWithState`, `applyInPandasWithState`, `transformWithState...`): their functions see the rows
# batch by batch and fire timeouts, which a batch run does not.
BATCH_LIKE = frozenset({"stateStoreSave", "sessionWindowStateStoreSaveExec", "symmetricHashJoin", "dedupe"})
# Expressions whose value depends on when or where a row is processed (Spark's class names): a stream and a
# batch run rightly differ on them. Spark's non-deterministic expressions (rand, uuid, a UDF marked
# asNondeterministic) are found by their `deterministic` flag; these are deterministic within one query.
PROCESSING_TIME = frozenset({"CurrentTimestamp", "Now", "CurrentDate", "LocalTimestamp", "CurrentBatchTimestamp",
                             "CurrentTime"})


def not_a_transform(pipeline: Any, contract: Contract) -> str | None:
    """Why `pipeline` has no transform the kit can call on batch DataFrames (None: it has one, or it cannot be
    resolved, which every run then says as `eventtime run` says it)."""
    from .userpipeline import DeclarativePipeline, PipelineError, ScriptJob, SignatureError, is_job, pipeline_caller

    if contract.queries:
        return "a contract of several `queries:` is a job's: a job has no transform to call on a batch DataFrame"
    try:
        fn = function_of(pipeline)
    except PipelineError:
        return None
    if isinstance(fn, (DeclarativePipeline, ScriptJob)) or is_job(fn, contract):
        return ("the pipeline is a job (main(), build(spark), a script): it reads and writes on its own, so there "
                "is no transform to call on a batch DataFrame; bind the function that builds the result "
                "(transform(df), transform(sources, params)) to check it")
    try:
        pipeline_caller(fn, contract)
    except SignatureError:
        return None
    return None


def function_of(pipeline: Any) -> Any:
    """The pipeline's function: given in code, or resolved from `module:function` as `eventtime run` does
    (check-properties's --pipeline, the project's binding, or a function's reference given in code)."""
    from .userpipeline import resolve_pipeline

    return resolve_pipeline(pipeline) if isinstance(pipeline, str) else pipeline


def impure_functions(df: Any) -> list[str]:
    """The expressions of `df`'s analyzed plan whose value depends on processing time or is not deterministic
    (Spark's own flag: rand, uuid, monotonically_increasing_id, a UDF marked asNondeterministic), by name."""
    found: list[str] = []
    nodes = [df._jdf.queryExecution().analyzed()]
    while nodes:
        node = nodes.pop()
        exprs = _seq(node.expressions())
        while exprs:
            e = exprs.pop()
            children = _seq(e.children())
            # the innermost: `rand() + 1` is not deterministic for its `rand()`
            own = e.getClass().getSimpleName() in PROCESSING_TIME or (
                not e.deterministic() and all(c.deterministic() for c in children))
            if own and str(e.prettyName()) not in found:
                found.append(str(e.prettyName()))
            exprs += children
        nodes += _seq(node.children())
    return found


def _seq(jseq: Any) -> list[Any]:
    it, out = jseq.iterator(), []
    while it.hasNext():
        out.append(it.next())
    return out


@dataclass
class BatchRunner:
    """The pipeline called on batch DataFrames of given rows, in the run's Spark settings; its result as the
    kit reads a sink's rows (in the contract's output columns, timestamps as epoch microseconds)."""

    session: Any
    pipeline: Any
    contract: Contract
    conf: Mapping[str, str]
    timeout: float
    late_judged: int = 0  # streams held on whose late rows Spark dropped (left out of the batch's input)

    def __call__(self, sc: m.Scenario, rows: Mapping[str, Sequence[tuple]]) -> Counter | str:
        """The batch result of `rows` (per source), or why it cannot be had (a text: not judged); waited for
        at most the run's timeout, as every wait on Spark is (past it Spark's jobs are cancelled)."""
        from eventtime.harness.bounded import bounded_call
        from eventtime.harness.stream import HarnessTimeout

        try:
            return bounded_call(lambda: self._result(sc, rows), self.timeout, "the transform's batch result",
                                name="eventtime-batch-run", on_timeout=self.session.sparkContext.cancelAllJobs)
        except HarnessTimeout as exc:
            return f"the batch run did not end: {exc}"

    def _result(self, sc: m.Scenario, rows: Mapping[str, Sequence[tuple]]) -> Counter | str:
        from eventtime.harness.stream import apply_conf, read_rows, restore_conf

        from .querybuild import Output, projection
        from .userpipeline import implementation_info, pipeline_caller

        fn = function_of(self.pipeline)
        before = apply_conf(self.session, {**dict(self.conf), **implementation_info(fn).conf, **sc.query_conf()})
        place = _StaticPlace(self.session, sc) if sc.contract.statics else None
        try:
            if place is not None:
                place.enter()
            frames = {name: self._frame(src, rows.get(name, ())) for name, src in sc.sources.items()}
            try:
                value = pipeline_caller(fn, self.contract)(frames, sc.params)
            except Exception as exc:  # noqa: BLE001 - the user's function: said, counted as not judged
                return f"the transform raised on batch DataFrames: {_first_line(exc)}"
            df = value.df if isinstance(value, Output) else value
            try:
                impure = impure_functions(df)
                if impure:
                    return f"the transform uses {', '.join(sorted(impure))}: {IMPURE}"
                schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
                return Counter(read_rows(projection(schema, self.contract)(df)))
            except Exception as exc:  # noqa: BLE001 - Spark refused the batch plan the stream ran: said, not judged
                return f"the transform's result could not be read as a batch: {_first_line(exc)}"
        finally:
            if place is not None:
                place.leave()
            restore_conf(self.session, before)

    def _frame(self, src: Any, rows: Sequence[tuple]) -> Any:
        from eventtime.harness.compat import compat_for
        from eventtime.harness.sparkvalues import to_spark_python

        schema = compat_for(self.session).struct_type([(c.name, c.ctype.ddl) for c in src.columns])
        fields = schema.fields
        return self.session.createDataFrame(
            [tuple(to_spark_python(v, f.dataType) for v, f in zip(r, fields)) for r in rows], schema)


class _StaticPlace:
    """The static inputs of a batch run: written with the rows the stream's run gave them when its query first
    started (the scenario's `static:`; the generated streams change them at no step), in a database and a
    folder of the batch run's own, as the stream's run writes them (`querybuild.static_inputs`)."""

    def __init__(self, session: Any, sc: m.Scenario):
        self.session, self.sc = session, sc
        self.folder: Any = None
        self.database: Any = None

    def enter(self) -> None:
        import tempfile

        from .querybuild import JobDatabase, static_inputs

        self.folder = tempfile.TemporaryDirectory(prefix="eventtime-batch-")
        self.database = JobDatabase(self.session, self.folder.name)
        self.database.enter()
        for static, rows in static_inputs(self.session, self.sc, self.folder.name).values():
            static.replace(rows)

    def leave(self) -> None:
        if self.database is not None:
            self.database.leave()
        if self.folder is not None:
            self.folder.cleanup()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200] if text else ''}"


def batch_runner(prop: str, pipeline: Any, contract: Contract, session: Any, conf: Mapping[str, str] | None,
                 timeout: float) -> BatchRunner | None:
    return BatchRunner(session, pipeline, contract, dict(conf or {}), timeout) if prop == STREAM_BATCH else None


@dataclass(frozen=True)
class Batch:
    """One data batch of a stream: its `add` steps' rows (`properties._Row`: source, row as written, event
    time), their values as the kit holds them, its `process` step and what the run saw it do."""

    rows: list[Any]
    values: list[tuple]
    process: Any
    adds: list[Any]
    watermark_us: int  # the watermark it ran with (the highest over its data batches)
    dropped: int  # rows its stateful operators dropped as late


def late_rows(batches: Sequence[Batch]) -> tuple[list[tuple[int, int]], str | None]:
    """The rows (batch, position) Spark dropped as late, told from its counts, or why they cannot be told.
    A row whose event time is after the watermark its batch ran with is on time for every operator; a row at
    or behind it may be late (by its operator's rule: a window's end, a dedup key's time, a join's bound). A
    batch that dropped none kept all its rows; one that dropped as many as it read behind the watermark
    dropped those (where each row reaches one stateful operator once: `judge_stream_batch` runs the stream
    without them to confirm it); any other count cannot say which."""
    out: list[tuple[int, int]] = []
    for k, b in enumerate(batches):
        if not b.dropped:
            continue
        behind = [i for i, r in enumerate(b.rows) if r.timed and r.et is not None and r.et <= b.watermark_us]
        if len(behind) != b.dropped:
            return [], ("a batch dropped as late a number of rows other than it read behind the watermark (some of "
                        "them, or a row counted in two windows): which ones cannot be told from Spark's counts")
        out += [(k, i) for i in behind]
    return out, None


def compare(stream: Counter, batch: Counter, stream_closing: Counter, batch_closing: Counter
            ) -> tuple[Counter, Counter, Counter]:
    """The stream's final output against the batch result, each run with the closing rows: what the stream
    must show (the batch result, less what the closing rows alone give as a batch, plus what they alone give
    as a stream: their own windows the last watermark has not passed are held back), and the rows it shows
    more and fewer than that. Exact where the closing rows meet no row of the stream (months later: no window,
    session or join bound spans them); where they do (a count per key over all time) both runs count them alike."""
    expected = (batch + stream_closing) - batch_closing
    return expected, stream - expected, expected - stream


# why a stream whose stateful operators have no batch equivalent is not judged (`properties` finds the
# property does not apply to a job when every stream it drew was not judged for this reason)
IMPURE = "its value depends on when or where a row is processed, so a stream and a batch rightly differ"
BY_DESIGN = ("its streaming result is not a batch result by design (a key kept only within the watermark delay, or "
             "state a function keeps batch by batch with timeouts)")


def unjudged_operators(obs: Any) -> str | None:
    """Why the stream's stateful operators have no batch equivalent to compare with (None: they have)."""
    names = sorted({str(o.get("operatorName")) for sr in obs.result.steps for b in sr.batches for o in b.operators}
                   - BATCH_LIKE)
    if not names:
        return None
    return f"stateful operator {', '.join(names)}: {BY_DESIGN}"


def kept_rows(sc: m.Scenario, batches: Sequence[Batch], late: Sequence[tuple[int, int]], full: Any
               ) -> dict[str, list[tuple]]:
    """The rows the batch run reads, per source: the stream's rows but the late ones, and the closing rows."""
    gone = set(late)
    out: dict[str, list[tuple]] = {}
    for k, b in enumerate(batches):
        for i, (r, v) in enumerate(zip(b.rows, b.values)):
            if (k, i) not in gone:
                out.setdefault(r.source, []).append(v)
    last = max(s.index for s in sc.steps)
    for add in [s for s in full.result.scenario.steps if isinstance(s, m.AddStep) and s.index > last]:
        for source, rows in add.rows.items():
            out.setdefault(source, []).extend(tuple(r) for r in rows)
    return out
