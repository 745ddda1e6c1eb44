"""The one seam where Spark versions differ: found by feature detection on the running JVM, not by version numbers."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Sequence

from . import jvmclasses, tuning

__all__ = ["SparkCompat", "ConnectCompat", "available_now_mixin", "compat_for", "is_connect"]

_MEMORY_STREAM_CLASSES = (
    "org.apache.spark.sql.execution.streaming.runtime.MemoryStream",  # 4.1+
    "org.apache.spark.sql.execution.streaming.MemoryStream",  # 3.4 - 4.0
)
# Watermark propagation among operators (SPARK-42376): what lets a time-interval stream-stream join
# feed another stateful operator.
_WATERMARK_PROPAGATION_CLASSES = (
    "org.apache.spark.sql.execution.streaming.runtime.PropagateWatermarkSimulator",
    "org.apache.spark.sql.execution.streaming.PropagateWatermarkSimulator",
)

# Checkpoint files (offset and commit logs, state store deltas) written through Hadoop's FileSystem
# API rather than its FileContext API. On a local disk without Hadoop's native library every
# FileContext write spawns `readlink` and `chmod` processes from the JVM (measured with strace: about
# 33 process spawns per micro-batch, against about 4 with the FileSystem API), which made a
# micro-batch about 1.4x slower (benchmarks/checkpoint_io.py). Both managers write the same files with the same rename-based
# atomic commit; only the Hadoop API under them differs.
_CHECKPOINT_FILE_MANAGER_CLASSES = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",  # 4.1+
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",  # 3.4 - 4.0
)
_CHECKPOINT_FILE_MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass"

_MEMORY_SINK_CLASSES = (
    "org.apache.spark.sql.execution.streaming.sources.MemorySink",
)
# Spark's file sink (`writeStream.format("parquet").start(path)`): it records each batch it wrote in
# its `_spark_metadata` log and skips a batch id the log already has.
_FILE_STREAM_SINK_CLASSES = (
    "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",  # 4.1+
    "org.apache.spark.sql.execution.streaming.FileStreamSink",  # 3.4 - 4.0
)


def _jvm_class(jvm: Any, name: str) -> Any | None:
    """The py4j JavaClass for `name`, or None: a missing class comes back as a JavaPackage. Asked for by
    its full name in one call: walking `jvm.a.b.C` would also ask the JVM about every package prefix,
    each a failed class lookup over the class path (see `SparkCompat.java`)."""
    from py4j.java_gateway import JavaClass

    obj = getattr(jvm, name)
    return obj if isinstance(obj, JavaClass) else None


@dataclass
class SparkCompat:
    """What this Spark can do and how to reach it from Python; one per SparkSession."""

    spark: Any
    connect = False  # a Spark Connect session (no JVM in this process): see ConnectCompat
    _classes: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def jvm(self) -> Any:
        return self.spark.sparkContext._jvm

    def java(self, name: str) -> Any:
        """The JVM class `name` (fully qualified), made once per session. Reaching a class as
        `jvm.a.b.C` asks the JVM about every dotted prefix, and each prefix that is a package costs
        failed class lookups over the whole class path and py4j's imports (about 1 ms per name,
        against 0.2 ms for a call on the class itself; measured on 4.3.0): the harness names classes
        on every add and every batch it reads back."""
        found = self._classes.get(name)
        if found is None:
            from py4j.java_gateway import JavaClass

            found = self._classes[name] = JavaClass(name, self.spark.sparkContext._gateway._gateway_client)
        return found

    @property
    def version(self) -> str:
        return self.spark.version

    # -- Scala glue ---------------------------------------------------------------------------
    def some(self, value: Any) -> Any:
        return self.java("scala.Option").apply(value)

    @cached_property
    def none(self) -> Any:
        return getattr(self.java("scala.None$"), "MODULE$")

    @cached_property
    def empty_map(self) -> Any:
        return getattr(self.java("scala.collection.immutable.Map$"), "MODULE$").empty()

    def to_seq(self, java_list: Any) -> Any:
        return self.java("scala.collection.JavaConverters").asScalaBuffer(java_list)

    def to_java_list(self, seq: Any) -> Any:
        return self.java("scala.collection.JavaConverters").seqAsJavaList(seq)

    def struct_type(self, columns: Sequence[tuple[str, str]]) -> Any:
        """The StructType of (name, Spark DDL type) columns, every column nullable, parsed by the JVM
        in one call. Not PySpark's `_parse_datatype_string`: it reaches StructType by walking
        `jvm.org.apache...` (failed class lookups per package, see `java`) once per column, and on 3.x
        it turns any BaseException raised inside it, such as the `Terminated` of a SIGTERM, into its
        own parse error."""
        from pyspark.sql.types import StructField, StructType, _parse_datatype_json_string

        ddl = ", ".join(f"`{name.replace('`', '``')}` {type_}" for name, type_ in columns)
        parsed = _parse_datatype_json_string(self.java("org.apache.spark.sql.types.StructType").fromDDL(ddl).json())
        assert isinstance(parsed, StructType)
        return StructType([StructField(name, f.dataType, True) for (name, _), f in zip(columns, parsed.fields)])

    # -- MemoryStream -------------------------------------------------------------------------
    @cached_property
    def memory_stream_class(self) -> Any:
        for name in _MEMORY_STREAM_CLASSES:
            cls = _jvm_class(self.jvm, name)
            if cls is not None:
                return cls
        raise RuntimeError(f"no MemoryStream class in this Spark {self.version} (looked for "
                           f"{', '.join(_MEMORY_STREAM_CLASSES)})")

    @cached_property
    def _encoders_row(self) -> bool:
        return _has_method(self.jvm, "org.apache.spark.sql.Encoders", "row")

    def row_encoder(self, jschema: Any) -> Any:
        if self._encoders_row:
            return self.java("org.apache.spark.sql.Encoders").row(jschema)  # 3.5+
        return self.java("org.apache.spark.sql.catalyst.encoders.RowEncoder").apply(jschema)  # 3.4

    def memory_stream(self, jschema: Any, num_partitions: int | None = None) -> Any:
        encoder = self.row_encoder(jschema)
        sql_context = self.spark._jsparkSession.sqlContext()
        if num_partitions:
            return self.memory_stream_class.apply(num_partitions, encoder, sql_context)
        return self.memory_stream_class.apply(encoder, sql_context)

    def memory_stream_df(self, stream: Any) -> Any:
        from pyspark.sql import DataFrame

        return DataFrame(stream.toDF(), self.spark)

    # -- Moving rows to the JVM in bulk ---------------------------------------------------------
    @cached_property
    def _from_arrow_batches(self) -> tuple[Any, int] | None:
        """`ArrowConverters.fromBatchIterator` and its arity (4 on 3.4, 5 on 3.5-4.0, 6 on 4.1+; the
        extra arguments are booleans), or None when this Spark or Python lacks what the Arrow path needs."""
        if not _importable("pyarrow"):
            return None
        try:
            cls = self.jvm.java.lang.Class.forName("org.apache.spark.sql.execution.arrow.ArrowConverters$")
        except Exception:  # noqa: BLE001 - py4j raises its own error for a missing class
            return None
        arities = {m.getParameterCount() for m in cls.getMethods() if m.getName() == "fromBatchIterator"}
        arity = next((a for a in (6, 5, 4) if a in arities), None)
        if arity is None:
            return None
        module = getattr(self.java("org.apache.spark.sql.execution.arrow.ArrowConverters$"), "MODULE$")
        return module, arity

    @property
    def arrow_ingest(self) -> bool:
        """Whether rows can travel as one Arrow record batch per add (no Spark job, no row-by-row calls)."""
        return self._from_arrow_batches is not None

    def row_deserializer(self, jschema: Any) -> Any:
        """A bound `ExpressionEncoder.Deserializer[Row]` for `jschema`: a Scala function InternalRow => Row."""
        encoder = self.row_encoder(jschema)
        if not encoder.getClass().getName().endswith("ExpressionEncoder"):  # 4.x: an AgnosticEncoder
            encoder = self.java("org.apache.spark.sql.catalyst.encoders.ExpressionEncoder").apply(encoder)
        bound = encoder.resolveAndBind(getattr(encoder, "resolveAndBind$default$1")(),
                                       getattr(encoder, "resolveAndBind$default$2")())
        return bound.createDeserializer()

    def rows_from_arrow(self, payload: bytes, jschema: Any, deserializer: Any) -> Any:
        """A Scala Iterator of Rows read from one serialized Arrow record batch (`payload`), for `addData`."""
        found = self._from_arrow_batches
        if found is None:
            raise RuntimeError(f"this Spark {self.version} / Python has no Arrow path for rows")
        module, arity = found
        batches = self.java("java.util.ArrayList")()
        batches.add(payload)
        it = self.java("scala.collection.JavaConverters").asScalaIterator(batches.iterator())
        flags = {4: (), 5: (True,), 6: (True, False)}[arity]  # errorOnDuplicatedFieldNames, largeVarTypes
        rows = module.fromBatchIterator(it, jschema, "UTC", *flags, None)  # no TaskContext on the driver
        return rows.map(deserializer)

    # -- Starting a query with our own trigger clock --------------------------------------------
    @cached_property
    def query_conf(self) -> dict[str, str]:
        """SQL settings the harness gives its own queries at start (a query keeps the settings it
        started with), unless the session already sets them: the checkpoint file manager (see
        `_CHECKPOINT_FILE_MANAGER_CLASSES`; with the settings for tiny batches on, its subclass that
        writes local files without a child process, `jvmclasses`) and the settings for tiny
        batches (`tuning.query_conf`)."""
        found = dict(tuning.query_conf())
        for name in _CHECKPOINT_FILE_MANAGER_CLASSES:
            if _jvm_class(self.jvm, name) is not None:
                local = jvmclasses.checkpoint_manager(self, name) if tuning.enabled() else None
                found[_CHECKPOINT_FILE_MANAGER_KEY] = local or name
                break
        return found

    def new_memory_sink(self) -> Any:
        for name in _MEMORY_SINK_CLASSES:
            cls = _jvm_class(self.jvm, name)
            if cls is not None:
                return cls()
        raise RuntimeError(f"no MemorySink class in this Spark {self.version}")

    def foreach_batch_sink(self, jdf: Any, function: Any) -> Any:
        """Spark's own foreachBatch sink for the streaming Dataset `jdf`, calling `function` (a Python object
        implementing `PythonForeachBatchFunction`) with each micro-batch inside the batch, before its commit.

        Made as `DataStreamWriter.foreachBatch` makes it (`PythonForeachBatchHelper`), then taken from the
        writer's `foreachBatchWriter` field, since `start_query` needs the sink itself, not a started writer.
        The field and `ForeachBatchSink(batchWriter, encoder)` are the same on 3.4 - 4.3."""
        from pyspark.java_gateway import ensure_callback_server_started

        jwriter = jdf.writeStream()
        self.java("org.apache.spark.sql.execution.streaming.sources.PythonForeachBatchHelper").callForeachBatch(
            jwriter, function)
        ensure_callback_server_started(self.spark.sparkContext._gateway)
        cls = jwriter.getClass()
        while cls is not None:
            try:
                fld = cls.getDeclaredField("foreachBatchWriter")
                break
            except Exception:  # noqa: BLE001 - py4j's error for NoSuchFieldException: look in the superclass
                cls = cls.getSuperclass()
        else:
            raise RuntimeError(f"no foreachBatchWriter field in Spark {self.version}'s DataStreamWriter")
        fld.setAccessible(True)
        sink = self.java("org.apache.spark.sql.execution.streaming.sources.ForeachBatchSink")
        return sink(fld.get(jwriter), jdf.exprEnc())

    def file_stream_sink(self, jsession: Any, path: str, fmt: str, partition_by: Sequence[str],
                         options: dict[str, str]) -> Any:
        """Spark's own file sink writing `fmt` files to `path`, made as `DataStreamWriter.start` makes it
        for a file format (`DataSource.createSink`): `FileStreamSink(session, path, fileFormat,
        partitionColumnNames, options)`, whose `addBatch(batchId, df)` writes the batch and records it in
        `path/_spark_metadata`, or skips it when that log already has the batch id. The constructor is the
        same on 3.4 - 4.3; only its package moved (`_FILE_STREAM_SINK_CLASSES`)."""
        cls = next((c for c in (_jvm_class(self.jvm, n) for n in _FILE_STREAM_SINK_CLASSES) if c is not None), None)
        if cls is None:
            raise RuntimeError(f"no FileStreamSink class in this Spark {self.version} (looked for "
                               f"{', '.join(_FILE_STREAM_SINK_CLASSES)})")
        source = getattr(self.java("org.apache.spark.sql.execution.datasources.DataSource$"), "MODULE$")
        provider = source.lookupDataSource(fmt, jsession.sessionState().conf()).newInstance()
        # a file source read as V2 (parquet on 4.x) writes a stream through its V1 format, as
        # `DataSource.providingClass` falls back to it
        v2 = self.java("java.lang.Class").forName("org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2")
        file_format = provider.fallbackFileFormat().newInstance() if v2.isInstance(provider) else provider
        utils = self.java("org.apache.spark.api.python.PythonUtils")
        columns = self.java("java.util.ArrayList")()
        for name in partition_by:
            columns.add(name)
        jmap = self.java("java.util.HashMap")()
        for key, value in options.items():
            jmap.put(key, value)
        insensitive = getattr(self.java("org.apache.spark.sql.catalyst.util.CaseInsensitiveMap$"), "MODULE$")
        return cls(jsession, path, file_format, utils.toSeq(columns), insensitive.apply(utils.toScalaMap(jmap)))

    @cached_property
    def _start_query_arity(self) -> int:
        manager = self.spark._jsparkSession.sessionState().streamingQueryManager()
        arities = sorted({m.getParameterCount() for m in manager.getClass().getMethods()
                          if m.getName() == "startQuery"})
        for arity in (13, 12):
            if arity in arities:
                return arity
        raise RuntimeError(f"StreamingQueryManager.startQuery has arities {arities}; the harness knows 12 and 13")

    def trigger_clock(self, clock: Any) -> Any:
        """What Spark is given as the trigger clock for the stepped `clock`: a JVM front that answers the
        time without calling into Python (`jvmclasses.ClockFront`), made with the settings for tiny
        batches; else `clock` itself."""
        if not tuning.enabled():
            return clock
        return jvmclasses.clock_front(self, clock) or clock

    def start_query(self, *, name: str, checkpoint: str, jdf: Any, sink: Any, output_mode: str,
                    trigger_ms: int, clock: Any) -> Any:
        """Start a streaming query writing to `sink`, triggered by `clock` (a `org.apache.spark.util.Clock`)."""
        manager = self.spark._jsparkSession.sessionState().streamingQueryManager()
        modes = self.java("org.apache.spark.sql.streaming.OutputMode")
        mode = {"append": modes.Append, "update": modes.Update, "complete": modes.Complete}[output_mode]()
        trigger = self.java("org.apache.spark.sql.streaming.Trigger").ProcessingTime(int(trigger_ms))
        args = [self.some(name), self.some(checkpoint), jdf, self.empty_map, sink, mode,
                False,  # useTempCheckpointLocation
                True,  # recoverFromCheckpointLocation
                trigger, clock, self.none, self.none]
        if self._start_query_arity == 13:  # 4.2+: an Option[String] sink name comes second
            args.insert(1, self.none)
        return manager.startQuery(*args)

    @cached_property
    def callback_connection(self) -> Callable[[], Any] | None:
        """In py4j's pinned-thread mode (pyspark's default), a function that returns the connection
        the current JVM callback came on; None in the older callback-server mode (pooled connections)."""
        client = getattr(self.spark.sparkContext._gateway, "_gateway_client", None)
        getter = getattr(client, "get_thread_connection", None)
        return getter if callable(getter) else None

    def release_callback_connections(self, ports: list[int]) -> int:
        """Close the JVM's end of the callback connections whose JVM-side port is in `ports`;
        returns how many it closed.

        In pinned-thread mode py4j's JVM side (`py4j.PythonClient`) gives every connection a JVM
        thread called back on to a deque when the call returns, and never closes it, even after
        its thread has ended: one socket (left in CLOSE_WAIT once Python has shut its end) and two
        8 KiB buffers per query start, for the life of the JVM. Measured: 3,009 such sockets after
        15 passes of the suite. Only connections of threads that have ended may be passed here.
        """
        if not ports:
            return 0
        pool = self._callback_pool()
        if pool is None:
            return 0
        client, pooled = pool
        wanted, closed = set(ports), 0
        for connection in pooled:
            if connection is None:  # see _callback_pool
                continue
            sock = connection.getSocket()
            if sock is None or sock.getLocalPort() not in wanted:
                continue
            client.connectionStopped(connection)  # takes it out of the deque, under the client's lock
            connection.shutdown()
            closed += 1
        return closed

    def pooled_callback_ports(self) -> set[int]:
        """JVM-side ports of the callback connections py4j's JVM side holds in its pool."""
        pool = self._callback_pool()
        return ({int(c.getSocket().getLocalPort()) for c in pool[1] if c is not None and c.getSocket() is not None}
                if pool else set())

    def _callback_pool(self) -> tuple[Any, Any] | None:
        """py4j's JVM-side callback client and a snapshot of its pooled connections, or None.

        The pool is an ArrayDeque that py4j changes without a lock of ours: a snapshot taken while
        another query's thread returns or takes a connection can hold null slots (seen once in a
        `--jobs 3` run of the whole suite), which callers skip."""
        try:
            client = self.spark.sparkContext._gateway.java_gateway_server.getCallbackClient()
            field = self.java("java.lang.Class").forName("py4j.CallbackClient").getDeclaredField("connections")
            field.setAccessible(True)
            return client, field.get(client).toArray()
        except Exception:  # noqa: BLE001 - another py4j (or callback-server mode): nothing pooled
            return None

    # -- Reading what happened ----------------------------------------------------------------
    @staticmethod
    def progress(jquery: Any) -> dict | None:
        """The last progress as a dict (3.x reports an initial watermark of 1970-01-01, 4.x omits it)."""
        last = jquery.lastProgress()
        return json.loads(last.json()) if last is not None else None

    @staticmethod
    def error_class(exc: BaseException) -> str | None:
        """The Spark error class (a.k.a. condition) of a Python-side Spark exception, if any."""
        for getter in ("getCondition", "getErrorClass"):  # 4.x renamed errorClass to condition
            fn = getattr(exc, getter, None)
            if callable(fn):
                try:
                    value = fn()
                except Exception:  # noqa: BLE001 - some wrappers raise when no class is set
                    value = None
                if value:
                    return str(value)
        return None

    def environment_hint(self, messages: Sequence[str]) -> str | None:
        """What to change in the Python environment when a query's failure is a known clash of this
        PySpark with a library, not the pipeline's fault; None otherwise. Found from the failure text.

        PySpark 3.x's applyInPandasWithState slices Arrow batches with offsets it holds as floats;
        pyarrow 18 and later refuse them (`RecordBatch.slice`: "'float' object cannot be
        interpreted as an integer"). Measured: pyarrow 17.0.0 works, 26.0.1 fails; PySpark 4 works with both.
        """
        text = "\n".join(messages)
        if "RecordBatch.slice" in text and "'float' object cannot be interpreted as an integer" in text:
            import pyarrow

            return (f"PySpark {self.version}'s applyInPandasWithState does not work with pyarrow "
                    f"{pyarrow.__version__}: install pyarrow<18 alongside PySpark 3.x")
        return None

    def java_error_classes(self, jthrowable: Any) -> list[tuple[str, str | None, str]]:
        """(class name, error class, message) for each throwable in a Java cause chain."""
        out = []
        seen = 0
        while jthrowable is not None and seen < 20:
            cls = jthrowable.getClass().getName()
            err = None
            for getter in ("getCondition", "getErrorClass"):
                try:
                    err = getattr(jthrowable, getter)()
                    break
                except Exception:  # noqa: BLE001 - not a SparkThrowable / no such method
                    continue
            out.append((cls, err, str(jthrowable.getMessage() or "")))
            nxt = jthrowable.getCause()
            if nxt is None or nxt.equals(jthrowable):
                break
            jthrowable = nxt
            seen += 1
        return out

    # -- Capabilities a scenario may require ------------------------------------------------------
    @cached_property
    def features(self) -> frozenset[str]:
        from pyspark.sql import DataFrame, GroupedData

        found = _api_features(DataFrame, GroupedData)
        if self._has_conf("spark.sql.streaming.statefulOperator.allowMultiple"):
            found.add("multiple_stateful_operators")
        if _jvm_class(self.jvm, "org.apache.spark.sql.execution.datasources.v2.state.StateDataSource") is not None:
            found.add("state_reader")  # what `state` checks read through (eventtime.harness.stateread)
        if "trigger_once" in found and not _has_method(self.jvm, "org.apache.spark.sql.streaming.Trigger", "Once"):
            found.discard("trigger_once")  # the Python API takes once=True, the JVM has no Trigger.Once
        if any(_jvm_class(self.jvm, name) is not None for name in _WATERMARK_PROPAGATION_CLASSES):
            found.add("join_then_stateful")
        from pyspark.sql import functions as F

        if hasattr(F, "session_window"):
            found.add("session_window_dynamic_gap")
        return frozenset(found)

    def pipelines_not_applicable(self) -> str | None:
        """Why a Spark Declarative Pipeline cannot run on this session (None when it can): the feature
        `pipelines`, said in full."""
        from .pipelinegraph import available

        if not available():
            return (f"this pyspark {_pyspark_version()} has no Spark Declarative Pipelines (pyspark.pipelines, "
                    "Spark 4.1 and later)")
        if not self.connect:
            return ("a Spark Declarative Pipeline runs on a Spark Connect session only (its definitions are "
                    "registered as Connect plans, as `spark-pipelines run` registers them); this session is "
                    "classic: run over Spark Connect (--remote, eventtime_remote, SPARK_REMOTE)")
        if available_now_mixin() is None:
            return ("this pyspark has no SupportsTriggerAvailableNow for Python data sources: the kit's staged "
                    "sources would run one batch per pipeline update (Trigger.AvailableNow falls back to "
                    "Trigger.Once), where a Kafka or file source runs the no-data batches its watermark calls for")
        return None

    def _has_conf(self, key: str) -> bool:
        """Whether this Spark registers the SQL setting `key` (an unknown key has no default)."""
        try:
            self.spark.conf.get(key)
            return True
        except Exception:  # noqa: BLE001 - pyspark raises its own error types per version
            return False


