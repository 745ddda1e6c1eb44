"""One update of a Spark Declarative Pipeline on the kit's Spark Connect session, as `spark-pipelines run`
runs one (`pyspark.pipelines.cli.run`): a dataflow graph created with the spec's catalog, database and
configuration, the definition files registered by PySpark's own loader (`pipelinegraph.load_graph`,
recording what they define), then `start_run` with the refresh selection, read to its end.

Where it differs from the command, on purpose:
- the storage root (checkpoints) is the caller's, never the spec's `storage`, so a test never touches
  the pipeline's production storage; updates given the same root carry their flows' offsets, state
  and watermark over, as successive `spark-pipelines run`s on one storage do;
- the session is the kit's (the command builds its own with the spec's `configuration` as builder
  settings): the configuration is set on it while the definitions register (`spark.conf.get` in a
  definition reads the spec's value) and put back after; it reaches every flow as the graph's SQL settings;
- the wait is bounded: the update not ended after `timeout` seconds is a `HarnessTimeout` saying so
  (the session's operations are interrupted).
Sources (`sources=`, docs/pipelines.md step 1): each `PipelineSource` is a kit source (`ConnectSource`)
and the `from:` pairs a reader names to read it, the vocabulary of a job's contract sources (`format`,
`path`, `table`, any option such as Kafka's `subscribe`). While the definitions are registered, every
Connect reader their flow functions call is substituted (`jobio.connect_reader_substitution`): a
streaming read matching a source gets that source's staged DataFrame, so the flow's registered plan
reads the kit's rows; a read of a table the pipeline itself defines (`spark.readStream.table("bronze")`,
`spark.read.table(...)`) is left to the server, which resolves it in the graph; any other read is a
`SubstitutionError` naming the definition's `file:line`, before the update starts. Without `sources`
the definitions run as they are, reading what they name. `PipelineRun` holds the sources and the
storage across updates: add rows, `update()`, read a dataset, add, `update()` again.
An update over the staged sources runs as over a Kafka or file source: its flows' `Trigger.AvailableNow`
reads to what was released before the update, then runs the no-data batches the new watermark calls for
(the staged reader's `SupportsTriggerAvailableNow`, `connect_source`; measured, docs/pipelines.md). A SQL
definition file's reads are parsed by the server: with `sources`, one that reads anything but a dataset of
the pipeline is a `PipelineLoadError` at its line (`pipelinegraph.check_sql_sources`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .bounded import bounded_call
from .connect import ConnectSource
from .jobio import (ReaderCall, SubstitutionError, check_reader_options, connect_reader_substitution, reads_match,
                    starts_at_latest)
from .pipelinegraph import PipelineGraph, PipelineLoadError, check_sql_sources, load_graph, load_spec, sql_reads
from .stream import HarnessError, HarnessTimeout

__all__ = ["FlowBatch", "FlowProgress", "PipelineRun", "PipelineSource", "SelectionError", "UpdateFailed", "UpdateResult", "flow_batches", "run_update"]

_COMPLETED = "Run is COMPLETED."


class UpdateFailed(HarnessError):
    """A pipeline update ended other than completed; the message holds the update's last events."""


class SelectionError(PipelineLoadError):
    """An update's `refresh`/`full_refresh` names a dataset the pipeline does not define (found before the
    update starts; the message lists the datasets it defines)."""


def check_selection(graph: PipelineGraph, names: Sequence[str]) -> None:
    """Each of `names` (a selection to refresh or fully refresh) is a dataset of `graph`, compared as Spark
    resolves a table name here (bare, case-insensitive): the server filters the graph's tables by the names
    it is given, so a misspelt one would select nothing and the update would look like one of nothing."""
    defined = {_bare(n) for n in graph.datasets}
    for file in graph.sql_files:  # their datasets, from their CREATE statements
        defined |= sql_reads(file)[0]
    unknown = [n for n in names if _bare(n) not in defined]
    if unknown:
        raise SelectionError(f"pipeline {graph.name!r} defines no dataset {', '.join(map(repr, unknown))} (it defines "
                             f"{', '.join(sorted(defined)) or 'none'})")


