"""Drives one streaming query over Spark Connect, where the client has no JVM: staged sources, observed batches.

The classic `StreamRun` needs the JVM (MemoryStream, a stepped py4j clock, the checkpoint on the
client's disk). Over Connect the harness only speaks the Connect protocol:

- inputs are a Python data source the server runs (`connect_source`, shipped by value), fed by
  DataFrame writes of staged rows into a directory on the server's side (`ConnectStaging`); a step's
  adds are released together, so they land in the same micro-batch, and each add is one offset; rows
  of every type Spark's DDL writes travel as PySpark's own Python values (`sparkvalues`);
- a step runs `processAllAvailable()` (bounded here: it has no timeout of its own);
- each micro-batch is observed from what the server wrote: the checkpoint's offset and commit logs
  (batch watermark before and after, batch timestamp) read back with `spark.read.text`, the rows a
  `foreachBatch` wrote per batch id, and the query progress (input rows, dropped rows, state rows).

There is no manual clock over Connect: processing time is the server's wall clock, so `advance`
steps, processing-time triggers and `current_timestamp()` cannot be driven (the runner reports
such scenarios not applicable). Facts measured for this design are in docs/connect.md.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import time
import uuid
from typing import Any, Callable, Mapping, Sequence

from .bounded import bounded_call
from .compat import SparkCompat, compat_for
from .sparkvalues import from_spark_python, parse_schema, read_back_exprs, to_spark_python
from .waits import DEFAULT_TIMEOUT
from .stream import (BatchObservation, apply_conf, restore_conf, HarnessError, HarnessTimeout, QueryFailed, _headline,
                     observation, python_user_frames)

__all__ = ["ConnectStaging", "ConnectSource", "ConnectStreamRun", "ConnectLimit", "STAGING_CONF", "REMOTE_FORM",
           "check_remote", "connect_session", "remote_from_environment"]

STAGING_CONF = "spark.eventtime.connect.stagingDir"  # a session setting naming the server-side staging root
_STAGE_SCHEMA = "source string, seq int, rows binary"
# Every Python the server may run reads it (3.4+); the rows hold standard library types only.
_PICKLE_PROTOCOL = 4
_REGISTERED: dict[int, Any] = {}


class ConnectLimit(HarnessError):
    """What the scenario asks cannot be reproduced over Spark Connect (the message says why): the run
    is *not applicable* there, neither passed nor failed."""


def _register_source(spark: Any) -> None:
    """Register the staged source in this Connect session, shipped by value: the server need not have
    `eventtime` installed, only pyspark and pyarrow."""
    if _REGISTERED.get(id(spark)) is spark:
        return
    from pyspark import cloudpickle

    from . import connect_source
    from .compat import available_now_mixin

    cloudpickle.register_pickle_by_value(connect_source)
    spark.dataSource.register(connect_source.data_source(available_now_mixin()))
    _REGISTERED[id(spark)] = spark


class ConnectStaging:
    """The server-side directory one scenario run stages its rows in and keeps its checkpoint and output.

    `root` defaults to the session setting `spark.eventtime.connect.stagingDir`, else a folder under
    the server's warehouse directory (a path the server can write and its driver can read). Every
    write goes through Connect; the client never touches the directory itself.
    """

    def __init__(self, spark: Any, root: str | None = None):
        self.spark = spark
        base = root or spark.conf.get(STAGING_CONF, None) or (
            spark.conf.get("spark.sql.warehouse.dir").rstrip("/") + "/eventtime-staging")
        self.root = f"{base.rstrip('/')}/{uuid.uuid4().hex}"
        self.token = uuid.uuid4().hex
        self.generation = 0
        self.released: dict[str, int] = {}  # source -> adds released so far
        self.reading: set[str] = set()  # the sources the current query start reads
        self._pending: list[tuple[str, int, list[tuple]]] = []
        _register_source(spark)

    @property
    def checkpoint(self) -> str:
        return f"{self.root}/checkpoint"

    @property
    def output(self) -> str:
        return f"{self.root}/out"

    def new_token(self) -> str:
        """A fresh token per query start: the readers of one start share their pins, never another's."""
        self.token = uuid.uuid4().hex
        self.reading = set()
        return self.token

    @property
    def pending(self) -> bool:
        """Whether adds are staged and not yet released."""
        return bool(self._pending)

    def stage(self, source: str, seq: int, rows: Sequence[Sequence[Any]]) -> None:
        """Stage one add: `rows` as PySpark's Python values for the source's schema (`to_spark_python`)."""
        self._pending.append((source, seq, [tuple(r) for r in rows]))

    def release(self) -> bool:
        """Write every pending add as the next generation (one Connect write); False when none was pending."""
        if not self._pending:
            return False
        records = [(source, seq, pickle.dumps(rows, protocol=_PICKLE_PROTOCOL)) for source, seq, rows in self._pending]
        for source, seq, _ in self._pending:
            self.released[source] = max(seq, self.released.get(source, 0))
        self.generation += 1
        self.spark.createDataFrame(records, _STAGE_SCHEMA).coalesce(1).write.parquet(
            f"{self.root}/stage/gen={self.generation}")
        self._pending = []
        return True

    def remove(self) -> None:
        """Nothing to do from the client: the server-side folder is left for the server's cleanup
        (a Connect client has no call that deletes a path)."""


