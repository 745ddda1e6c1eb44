"""A pipeline written as a job (`build(spark)`, `main(spark)`, `main()`, or a script run as `__main__`):
its readers matched to the contract's sources, its writer's sink observed, and what the substitution
cannot honour said at the job's line.

The job calls `spark.readStream...` and `writeStream...` as in production; while the kit builds the
query (`eventtime.harness.jobio.substitution`), each reader is matched to the contract source whose
`from:` it fits and replaced by that source's streaming DataFrame, and the writer's `start()` /
`toTable()` only records the sink. The kit then starts the query itself, on its clock and checkpoint.
What is honoured and what is refused is documented in docs/jobs.md.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, MutableMapping, Sequence

from eventtime.harness.jobio import (READER_BATCH_SIZE, READER_REFUSED, Place, ReaderCall, SubstitutionError, WriterCall,
                                     active_writers, caller_place, check_reader_options, kafka_reads, substitution,
                                     writer_call)
from eventtime.harness.jobio import reads_match as _matches
from eventtime.harness.jobpaths import PathOutside, WrittenWith, kept_path, kept_to, keeping, record_written

from .contracts import Contract, SourceSpec
from .userpipeline import ScriptJob, user_frames
from .topics import Topics

__all__ = ["JobOutput", "JobTopics", "BatchFunction", "build_job", "run_job", "ScriptJob", "query_names",
           "SubstitutionError", "READER_REFUSED", "READER_BATCH_SIZE", "SINK_FORMATS"]

# Sinks the kit can observe: the job's own batch function, a table the kit appends each batch to,
# Spark's own file sink handed each batch, or an output topic (`topics`) it publishes each batch's
# records to, after the kit observed the batch.
SINK_FORMATS = ("foreachBatch", "parquet", "json", "csv", "orc", "memory", "console", "noop", "kafka")
FILE_FORMATS = SINK_FORMATS[1:5]  # written by Spark's own file sink, into a folder or a table's location


@dataclass
class JobOutput:
    """One query a job built: its DataFrame, output mode, and its sink (None: the plain memory sink)."""

    df: Any
    output_mode: str
    writer: WriterCall | None
    sink: Callable[[Any, int], Any] | None  # the batch function that runs in each micro-batch
    notes: tuple[str, ...] = ()  # what of the job's code the kit did not exercise, for the result
    name: str = ""  # the name the user knows the query by (`query_names`)
    chained: bool = False  # a query of the job reads a folder or table another of its queries writes
    # the query has no checkpoint location: Spark gives it a new temporary checkpoint at every start
    # (`checkpoint_anew`), so each start begins anew
    anew: bool = False
    reads: Mapping[str, ReaderCall] = field(default_factory=dict)  # contract source -> the job's reader of it


def _is_kit(path: str) -> bool:
    return os.path.abspath(path).startswith(os.path.dirname(os.path.abspath(__file__)) + os.sep)


def _describe_source(name: str, reads: tuple[tuple[str, str], ...]) -> str:
    return f"{name} (from: {{{', '.join(f'{k}: {v}' for k, v in reads)}}})" if reads else f"{name} (no `from:`)"


def reads_of(source: SourceSpec) -> tuple[tuple[str, str], ...]:
    """What a job's reader must name to read `source`: its `from:`, or for a kafka source without one,
    `format: kafka` and its topic as `subscribe`."""
    if source.reads or source.kind != "kafka":
        return source.reads
    return kafka_reads(source.topic or source.name)


def _check_schema(call: ReaderCall, df: Any, source: str) -> None:
    """A reader that declares a schema gets the source's columns: the names must be the ones it declares."""
    if call.schema is None:
        return
    schema = call.schema
    if isinstance(schema, str):
        try:
            from pyspark.sql.types import _parse_datatype_string

            schema = _parse_datatype_string(call.schema)
        except Exception:  # noqa: BLE001 - a schema Spark cannot read is the job's to find in production
            return
    declared = [f.name for f in getattr(schema, "fields", [])]
    given = [f.name for f in df.schema.fields]
    if declared and declared != given:
        raise SubstitutionError(call.place, f"{call.describe()} declares columns {', '.join(declared)}; contract "
                                            f"source {source!r} gives {', '.join(given)}: declare the source's "
                                            "columns as the job reads them")


def _own_output(call: ReaderCall, folder: str) -> str | None:
    """What to open for a reader of a folder or table one of the job's queries started before it writes
    (its kept path, or the table's name), None when no such query writes it."""
    writers = active_writers()
    if call.table is not None:
        wanted = call.table.lower()
        return call.table if any(w.table is not None and w.table.lower() == wanted for w in writers) else None
    if call.path is None:
        return None
    try:
        kept = kept_path(call.path, folder)
    except PathOutside as exc:
        raise SubstitutionError(call.place, f"{call.describe()} reads a path that would leave the scenario's run "
                                            f"folder: {exc} (docs/jobs.md, *Where the job writes*)") from None
    for w in writers:
        if w.table is None and w.path and w.format in FILE_FORMATS:
            try:
                if kept_path(w.path, folder) == kept:
                    return kept
            except PathOutside:
                continue
    return None