@dataclass(frozen=True)
class PipelineSource:
    """A kit source standing in for what a definition reads: `reads` are the `from:` pairs a reader must
    name (`jobio.kafka_reads(topic)` for a Kafka topic), `source` the staged source it then reads."""

    name: str
    reads: tuple[tuple[str, str], ...]
    source: ConnectSource


def _bare(name: str) -> str:
    return name.rsplit(".", 1)[-1].strip("`").lower()


@contextlib.contextmanager
def _substituted(sources: Sequence[PipelineSource], graph_reads: list[ReaderCall], notes: list[str]) -> Iterator[None]:
    """The definitions' readers replaced by `sources` inside the block; reads of tables left to the server
    are put in `graph_reads` (the caller checks them against the graph once it is registered). A reader's
    options are judged as a job's are (`check_reader_options`: refused at their line, or put in `notes`)."""
    # built before the patch is on: a source's own DataFrame is a reader too. Flows run Trigger.AvailableNow;
    # a flow that starts on a new checkpoint with a Kafka reader at `latest` skips what the source holds
    frames = {(s.name, latest): s.source.dataframe(available_now=True, start_latest=latest)
              for s in sources for latest in (False, True)}

    def described() -> str:
        return "; ".join(f"{s.name} (from: {{{', '.join(f'{k}: {v}' for k, v in s.reads)}}})" for s in sources)

    def streaming(call: ReaderCall) -> Any:
        fitting = [s for s in sources if reads_match(call, s.reads)]
        if len(fitting) > 1:
            raise SubstitutionError(call.place, f"{call.describe()} matches sources "
                                                f"{' and '.join(s.name for s in fitting)}: make their `from:` tell "
                                                "them apart")
        if fitting:
            check_reader_options(call, notes)
            return frames[fitting[0].name, starts_at_latest(call)]
        return batch(call)

    def batch(call: ReaderCall) -> Any:
        if call.table is not None and call.format is None and not call.options:
            graph_reads.append(call)  # a dataset of this pipeline, resolved by the server in the graph
            return call.open(call.table)
        kind = "streaming read" if call.streaming else "batch read (a static input)"
        raise SubstitutionError(call.place, f"{call.describe()} matches no source given for the pipeline "
                                            f"({described() or 'none given'}); the kit never opens a real source: "
                                            f"this {kind} cannot be stood in for")

    with connect_reader_substitution(streaming, batch):
        yield


def _check_graph_reads(graph: PipelineGraph, reads: Sequence[ReaderCall]) -> None:
    defined = {_bare(n) for n in graph.datasets}
    for call in reads:
        assert call.table is not None
        if _bare(call.table) not in defined:  # the SQL files' datasets included (read from their CREATEs)
            raise SubstitutionError(call.place, f"{call.describe()} reads table {call.table!r}, which no "
                                                f"definition of pipeline {graph.name!r} defines, and which "
                                                "matches no source given: a table outside the pipeline cannot be "
                                                "stood in for yet")


class _TolerantClient:
    """The Connect client as `start_run` uses it, with an iterator that passes over observed metrics.

    pyspark 4.3.0's `execute_command_as_iterator` raises `UNKNOWN_RESPONSE` on any response that is not
    a dict, and a pipeline update whose flows run Python workers (a Python data source such as the kit's
    staged source, a Python UDF) streams `__python_accumulator__` observed metrics among its events
    (measured: the update's first such response ended `spark-pipelines`' own loop). The client has
    already applied those accumulators when it yields them, so they are passed over here; any other
    response the command's iterator would refuse is an error. Without the client's internals this
    relies on (another pyspark), pyspark's own iterator is used."""

    def __init__(self, client: Any):
        self._client = client

    @staticmethod
    def usable(client: Any) -> bool:
        return all(hasattr(client, n) for n in ("_execute_plan_request_with_metadata", "_set_command_in_plan",
                                                "_execute_and_fetch_as_iterator"))

    def execute_command_as_iterator(self, command: Any, observations: Any = None) -> Iterator[dict[str, Any]]:
        from pyspark.sql.connect.client.core import ObservedMetrics

        req = self._client._execute_plan_request_with_metadata()
        self._client._set_command_in_plan(req.plan, command)
        for response in self._client._execute_and_fetch_as_iterator(req, observations or {}):
            if isinstance(response, dict):
                yield response
            elif not isinstance(response, ObservedMetrics):
                raise HarnessError(f"the pipeline update answered with a response the kit does not know: "
                                   f"{str(response)[:300]}")


