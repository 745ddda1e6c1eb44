"""Drives one streaming query on MemoryStream sources with a stepped clock, and observes each micro-batch."""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
import time
import uuid
from typing import Any, Callable, Mapping, Sequence

from .clock import ClockWaitTimeout, SteppedClock
from .compat import SparkCompat, compat_for
from .errors import EventtimeError
from .observations import BatchObservation
from .waits import DEFAULT_TIMEOUT
from .sparkvalues import (arrow_payload, from_spark_python, positional_schema, read_back_exprs,
                          to_spark_python)

__all__ = ["MemorySource", "BatchObservation", "StreamRun", "HarnessError", "HarnessTimeout",
           "QueryFailed", "BatchFunctionSink", "read_rows"]

MAX_TRIGGERS_PER_STEP = 1000


class HarnessError(EventtimeError):
    """Something the harness could not do; the message says what and where it waited."""


class HarnessTimeout(HarnessError):
    """A bounded wait on Spark ran out."""


class QueryFailed(HarnessError):
    """The streaming query died. `chain` is (java class, error class, message) from outer to inner."""

    def __init__(self, message: str, *, error_class: str | None = None,
                 chain: Sequence[tuple[str, str | None, str]] = ()):
        super().__init__(message)
        self.error_class = error_class
        self.chain = list(chain)
        self.query: str | None = None  # which query of a job's several failed (`jobrun.QueryGroup`)


def _has_container(dt: Any) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(dt, (ArrayType, MapType)):
        return True
    return isinstance(dt, StructType) and any(_has_container(f.dataType) for f in dt.fields)


class MemorySource:
    """A named MemoryStream of rows; each `add` is one `addData` call, i.e. one offset.

    Rows travel in bulk: as one Arrow record batch read on the JVM without a Spark job where this
    Spark and Python allow it (`SparkCompat.arrow_ingest`), else through a local DataFrame.
    """

    def __init__(self, spark: Any, name: str, columns: Sequence[tuple[str, str]],
                 num_partitions: int | None = None):
        """`columns`: (name, Spark DDL type) pairs, any type Spark's DDL writes (`sparkvalues`)."""
        self.spark = spark
        self.name = name
        self.columns = list(columns)
        self.num_partitions = num_partitions
        self._compat = compat_for(spark)
        self._schema = self._compat.struct_type(self.columns)
        jschema = spark._jsparkSession.parseDataType(self._schema.json())
        self._stream = self._compat.memory_stream(jschema, num_partitions)
        self._jschema = jschema
        # Arrays and maps take the DataFrame path: read from Arrow, a null element of an array or map
        # fails Spark's Row deserializer (EXPRESSION_DECODING_FAILED, measured on 4.3.0).
        arrow = self._compat.arrow_ingest and not any(_has_container(f.dataType) for f in self._schema.fields)
        self._deserializer = self._compat.row_deserializer(jschema) if arrow else None
        self.offsets = 0
        self._log: list[list[tuple]] = []  # every add, in order: what a replay re-adds

    def dataframe(self) -> Any:
        """A new streaming DataFrame reading this source (one per query start)."""
        return self._compat.memory_stream_df(self._stream)

    def add(self, given: Sequence[Sequence[Any]]) -> None:
        """Add rows (timestamps as epoch microseconds) in bulk: one JVM hop, one offset."""
        rows: list[tuple] = [tuple(r) for r in given]
        if rows and self._deserializer is not None:
            self._stream.addData(self._compat.rows_from_arrow(arrow_payload(self._schema, rows), self._jschema,
                                                              self._deserializer))
        else:
            if rows:
                fields = self._schema.fields
                local = self.spark.createDataFrame(
                    [tuple(to_spark_python(v, f.dataType) for v, f in zip(r, fields)) for r in rows], self._schema)
                jrows = local._jdf.collectAsList()
            else:
                jrows = self._compat.java("java.util.ArrayList")()
            self._stream.addData(self._compat.to_seq(jrows))
        self.offsets += 1
        self._log.append(rows)

    def add_partitions(self, parts: Sequence[Sequence[Sequence[Any]]]) -> None:
        """Add rows already placed in input partitions: one `addData` per partition, in order.

        Without a partition count, a MemoryStream makes each `addData` of a batch one input partition
        (`planInputPartitions`; with a count it deals all the batch's rows out round-robin, which
        cannot put a given row in a given partition). So partition k of this add is the k-th input
        partition of the batch that reads it, when no other add of this source shares that batch.
        """
        for part in parts:
            self.add(part)

    def replayed_in(self, spark: Any) -> "MemorySource":
        """This source recreated in another SparkSession with every add so far re-added, one offset
        each: what a replayable source (a Kafka topic, a file directory) offers a restarted driver.
        The new stream has the same offsets, so a query restarted from the checkpoint reads exactly
        the data it had not committed."""
        other = MemorySource(spark, self.name, self.columns, self.num_partitions)
        for rows in self._log:
            other.add(rows)
        return other