def _has_method(jvm: Any, class_name: str, method: str) -> bool:
    """Whether the JVM class has a public method of that name (plain reflection)."""
    try:
        cls = jvm.java.lang.Class.forName(class_name)
    except Exception:  # noqa: BLE001 - py4j raises its own error for a missing class
        return False
    return any(m.getName() == method for m in cls.getMethods())


def _api_features(dataframe: Any, grouped: Any) -> set[str]:
    """Features found on PySpark's DataFrame API (classic and Connect classes alike)."""
    found = set()
    pandas = _importable("pandas") and _importable("pyarrow")
    if hasattr(dataframe, "dropDuplicatesWithinWatermark"):
        found.add("drop_duplicates_within_watermark")
    if hasattr(grouped, "applyInPandasWithState") and pandas:
        found.add("apply_in_pandas_with_state")
    if hasattr(grouped, "transformWithStateInPandas") and pandas:
        found.add("transform_with_state")
    if _writer_takes_once(dataframe):
        found.add("trigger_once")
    return found


def _writer_takes_once(dataframe: Any) -> bool:
    """Whether the streaming writer beside this DataFrame class (classic `pyspark.sql` or Connect's
    `pyspark.sql.connect`) takes `trigger(once=True)`: Trigger.Once, deprecated since Spark 3.4."""
    import importlib
    import inspect

    package = dataframe.__module__.rsplit(".", 1)[0]
    try:
        writer = importlib.import_module(f"{package}.streaming.readwriter").DataStreamWriter
        return "once" in inspect.signature(writer.trigger).parameters
    except (ImportError, AttributeError, TypeError, ValueError):
        return False


