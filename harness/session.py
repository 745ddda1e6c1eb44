"""The SparkSession the harness runs on: one per process, tuned for fast deterministic tests, made and
reused here (a spare per session, py4j's callback server revived); a driver JVM that dies under it is
detected, said and replaced in `driverdeath`; what a cold start does besides PySpark's own launch (to
make it shorter) is `coldstart`'s."""
from __future__ import annotations

import atexit
import os
import socket
import sys
from typing import Any, Mapping

from . import coldstart
from .cluster import check_master, cluster_conf, expected_executors, is_local, wait_for_executors, worker_conf
from .driverdeath import SESSION_LOCK, _gateway_of, _quiet_py4j_logs, _remember_driver, on_discard
# what a dead driver is, importable from here too: the harness's callers ask this module for sessions and deaths
from .driverdeath import DriverDeath, connection_lost, discard_dead_session, driver_death, launch_death
from .driverlog import jvm_output_to_log, python_loggers_to_log

__all__ = ["TEST_CONF", "DEFAULT_MASTER", "get_session", "other_session", "prepare_session", "runtime_info",
           "DriverDeath", "connection_lost", "driver_death", "launch_death", "discard_dead_session", "fresh_session",
           "live_session", "callback_server_stopped", "revive_callback_server"]

DEFAULT_MASTER = "local[2]"

# Measured: one step takes ~0.5 s with a single shuffle partition and ~10 s with the default 200.
# The JVMs the harness launches compile with C1 only (-XX:TieredStopAtLevel=1), as build tools do
# for short-lived test JVMs: a test run is over before C2's optimised code pays back the CPU its
# compiler threads take on two cores (benchmarks/jit_tiers.py, BENCHMARKS.md "JIT tiers").
# C1 only also shrinks the JIT's code cache to 48 MB (the JVM's default without tiers), which a long run
# fills within half a minute (measured: `certify` of the whole suite, 28 s): the JIT stops for good, the
# rest of the run is interpreted, and the first method-handle adapter the JVM cannot place kills it
# (`VirtualMachineError: Out of space in CodeCache`, Spark's exit 50). 240 MB is the tiered default.
# The serial garbage collector: on a machine with two cores and a heap of Spark's default 1 GB, G1's
# concurrent threads and costlier write barriers take more than its short pauses give back
# (BENCHMARKS.md "Garbage collector"); which collector runs cannot change what a query computes.
_TEST_JVM = "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"
TEST_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    "spark.driver.extraJavaOptions": _TEST_JVM,
    "spark.executor.extraJavaOptions": _TEST_JVM,
}



def get_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                app_name: str = "eventtime", warm: bool | None = None) -> Any:
    """The process's SparkSession, created on first use with TEST_CONF (plus `conf`).

    `master` is any Spark master URL: `local[N]`, `local-cluster[W,C,M]`, `spark://host:port`
    (anything else: `eventtime.harness.cluster.MasterURLError`). Python workers get the driver's import
    path (`worker_conf`, local mode too); on a cluster the executors also get UTC
    (`eventtime.harness.cluster.cluster_conf`), and the session is returned once its
    executors have registered (bounded wait). An already running session is reused as it is (its
    master cannot change in-process).

    `warm`: the session is a new one on a warm daemon's JVM (`warm`), started if none answers; when
    none can be had, the run starts cold, saying why. None: as the last call of this process asked
    (a session made again after a driver death is warm when the first was asked to be).
    """
    from pyspark.sql import SparkSession

    global _warm_asked
    # Python workers (createDataFrame, UDFs) must run the interpreter that runs the harness, not
    # whichever `python3` comes first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _quiet_py4j_logs()  # from the launch on: a JVM can die while its session is being created
    with SESSION_LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            return prepare_session(active)
        master = check_master(master or DEFAULT_MASTER)
        builder = SparkSession.builder.master(master).appName(app_name)
        settings = {**TEST_CONF, **worker_conf(conf), **cluster_conf(master, conf), **dict(conf or {})}
        if warm is not None:
            _warm_asked = warm
        coldstart.numpy_converters_ask_only_with_numpy()
        if _warm_asked:
            spark = _warm_session(master, conf or {}, settings)
            if spark is not None:
                return spark
        return _cold_session(builder, master, settings)