def read_rows(df: Any) -> list[tuple]:
    """A (batch) DataFrame's rows as the kit's plain values (timestamps as epoch microseconds), read by
    position so that two columns of one name stay readable."""
    fields = df.schema.fields
    positional = df.toDF(*[f"_{i}" for i in range(len(fields))])
    return [tuple(from_spark_python(v, f.dataType) for v, f in zip(r, fields))
            for r in positional.selectExpr(*read_back_exprs(df.schema)).collect()]


class BatchFunctionSink:
    """A job's `foreachBatch` sink: Spark's own, calling `function(batch_df, batch_id)` from the stream
    thread inside each micro-batch, before the batch commits (a function that raises fails the query and
    the batch runs again after a restart, as in production). Before the function, `observe(batch_df)`
    gives the rows the batch hands the sink, kept per batch id; the batch DataFrame is cached for the
    call so that observing it does not run the batch twice.
    """

    def __init__(self, spark: Any, function: Callable[[Any, int], Any], observe: Callable[[Any], list[tuple]]):
        self.spark, self.function, self.observe = spark, function, observe
        self.rows: dict[int, list[tuple]] = {}
        self.raised: tuple[int, BaseException] | None = None  # (batch id, the function's exception)

    def jvm_sink(self, compat: SparkCompat, jdf: Any) -> Any:
        return compat.foreach_batch_sink(jdf, self)

    def call(self, jdf: Any, batch_id: int) -> None:
        """Called by the JVM (py4j callback) with each micro-batch."""
        from pyspark.sql import DataFrame, SparkSession

        session = SparkSession(self.spark.sparkContext, jdf.sparkSession())  # the query's own session
        batch = DataFrame(jdf, session)
        batch.persist()
        try:
            self.rows[int(batch_id)] = self.observe(batch)
            self.function(batch, int(batch_id))
        except Exception as exc:
            self.raised = (int(batch_id), exc)
            raise
        finally:
            batch.unpersist()

    class Java:
        implements = ["org.apache.spark.sql.execution.streaming.sources.PythonForeachBatchFunction"]


def _iso_ms(text: str | None) -> int | None:
    if not text:
        return None
    dt = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(round(dt.timestamp() * 1000))