def _resolver(frames: Mapping[str, Any], contract: Contract, notes: list[str], output: JobTopics | None,
              topic_reads: list[tuple[str, ReaderCall]], own_reads: list[ReaderCall], folder: str,
              used: dict[str, ReaderCall]) -> Callable[[ReaderCall], Any]:

    def resolve(call: ReaderCall) -> Any:
        fitting = [s for s in contract.sources if _matches(call, reads_of(s))]
        topic = call.option("subscribe") if call.format == "kafka" else None
        if not fitting and topic is not None and output is not None and output.reader is not None:
            df = output.reader(topic, call)  # a topic the job's own queries publish to
            if df is not None:
                topic_reads.append((topic, call))
                return df
        own = _own_output(call, folder) if not fitting and topic is None else None
        if own is not None:  # what another of the job's queries writes: Spark's own source reads it
            own_reads.append(call)
            return call.open(own)
        if not fitting:
            declared = "; ".join(_describe_source(s.name, reads_of(s)) for s in contract.sources)
            written = (f" and no query the job started before this reader writes {call.path or call.table!r} (a "
                       "folder or table the job's own queries write is read as Spark reads it, once the query "
                       "writing it has started)") if (call.path or call.table) else ""
            raise SubstitutionError(call.place, f"{call.describe()} matches no source of contract {contract.name!r} "
                                                f"({declared}){written}; the kit never opens a real source: declare "
                                                "the source's `from:` as this reader names it (docs/jobs.md)")
        if len(fitting) > 1:
            raise SubstitutionError(call.place, f"{call.describe()} matches sources "
                                                f"{' and '.join(s.name for s in fitting)} of contract "
                                                f"{contract.name!r}: make their `from:` tell them apart")
        check_reader_options(call, notes)
        source = fitting[0].name
        if source in used:
            raise SubstitutionError(call.place, f"source {source!r} is read a second time (first at "
                                                f"{used[source].place}); the kit gives each source to one reader")
        used[source] = call
        df = frames[source]
        _check_schema(call, df, source)
        return df

    return resolve


def build_job(fn: Callable[..., Any], spark: Any, frames: Mapping[str, Any], contract: Contract,
              impl_name: str, folder: str, output: JobTopics | None = None) -> list[JobOutput]:
    """Call the job under the substitution and say what queries it built, in the order it started them; raises SubstitutionError naming
    the job's call the kit cannot honour, PipelineRaised (`userpipeline`) when the job's own code raised.
    Every path the job names is kept inside `folder`, the scenario's own (`jobpaths.kept_path`)."""
    from .userpipeline import PipelineRaised

    notes: list[str] = []
    topic_reads: list[tuple[str, ReaderCall]] = []
    own_reads: list[ReaderCall] = []
    used: dict[str, ReaderCall] = {}
    resolve = _resolver(frames, contract, notes, output, topic_reads, own_reads, folder, used)
    with substitution(resolve, lambda w: _sink_made(spark, w, folder)) as active, kept_to(folder):
        try:
            value = fn(spark)
        except SubstitutionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the job's own code raised: its frames, not ours
            raise PipelineRaised(impl_name, exc) from exc
        conf_location = spark.conf.get(CHECKPOINT_CONF, None)  # as the job's settings leave it for its queries
    returned = writer_call(value) if value is not None else None
    writers = list(active.writers)
    if returned is not None and not any(returned is w for w in writers):
        if writers:
            raise SubstitutionError(returned.place or caller_place(_is_kit), "the job returns a DataStreamWriter "
                                    f"besides the queries it started (the first at {writers[0].place}): start it "
                                    "too, or return nothing")
        returned.path = returned.path or returned.option("path")  # returned unstarted: its path is an option
        writers = [returned]
    if not writers:
        if value is not None and getattr(value, "isStreaming", False):  # a streaming DataFrame: the plain path
            return [JobOutput(value, "append", None, None, tuple(notes))]
        raise SubstitutionError(None, f"job {impl_name} started no streaming query and returned no DataStreamWriter "
                                      f"(it returned {type(value).__name__}): a job's `build(spark)` returns "
                                      "`df.writeStream...` or its `main(spark)` calls `.start()`/`.toTable()`")
    published = {w.option("topic") for w in writers if w.format == "kafka"}
    for topic, call in topic_reads:  # a topic no contract source stands for must be one the job writes
        if topic not in published and None not in published:
            declared = "; ".join(_describe_source(s.name, reads_of(s)) for s in contract.sources)
            raise SubstitutionError(call.place, f"{call.describe()} matches no source of contract {contract.name!r} "
                                                f"({declared}) and no query of the job publishes to topic {topic!r}; "
                                                "declare the source's `from:` as this reader names it (docs/jobs.md)")
    for w in writers:  # the scenario's clock decides when batches run
        if w.trigger:
            given = ", ".join(f"{k}={v!r}" for k, v in w.trigger.items())
            note = (f"{w.trigger_place}: trigger({given}) is not used: under test the scenario's clock runs the "
                    "batches (`process` steps; `clock: {trigger: ...}` with `advance` steps)")
            if note not in notes:
                notes.append(note)
    names = query_names(writers)
    reads = {**used, **{f"topic {topic}": call for topic, call in topic_reads}}  # as the run keys its sources
    anew = []
    for w in writers:
        starts_anew, said = checkpoint_anew(w, conf_location)
        anew.append(starts_anew)
        if said is not None and said not in notes:
            notes.append(said)
    return [JobOutput(w.df, (w.output_mode or "append").lower(), w, _sink(w, folder, output), tuple(notes), name,
                      bool(own_reads), fresh, reads) for w, name, fresh in zip(writers, names, anew)]