class _Session:
    """What `start_run` needs of a session: its client (see `_TolerantClient`)."""

    def __init__(self, spark: Any):
        self.client = _TolerantClient(spark.client) if _TolerantClient.usable(spark.client) else spark.client


@contextlib.contextmanager
def _session_configuration(spark: Any, conf: Mapping[str, str]) -> Iterator[None]:
    """The spec's `configuration` (with the kit's settings) on the session while the definitions register,
    as `spark-pipelines run` builds its session with them: a definition reading `spark.conf.get(key)` sees
    the spec's value. A setting Spark refuses on a live session is skipped, as PySpark's Connect builder
    skips it (`_set_all(silent=True)`). The session's own values are put back after: the kit's session
    outlives the update, and the flows carry the configuration as the graph's SQL settings."""
    before: dict[str, str | None] = {}
    try:
        for key, value in conf.items():
            previous = spark.conf.get(key, None)
            try:
                spark.conf.set(key, value)
            except Exception:  # noqa: BLE001 - a static or core setting: Spark's builder skips it too
                continue
            before[key] = previous
        yield
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def _register(spark: Any, spec_path: Path, inner: Any, graph_id: str,
              sources: Sequence[PipelineSource] | None, notes: list[str]) -> PipelineGraph:
    """Register the pipeline's definitions in graph `graph_id`; with `sources`, their reads substituted and
    checked (the module's docstring)."""
    if sources is None:
        return load_graph(spec_path, spark=spark, inner=inner, graph_id=graph_id)
    graph_reads: list[ReaderCall] = []
    with _substituted(sources, graph_reads, notes):
        graph = load_graph(spec_path, spark=spark, inner=inner, graph_id=graph_id)
    _check_graph_reads(graph, graph_reads)
    check_sql_sources(graph)  # a SQL file's reads are the server's: only the pipeline's own datasets
    return graph


@dataclass
class UpdateResult:
    graph: PipelineGraph
    graph_id: str
    events: list[str] = field(default_factory=list)  # the update's event messages, in order
    notes: list[str] = field(default_factory=list)  # what of the definitions' reads the kit did not exercise


def run_update(spark: Any, path: str | Path, storage: str, *, refresh: Sequence[str] = (),
               full_refresh: Sequence[str] = (), full_refresh_all: bool = False,
               conf: Mapping[str, str] | None = None, timeout: float = 600.0,
               sources: Sequence[PipelineSource] | None = None, database: str | None = None) -> UpdateResult:
    """Load the pipeline at `path` (spec file or folder) into a new graph on `spark` (a Spark Connect
    session) and run one update with checkpoints under `storage`. `conf` is added to the spec's
    `configuration` (the kit's test settings); the spec's own value of a key wins nowhere: `conf` does.
    With `sources`, the definitions' reads are substituted (the module's docstring): the update reads
    what the sources released before it. `database`: the graph's default database instead of the spec's
    (the kit's own per scenario, so that no two runs share a dataset's table)."""
    from pyspark.pipelines.spark_connect_graph_element_registry import SparkConnectGraphElementRegistry
    from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph, start_run

    if not hasattr(spark, "client"):
        raise PipelineLoadError(f"{path}: a pipeline runs on a Spark Connect session only (its definitions "
                                "are registered as Connect plans); this session is classic")
    spec_path, spec = load_spec(path)
    sql_conf = {**spec.configuration, **(conf or {})}
    graph_id = create_dataflow_graph(spark, default_catalog=spec.catalog, default_database=database or spec.database,
                                     sql_conf=sql_conf)
    inner = SparkConnectGraphElementRegistry(spark, graph_id)
    notes: list[str] = []
    with _session_configuration(spark, sql_conf):
        graph = _register(spark, spec_path, inner, graph_id, sources, notes)
    check_selection(graph, [*refresh, *full_refresh])
    result = UpdateResult(graph, graph_id, notes=notes)

    session: Any = _Session(spark)

    def update() -> None:
        for response in start_run(session, graph_id, full_refresh=list(full_refresh),
                                  full_refresh_all=full_refresh_all, refresh=list(refresh), dry=False,
                                  storage=storage):
            if "pipeline_event_result" in response:
                result.events.append(response["pipeline_event_result"].event.message)

    try:
        bounded_call(update, timeout, lambda: f"the update of pipeline {spec.name!r} ({spec_path}); its last events: "
                     f"{result.events[-5:]}", name=f"eventtime-pipeline-update-{spec.name}", on_timeout=spark.interruptAll)
    except HarnessTimeout:
        raise
    except Exception as exc:  # the update's own error (a Ctrl-C in this thread is no failure of it)
        # the server's message says to look at the flow failures before it: they are the update's events
        message = str(exc).split("\n\nJVM stacktrace:")[0].strip()
        events = "\n".join(result.events[-8:])
        raise UpdateFailed(f"the update of pipeline {spec.name!r} ({spec_path}) failed: {message}\n"
                           f"its last events:\n{events}") from exc
    if not result.events or result.events[-1] != _COMPLETED:
        raise UpdateFailed(f"the update of pipeline {spec.name!r} ({spec_path}) did not complete; its last "
                           f"events: {result.events[-8:]}")
    return result