def _pyspark_version() -> str:
    import pyspark

    return str(getattr(pyspark, "__version__", "?"))


def available_now_mixin() -> type | None:
    """PySpark's `SupportsTriggerAvailableNow` mixin for Python streaming data sources, or None where this
    pyspark has none. A reader without it gets one batch from `Trigger.AvailableNow`, as `Trigger.Once`
    (Spark 4.0+, SPARK-45178: no wrapper for such sources), so no no-data batch runs after its data; the
    kit's staged source (`connect_source.data_source`) takes the mixin where it exists. The server runs
    the reader the client pickles: its pyspark must have the class too (same line as the client)."""
    try:
        from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
    except ImportError:
        return None
    return SupportsTriggerAvailableNow


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session: it has no JVM session behind it in this process
    (a Connect session raises an AttributeError for `_jsparkSession`)."""
    return not hasattr(spark, "_jsparkSession")


@dataclass
class ConnectCompat(SparkCompat):
    """The seam for a Spark Connect session: what can be known without a JVM in this process.

    Nothing here reaches the JVM; JVM glue (MemoryStream, sinks, the clock) is not available and the
    harness drives Connect sessions with `eventtime.harness.connect` instead.
    """

    connect = True

    @property
    def jvm(self) -> Any:
        raise RuntimeError("a Spark Connect session has no JVM in this process")

    def struct_type(self, columns: Sequence[tuple[str, str]]) -> Any:
        """Parsed by the Connect client (no JVM here)."""
        from .sparkvalues import parse_schema

        return parse_schema(columns)

    @cached_property
    def query_conf(self) -> dict[str, str]:
        """None: the checkpoint file manager is chosen by probing JVM classes, which a client cannot do."""
        return {}

    @cached_property
    def features(self) -> frozenset[str]:
        from pyspark.sql import functions as F
        from pyspark.sql.connect.dataframe import DataFrame
        from pyspark.sql.connect.group import GroupedData

        found = _api_features(DataFrame, GroupedData)
        if self._has_conf("spark.sql.streaming.statefulOperator.allowMultiple"):
            found.add("multiple_stateful_operators")
        # Watermark propagation among operators is in every server the Connect harness runs on: its
        # source is a Python streaming data source, which needs Spark 4.0 (propagation came in 3.5).
        found.add("join_then_stateful")
        if hasattr(F, "session_window"):
            found.add("session_window_dynamic_gap")
        if self.pipelines_not_applicable() is None:
            found.add("pipelines")
        return frozenset(found)


_CACHE: dict[int, SparkCompat] = {}
_CACHE_LOCK = threading.Lock()  # one SparkCompat per session, also when threads ask at once (session.py)


def compat_for(spark: Any) -> SparkCompat:
    with _CACHE_LOCK:
        if is_connect(spark):
            key = id(spark)
            if key not in _CACHE or _CACHE[key].spark is not spark:
                _CACHE[key] = ConnectCompat(spark)
            return _CACHE[key]
        key = id(spark._jsparkSession)
        if key not in _CACHE:
            _CACHE[key] = SparkCompat(spark)
        return _CACHE[key]