def observation(batch_id: int, *, offsets: dict, commit: dict, progress: dict, rows: list[tuple], run: int,
                input_rows: int | None = None) -> BatchObservation:
    """One micro-batch as its checkpoint logs (offsets: what it ran with; commit: the watermark it
    left), the query's progress report of it (state operators, event-time statistics) and the rows
    its sink received say it; the classic and the Connect run both observe a batch this way."""
    operators = progress.get("stateOperators") or []
    reported = progress.get("eventTime") or {}
    event_time = {k: _iso_ms(v) for k, v in reported.items() if k in ("min", "max", "avg")}
    if event_time.get("max") is not None and reported.get("watermark"):  # the watermark the statistics carry
        event_time["watermark"] = _iso_ms(reported["watermark"])
    return BatchObservation(
        batch_id=batch_id,
        input_rows=int(progress.get("numInputRows") or 0) if input_rows is None else input_rows,
        timestamp_ms=offsets.get("batchTimestampMs"),
        watermark_before_ms=offsets.get("batchWatermarkMs"),
        watermark_after_ms=commit.get("nextBatchWatermarkMs"),
        rows=rows,
        dropped=sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in operators),
        state_rows=sum(int(o.get("numRowsTotal") or 0) for o in operators),
        operators=[{k: o.get(k) for k in ("operatorName", "numRowsTotal", "numRowsUpdated", "numRowsRemoved",
                                           "numRowsDroppedByWatermark", "numShufflePartitions") if k in o}
                   for o in operators],
        event_time={k: v for k, v in event_time.items() if v is not None},
        duration_ms=(progress.get("durationMs") or {}).get("triggerExecution"),
        run=run,
    )


