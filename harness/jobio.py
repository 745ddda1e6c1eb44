"""A streaming job's own readers and writers, substituted while the job builds its query.

While `substitution(resolve)` is active in a thread, every `spark.readStream...load()` (and its
shortcuts `table`, `json`, `parquet`, `csv`, `orc`, `text`) made in that thread calls
`resolve(ReaderCall)` for the streaming DataFrame to use instead of opening a real source, and every
`writeStream...start()` / `toTable()` records a `WriterCall` (every query the job starts, in order) and
returns a `StandInQuery` instead of starting a query (and `spark.streams.awaitAnyTermination()` returns at once). Nothing is connected to, read from or written to. Each call knows where in the
job's code it was made (`Place`), so an error can name it.

`substitution` patches classic PySpark's `DataStreamReader`/`DataStreamWriter`. Spark Connect's
(`pyspark.sql.connect.streaming.readwriter`, `pyspark.sql.connect.readwriter`) have their own patch,
`connect_reader_substitution`: readers only (a pipeline's flow functions read; the framework writes),
the streaming reader's `load()`/`table()` resolved as above (Connect's `json()`, `csv()`... end in its
own `load()`), the batch reader's `load()`/`table()` resolved by a second function. The patch is installed
once per process while any thread uses it; a thread with no active substitution (another scenario
in a plain pipeline, the kit's own code) gets pyspark's own methods (`threadpatch`).
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from .errors import EventtimeError
from . import threadpatch
from .threadpatch import ThreadPatch

__all__ = ["Place", "shown_file", "ReaderCall", "WriterCall", "StandInQuery", "SubstitutionError", "substitution", "caller_place",
           "active_writers", "active_queries", "connect_reader_substitution", "reads_match", "kafka_reads",
           "READER_BATCH_SIZE", "READER_REFUSED", "check_reader_options", "starts_at_latest"]


def shown_file(path: str) -> str:
    """A file as a message names it: from the working directory when it is below it (as a person opened
    it: `jobs/dedup.py:21`), else as given (another folder or drive, a `<frozen ...>` name)."""
    if not os.path.isabs(path):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative


@dataclass(frozen=True)
class Place:
    """Where in the job's code a call was made."""

    file: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        return f"{shown_file(self.file)}:{self.line}" + (f" (in {self.function})" if self.function else "")


class SubstitutionError(EventtimeError):
    """A call of the job's the substitution cannot honour; the message names the call's place."""

    def __init__(self, place: Place | None, message: str):
        self.place = place
        super().__init__(f"{place}: {message}" if place is not None else message)


_PYSPARK = f"{os.sep}pyspark{os.sep}"
_HERE = (os.path.abspath(__file__), os.path.abspath(threadpatch.__file__))  # the patches' own frames


def caller_place(skip: Callable[[str], bool] | None = None) -> Place | None:
    """The innermost frame of the caller's stack that is neither pyspark's nor this module's nor
    `threadpatch`'s (nor one `skip` says to pass over): the line of the job's own code that made the call."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (os.path.abspath(name) in _HERE or _PYSPARK in name or (skip is not None and skip(name))):
            return Place(name, frame.f_lineno, frame.f_code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


@dataclass
class ReaderCall:
    """One `readStream` chain as the job wrote it: its format, options (keys as written; Spark reads them
    regardless of case), the path or table it names, the schema it declares, and where each was set."""

    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    option_places: dict[str, Place | None] = field(default_factory=dict)
    path: str | None = None
    table: str | None = None
    schema: Any = None  # a StructType or a DDL string, when the job gives one
    place: Place | None = None  # where the chain was loaded (`load()`, `table()`, `json()`...)
    method: str = "load"
    streaming: bool = True  # False: a batch `spark.read` (Connect's substitution only)
    # pyspark's own call that ends the chain, given the path (or table) to open instead of the one the
    # job names: a reader of what the job's own queries write is opened for real, on the kept path
    opener: Callable[[str], Any] | None = field(default=None, repr=False, compare=False)

    def open(self, where: str) -> Any:
        """The real streaming DataFrame of this chain, reading `where` (a path or a table)."""
        assert self.opener is not None
        return self.opener(where)

    def option(self, key: str) -> str | None:
        """An option's value, its key matched regardless of case (as Spark does)."""
        wanted = key.lower()
        return next((v for k, v in self.options.items() if k.lower() == wanted), None)

    def describe(self) -> str:
        parts = [f"format {self.format!r}" if self.format else None,
                 f"path {self.path!r}" if self.path else None,
                 f"table {self.table!r}" if self.table else None]
        parts += [f"{k}={v!r}" for k, v in self.options.items()]
        return f"{'readStream' if self.streaming else 'read'}.{self.method}(" + ", ".join(p for p in parts if p) + ")"