class PipelineRun:
    """A pipeline tested over several updates on one storage, reading the kit's sources: add rows to the
    sources, `update()` (the adds released before it, then one update as `run_update`), read a dataset
    with `rows`, add again, `update()` again; the flows' offsets, state and watermark carry over."""

    def __init__(self, spark: Any, path: str | Path, storage: str, sources: Sequence[PipelineSource], *,
                 conf: Mapping[str, str] | None = None, timeout: float = 600.0, database: str | None = None):
        stagings = {id(s.source.staging) for s in sources}
        if len(stagings) > 1:
            raise HarnessError("a pipeline's sources must share one staging (one release per update)")
        self.spark, self.path, self.storage = spark, path, storage
        self.sources = list(sources)
        self.conf = dict(conf or {})
        self.timeout, self.database = timeout, database
        self.updates: list[UpdateResult] = []

    def update(self, *, refresh: Sequence[str] = (), full_refresh: Sequence[str] = (),
               full_refresh_all: bool = False) -> UpdateResult:
        if self.sources:
            staging = self.sources[0].source.staging
            staging.release()  # what was added before the update is what it reads
            staging.new_token()  # the flows registered now share their sources' pins, no earlier update's
        result = run_update(self.spark, self.path, self.storage, refresh=refresh, full_refresh=full_refresh,
                            full_refresh_all=full_refresh_all, conf=self.conf, timeout=self.timeout,
                            sources=self.sources, database=self.database)
        self.updates.append(result)
        return result

    def rows(self, dataset: str) -> list[dict[str, Any]]:
        """A table the pipeline wrote (a streaming table or materialized view), read back as written."""
        return [r.asDict(recursive=True) for r in self.spark.read.table(dataset).collect()]


@dataclass(frozen=True)
class FlowBatch:
    """One micro-batch a pipeline's flow committed, read from its checkpoint: which checkpoint of the flow
    (`N` of `<storage>/_checkpoints/<catalog>/<database>/<table>/<flow>/<N>`: a full refresh starts the next),
    the watermark it ran with (its offsets' `batchWatermarkMs`) and left (its commit's `nextBatchWatermarkMs`),
    and the adds each of the kit's staged sources had reached (its offsets' source lines). Batch ids start
    again at 0 in a new checkpoint, whose query has another id: the pair tells a batch apart."""

    table: str
    checkpoint: int
    batch_id: int
    watermark_before_ms: int | None
    watermark_after_ms: int | None
    timestamp_ms: int | None
    adds: Mapping[str, int]
    query_id: str | None = None  # the checkpoint's query id (its `metadata`): what Spark's progress names