def _read_log(path: str) -> dict | None:
    """A checkpoint log entry (`v1` line, then JSON lines); the first JSON object is the metadata."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines[1:]:
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return {}


class StreamRun:
    """One query over its lifetime (start, steps, stop, restart from the same checkpoint).

    `build` returns `(DataFrame, output_mode)`, or `(DataFrame, output_mode, BatchFunctionSink)` for a
    query whose sink is a job's batch function, and is called at every start. The stream thread only
    runs a trigger when the harness grants one, so batches happen exactly where the caller says.
    Every wait is bounded by `timeout` seconds and names what it waited for.
    """

    def __init__(self, spark: Any, build: Callable[[], tuple[Any, str]], *, checkpoint: str,
                 clock_start_ms: int, trigger_ms: int | None = None, timeout: float = DEFAULT_TIMEOUT,
                 name: str | None = None):
        self.spark = spark
        self.compat: SparkCompat = compat_for(spark)
        self._build = build
        self.checkpoint = checkpoint
        self.timeout = timeout
        self.name = name or f"eventtime_{uuid.uuid4().hex[:12]}"
        self.trigger_ms = trigger_ms
        self.clock = SteppedClock(clock_start_ms, trigger_ms=trigger_ms,
                                  current_connection=self.compat.callback_connection)
        self._query: Any = None
        self._sink: Any = None
        self.batch_sink: BatchFunctionSink | None = None
        self._schema: list[tuple[str, str]] = []
        self._struct: Any = None
        self._jschema: Any = None
        self._select: list[str] = []
        self.history: dict[int, BatchObservation] = {}  # the batches of the current checkpoint, by id
        self.earlier: list[BatchObservation] = []  # the batches of the checkpoints before it (`new_checkpoint`)
        self.runs = 0
        self.checkpoints = 0  # how many times the query was given a new checkpoint
        self._checkpoint_root = checkpoint
        self._next_batch = 0

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._query is not None

    @property
    def output_columns(self) -> list[tuple[str, str]]:
        """(name, Spark simple type) of the query's output."""
        return list(self._schema)

    def start(self, conf: Mapping[str, str] | None = None) -> list[BatchObservation]:
        """Start (or restart from the checkpoint); returns what the first trigger ran, if anything."""
        if self._query is not None:
            raise HarnessError("the query is already running")
        defaults = {k: v for k, v in self.compat.query_conf.items() if self.spark.conf.get(k, None) is None}
        applied = self._apply_conf({**defaults, **(conf or {})})
        try:
            built = self._build()
            df, output_mode = built[0], built[1]
            self.batch_sink = built[2] if len(built) > 2 else None
            self._sink = (self.batch_sink.jvm_sink(self.compat, df._jdf) if self.batch_sink is not None
                          else self.compat.new_memory_sink())
            self._schema = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
            self._struct = df.schema
            # the sink's rows are read back under positional names (`_0`, `_1`, ...): an output may
            # have two columns of one name (a join keeping both sides' times)
            self._jschema = self.spark._jsparkSession.parseDataType(positional_schema(df.schema).json())
            self._select = read_back_exprs(df.schema)
            # A new clock per start: the old one stays freed so its thread can never block again.
            self.clock = SteppedClock(self.clock.now_ms, trigger_ms=self.trigger_ms,
                                      current_connection=self.compat.callback_connection)
            self._next_batch = self._committed_batches()
            seen = self.clock.parks
            self._query = self.compat.start_query(
                name=self.name, checkpoint=self.checkpoint, jdf=df._jdf, sink=self._sink,
                output_mode=output_mode, trigger_ms=self.trigger_ms or 1000,
                clock=self.compat.trigger_clock(self.clock))
        finally:
            self._restore_conf(applied)
        self.runs += 1
        return self._after_trigger(seen, "the first trigger after start")

    def new_checkpoint(self) -> None:
        """Start the next start on a new, empty checkpoint: what Spark does at every start of a query that
        has no checkpoint location (a new temporary checkpoint: batch ids from 0, no state, no offsets, so
        its sources are read as at a first start). The batches seen so far move to `earlier`."""
        if self._query is not None:
            raise HarnessError("stop the query before giving it a new checkpoint")
        self.checkpoints += 1
        self.checkpoint = f"{self._checkpoint_root}-{self.checkpoints}"
        self.earlier += [self.history[b] for b in sorted(self.history)]
        self.history = {}

    def move_to(self, spark: Any) -> None:
        """Run the next start in another SparkSession (the query must be stopped): nothing of the old
        session (its query manager, SQL conf, sources, sink) goes along; the checkpoint carries it."""
        if self._query is not None:
            raise HarnessError("stop the query before moving it to another session")
        self.spark = spark
        self.compat = compat_for(spark)

    def stop(self) -> None:
        """Stop the query, bounded.

        Order matters: `query.stop()` first marks the query terminated (its first action), and only
        then is the clock freed, so the stream thread parked in `waitTillTime` wakes up to a query
        that is no longer active and leaves without running another trigger. Freeing the clock
        first would let it run one more batch while the stop is in progress.
        """
        query, self._query = self._query, None
        if query is None:
            return
        done = threading.Event()
        error: list[BaseException] = []

        def _stop() -> None:
            try:
                query.stop()
            except BaseException as exc:  # noqa: BLE001 - reported below
                error.append(exc)
            finally:
                done.set()

        threading.Thread(target=_stop, name=f"{self.name}-stop", daemon=True).start()
        deadline = time.monotonic() + self.timeout
        try:
            while not done.is_set() and query.isActive():  # the stop marks it inactive at once
                if time.monotonic() > deadline:
                    raise HarnessTimeout(f"timed out after {self.timeout:g}s waiting for query {self.name} "
                                         "to be marked stopped")
                done.wait(0.002)
        except HarnessTimeout:
            raise
        except Exception:  # noqa: BLE001 - the JVM side may already be gone; freeing is all that is left
            pass
        finally:
            self.clock.free()
        if not done.wait(max(deadline - time.monotonic(), 0.001)):
            raise HarnessTimeout(f"timed out after {self.timeout:g}s waiting for query {self.name} to stop")
        # the stop joined the stream thread: nothing calls back any more
        self.compat.release_callback_connections(self.clock.close_connections())

    def uncommit_last(self) -> None:
        """With the query stopped, make the last batch that read data run again at the next start, as
        after a crash between its sink write and its commit: its commit log entry goes, and so do the
        offset and commit entries of the no-data batches after it (they read nothing; Spark re-runs
        only the latest logged batch, so they must not stand in front of it)."""
        if self._query is not None:
            raise HarnessError("stop the query before forgetting its last commit")
        committed = self._committed_batches() - 1
        data = [b for b in sorted(self.history) if b <= committed and self.history[b].input_rows > 0]
        if not data:
            raise HarnessError("no batch has read data and committed yet, so none can run again")
        last = data[-1]
        for batch in range(last, committed + 1):
            logs = ("commits",) if batch == last else ("commits", "offsets")
            for log in logs:
                for name in (str(batch), f".{batch}.crc"):
                    path = os.path.join(self.checkpoint, log, name)
                    if os.path.exists(path):
                        os.remove(path)

    def close(self) -> None:
        """Stop if running; never raises for an already failed query, nor once the driver JVM has died
        (there is nothing left to stop; the clock is freed all the same)."""
        try:
            self.stop()
        except HarnessError:
            pass
        except Exception as exc:  # noqa: BLE001 - py4j's errors, re-raised unless the JVM is gone
            from .driverdeath import driver_death

            if driver_death(self.spark, after=exc) is None:
                raise
            self.clock.free()

    # -- steps -----------------------------------------------------------------------------------
    def process(self) -> list[BatchObservation]:
        """Run triggers, without moving time, until one runs no batch (data or no-data)."""
        self._require_running()
        out: list[BatchObservation] = []
        for _ in range(MAX_TRIGGERS_PER_STEP):
            seen = self.clock.grant()
            batches = self._after_trigger(seen, f"trigger for batch {self._next_batch}")
            if not batches:
                return out
            out.extend(batches)
        raise HarnessError(f"process ran {MAX_TRIGGERS_PER_STEP} triggers and Spark still had work")

    def advance(self, ms: int) -> list[BatchObservation]:
        """Move processing time; with a processing-time trigger, run the one trigger that became due."""
        self._require_running()
        if self.clock.advance(ms):
            seen = self.clock.grant()
            return self._after_trigger(seen, "the processing-time trigger that came due")
        return []

    def advance_stopped(self, ms: int) -> None:
        """Move processing time while the query is stopped."""
        self.clock.advance(ms)

    # -- observation -------------------------------------------------------------------------------
    def _require_running(self) -> None:
        if self._query is None:
            raise HarnessError("the query is not running (add a start step)")

    def _after_trigger(self, seen: int, what: str) -> list[BatchObservation]:
        query = self._query
        try:
            self.clock.wait_parked(seen, self.timeout, alive=lambda: bool(query.isActive()), what=what)
        except ClockWaitTimeout as exc:
            raise HarnessTimeout(str(exc)) from None
        if not query.isActive():
            self._raise_failure(query, what)
        out = []
        while os.path.exists(os.path.join(self.checkpoint, "commits", str(self._next_batch))):
            out.append(self._observe(self._next_batch))
            self._next_batch += 1
        return out

    def _raise_failure(self, query: Any, what: str) -> None:
        self._query = None
        self.clock.free()
        try:  # the stream thread ends by itself; once it has, its callback connections can go
            query.awaitTermination(int(self.timeout * 1000))
        except Exception:  # noqa: BLE001 - a failed query rethrows its exception here: it has ended
            pass
        if not query.isActive():
            self.compat.release_callback_connections(self.clock.close_connections())
        found = query.exception()  # Scala Option[StreamingQueryException] on the JVM side
        if found is None or not found.isDefined():
            raise QueryFailed(f"the query stopped by itself during {what}")
        chain = self.compat.java_error_classes(found.get())
        error_class = next((c for _, c, _ in chain if c and c != "STREAM_FAILED"), None) or chain[0][1]
        inner = chain[-1]
        message = _headline(inner[2])
        named = f" [{error_class}]" if error_class and error_class not in message else ""
        hint = self.compat.environment_hint([m for _, _, m in chain])
        raise QueryFailed(f"the query failed during {what}{named}: {inner[0].rsplit('.', 1)[-1]}"
                          + (f": {message}" if message else "") + (f" ({hint})" if hint else "")
                          + python_user_frames(inner[2]), error_class=error_class, chain=chain)

    def _committed_batches(self) -> int:
        commits = os.path.join(self.checkpoint, "commits")
        if not os.path.isdir(commits):
            return 0
        ids = [int(n) for n in os.listdir(commits) if n.isdigit()]
        return max(ids) + 1 if ids else 0

    def _observe(self, batch_id: int) -> BatchObservation:
        offsets = _read_log(os.path.join(self.checkpoint, "offsets", str(batch_id))) or {}
        commit = _read_log(os.path.join(self.checkpoint, "commits", str(batch_id))) or {}
        progress = self.compat.progress(self._query) or {}
        if progress.get("batchId") != batch_id:
            progress = {}  # the trigger ran this batch but reported nothing about it
        obs = observation(batch_id, offsets=offsets, commit=commit, progress=progress, rows=self._sink_rows(batch_id),
                          run=self.runs - 1 if self.runs else 0)
        obs.checkpoint = self.checkpoints
        self.history[batch_id] = obs  # a batch re-run after a restart replaces its first run
        return obs

    def _sink_rows(self, batch_id: int) -> list[tuple]:
        if self.batch_sink is not None:
            return self.batch_sink.rows.pop(batch_id, [])
        latest = self._sink.latestBatchId()
        if not latest.isDefined() or int(latest.get()) != batch_id:
            return []
        data = self._sink.latestBatchData()
        if data.isEmpty():
            return []
        from pyspark.sql import DataFrame

        jdf = self.spark._jsparkSession.createDataFrame(self.compat.to_java_list(data), self._jschema)
        fields = self._struct.fields
        return [tuple(from_spark_python(v, f.dataType) for v, f in zip(r, fields))
                for r in DataFrame(jdf, self.spark).selectExpr(*self._select).collect()]

    # -- conf ----------------------------------------------------------------------------------------
    def _apply_conf(self, conf: Mapping[str, str]) -> dict[str, str | None]:
        return apply_conf(self.spark, conf)

    def _restore_conf(self, previous: Mapping[str, str | None]) -> None:
        restore_conf(self.spark, previous)