@dataclass
class WriterCall:
    """One `writeStream` chain as the job wrote it, up to its `start()` or `toTable()`."""

    df: Any
    format: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    output_mode: str | None = None
    partition_by: tuple[str, ...] = ()
    trigger: dict[str, Any] = field(default_factory=dict)
    query_name: str | None = None
    foreach_batch: Callable[[Any, int], Any] | None = None
    foreach: Any = None
    table: str | None = None
    path: str | None = None
    place: Place | None = None  # where it was started (None: returned unstarted)
    format_place: Place | None = None
    trigger_place: Place | None = None
    started: bool = False

    def option(self, key: str) -> str | None:
        wanted = key.lower()
        return next((v for k, v in self.options.items() if k.lower() == wanted), None)


class StandInQuery:
    """What a substituted `start()` returns: the kit runs the query itself, after the job's `main`
    returns. To the job, its queries run until it first waits on one (`awaitTermination`,
    `spark.streams.awaitAnyTermination`, `processAllAvailable`) or stops it, and the wait returns at
    once: after it they have ended (`isActive` false, `spark.streams.active` empty), so a job's loop
    `while spark.streams.active: ...awaitAnyTermination(timeout=60)` ends. Their progress is what a
    query reports before its first batch (`lastProgress` None, `recentProgress` []); `id` and `runId`
    are ids of their own, which `spark.streams.get(id)` finds."""

    def __init__(self, writer: WriterCall, jobs: "_Active | None" = None):
        import uuid

        self.writer = writer
        self._jobs = jobs
        self._stopped = False
        self.name = writer.query_name
        self.id = str(uuid.uuid4())
        self.runId = str(uuid.uuid4())

    def _ended(self) -> None:
        if self._jobs is not None:
            self._jobs.ended = True

    def awaitTermination(self, timeout: Any = None) -> bool | None:  # noqa: N802 - pyspark's name
        self._ended()
        return True if timeout is not None else None

    def processAllAvailable(self) -> None:  # noqa: N802
        self._ended()
        return None

    def stop(self) -> None:
        self._stopped = True

    @property
    def isActive(self) -> bool:  # noqa: N802
        return not (self._stopped or (self._jobs is not None and self._jobs.ended))

    @property
    def status(self) -> dict[str, Any]:
        return {"message": "Waiting for data to arrive" if self.isActive else "Stopped",
                "isDataAvailable": False, "isTriggerActive": False}

    @property
    def lastProgress(self) -> None:  # noqa: N802
        return None

    @property
    def recentProgress(self) -> list[Any]:  # noqa: N802
        return []

    def explain(self, extended: bool = False) -> None:
        """The plan of the DataFrame the query writes (the kit's query has not run yet)."""
        self.writer.df.explain(extended)

    def exception(self) -> None:
        return None


class _Active:
    """The substitution of one thread: how readers resolve, and what writers were started."""

    def __init__(self, resolve: Callable[[ReaderCall], Any], started: Callable[[WriterCall], None] | None):
        self.resolve = resolve
        self.started = started  # told of each start, when it happens (a sink the job's later readers read)
        self.writers: list[WriterCall] = []  # started, in order
        self.queries: list[StandInQuery] = []  # what each start returned, in order
        self.ended = False  # the job waited on its queries: to it, they have ended
        self.returned: WriterCall | None = None