CHECKPOINT_CONF = "spark.sql.streaming.checkpointLocation"
# Sinks Spark starts with no checkpoint location, on a temporary checkpoint (DataStreamWriter: the
# one-time-query sinks and foreachBatch); any other sink (a file sink, kafka, toTable) needs one.
TEMPORARY_CHECKPOINT_SINKS = ("foreachBatch", "memory", "console", "noop")


def checkpoint_anew(writer: WriterCall, conf_location: str | None) -> tuple[bool, str | None]:
    """Whether Spark starts the query `writer` starts on a new checkpoint at every start, and what the
    result notes at the job's line. Spark's rule (`ResolveWriteToStream.resolveCheckpointLocation`): the
    writer's `checkpointLocation` option; else `spark.sql.streaming.checkpointLocation`/<queryName, else
    a random id>; else, for a sink that allows it, a new temporary folder (deleted at stop). So a query
    with neither the option nor a queryName under that setting starts anew each time: batch 0, no state,
    its sources read as at a first start (a file source: every file again; Kafka: from
    `startingOffsets`, `latest` by default)."""
    if writer.option("checkpointLocation"):
        return False, None
    place = writer.place or writer.format_place
    named = writer.query_name or writer.option("queryName")
    what = f"the {writer.format or 'parquet'} sink" if not writer.table else f"toTable({writer.table!r})"
    anew_note = ("after a `restart` (or `stop` and `start`) the kit starts it anew as Spark does: batch 0, no state, "
                 "its sources read as at a first start (docs/stand-ins.md, *Checkpoints*)")
    if conf_location:
        if named:
            return False, None
        return True, (f"{place}: the query has no checkpointLocation and no queryName, so under "
                      f"{CHECKPOINT_CONF}={conf_location!r} Spark checkpoints it in a folder of a new random "
                      f"name at every start; {anew_note}")
    if (writer.format or "") in TEMPORARY_CHECKPOINT_SINKS and not writer.table:
        return True, (f"{place}: the query has no checkpointLocation ({what} allows none), so Spark gives it a new "
                      f"temporary checkpoint at every start; {anew_note}")
    # Spark refuses to start it unless the setting comes from outside the code (spark-submit --conf): run
    # it as under that setting
    return (not named), (f"{place}: the query has no checkpointLocation, which {what} needs: Spark starts it only "
                         f"with {CHECKPOINT_CONF} set outside the code (spark-submit --conf), and fails to start "
                         "otherwise; the kit runs it as under that setting: "
                         + ("with its queryName, its checkpoint is the same folder at every start" if named else
                            "with no queryName, in a folder of a new random name at every start, so each start "
                            "begins anew (batch 0, no state, its sources read as at a first start)"))


def query_names(writers: list[WriterCall]) -> list[str]:
    """The name a user knows each query by: its `queryName`, else the table, path or Kafka topic it
    writes, else `query<N>` (its place in the order the job started them); a name two queries would
    share gets `#2`, `#3`... on the later ones."""
    out: list[str] = []
    for i, w in enumerate(writers):
        name = w.query_name or w.table or w.path or w.option("path") or w.option("topic") or f"query{i + 1}"
        taken = sum(1 for n in out if n == name or n.startswith(name + "#"))
        out.append(f"{name}#{taken + 1}" if taken else name)
    return out