def apply_conf(spark: Any, conf: Mapping[str, str]) -> dict[str, str | None]:
    """Set SQL settings on the session for a query start; returns what they were (None: unset).
    A query keeps the settings it started with, so they are restored right after the start."""
    previous: dict[str, str | None] = {}
    for key, value in conf.items():
        previous[key] = spark.conf.get(key, None)
        spark.conf.set(key, value)
    return previous


def restore_conf(spark: Any, previous: Mapping[str, str | None]) -> None:
    for key, value in previous.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


_PY_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>.+)$')
_NOT_USERS = (f"{os.sep}pyspark{os.sep}", f"{os.sep}py4j{os.sep}", os.path.dirname(os.path.abspath(__file__)) + os.sep)


def python_user_frames(message: str, limit: int = 8) -> str:
    """For an error a Python worker raised (a UDF's, a pandas function's), the user's code in the
    traceback Spark's message carries: `, raised at FILE:LINE (in FUNCTION)` of the innermost frame, then
    the user's frames (file, line, code) as Python prints them; "" when the message holds none (its
    line is otherwise only in the driver's log)."""
    if "Traceback (most recent call last)" not in (message or ""):
        return ""
    lines = message.splitlines()
    frames: list[tuple[str, str, str, str]] = []
    for i, line in enumerate(lines):
        found = _PY_FRAME.match(line)
        if found is None or any(part in found.group("file") for part in _NOT_USERS) \
                or found.group("file").startswith("<"):
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _PY_FRAME.match(lines[i + 1]) else ""
        frames.append((found.group("file"), found.group("line"), found.group("name").strip(), code))
    if not frames:
        return ""
    file, line, name, _ = frames[-1]
    shown = "".join(f'\n  File "{f}", line {n}, in {fn}' + (f"\n    {code}" if code else "")
                    for f, n, fn, code in frames[-limit:])
    return f", raised at {file}:{line} (in {name}){shown}"


def _headline(message: str) -> str:
    """The line of an error message a person needs: for a Python worker error, the exception line."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    if not lines:
        return ""
    if "Traceback (most recent call last)" in message:
        python_lines = [line for line in lines if _PY_EXC_LINE.match(line)]
        if python_lines:
            return python_lines[-1]
    return lines[0]