class ConnectSource:
    """A named staged source: each `add` is one offset, released with the step's other adds."""

    def __init__(self, staging: ConnectStaging, name: str, columns: Sequence[tuple[str, str]]):
        self.staging = staging
        self.name = name
        self.columns = list(columns)
        self.offsets = 0
        self._fields = parse_schema(self.columns).fields
        self._schema = ", ".join(f"`{n.replace('`', '``')}` {t}" for n, t in self.columns)  # (name, Spark DDL type)

    def dataframe(self, *, available_now: bool = False, start_latest: bool = False) -> Any:
        """A new streaming DataFrame reading this source, for the current query start; `available_now` for a
        query run by Trigger.AvailableNow (a pipeline's flows: `connect_source.data_source`); `start_latest`:
        a query that starts on a new checkpoint begins after what was released when it started (Kafka's
        `startingOffsets` `latest`), not at the first add."""
        self.staging.reading.add(self.name)
        return (self.staging.spark.readStream.format("eventtime_staged")
                .option("root", self.staging.root).option("source", self.name)
                .option("token", self.staging.token).option("schema", self._schema)
                .option("available_now", str(available_now).lower())
                .option("start", "latest" if start_latest else "earliest").load())

    def add(self, given: Sequence[Sequence[Any]]) -> None:
        """Stage rows (the kit's values: timestamps as epoch microseconds) as this source's next offset."""
        self.offsets += 1
        self.staging.stage(self.name, self.offsets,
                           [tuple(to_spark_python(v, f.dataType) for v, f in zip(r, self._fields)) for r in given])

    def add_partitions(self, parts: Sequence[Sequence[Sequence[Any]]]) -> None:
        """One add per partition, in order: each add is one input partition of the batch that reads it."""
        for part in parts:
            self.add(part)

    def replayed_in(self, spark: Any) -> "ConnectSource":
        raise HarnessError("starting in a new session is not supported over Spark Connect")


def _progress_dicts(query: Any) -> list[dict]:
    out = []
    for p in query.recentProgress or []:
        if isinstance(p, dict):
            out.append(p)
        elif hasattr(p, "json"):
            out.append(json.loads(p.json))
        else:
            out.append(dict(p))
    return out


def _foreach_batch_writer(output: str, select: list[str]) -> Callable[[Any, int], None]:
    """The function the server runs per batch: the batch's rows, columns renamed by position (an output
    may name a column twice) and timestamps at any depth as epoch microseconds (`read_back_exprs`), to
    `<output>/batch=<id>` (a batch re-run after a restart replaces its first run)."""
    positional = [f"_{i}" for i in range(len(select))]

    def write(df: Any, batch_id: int) -> None:
        (df.toDF(*positional).selectExpr(*select).coalesce(1).write.mode("overwrite")
         .parquet(f"{output}/batch={batch_id}"))
    return write