def _cold_session(builder: Any, master: str, settings: dict[str, str]) -> Any:
    """A session on a JVM launched now (the cold start), with `settings`; the driver's output goes to the
    driver log, and a launch that fails carries the last of it. Called with SESSION_LOCK held."""
    if "spark.sql.warehouse.dir" not in settings:
        settings["spark.sql.warehouse.dir"] = coldstart.warehouse()
    archive = coldstart.archive_plan(settings)
    if archive.options:
        driver = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = (driver + " " + archive.options).strip()
    for key, value in settings.items():
        builder = builder.config(key, value)
    failure: Exception | None = None
    with jvm_output_to_log() as log:
        mark = log.mark() if log is not None else 0
        try:
            with coldstart.first_use_imports_once_launched():
                spark = builder.getOrCreate()
        except Exception as exc:
            failure = exc
            if log is not None and hasattr(exc, "add_note"):  # what the JVM said before it failed
                said = log.since(mark, limit=15)
                if said:
                    exc.add_note("the Spark driver's output (" + log.path + "):\n  " + "\n  ".join(said))
    # outside the redirection: what these say goes to this process's stderr, not the driver log
    startup = log.since(mark, limit=400) if log is not None else []
    if failure is not None:
        coldstart.archive_launch_failed(archive, startup)
        raise failure
    coldstart.archive_launched(archive, startup)
    python_loggers_to_log(log)
    spark.sparkContext.setLogLevel("ERROR")
    if not is_local(master):  # leave the cluster in order: a JVM that just exits makes its workers relaunch
        atexit.register(spark.stop)  # executors and log errors while it shuts down
        wait_for_executors(spark, expected_executors(master))
    spark = prepare_session(spark)
    coldstart.prepare_queries_meanwhile(spark)
    return spark


_warm_asked = False  # whether this process's sessions are asked to be warm (the last get_session that said)


def _warm_session(master: str, conf: Mapping[str, str], settings: Mapping[str, str]) -> Any:
    """A new session on a warm daemon's JVM (`warm`), or None (said on stderr) to start cold."""
    from .warm import WarmUnavailable, attach

    from .warm import NOTES, attached_pid

    from .driverdeath import gateway_gone

    for attempt in range(2):  # a daemon killed while this run attaches: once more, on a new one
        try:
            spark, note = attach(master, conf, settings)
        except WarmUnavailable as exc:
            NOTES.say(f"warm Spark not used, this run started its own: {exc}")
            return None
        pid = attached_pid()
        try:
            spark = prepare_session(spark)
            break
        except Exception:
            if not gateway_gone(spark.sparkContext._gateway):
                raise
            discard_dead_session()  # this thread holds SESSION_LOCK (reentrant)
            if attempt:
                NOTES.say(f"warm Spark not used, this run started its own: the warm Spark (pid {pid}) "
                          "died while this run attached to it, twice")
                return None
    NOTES.say(note or f"ran on the warm Spark (pid {attached_pid()})")
    coldstart.prepare_queries_meanwhile(spark)
    return spark


def prepare_session(spark: Any) -> Any:
    """Make a session (ours or the user's) ready for the harness: py4j callbacks on."""
    gateway = spark.sparkContext._gateway
    try:
        from pyspark.java_gateway import ensure_callback_server_started
    except ImportError:  # pragma: no cover - every supported pyspark has it; keep a plain fallback
        if gateway._callback_server is None:
            gateway.start_callback_server()
    else:
        ensure_callback_server_started(gateway)
    _remember_driver(spark)
    return spark


# -- py4j's callback server ------------------------------------------------------------------------
# The JVM calls the harness's clock (and a pipeline's foreachBatch function) through py4j's callback
# server, a server socket and threads in this process. If it stops (shut down, its socket closed), each
# call from the JVM fails, and every query that calls back fails at its first trigger: the session is
# otherwise fine, so the server is started again rather than the JVM.


def callback_server_stopped(spark: Any) -> bool:
    """Whether `spark`'s py4j callback server has stopped (False for a session without one: Connect)."""
    gateway = _gateway_of(spark)
    if gateway is None:
        return False
    server = gateway.__dict__.get("_callback_server")  # getattr would ask the JVM for a field
    if server is None:
        return True
    thread = getattr(server, "thread", None)  # its accept loop: it ends at the first error, for good
    return (bool(getattr(server, "is_shutdown", False)) or getattr(server, "server_socket", True) is None
            or thread is None or not thread.is_alive())