def _sink(writer: WriterCall, folder: str, output: JobTopics | None = None) -> Callable[[Any, int], Any] | None:
    """What runs in each micro-batch after the kit observed it: the job's own function, or the kit's
    write of the batch to the table, folder or output topic the job's sink names; None for a sink that
    keeps nothing."""
    fmt = writer.format or ("parquet" if writer.table is None else None)
    place = writer.format_place or writer.place
    if fmt == "kafka" and output is not None:
        return _kafka_sink(writer, place, output)
    if writer.foreach is not None:
        raise SubstitutionError(place, "a `foreach` sink (a ForeachWriter) cannot be observed per micro-batch; "
                                       "write it with `foreachBatch`, whose function the kit runs for real")
    if fmt == "foreachBatch":
        assert writer.foreach_batch is not None
        return BatchFunction(writer.foreach_batch, keeping(writer.foreach_batch, folder))  # writes and reads kept
    mode = (writer.output_mode or "append").lower()
    if mode != "append" and (writer.table is not None or fmt in FILE_FORMATS):
        # Spark's DataSource.createSink: a file format's sink (a folder, a file-format table) appends only
        raise SubstitutionError(place, f"{'toTable(' + repr(writer.table) + ')' if writer.table else f'the {fmt} sink'} "
                                       f"is written in {mode} output mode, and Spark's file sink supports append "
                                       "only: Spark refuses to start this query ([STREAMING_OUTPUT_MODE."
                                       f"UNSUPPORTED_DATASOURCE] Invalid streaming output mode: {mode}); use append, "
                                       "or write it in foreachBatch")
    if writer.table is not None:
        provider, location = _table_sink(writer.df.sparkSession, writer)
        return _file_sink(provider, location, writer.partition_by,
                          {k: v for k, v in writer.options.items() if k.lower() != "path"})
    if fmt in ("memory", "console", "noop"):
        return None
    if fmt not in SINK_FORMATS:
        raise SubstitutionError(place, f"sink format {fmt!r} cannot be observed: the kit observes `foreachBatch`, "
                                       f"`toTable(...)`, the file formats ({', '.join(FILE_FORMATS)}) and kafka "
                                       "(an output topic); a connector's sink is never started under test: write "
                                       "it with `foreachBatch`, or make the writer a parameter of the job")
    path = writer.path
    if not path:
        raise SubstitutionError(place, f"a {fmt} sink needs a path (`.option('path', ...)` or `start(path)`)")
    try:
        kept = kept_path(path, folder, writes=True)
    except PathOutside as exc:
        raise SubstitutionError(writer.place or place, f"the {fmt} sink's path {path!r} would leave the scenario's "
                                                       f"run folder: {exc}; a job's paths are kept inside it "
                                                       "(docs/jobs.md, *Where the job writes*)") from None
    written = record_written(folder, kept, WrittenWith(fmt, {k: v for k, v in writer.options.items()
                                                            if k.lower() not in ("path", "checkpointlocation")},
                                                       writer.partition_by, writer.df.schema, handed={}))
    if written.handed is not None and not _logged(kept) <= set(written.handed):
        # batches in the folder's log that this process never handed the sink (the earlier side of a run
        # across Spark lines wrote them): their rows are unknown here, so the reading cannot be cross-checked
        written.handed = None
    return _file_sink(fmt, kept, writer.partition_by, writer.options, written.handed)


class BatchFunction:
    """A job's `foreachBatch` function as the kit calls it in each micro-batch (`call`: with its paths
    kept to the run). While a batch runs, `running` is its call's bound (`_bounded`) and `batch_id` its
    batch: when the run's wait for the batch runs out, `stop_running` says where the function is and
    stops it, so that no call of it is left running after the scenario."""

    def __init__(self, function: Callable[[Any, int], Any], call: Callable[[Any, int], Any]):
        self.function, self.call = function, call
        self.running: _Bound | None = None
        self.batch_id: int | None = None

    def __call__(self, batch: Any, batch_id: int) -> Any:
        with _bounded(None) as bound:
            self.running, self.batch_id = bound, batch_id
            try:
                return self.call(batch, batch_id)
            finally:
                self.running = None

    def stop_running(self) -> str | None:
        """Stop the call in progress, if any; what the run's verdict says of it."""
        from .userpipeline import _defined_at

        running = self.running
        if running is None:
            return None
        at = running.where()
        running.stop()
        name = getattr(self.function, "__qualname__", None) or repr(self.function)
        return (f"the job's foreachBatch function {name}{_defined_at(self.function)} was still running batch "
                f"{self.batch_id}" + (f" at {at}" if at is not None else "") + "; it was stopped there")


def _sink_made(spark: Any, writer: WriterCall, folder: str) -> None:
    """What a query's start makes in production before its first batch, made when the job starts it, so
    that a later reader of the job finds it: a file sink's folder and its `_spark_metadata` log, a
    table `toTable` creates."""
    place = writer.place
    if writer.table is not None:
        _create_table(spark, writer, folder)
    elif writer.path and (writer.format or "parquet") in FILE_FORMATS and writer.foreach_batch is None:
        try:
            os.makedirs(os.path.join(kept_path(writer.path, folder, writes=True), "_spark_metadata"), exist_ok=True)
        except PathOutside as exc:
            raise SubstitutionError(place, f"the {writer.format} sink's path {writer.path!r} would leave the "
                                           f"scenario's run folder: {exc}; a job's paths are kept inside it "
                                           "(docs/jobs.md, *Where the job writes*)") from None