def _active() -> _Active | None:
    return _PATCH.current()


@contextlib.contextmanager
def substitution(resolve: Callable[[ReaderCall], Any], started: Callable[[WriterCall], None] | None = None
                 ) -> Iterator[_Active]:
    """Substitute the readers and writers of the code run in this thread inside the block; `started` is
    called with each writer as the job starts it."""
    with _PATCH.entered(_Active(resolve, started)) as active:
        yield active


def active_writers() -> list[WriterCall]:
    """The writers started so far by the job running in this thread ([] outside a substitution)."""
    active = _active()
    return list(active.writers) if active is not None else []


def writer_call(writer: Any) -> WriterCall | None:
    """The recorded chain of a DataStreamWriter made under a substitution (None for any other object)."""
    return getattr(writer, "_eventtime_writer", None)


# -- the patches ------------------------------------------------------------------------------------
def _reader_of(obj: Any) -> ReaderCall:
    call = getattr(obj, "_eventtime_reader", None)
    if call is None:
        call = ReaderCall()
        obj._eventtime_reader = call
    return call


def _writer_of(obj: Any) -> WriterCall:
    call = getattr(obj, "_eventtime_writer", None)
    if call is None:
        call = WriterCall(df=getattr(obj, "_df", None))
        obj._eventtime_writer = call
    return call


def _passthrough(name: str, record: Callable[..., Any], patch: "ThreadPatch[_Active] | None" = None
                 ) -> Callable[[Any], Callable[..., Any]]:
    """A method that records the call under a substitution, then does what pyspark's does."""
    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if (patch or _PATCH).current() is not None:
                record(self, *args, **kwargs)
            return original(self, *args, **kwargs)
        method.__name__ = name
        return method
    return wrap


def _set_option(call: ReaderCall | WriterCall, key: str, value: Any) -> None:
    if value is None:
        return
    text = value if isinstance(value, str) else (str(value).lower() if isinstance(value, bool) else str(value))
    call.options[str(key)] = text
    if isinstance(call, ReaderCall):
        call.option_places[str(key)] = caller_place()


def _r_format(self: Any, source: str) -> None:
    _reader_of(self).format = source


def _r_option(self: Any, key: str, value: Any) -> None:
    _set_option(_reader_of(self), key, value)


def _r_options(self: Any, **options: Any) -> None:
    for k, v in options.items():
        _set_option(_reader_of(self), k, v)


def _r_schema(self: Any, schema: Any) -> None:
    _reader_of(self).schema = schema


def _load(active: _Active, self: Any, path: str | None = None, format: str | None = None,
          schema: Any = None, *, _opener: Callable[[str], Any] | None = None, **options: Any) -> Any:
    call = _reader_of(self)
    call.opener = _opener or (lambda where: _original(self, "load")(self, where, format=format,
                                                                          schema=schema, **options))
    if format is not None:
        call.format = format
    if schema is not None:
        call.schema = schema
    for k, v in options.items():
        _set_option(call, k, v)
    if path is not None:
        call.path = path
    call.place = caller_place()
    return active.resolve(call)


def _shortcut(fmt: str) -> Callable[..., Any]:
    def load(active: _Active, self: Any, path: str, *args: Any, schema: Any = None, **options: Any) -> Any:
        call = _reader_of(self)
        call.format, call.method = fmt, fmt
        given = {**options, **({"schema": schema} if schema is not None else {})}
        return _load(active, self, path, schema=schema, **options, _opener=lambda where: _original(
            self, fmt)(self, where, *args, **given))
    return load


def _table(active: _Active, self: Any, tableName: str) -> Any:  # noqa: N803 - pyspark's name
    call = _reader_of(self)
    call.table, call.method = tableName, "table"
    call.opener = lambda where: _original(self, "table")(self, where)
    call.place = caller_place()
    return active.resolve(call)