class ConnectStreamRun:
    """One query over its lifetime on a Connect session: the same interface and observations as
    `StreamRun` as far as Connect allows (no clock: `advance` raises HarnessError)."""

    def __init__(self, spark: Any, build: Callable[[], tuple[Any, str]], staging: ConnectStaging, *,
                 timeout: float = DEFAULT_TIMEOUT, name: str | None = None):
        self.spark = spark
        self.compat: SparkCompat = compat_for(spark)
        self.staging = staging
        self.checkpoint = staging.checkpoint
        self._build = build
        self.timeout = timeout
        self.name = name or f"eventtime_{uuid.uuid4().hex[:12]}"
        self._query: Any = None
        self._schema: list[tuple[str, str]] = []
        self._struct: Any = None  # the output's StructType
        self._written: Any = None  # the StructType of what the foreachBatch writes (`read_back_exprs`)
        self.history: dict[int, BatchObservation] = {}
        self.runs = 0
        self._next_batch = 0
        self._held: list[BatchObservation] = []
        self._deferred: dict[str, str] | None = None  # the conf of a start put off until rows are staged

    @property
    def output_columns(self) -> list[tuple[str, str]]:
        return list(self._schema)

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._query is not None or self._deferred is not None

    def start(self, conf: Mapping[str, str] | None = None) -> list[BatchObservation]:
        """Start (or restart from the checkpoint), release what was staged, run what is available.

        A start before any row was ever staged is deferred: a Python streaming source reports an
        offset even before its first data, so a query started then runs an empty batch at once
        (measured), which a MemoryStream query does not, and that batch fixes the settings in the
        offset log. The query is started once, on a scratch checkpoint, so that a pipeline the
        engine refuses fails at this step, and for real at the first step that releases rows.
        """
        if self.running:
            raise HarnessError("the query is already running")
        given = dict(conf or {})
        if self.staging.generation == 0 and not self.staging.pending:
            self.runs += 1
            probe = self._start_query(given, f"{self.staging.root}/probe-{self.runs}")
            self._bounded(probe.stop, f"the trial start of query {self.name} to stop")
            self._deferred = given
            return []
        self.staging.release()  # before the start: its first trigger must find the rows
        self._query = self._start_query(given, None)
        self.runs += 1
        ran = self._run_available("the first batches after start")
        # The classic harness observes only the batch of the first trigger at start; the rest (a
        # no-data batch the new watermark calls for) belongs to the next step. Over Connect the
        # query runs them at once, so they are held back and handed to the next `process`.
        self._held = ran[1:]
        for obs in self._held:
            del self.history[obs.batch_id]
        return ran[:1]

    def _start_query(self, conf: Mapping[str, str], scratch: str | None) -> Any:
        """Start the query (on `scratch`, a throwaway checkpoint and output, when given)."""
        defaults = {k: v for k, v in self.compat.query_conf.items() if self.spark.conf.get(k, None) is None}
        applied = self._apply_conf({**defaults, **conf})
        try:
            self.staging.new_token()
            df, output_mode = self._build()
            self._struct = df.schema
            self._schema = [(f.name, f.dataType.simpleString()) for f in self._struct.fields]
            select = read_back_exprs(self._struct)
            self._written = df.toDF(*[f"_{i}" for i in range(len(select))]).selectExpr(*select).schema
            if scratch is None:
                self._next_batch = self._committed_batches()
            return (df.writeStream.queryName(self.name).outputMode(output_mode)
                    .option("checkpointLocation", f"{scratch}/checkpoint" if scratch else self.checkpoint)
                    .foreachBatch(_foreach_batch_writer(f"{scratch}/out" if scratch else self.staging.output,
                                                        select)).start())
        finally:
            self._restore_conf(applied)

    def move_to(self, spark: Any) -> None:
        raise HarnessError("starting in a new session is not supported over Spark Connect")

    def stop(self) -> None:
        """Stop the query, bounded."""
        self._deferred = None
        query, self._query = self._query, None
        if query is None:
            return
        self._bounded(query.stop, f"query {self.name} to stop")
        if self._held:
            raise ConnectLimit(f"the query is stopped right after its first trigger, before batch "
                               f"{self._held[0].batch_id} that Spark owes it; over Spark Connect the query "
                               "runs that batch at once, so a stop cannot come before it")

    def close(self) -> None:
        try:
            self.stop()
        except HarnessError:
            pass

    # -- steps -----------------------------------------------------------------------------------
    def process(self) -> list[BatchObservation]:
        """Release the staged adds and run every batch they (and the watermark) call for."""
        self._require_running()
        if self._deferred is not None:
            if not self.staging.pending:
                return []  # no data was ever added: a MemoryStream query runs no batch either
            conf, self._deferred = self._deferred, None
            self.staging.release()  # before the start: a first trigger without rows runs an empty batch
            self._query = self._start_query(conf, None)
        held, self._held = self._held, []
        if held and self.staging.pending:
            raise ConnectLimit(f"rows are added while batch {held[0].batch_id} is owed after the first trigger; "
                               "the classic harness runs them in one batch, while over Spark Connect the query "
                               "has run the owed batch already")
        for obs in held:
            self.history[obs.batch_id] = obs
        return held + self._run_available(f"batch {self._next_batch} and the ones after it")

    def advance(self, ms: int) -> list[BatchObservation]:
        raise HarnessError("moving processing time needs the manual clock, which Spark Connect does not offer")

    def advance_stopped(self, ms: int) -> None:
        self.advance(ms)

    # -- observation -------------------------------------------------------------------------------
    def _require_running(self) -> None:
        if not self.running:
            raise HarnessError("the query is not running (add a start step)")

    def _bounded(self, fn: Callable[[], Any], what: str, timeout: float | None = None) -> Any:
        """Run a blocking Connect call with the harness's bound (processAllAvailable has none)."""
        return bounded_call(fn, self.timeout if timeout is None else timeout, what, name=f"{self.name}-wait")

    def _run_available(self, what: str) -> list[BatchObservation]:
        """Release the staged adds and wait until the query has committed a batch reading all of them
        and run every batch due after it.

        `processAllAvailable()` returns once a trigger finds no new data, and a trigger that asked the
        sources for their offsets just before the release counts: it can return before the released
        adds are read (seen under load). So it is called again until the offset log of the newest
        committed batch reaches every released add of every source the query reads, bounded by the
        timeout; each call waits for the engine, never for time.
        """
        self.staging.release()
        query = self._query
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self._bounded(query.processAllAvailable, what, max(deadline - time.monotonic(), 0.001))
            except HarnessTimeout:
                raise
            except Exception as exc:  # noqa: BLE001 - a failed query raises its exception here
                self._raise_failure(exc, what)
            logs = self._read_logs()
            unread = self._unread(logs)
            if not unread:
                return self._observe_new(logs)
            if time.monotonic() >= deadline:
                raise HarnessTimeout(f"timed out after {self.timeout:g}s waiting for {what} to read the released "
                                     f"adds ({', '.join(f'{s}: {n}' for s, n in sorted(unread.items()))})")

    def _unread(self, logs: tuple[dict[int, dict], dict[int, dict], dict[int, dict[str, int]]]) -> dict[str, int]:
        """The sources of this query whose released adds the newest committed batch has not read: source ->
        adds released."""
        commits, _, sources = logs
        read = sources.get(max(commits), {}) if commits else {}
        return {s: n for s in self.staging.reading if (n := self.staging.released.get(s, 0)) > read.get(s, 0)}

    def _raise_failure(self, exc: BaseException, what: str) -> None:
        query, self._query = self._query, None
        try:
            self._bounded(query.stop, f"failed query {self.name} to stop")
        except Exception:  # noqa: BLE001 - it has failed already; stopping is only tidying up
            pass
        error_class = self.compat.error_class(exc)
        text = str(exc)
        message = _headline(text)
        named = f" [{error_class}]" if error_class and error_class not in message else ""
        raise QueryFailed(f"the query failed during {what}{named}: {message}{python_user_frames(text)}",
                          error_class=error_class,
                          chain=[(type(exc).__module__ + "." + type(exc).__name__, error_class, text)]) from None

    def _committed_batches(self) -> int:
        if self.staging.generation == 0:
            return 0  # no row was ever released: no batch has run on this checkpoint
        commits, _, _ = self._read_logs()
        return max(commits) + 1 if commits else 0

    def _read_logs(self) -> tuple[dict[int, dict], dict[int, dict], dict[int, dict[str, int]]]:
        """The checkpoint's commit and offset logs by batch id, in one read through Connect: each file's
        metadata (its first JSON line), and per offset file the adds each staged source had reached
        (its offset lines name their source); empty while the query has written neither."""
        try:
            rows = (self.spark.read.text([f"{self.checkpoint}/commits", f"{self.checkpoint}/offsets"])
                    .selectExpr("value", "_metadata.file_name AS name", "_metadata.file_path AS path").collect())
        except Exception as exc:  # noqa: BLE001 - no such folder yet: no batch has been written
            if "PATH_NOT_FOUND" in str(exc) or "does not exist" in str(exc):
                return {}, {}, {}
            raise
        commits: dict[int, dict] = {}
        offsets: dict[int, dict] = {}
        sources: dict[int, dict[str, int]] = {}
        for value, name, path in rows:
            if not (name.isdigit() and value.startswith("{")):
                continue
            logs = commits if path.rstrip("/").rsplit("/", 2)[-2] == "commits" else offsets
            line = json.loads(value)
            if logs is offsets and isinstance(line.get("source"), str) and "adds" in line:
                sources.setdefault(int(name), {})[line["source"]] = int(line["adds"])
            elif int(name) not in logs:
                logs[int(name)] = line
        return commits, offsets, sources

    def _observe_new(self, logs: tuple[dict[int, dict], dict[int, dict], dict[int, dict[str, int]]]
                     ) -> list[BatchObservation]:
        all_commits, offsets, _ = logs
        commits = {b: c for b, c in all_commits.items() if b >= self._next_batch}
        if not commits:
            return []
        ids = sorted(commits)
        rows = self._sink_rows(ids)
        progress = {p.get("batchId"): p for p in _progress_dicts(self._query)}
        out = []
        for batch_id in ids:
            out.append(self._observation(batch_id, offsets.get(batch_id, {}), commits[batch_id],
                                         progress.get(batch_id, {}), rows.get(batch_id, [])))
        self._next_batch = ids[-1] + 1
        return out

    def _observation(self, batch_id: int, offsets: dict, commit: dict, progress: dict,
                     rows: list[tuple]) -> BatchObservation:
        input_rows = progress.get("numInputRows")
        if input_rows is None:
            input_rows = sum(int(s.get("numInputRows") or 0) for s in progress.get("sources") or [])
        obs = observation(batch_id, offsets=offsets, commit=commit, progress=progress, rows=rows,
                          run=self.runs - 1 if self.runs else 0, input_rows=int(input_rows or 0))
        self.history[batch_id] = obs
        return obs

    def _sink_rows(self, ids: list[int]) -> dict[int, list[tuple]]:
        """The rows each batch wrote, read back in one query."""
        from pyspark.sql.types import LongType, StructField, StructType

        fields = self._struct.fields
        paths = [f"{self.staging.output}/batch={b}" for b in ids]
        schema = StructType(list(self._written.fields) + [StructField("batch", LongType())])
        df = self.spark.read.schema(schema).option("basePath", self.staging.output).parquet(*paths)
        out: dict[int, list[tuple]] = {b: [] for b in ids}
        for r in df.collect():
            out.setdefault(int(r[-1]), []).append(tuple(from_spark_python(v, f.dataType) for v, f in zip(r, fields)))
        return out

    # -- conf ----------------------------------------------------------------------------------------
    def _apply_conf(self, conf: Mapping[str, str]) -> dict[str, str | None]:
        return apply_conf(self.spark, conf)

    def _restore_conf(self, previous: Mapping[str, str | None]) -> None:
        restore_conf(self.spark, previous)