def _create_table(spark: Any, writer: WriterCall, folder: str) -> None:
    """`toTable(name)` of a table that does not exist creates it as Spark does: with the query's columns,
    the writer's format (else `spark.sql.sources.default`), its `partitionBy` and its `path` option as
    the location (kept inside the run folder)."""
    assert writer.table is not None
    fmt = writer.format or spark.conf.get("spark.sql.sources.default")
    columns = ", ".join(f"`{f.name.replace('`', '``')}` {f.dataType.simpleString()}" for f in writer.df.schema.fields)
    sql = f"CREATE TABLE IF NOT EXISTS {writer.table} ({columns}) USING {fmt}"
    if writer.partition_by:
        sql += " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in writer.partition_by) + ")"
    if writer.option("path"):
        try:
            location = kept_path(str(writer.option("path")), folder, writes=True)
        except PathOutside as exc:
            raise SubstitutionError(writer.place, f"table {writer.table!r}'s path {writer.option('path')!r} would "
                                                  f"leave the scenario's run folder: {exc}") from None
        sql += " LOCATION '" + location.replace("'", "\\'") + "'"
    try:
        spark.sql(sql)
    except Exception as exc:  # noqa: BLE001 - Spark's own refusal (a format without its jars), at the job's line
        raise SubstitutionError(writer.place, f"toTable({writer.table!r}) creates a {fmt} table, and Spark could not: "
                                              f"{_first_line(exc)}; the kit writes a table through Spark's file sink "
                                              f"(formats {', '.join(FILE_FORMATS)}): for another format make the "
                                              "writer a parameter of the job, or write it in foreachBatch") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _table_sink(spark: Any, writer: WriterCall) -> tuple[str, str]:
    """The format and location Spark's `toTable` writes a table with: a table of a file format is written
    by Spark's file sink at its location (`DataStreamWriter.toTable` starts `format(provider)
    .option("path", location)` for a V1 table); another kind is refused at the job's line."""
    described = {str(r[0]).strip(): str(r[1]).strip() for r in
                 spark.sql(f"DESCRIBE TABLE EXTENDED {writer.table}").collect() if r[0] is not None and r[1] is not None}
    provider, location = described.get("Provider", "").lower(), described.get("Location", "")
    if described.get("Type", "").upper() == "VIEW" or provider not in FILE_FORMATS or not location:
        what = "a view" if described.get("Type", "").upper() == "VIEW" else f"a {provider or 'non-file'} table"
        raise SubstitutionError(writer.place, f"toTable({writer.table!r}) writes {what}; the kit writes a table "
                                              f"through Spark's file sink (formats {', '.join(FILE_FORMATS)}), as "
                                              "Spark does for a file-format table: make the writer a parameter of "
                                              "the job, or write it in foreachBatch")
    return provider, location


def _file_sink(fmt: str, path: str, partition_by: tuple[str, ...], options: Mapping[str, str],
               handed: dict[int, list[tuple]] | None = None) -> Callable[[Any, int], Any]:
    """Spark's own file sink (`FileStreamSink`) for one query start, handed each batch the kit observed:
    it writes the batch and records it in `path/_spark_metadata`, and skips a batch id already recorded
    (a batch re-run after a crash between its write and its commit), as in production. `handed` gets the
    rows of each batch the sink writes (not of one it skips), for the kit to cross-check its reading of
    the folder against."""
    from eventtime.harness.compat import SparkCompat
    from eventtime.harness.stream import read_rows

    options = {**options, "path": path}
    made: list[Any] = []  # the JVM sink, made with the first batch's session

    def write_files(batch: Any, batch_id: int) -> None:
        if not made:
            session = batch.sparkSession  # the query's own session (not cached: one sink per start)
            made.append(SparkCompat(session).file_stream_sink(session._jsparkSession, path, fmt, partition_by,
                                                               dict(options)))
        if handed is not None and batch_id > _latest_logged(path):
            handed[batch_id] = read_rows(batch)
        made[0].addBatch(batch_id, batch._jdf)
    return write_files


def _logged(path: str) -> set[int]:
    """The batch ids a file sink's `_spark_metadata` log records in `path` (none when it has no log)."""
    try:
        names = os.listdir(os.path.join(path, "_spark_metadata"))
    except OSError:
        return set()
    return {int(n.split(".")[0]) for n in names if n.split(".")[0].isdigit() and not n.endswith(".crc")}


def _latest_logged(path: str) -> int:
    """The latest batch id a file sink's `_spark_metadata` log records in `path` (-1: none): the sink skips
    a batch id at or below it (`FileStreamSink.addBatch`)."""
    return max(_logged(path), default=-1)