def _w_format(self: Any, source: str) -> None:
    call = _writer_of(self)
    call.format, call.format_place = source, caller_place()


def _w_option(self: Any, key: str, value: Any) -> None:
    _set_option(_writer_of(self), key, value)


def _w_options(self: Any, **options: Any) -> None:
    for k, v in options.items():
        _set_option(_writer_of(self), k, v)


def _w_output_mode(self: Any, outputMode: str) -> None:  # noqa: N803
    _writer_of(self).output_mode = outputMode


def _w_partition_by(self: Any, *cols: Any) -> None:
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    _writer_of(self).partition_by = tuple(str(c) for c in cols)


def _w_query_name(self: Any, queryName: str) -> None:  # noqa: N803
    _writer_of(self).query_name = queryName


def _w_trigger(active: _Active, self: Any, *args: Any, **kwargs: Any) -> Any:
    call = _writer_of(self)
    call.trigger, call.trigger_place = dict(kwargs), caller_place()
    return self


def _w_foreach_batch(active: _Active, self: Any, func: Callable[[Any, int], Any]) -> Any:
    call = _writer_of(self)
    call.foreach_batch, call.format, call.format_place = func, "foreachBatch", caller_place()
    return self


def _w_foreach(active: _Active, self: Any, f: Any) -> Any:
    call = _writer_of(self)
    call.foreach, call.format, call.format_place = f, "foreach", caller_place()
    return self


def _started(active: _Active, self: Any, *, path: str | None, format: str | None, outputMode: str | None,  # noqa: N803
             partitionBy: Any, queryName: str | None, table: str | None, options: dict) -> StandInQuery:
    call = _writer_of(self)
    place = caller_place()
    if call.started:  # started again: Spark starts another query with the writer's settings so far
        call = replace(call, options=dict(call.options))
        self._eventtime_writer = call
    if format is not None:
        call.format, call.format_place = format, place
    if outputMode is not None:
        call.output_mode = outputMode
    if partitionBy is not None:
        _w_partition_by(self, partitionBy)
    if queryName is not None:
        call.query_name = queryName
    for k, v in options.items():
        _set_option(call, k, v)
    call.path = path if path is not None else call.option("path")
    call.table, call.place, call.started = table, place, True
    active.writers.append(call)
    if active.started is not None:
        active.started(call)
    query = StandInQuery(call, active)
    active.queries.append(query)
    return query


def _start(active: _Active, self: Any, path: str | None = None, format: str | None = None,
           outputMode: str | None = None, partitionBy: Any = None, queryName: str | None = None,  # noqa: N803
           **options: Any) -> StandInQuery:
    return _started(active, self, path=path, format=format, outputMode=outputMode, partitionBy=partitionBy,
                    queryName=queryName, table=None, options=options)


def _to_table(active: _Active, self: Any, tableName: str, format: str | None = None,  # noqa: N803
              outputMode: str | None = None, partitionBy: Any = None, queryName: str | None = None,  # noqa: N803
              **options: Any) -> StandInQuery:
    return _started(active, self, path=None, format=format, outputMode=outputMode, partitionBy=partitionBy,
                    queryName=queryName, table=tableName, options=options)


def _await_any(active: _Active, self: Any, timeout: Any = None) -> bool | None:
    """`spark.streams.awaitAnyTermination()` in a job's `main`: the kit runs the query, so it returns at once
    (and the job's queries have ended, to it)."""
    active.ended = True
    return True if timeout is not None else None


def _get(active: _Active, self: Any, id: str) -> StandInQuery | None:  # noqa: A002 - pyspark's name
    """`spark.streams.get(id)`: the job's own query of that id."""
    return next((q for q in active.queries if q.id == id), None)


def active_queries() -> list[StandInQuery]:
    """The job's queries that are active to it ([] outside a substitution): `spark.streams.active`."""
    active = _active()
    return [q for q in active.queries if q.isActive] if active is not None else []