def revive_callback_server(spark: Any) -> bool:
    """Start `spark`'s py4j callback server again when it has stopped (a new socket, the JVM told its
    port); True when it had stopped. Its old connections and served objects are gone with it.

    The old server's sockets are shut down, not closed through py4j: py4j 0.10.9.7 (PySpark 3.4)
    closes each connection's stream under the read its thread sits in, which deadlocks."""
    if not callback_server_stopped(spark):
        return False
    gateway = _gateway_of(spark)
    with SESSION_LOCK:
        if not callback_server_stopped(spark):  # another thread's scenario revived it meanwhile
            return False
        old = gateway.__dict__.get("_callback_server")
        for sock in [getattr(old, "server_socket", None),
                     *(getattr(c, "socket", None) for c in list(getattr(old, "connections", ())))]:
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:  # already shut
                    pass
        gateway._callback_server = None
        prepare_session(spark)
    return True


_SPARES: dict[int, tuple[Any, Any]] = {}  # id(session) -> (session, its spare); the spare maps back


def other_session(spark: Any) -> Any:
    """A SparkSession of the same SparkContext other than `spark`: its own SQL conf and streaming
    query manager, none of `spark`'s queries, sources or sinks (`SparkSession.newSession`).

    Each session gets one spare and the two take turns, so restarting in a new session any number
    of times creates one extra session per session that asks (each one registers a streaming
    listener with the context for good); with `--jobs N` that is one per worker session."""
    with SESSION_LOCK:
        found = _SPARES.get(id(spark))
        if found is None or found[0] is not spark:
            spare = prepare_session(spark.newSession())
            _SPARES[id(spark)], _SPARES[id(spare)] = (spark, spare), (spare, spark)
            return spare
        return found[1]


_RUNTIME: dict[int, dict[str, str]] = {}


def runtime_info(spark: Any) -> dict[str, str]:
    """What a session runs on, for run metadata: Spark, PySpark and Java versions, and the master."""
    key = id(spark.sparkContext)
    if key not in _RUNTIME:
        import pyspark

        jvm = spark.sparkContext._jvm
        _RUNTIME[key] = {
            "spark_version": spark.version,
            "pyspark_version": pyspark.__version__,
            "java_version": str(jvm.java.lang.System.getProperty("java.version")),
            "java_vendor": str(jvm.java.lang.System.getProperty("java.vendor")),
            "master": spark.sparkContext.master,
        }
    return dict(_RUNTIME[key])


def _forget_sessions() -> None:
    """Forget what this module keeps per session (the spares, the runtime info): their SparkContext is gone."""
    _SPARES.clear()
    _RUNTIME.clear()
    from .warm import forget

    forget()  # a warm daemon's JVM that died: its connection goes with it


on_discard(_forget_sessions)


def fresh_session(master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """A new SparkSession on a new driver JVM, after the last one died."""
    discard_dead_session()
    return get_session(master=master, conf=conf)


def stopped(spark: Any) -> bool:
    """Whether `spark` (a classic session) is one whose SparkContext was stopped."""
    context = getattr(spark, "_sc", None)
    return context is not None and getattr(context, "_jsc", None) is None


def live_session(spark: Any, master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """`spark` while its driver JVM lives; once it has died, a fresh session on a new JVM (for a
    process that keeps one session, e.g. a pytest worker: the item that saw the death failed with
    it, and the items after it run on the new session instead of failing on the dead one).

    A session whose SparkContext was stopped (a test or a job that ends with `spark.stop()`, the JVM
    alive) is replaced by a new one on the same JVM, as PySpark's builder makes after a stop."""
    if driver_death(spark) is not None:
        return fresh_session(master=master, conf=conf)
    if stopped(spark):
        from .driverdeath import forget_java_functions
        from .warm import session_again

        forget_java_functions()

        again = session_again()  # attached to a warm daemon: on it, through this run's connection
        return prepare_session(again) if again is not None else get_session(master=master, conf=conf)
    return spark