@dataclass
class JobTopics:
    """Where a job's Kafka sinks publish in one scenario run (`topics.Topics`), the processing time a
    record is stamped with (the manual clock's), and, for a query of the job that reads one of them,
    the streaming DataFrame of that topic (`reader(topic, call)`; None: not an output topic here)."""

    topics: Topics
    now_ms: Callable[[], int | None]
    reader: Callable[[str, ReaderCall], Any] | None = None


_KAFKA_PAYLOAD = ("string", "binary")


def _kafka_sink(writer: WriterCall, place: Any, output: JobTopics) -> Callable[[Any, int], None]:
    """Spark's Kafka sink, as the kit runs it: each batch's rows published as records to `output`'s
    topics (a `value` column, optional `key`, `headers`, `partition`, and the topic from the `topic`
    option, else the `topic` column). The columns are checked when the query starts, as Spark does."""
    columns = {f.name.lower(): f.dataType.simpleString() for f in writer.df.schema.fields}
    listed = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in writer.df.schema.fields)
    for name, required in (("value", True), ("key", False)):
        if name not in columns:
            if required:
                raise SubstitutionError(place, f"a kafka sink needs a `value` column (string or binary), as Spark's "
                                               f"does; the query writes {listed}: select e.g. "
                                               "`to_json(struct(...)) AS value`")
            continue
        if columns[name] not in _KAFKA_PAYLOAD:
            raise SubstitutionError(place, f"a kafka sink's `{name}` column is string or binary, as in Spark; it is "
                                           f"{columns[name]}: cast it or write it with to_json")
    topic_option = writer.option("topic")
    if topic_option is None and "topic" not in columns:
        raise SubstitutionError(place, "a kafka sink needs a topic: `.option('topic', ...)` or a `topic` column, as "
                                       f"Spark's does (the query writes {listed})")
    exprs = ["CAST(value AS BINARY) AS value",
             "CAST(key AS BINARY) AS key" if "key" in columns else "CAST(NULL AS BINARY) AS key",
             "CAST(partition AS INT) AS partition" if "partition" in columns else "CAST(NULL AS INT) AS partition",
             "CAST(topic AS STRING) AS topic" if "topic" in columns else "CAST(NULL AS STRING) AS topic"]
    if "headers" in columns:
        exprs.append("headers")

    def publish(batch: Any, batch_id: int) -> None:
        sent: dict[str, list[tuple]] = {}
        for row in batch.selectExpr(*exprs).collect():
            topic = topic_option if topic_option is not None else row["topic"]
            if topic is None:
                raise ValueError(f"a row of batch {batch_id} has a null topic and the sink has no `topic` option "
                                 "(Spark's Kafka sink fails the same way)")
            headers = tuple((h["key"], bytes(h["value"]) if h["value"] is not None else None)
                            for h in (row["headers"] or ())) if "headers" in columns else ()
            sent.setdefault(topic, []).append((_bytes(row["key"]), _bytes(row["value"]), headers, row["partition"]))
        stamp = output.now_ms()
        for topic, records in sent.items():
            output.topics.publish(topic, records, stamp)
    return publish


def _bytes(value: Any) -> bytes | None:
    return bytes(value) if value is not None else None

@dataclass(frozen=True)
class JobEntry:
    """How the kit calls a job: `main(spark)`/`build(spark)` get the kit's session, `main()` and a script
    build their own (which is the kit's, `harness.jobsession`)."""

    fn: Callable[..., Any]
    spark_parameter: str | None  # "first": fn(spark); "keyword": fn(spark=spark); None: fn()

    def __call__(self, spark: Any) -> Any:
        if self.spark_parameter == "first":
            return self.fn(spark)
        if self.spark_parameter == "keyword":
            return self.fn(spark=spark)
        return self.fn()

    @property
    def argv0(self) -> str:
        """`sys.argv[0]` while the job runs: its script, as spark-submit gives it, else its module's file."""
        if isinstance(self.fn, ScriptJob):
            if self.fn.path is not None:
                return self.fn.path
            import importlib.util

            spec = importlib.util.find_spec(str(self.fn.module))
            return spec.origin if spec is not None and spec.origin else str(self.fn.module)
        module = sys.modules.get(getattr(self.fn, "__module__", "") or "")
        return str(getattr(module, "__file__", None) or getattr(self.fn, "__qualname__", "job"))

    @property
    def search_path(self) -> tuple[str, ...]:
        """What Python puts first on `sys.path` for a script: its folder (the job's helper modules beside it)."""
        if isinstance(self.fn, ScriptJob) and self.fn.path is not None:
            return (os.path.dirname(os.path.abspath(self.fn.path)),)
        return ()


def job_entry(fn: Callable[..., Any]) -> JobEntry:
    """The entry of a function `userpipeline.is_job` says is a job."""
    import inspect

    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names = [p.name for p in parameters]
    if names[:1] == ["spark"]:
        return JobEntry(fn, "first")
    return JobEntry(fn, "keyword" if "spark" in names else None)