def _patches() -> list[tuple[type, str, Callable[[Any], Any]]]:
    from pyspark.sql.streaming.query import StreamingQueryManager
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    out: list[tuple[type, str, Callable[[Any], Any]]] = []

    def passthrough(cls: Any, name: str, record: Callable[..., Any]) -> None:
        out.append((cls, name, _passthrough(name, record)))

    def replacing(cls: Any, name: str, replace: Callable[..., Any]) -> None:
        """A method replaced under a substitution; pyspark's own otherwise."""
        if hasattr(cls, name):
            out.append((cls, name, _PATCH.instead(name, replace)))

    passthrough(DataStreamReader, "format", _r_format)
    passthrough(DataStreamReader, "option", _r_option)
    passthrough(DataStreamReader, "options", _r_options)
    passthrough(DataStreamReader, "schema", _r_schema)
    replacing(DataStreamReader, "load", _load)
    replacing(DataStreamReader, "table", _table)
    for fmt in ("json", "parquet", "csv", "orc", "text", "xml"):
        replacing(DataStreamReader, fmt, _shortcut(fmt))
    passthrough(DataStreamWriter, "format", _w_format)
    passthrough(DataStreamWriter, "option", _w_option)
    passthrough(DataStreamWriter, "options", _w_options)
    passthrough(DataStreamWriter, "outputMode", _w_output_mode)
    passthrough(DataStreamWriter, "partitionBy", _w_partition_by)
    passthrough(DataStreamWriter, "queryName", _w_query_name)
    replacing(DataStreamWriter, "trigger", _w_trigger)
    replacing(DataStreamWriter, "foreachBatch", _w_foreach_batch)
    replacing(DataStreamWriter, "foreach", _w_foreach)
    replacing(DataStreamWriter, "start", _start)
    replacing(DataStreamWriter, "toTable", _to_table)
    replacing(StreamingQueryManager, "awaitAnyTermination", _await_any)
    replacing(StreamingQueryManager, "get", _get)
    return out


_PATCH: ThreadPatch[_Active] = ThreadPatch("a substitution", _patches)


def _original(obj: Any, name: str) -> Any:
    """pyspark's own method `name` of a reader, whichever patch (classic or Connect) replaced it."""
    return (_CONNECT if type(obj).__module__.startswith("pyspark.sql.connect") else _PATCH).original(obj, name)


# Reader options that size a production batch: under the kit the scenario decides what each batch
# reads (each `add` before a `process`), so they have nothing to do; the result notes each one, so that
# a scenario never seems to test them.
READER_BATCH_SIZE = ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay", "maxfilespertrigger",
                     "maxbytespertrigger")
# Reader options that would change which rows are read at all: the kit's source has exactly what the
# scenario added, so these cannot be honoured. `startingOffsets` is honoured when it is `earliest` or
# `latest` (`starts_at_latest`); specific offsets are refused. Both faces (a job's readers, a pipeline's
# definitions) judge a reader's options here.
READER_REFUSED = {
    "latestfirst": "reads the newest files first",
    "maxfileage": "skips files older than an age",
    "startingoffsetsbytimestamp": "starts at offsets found by time",
    "startingtimestamp": "starts at offsets found by time",
    "endingoffsets": "is for batch queries",
    "readchangefeed": "reads a table's change feed",
    "startingversion": "starts at a table version",
}


def check_reader_options(call: ReaderCall, notes: list[str]) -> None:
    """A reader's options the kit's source cannot honour are refused at the option's line; those that size
    production batches are noted (appended to `notes`)."""
    for key, value in call.options.items():
        lowered = key.lower()
        place = call.option_places.get(key) or call.place
        if lowered in READER_BATCH_SIZE:
            notes.append(f"{place}: option {key}={value!r} sizes production batches; under test each batch "
                         "reads what the scenario added before it, so it is not exercised")
        if lowered in READER_REFUSED:
            raise SubstitutionError(place, f"option {key}={value!r} of {call.describe()} {READER_REFUSED[lowered]}; "
                                           "the kit's source has exactly the rows the scenario adds, so it cannot "
                                           "honour it (docs/jobs.md, *Options*)")
        if lowered == "startingoffsets" and value.strip().lower() not in ("earliest", "latest"):
            raise SubstitutionError(place, f"option startingOffsets={value!r} of {call.describe()} names offsets "
                                           "of a real topic; the kit's source holds only what the scenario adds, so "
                                           "only 'earliest' and 'latest' are honoured")