# -- Sessions ------------------------------------------------------------------------------------------
REMOTE_FORM = "sc://HOST:PORT (optionally followed by /;key=value parameters, as Spark Connect accepts)"
_REMOTE = re.compile(r"^sc://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:([1-9]\d{0,4}))?(/.*)?$")


def check_remote(url: str) -> str:
    """`url` stripped if it is a Spark Connect URL; else ValueError naming the accepted form."""
    text = (url or "").strip()
    m = _REMOTE.match(text)
    if not m or (m.group(4) and int(m.group(4)) > 65535):
        raise ValueError(f"{url!r} is not a Spark Connect URL; accepted: {REMOTE_FORM}")
    return text


def remote_from_environment() -> str | None:
    """The Spark Connect URL of the SPARK_REMOTE environment variable (PySpark's own), if set."""
    value = os.environ.get("SPARK_REMOTE", "").strip()
    return value or None


def connect_session(url: str, *, timeout: float = DEFAULT_TIMEOUT) -> Any:
    """A Spark Connect session to `url`, once the server has answered (bounded: a Connect client
    otherwise retries an unreachable server for minutes). HarnessError says what did not answer."""
    from pyspark.sql import SparkSession

    url = check_remote(url)
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        bounded_call(lambda: spark.version, timeout, "an answer", name="eventtime-connect-probe")
    except HarnessTimeout:
        raise HarnessTimeout(f"the Spark Connect server at {url} did not answer within {timeout:g}s") from None
    except Exception as exc:  # noqa: BLE001 - said in words
        raise HarnessError(f"the Spark Connect server at {url} did not answer: "
                           f"{_headline(str(exc)) or type(exc).__name__}") from exc
    return spark