class _Tail:
    """A stream that passes everything to `under` and keeps its last characters (what argparse printed)."""

    def __init__(self, under: Any):
        self.under, self.text = under, ""

    def write(self, text: str) -> int:
        self.text = (self.text + text)[-2000:]
        return self.under.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.under, name)


def users_code(filename: str) -> bool:
    """Whether a frame's file is the user's code: not the kit's, PySpark's or Python's own."""
    import sysconfig

    from eventtime import harness

    stdlib = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
    own = tuple(os.path.dirname(os.path.abspath(f)) + os.sep for f in (__file__, str(harness.__file__)))
    return (not os.path.abspath(filename).startswith((stdlib, *own))
            and f"{os.sep}pyspark{os.sep}" not in filename and not filename.startswith("<"))


def _exit_place(exc: BaseException) -> Place | None:
    """The innermost frame of the job's own code (not the kit's, pyspark's or Python's) that led to `exc`."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if users_code(f.filename)]
    last = frames[-1] if frames else None
    return Place(last.filename, last.lineno or 0, last.name) if last is not None else None


class _Overran(Exception):
    """Raised inside a job's or a pipeline's call that ran past its bound (`_bounded`)."""


class _OverranStill(BaseException):
    """Raised instead of `_Overran` in a block that went on after several of them (a loop catching every
    Exception and retrying); a BaseException, as KeyboardInterrupt is, so `except Exception` passes it."""


class _Bound:
    """One block of user code run under a bound (`_bounded`): whether it ran past it (`overran`), so
    that an error the user's code made of the `_Overran` it got (py4j turns one that lands in a call
    into its network error; an `except Exception` may log it and raise another) is still said as the
    bound; `stop()` stops the block now (a batch function whose batch the run's wait gave up on)."""

    def __init__(self) -> None:
        self.overran = False
        self.sent = 0  # the exceptions raised in the block
        self.target: int | None = None  # the thread running the block
        self.caller: Any = None  # the frame of its `with`
        self.lock, self.done = threading.Lock(), threading.Event()
        self.stopper: threading.Thread | None = None

    def where(self) -> Place | None:
        """The line of the user's code the block's thread is running now (None: none, or it has ended)."""
        frame = sys._current_frames().get(self.target) if self.target is not None and not self.done.is_set() else None
        frames = [f for f in traceback.extract_stack(frame) if users_code(f.filename)] if frame is not None else []
        return Place(frames[-1].filename, frames[-1].lineno or 0, frames[-1].name) if frames else None

    def stop(self, after: float = 0.0) -> None:
        """Raise `_Overran` in the block's thread after `after` seconds, again every RESEND_SECONDS while it
        is still in the block (a loop that catches every exception and retries; after RESENDS of them
        `_OverranStill`), never once it has left it."""
        with self.lock:
            if self.stopper is None and not self.done.is_set():
                self.stopper = threading.Thread(target=self._interrupt, args=(after,), name="eventtime-bound",
                                                daemon=True)
                self.stopper.start()

    def _in_block(self) -> bool | None:
        """Whether the thread runs the block's code now (None: it has left the `with`'s frame)."""
        frame, child = sys._current_frames().get(self.target), None  # type: ignore[arg-type]
        while frame is not None and frame is not self.caller:
            frame, child = frame.f_back, frame
        if frame is None:
            return None
        return child is not None and child.f_code not in _LEAVING

    def _interrupt(self, after: float) -> None:
        import ctypes

        if self.done.wait(after):
            return
        while True:
            with self.lock:
                inside = self._in_block()
                if self.done.is_set() or inside is None:
                    return
                if inside:
                    kind = _Overran if self.sent < RESENDS else _OverranStill
                    self.overran, self.sent = True, self.sent + 1
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target or 0), ctypes.py_object(kind))
            if self.done.wait(RESEND_SECONDS):
                return

    def leave(self) -> None:
        """The block has ended: nothing more is raised in its thread, and a raise not delivered yet is withdrawn."""
        import ctypes

        with self.lock:
            self.done.set()
            if self.overran:  # one not delivered yet is withdrawn, so it never surfaces in the kit's code
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target or 0), None)
        if self.stopper is not None:
            self.stopper.join()
        if self.sent > RESENDS:  # py4j lets a BaseException pass without closing the connection it was
            _drop_thread_connection()  # using: an answer may wait on it, so this thread gets a new one


RESEND_SECONDS = 1.0  # how often a stopped block gets `_Overran` again while it has not ended
RESENDS = 3  # the `_Overran`s a block gets before `_OverranStill`