def starts_at_latest(call: ReaderCall) -> bool:
    """Whether a reader's query, started on a new checkpoint, skips what its source already holds: a Kafka
    reader with `startingOffsets` `latest`, Spark's default for a streaming read (a file source, a table
    and Kafka from `earliest` read everything)."""
    return call.format == "kafka" and (call.option("startingOffsets") or "latest").strip().lower() == "latest"


def reads_match(call: ReaderCall, reads: tuple[tuple[str, str], ...]) -> bool:
    """Whether a reader names what a source's `from:` pairs say: `format`, `path`, `table`, or an option
    (its key matched regardless of case); no pairs match nothing."""
    if not reads:
        return False
    for key, value in reads:
        if key == "format":
            actual = call.format
        elif key == "path":
            actual = call.path
        elif key == "table":
            actual = call.table
        else:
            actual = call.option(key)
        if actual != value:
            return False
    return True


def kafka_reads(topic: str) -> tuple[tuple[str, str], ...]:
    """What a reader of a Kafka topic names: `format: kafka` and the topic as `subscribe`."""
    return (("format", "kafka"), ("subscribe", topic))


class _ConnectActive(_Active):
    """A Connect thread's reader substitution: streaming reads resolve by `resolve`, batch ones by `batch`."""

    def __init__(self, resolve: Callable[[ReaderCall], Any], batch: Callable[[ReaderCall], Any]):
        super().__init__(resolve, None)
        self.batch = batch


def _batch(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A streaming reader's patch applied to the batch reader: the call marked batch, resolved by `batch`."""
    def method(active: _ConnectActive, self: Any, *args: Any, **kwargs: Any) -> Any:
        _reader_of(self).streaming = False
        return fn(_Active(active.batch, None), self, *args, **kwargs)
    return method


def _connect_patches() -> list[tuple[type, str, Callable[[Any], Any]]]:
    from pyspark.sql.connect.readwriter import DataFrameReader
    from pyspark.sql.connect.streaming.readwriter import DataStreamReader

    out: list[tuple[type, str, Callable[[Any], Any]]] = []
    for cls in (DataStreamReader, DataFrameReader):
        out.append((cls, "format", _passthrough("format", _r_format, _CONNECT)))
        out.append((cls, "option", _passthrough("option", _r_option, _CONNECT)))
        out.append((cls, "options", _passthrough("options", _r_options, _CONNECT)))
        out.append((cls, "schema", _passthrough("schema", _r_schema, _CONNECT)))
    out.append((DataStreamReader, "load", _CONNECT.instead("load", _load)))
    out.append((DataStreamReader, "table", _CONNECT.instead("table", _table)))
    out.append((DataFrameReader, "load", _CONNECT.instead("load", _batch(_load))))
    out.append((DataFrameReader, "table", _CONNECT.instead("table", _batch(_table))))
    return out


_CONNECT: ThreadPatch[_Active] = ThreadPatch("a Spark Connect reader substitution", _connect_patches)


@contextlib.contextmanager
def connect_reader_substitution(resolve: Callable[[ReaderCall], Any], batch: Callable[[ReaderCall], Any]
                                ) -> Iterator[_Active]:
    """Inside the block, the Spark Connect readers used in this thread resolve their `load()` and
    `table()` (and the shortcuts ending in `load()`) by `resolve(call)` (`spark.readStream`) or
    `batch(call)` (`spark.read`, `call.streaming` False) instead of building their plan; `call.open(x)`
    builds pyspark's own plan reading `x`. Writers are left alone."""
    with _CONNECT.entered(_ConnectActive(resolve, batch)) as active:
        yield active