def flow_batches(spark: Any, storage: str, flow: str) -> list[FlowBatch]:
    """The committed batches of flow `flow` under the storage root, in (checkpoint, batch) order; read
    through the session (the checkpoints are the server's files), as `ConnectStreamRun` reads its own."""
    import json

    base = f"{storage.rstrip('/')}/_checkpoints/*/*/*/{flow}/*"
    try:
        rows = (spark.read.text([f"{base}/commits", f"{base}/offsets", f"{base}/metadata"])
                .selectExpr("value", "_metadata.file_path AS path").collect())
    except Exception as exc:  # noqa: BLE001 - no checkpoint of the flow yet: it has run no batch
        if "PATH_NOT_FOUND" in str(exc) or "does not exist" in str(exc):
            return []
        raise
    first: dict[tuple[str, int, int, str], dict] = {}
    adds: dict[tuple[str, int, int], dict[str, int]] = {}
    ids: dict[tuple[str, int], str] = {}  # (table, checkpoint) -> its query's id
    for value, path in rows:
        parts = path.rstrip("/").split("/")
        if parts[-1] == "metadata" and parts[-2].isdigit() and value.startswith("{"):
            ids[(parts[-4], int(parts[-2]))] = str(json.loads(value).get("id"))
            continue
        name, log, n, table = parts[-1], parts[-2], parts[-3], parts[-5]
        if not (name.isdigit() and n.isdigit() and value.startswith("{")):
            continue
        key = (table, int(n), int(name))
        line = json.loads(value)
        if log == "offsets" and isinstance(line.get("source"), str) and "adds" in line:
            adds.setdefault(key, {})[line["source"]] = int(line["adds"])
        else:
            first.setdefault((*key, log), line)
    out = []
    for table, n, batch in sorted({k[:3] for k in first if k[3] == "commits"}, key=lambda k: (k[1], k[2], k[0])):
        offsets, commit = first.get((table, n, batch, "offsets"), {}), first[(table, n, batch, "commits")]
        out.append(FlowBatch(table, n, batch, offsets.get("batchWatermarkMs"), commit.get("nextBatchWatermarkMs"),
                             offsets.get("batchTimestampMs"), adds.get((table, n, batch), {}), ids.get((table, n))))
    return out


class FlowProgress:
    """The query progress of a pipeline's flows, as Spark reports it to a listener on the session: measured
    (pyspark 4.3.0, the kit's Connect server), a Connect client's `StreamingQueryListener` receives every
    flow's progress of an update run from that session, named by the flow's qualified name
    (`spark_catalog.<database>.<flow>`), with its state operators (rows dropped by the watermark, rows in
    state) and event-time statistics. The events reach the client on their own stream, possibly after the
    update has returned: `reports` waits, bounded, for the batches a flow's checkpoint says it committed."""

    def __init__(self, spark: Any):
        import threading

        from pyspark.sql.streaming import StreamingQueryListener

        self.spark = spark
        # (flow, query id, batch id) -> its progress, the latest reported; query id None: of any query
        self._seen: dict[tuple[str, str | None, int], dict] = {}
        self._arrived = threading.Condition()
        owner = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None:
                pass

            def onQueryProgress(self, event: Any) -> None:
                owner._report(event.progress)

            def onQueryIdle(self, event: Any) -> None:
                pass

            def onQueryTerminated(self, event: Any) -> None:
                pass

        self._listener = _Listener()
        spark.streams.addListener(self._listener)

    def _report(self, progress: Any) -> None:
        import json

        report = json.loads(progress.json)
        flow, batch = _bare(str(report.get("name") or "")), int(report.get("batchId", -1))
        with self._arrived:
            self._seen[(flow, str(report.get("id")), batch)] = self._seen[(flow, None, batch)] = report
            self._arrived.notify_all()

    def reports(self, flow: str, batch_ids: Sequence[int], timeout: float, query_id: str | None = None
                ) -> dict[int, dict]:
        """The progress of each of `flow`'s batches `batch_ids` (of the query `query_id`, its checkpoint's: a
        full refresh starts a new checkpoint whose batch ids start at 0 again); HarnessTimeout naming the
        batches whose progress had not arrived within `timeout` seconds."""
        import time

        deadline = time.monotonic() + timeout
        key = _bare(flow)
        with self._arrived:
            while True:
                missing = [b for b in batch_ids if (key, query_id, b) not in self._seen]
                left = deadline - time.monotonic()
                if not missing or left <= 0:
                    break
                self._arrived.wait(left)
            if missing:
                raise HarnessTimeout(f"the query progress of flow {flow!r}'s batches {missing} did not reach the "
                                     f"session's listener within {timeout:g}s of the update's end")
            return {b: self._seen[(key, query_id, b)] for b in batch_ids}

    def close(self) -> None:
        try:
            self.spark.streams.removeListener(self._listener)
        except Exception:  # noqa: BLE001 - a session gone has no listener left to remove
            pass