@contextlib.contextmanager
def _bounded(seconds: float | None) -> Iterator[_Bound]:
    """Stop the block (`_Bound.stop`) if it runs longer than `seconds` (None: only when asked): user code
    that never returns (a job's `main`, a pipeline's function or a batch function looping on something
    the kit does not end) is stopped where it is, at its next Python instruction, instead of holding
    the run until it is killed. The bound's thread ends with the block. Code blocked in one call into C
    (a `sleep(600)`, a JVM call that never answers) is stopped only when that call returns."""
    bound = _Bound()
    bound.target = threading.get_ident()
    bound.caller = sys._getframe(2)  # the frame of the `with` (above it: contextlib's __enter__, this generator)
    if seconds:
        bound.stop(after=seconds)
    try:
        yield bound
    finally:
        bound.leave()


_LEAVING = {contextlib._GeneratorContextManager.__exit__.__code__,  # a thread in these has left the block
            _bounded.__wrapped__.__code__}  # type: ignore[attr-defined]


def _drop_thread_connection() -> None:
    """Close this thread's py4j connection (pinned-thread mode), whatever it was doing; the next call
    opens another."""
    try:
        from pyspark import SparkContext

        gateway: Any = SparkContext._gateway
        client: Any = gateway._gateway_client if gateway is not None else None
        connection = client.get_thread_connection() if hasattr(client, "get_thread_connection") else None
        if connection is not None:
            connection.close()
    except Exception:  # noqa: BLE001 - no classic session in this process: nothing to close
        pass


def _enter(entry: JobEntry, spark: Any, timeout: float | None = None) -> Any:
    """Call the job, within `timeout` seconds; `sys.exit(0)` (or no code) at its end is a normal end,
    another code its error."""
    tail = _Tail(sys.stderr)
    sys.stderr = tail
    bound = _Bound()
    try:
        with _bounded(timeout) as bound:
            return entry(spark)
    except (Exception, _OverranStill) as exc:
        if not (isinstance(exc, (_Overran, _OverranStill)) or bound.overran):
            raise
        raise SubstitutionError(_exit_place(exc), f"the job's entry point did not return within {timeout:g}s "
                                                  "(the run's --timeout) and was stopped at this line: under the kit "
                                                  "a job's main must return once it has started its queries; "
                                                  "awaitTermination and awaitAnyTermination return at once and its "
                                                  "queries end (isActive false, spark.streams.active empty), but a "
                                                  "loop waiting on something else does not end (docs/jobs.md, *How "
                                                  "a job ends*)") from None
    except SystemExit as exc:
        if exc.code is None or exc.code == 0:
            return None
        printed = " ".join(tail.text.strip().splitlines()[-2:])
        raise SubstitutionError(_exit_place(exc), f"the job ended with sys.exit({exc.code!r}) while it built its "
                                                  "queries" + (f"; it printed: {printed}" if printed else "")
                                                  + " (a scenario gives a job's arguments and environment in "
                                                  "`job: {args: [...], env: {...}}`)") from None
    finally:
        if sys.stderr is tail:
            sys.stderr = tail.under


def run_job(entry: JobEntry, spark: Any, frames: Mapping[str, Any], contract: Contract, impl_name: str,
            folder: str, *, scenario_conf: Mapping[str, str], args: Sequence[str] = (),
            env: Mapping[str, str] | None = None, before: MutableMapping[str, str | None] | None = None,
            output: JobTopics | None = None, timeout: float | None = None) -> list[JobOutput]:
    """`build_job` for a job as it ships: `sys.argv` (its script and `args`) and `env` set while it runs,
    its own session the kit's (`harness.jobsession`: builder settings applied or noted, `spark.stop()`
    recorded), its `sys.exit(0)` a normal end. `before` collects the session settings the job changed
    (restore them with `jobsession.restore_session` when the scenario ends)."""
    from eventtime.harness.jobsession import own_session, process_settings

    with process_settings([entry.argv0, *args], env or {}, entry.search_path), \
            own_session(spark, scenario_conf, before if before is not None else {}) as session:
        outs = build_job(lambda s: _enter(entry, s, timeout), spark, frames, contract, impl_name, folder, output)
    for out in outs:
        out.notes = (*out.notes, *(n for n in session.notes if n not in out.notes))
    return outs


def batch_error(batch_id: int, exc: BaseException, writer: WriterCall | None) -> str:
    """The verdict's text for a batch function that raised: the batch, the exception, the job's frames."""
    fn = writer.foreach_batch if writer is not None else None
    frames = user_frames(exc)
    if fn is None and writer is not None and writer.format in FILE_FORMATS:
        return (f"the job's {writer.format} file sink (Spark's FileStreamSink) failed in batch {batch_id}: "
                f"{type(exc).__name__}: {exc}" + (f"\n{frames}" if frames else ""))
    name = getattr(fn, "__qualname__", None) or "the job's batch function"
    return (f"the job's foreachBatch function {name} raised {type(exc).__name__} in batch {batch_id}: {exc}"
            + (f"\n{frames}" if frames else ""))
