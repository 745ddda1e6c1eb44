"""The SparkSession the harness runs on: one per process, tuned for fast deterministic tests."""
from __future__ import annotations

import atexit
import glob
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

from .cluster import check_master, cluster_conf, expected_executors, is_local, wait_for_executors, worker_conf
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

_LOCK = threading.Lock()


def get_session(master: str | None = None, conf: Mapping[str, str] | None = None,
                app_name: str = "eventtime") -> Any:
    """The process's SparkSession, created on first use with TEST_CONF (plus `conf`).

    `master` is any Spark master URL: `local[N]`, `local-cluster[W,C,M]`, `spark://host:port`
    (anything else: `eventtime.harness.cluster.MasterURLError`). Python workers get the driver's import
    path (`worker_conf`, local mode too); on a cluster the executors also get UTC
    (`eventtime.harness.cluster.cluster_conf`), and the session is returned once its
    executors have registered (bounded wait). An already running session is reused as it is (its
    master cannot change in-process).
    """
    from pyspark.sql import SparkSession

    # Python workers (createDataFrame, UDFs) must run the interpreter that runs the harness, not
    # whichever `python3` comes first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _quiet_py4j_logs()  # from the launch on: a JVM can die while its session is being created
    with _LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            return prepare_session(active)
        master = check_master(master or DEFAULT_MASTER)
        builder = SparkSession.builder.master(master).appName(app_name)
        settings = {**TEST_CONF, **worker_conf(conf), **cluster_conf(master, conf), **dict(conf or {})}
        if "spark.sql.warehouse.dir" not in settings:
            settings["spark.sql.warehouse.dir"] = _warehouse()
        archive = _archive_plan(settings)
        if archive.options:
            driver = settings.get("spark.driver.extraJavaOptions", "")
            settings["spark.driver.extraJavaOptions"] = (driver + " " + archive.options).strip()
        for key, value in settings.items():
            builder = builder.config(key, value)
        _warm_argument_converters_while_launching()
        failure: Exception | None = None
        with jvm_output_to_log() as log:
            mark = log.mark() if log is not None else 0
            try:
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
            _launch_failed(archive, startup)
            raise failure
        _after_launch(archive, startup)
        python_loggers_to_log(log)
        spark.sparkContext.setLogLevel("ERROR")
        if not is_local(master):  # leave the cluster in order: a JVM that just exits makes its workers relaunch
            atexit.register(spark.stop)  # executors and log errors while it shuts down
            wait_for_executors(spark, expected_executors(master))
        spark = prepare_session(spark)
        _prepare_queries_meanwhile(spark)
        return spark


def _warehouse() -> str:
    """A warehouse folder of the process's own, removed when it exits: Spark's default is
    `spark-warehouse` in the working directory, which it creates at the session's start, so each run
    left one in the user's project. A scenario's tables live in a database of its own anyway."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="eventtime-warehouse-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


_PREPARING = "eventtime-prepare-queries"  # the thread's name (tests wait for it before touching jvmclasses)


def _prepare_queries_meanwhile(spark: Any) -> threading.Thread:
    """Make, on a thread, what the harness's first query on a new JVM asks of it once (`compat.query_conf`:
    loading the harness's compiled classes and the one-task job that checks an executor finds them,
    0.3-0.6 s of a cold start) while the caller goes on loading scenarios and building the pipeline's
    DataFrame. The first query's start takes what was made, waiting for it if it is not done (the
    classes are made once per SparkContext, under `jvmclasses`' lock); a failure here is met, and
    handled, again there. Concurrent with the caller's own calls: a plain one-task job, no query."""
    from .compat import compat_for

    def prepare() -> None:
        try:
            compat_for(spark).query_conf  # noqa: B018 - computed and kept for the first query
        except Exception:  # noqa: BLE001 - the first query asks again and meets it (a dead JVM: its caller says so)
            pass

    thread = threading.Thread(target=prepare, name=_PREPARING, daemon=True)
    thread.start()
    return thread


def _warm_argument_converters_while_launching() -> threading.Thread | None:
    """Run PySpark's py4j argument converters once, on a thread, while the driver JVM launches.

    The first py4j call with an argument asks every registered converter whether it converts it,
    and some converters import what they test for on that first ask (PySpark 4's numpy converters
    import `pyspark.testing.utils`, which imports pandas, pyarrow and protobuf: 0.4-0.9 s measured).
    Asked here with an object no converter takes, the imports happen while the main thread only
    waits for the JVM to report its port; a converter that fails to import fails again on the main
    thread, as it would have. Asking is side-effect free: a converter's `can_convert` is a test."""
    from pyspark import SparkContext

    if getattr(SparkContext, "_gateway", None) is not None:
        return None  # no launch to wait for

    def ask() -> None:
        from py4j import protocol

        probe = object()
        for converter in list(getattr(protocol, "INPUT_CONVERTER", [])):
            try:
                converter.can_convert(probe)
            except Exception:  # noqa: BLE001 - the main thread's first call meets it again and says it
                pass

    thread = threading.Thread(target=ask, name="eventtime-warm-converters", daemon=True)
    thread.start()
    return thread


def _archive_plan(settings: Mapping[str, str]) -> Any:
    """The class-data archive plan of the driver JVM `get_session` is about to launch (`jvmarchive`);
    none when PySpark already has a JVM (its options are fixed)."""
    from pyspark import SparkContext

    from .jvmarchive import ArchivePlan, plan_archive

    if getattr(SparkContext, "_gateway", None) is not None:
        return ArchivePlan("none")
    plan = plan_archive(settings)
    if plan.note:
        print(f"eventtime: {plan.note}", file=sys.stderr, flush=True)
    return plan


def _after_launch(plan: Any, lines: list[str]) -> None:
    from pyspark import SparkContext

    from .jvmarchive import after_launch

    if plan.action == "none":
        return
    proc = getattr(getattr(SparkContext, "_gateway", None), "proc", None)  # spark-submit execs the JVM: its pid
    after_launch(plan, lines, getattr(proc, "pid", None))


def _launch_failed(plan: Any, lines: list[str]) -> None:
    from .jvmarchive import launch_failed

    launch_failed(plan, lines)


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
    with _LOCK:
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
    with _LOCK:
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


# -- a driver JVM that dies -------------------------------------------------------------------------
# The driver JVM can die under the harness (the kernel's out-of-memory killer, a CI timeout, a JVM
# crash). py4j then fails every call with a connection error, from whichever call came next. These
# functions turn that into one fact (`driver_death`), one message (`DriverDeath.message`), and a way
# on (`fresh_session`). They only apply to a classic session whose JVM this process launched or
# reached through py4j; a session without a py4j gateway (Spark Connect) never reports a death here.

_DEATH_WAIT = 10.0  # seconds a lost connection waits for the JVM's exit to be reported
_DRIVERS: dict[int, "_Driver"] = {}  # id(gateway) -> what was known of its JVM while it lived
# gateways whose JVM died and were discarded: py4j objects still bound to one (a JavaObject that Python's
# garbage collector finalizes later, sending its "detach" command) fail on its closed connection at any
# later moment, with a traceback on the root logger, while a fresh session runs on a new JVM
_DISCARDED_GATEWAYS: list[int] = []


@dataclass
class _Driver:
    gateway: Any
    pid: int | None
    proc: Any  # the Popen of the JVM when this process launched it (pyspark keeps it on the gateway)
    memory: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)  # where the JVM writes hs_err_pid*.log


def _gateway_of(spark: Any) -> Any:
    try:
        return spark.sparkContext._gateway
    except Exception:  # noqa: BLE001 - a session without a py4j gateway (Spark Connect)
        return None


def _remember_driver(spark: Any) -> None:
    """Note the JVM's pid, memory settings and error-file directories while it can still answer."""
    gateway = _gateway_of(spark)
    if gateway is None or id(gateway) in _DRIVERS:
        return
    jvm = spark.sparkContext._jvm
    system = jvm.java.lang.System
    conf = spark.sparkContext.getConf()
    memory = {"spark.driver.memory": conf.get("spark.driver.memory", "1g (Spark's default)"),
              "max heap": f"{int(jvm.java.lang.Runtime.getRuntime().maxMemory()) // (1024 * 1024)} MB"}
    options = conf.get("spark.driver.extraJavaOptions", "") or ""
    heap_flags = [o for o in options.split() if o.startswith(("-Xmx", "-Xms", "-XX:MaxRAM"))]
    if heap_flags:
        memory["driver Java options"] = " ".join(heap_flags)
    dirs = [str(system.getProperty("user.dir")), str(system.getProperty("java.io.tmpdir")), tempfile.gettempdir()]
    _DRIVERS[id(gateway)] = _Driver(gateway, int(jvm.java.lang.ProcessHandle.current().pid()),
                                    getattr(gateway, "proc", None), memory, list(dict.fromkeys(dirs)))
    _quiet_py4j_after_death(spark)


def _exit_status(driver: _Driver) -> int | None:
    """The JVM's exit status (negative: killed by that signal) once it has ended; None while it runs."""
    if driver.proc is not None:
        return driver.proc.poll()
    if driver.pid is not None:
        try:
            os.kill(driver.pid, 0)
        except ProcessLookupError:
            return 0  # gone, status unknown: it is not our child
        except PermissionError:
            return None
    return None


@dataclass
class DriverDeath:
    """What is known of a driver JVM that died: its pid, how it ended, its error file, its memory."""

    pid: int | None
    status: int | None  # the exit status; negative: killed by that signal; None: not known
    error_file: str | None
    error_lines: list[str]
    memory: dict[str, str]

    @property
    def how(self) -> str:
        if self.status is None or (self.status == 0 and self.error_file is None):
            return "ended"
        if self.status < 0:
            try:
                name = signal.Signals(-self.status).name
            except ValueError:
                name = f"signal {-self.status}"
            return f"was killed by {name}"
        return f"exited with status {self.status}"

    def message(self, where: str = "") -> str:
        """One message for a person: what died, where, what is known of why, and what to try."""
        jvm = f"its JVM (pid {self.pid})" if self.pid is not None else "its JVM"
        lines = [f"the Spark driver died: {jvm} {self.how}" + (f" {where}" if where else "")]
        if self.error_file:
            lines.append(f"  JVM error file: {self.error_file}")
        for line in self.error_lines:
            lines.append(f"  JVM: {line}")
        if self.memory:
            lines.append("  memory: " + ", ".join(f"{k} {v}" for k, v in self.memory.items()))
        lines.append("  what to try: " + self.advice())
        return "\n".join(lines)

    def advice(self) -> str:
        if self.error_file:
            return ("the JVM crashed and wrote the error file above: its first lines say why (out of "
                    "memory: raise spark.driver.memory with --spark-conf, or run fewer --jobs)")
        if self.status == -signal.SIGKILL:
            return ("SIGKILL without an error file is usually the kernel's out-of-memory killer (see "
                    "`dmesg`) or a time limit of the CI job: give the machine more memory or the driver "
                    "less (--spark-conf spark.driver.memory=...), run fewer --jobs, or raise the time limit")
        return "run the scenario alone (`eventtime run FILE`) to see whether it is the cause"


def connection_lost(exc: BaseException | None) -> bool:
    """Whether an exception (or one it came from) is py4j losing its connection to the JVM."""
    seen = 0
    while exc is not None and seen < 20:
        name = type(exc).__name__
        if isinstance(exc, (ConnectionError, EOFError)) or name == "Py4JNetworkError":
            return True
        if name == "Py4JError" and any(s in str(exc) for s in ("Answer from Java side is empty",
                                                                "while sending or receiving",
                                                                "new communication channel")):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def driver_death(spark: Any, after: BaseException | None = None) -> DriverDeath | None:
    """What is known of `spark`'s driver JVM if it has died; None while it lives (or for a session
    this process cannot see the JVM of).

    `after`: the exception that made the caller ask. py4j sees its sockets close while the kernel
    is still tearing the process down, a moment before the parent can reap it: after a lost
    connection (`connection_lost`) the exit status is waited for, bounded (_DEATH_WAIT), polling."""
    gateway = _gateway_of(spark)
    driver = _DRIVERS.get(id(gateway)) if gateway is not None else None
    if driver is None:
        return None
    deadline = time.monotonic() + (_DEATH_WAIT if connection_lost(after) else 0.0)
    status = _exit_status(driver)
    while status is None and time.monotonic() < deadline:
        time.sleep(0.05)
        status = _exit_status(driver)
    if status is None:
        return None
    error_file = None
    for directory in driver.dirs:
        found = glob.glob(os.path.join(directory, f"hs_err_pid{driver.pid}.log"))
        if found:
            error_file = found[0]
            break
    return DriverDeath(driver.pid, status, error_file, _error_lines(error_file), dict(driver.memory))


def launch_death(after: BaseException | None = None) -> DriverDeath | None:
    """What is known of a driver JVM that died while its session was being created (before the
    harness could note anything of it): None when PySpark launched no JVM or it still runs.
    `after`: the exception the creation raised (a lost connection waits for the exit as
    `driver_death` does; anything else, a second)."""
    from pyspark import SparkContext

    proc = getattr(getattr(SparkContext, "_gateway", None), "proc", None)
    if proc is None:
        # killed before it sent PySpark its port: PySpark says only that (JAVA_GATEWAY_EXITED; the
        # same words before error classes) and keeps no handle on the process
        if after is not None and "Java gateway process exited" in str(after):
            return DriverDeath(None, None, None, [], {})
        return None
    deadline = time.monotonic() + (_DEATH_WAIT if connection_lost(after) else 1.0)
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)
    found = [f for d in dict.fromkeys([os.getcwd(), tempfile.gettempdir()])
             for f in glob.glob(os.path.join(d, f"hs_err_pid{proc.pid}.log"))]
    error_file = found[0] if found else None
    return DriverDeath(proc.pid, proc.poll(), error_file, _error_lines(error_file), {})


def _error_lines(path: str | None, limit: int = 6) -> list[str]:
    """The summary at the top of an hs_err file: its `#` lines that say what happened."""
    if not path:
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = [next(fh, "") for _ in range(40)]
    except OSError:
        return []
    said = [line.lstrip("#").strip() for line in head if line.startswith("#")]
    return [line for line in said if line and not line.startswith(("If you would like", "http", "The crash"))][:limit]


def _launch_died() -> bool:
    """Whether the JVM PySpark launched last (possibly still being set up) has ended."""
    context = sys.modules.get("pyspark")
    proc = getattr(getattr(getattr(context, "SparkContext", None), "_gateway", None), "proc", None)
    return proc is not None and proc.poll() is not None


def _any_dead(within: float = 0.0) -> bool:
    """Whether a driver JVM of this process has died; `within`: wait that long for its exit to be
    reported (a lost connection is seen a moment before the process can be reaped), polling.
    A gateway discarded during the wait counts: the run saw the death first, forgot that driver
    and may have launched a live one, and then no driver left is dead."""
    deadline = time.monotonic() + within
    discarded = len(_DISCARDED_GATEWAYS)
    while True:
        if len(_DISCARDED_GATEWAYS) > discarded:
            return True
        if any(_exit_status(d) is not None for d in list(_DRIVERS.values())) or _launch_died():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _interrupted(exc: BaseException | None) -> bool:
    """Whether an exception is, or came from, an interrupt (KeyboardInterrupt, the CLI's SIGTERM):
    a BaseException that is not an Exception."""
    seen = 0
    while exc is not None and seen < 20:
        if not isinstance(exc, Exception):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


_CALLBACK_SERVER_ENDED = "Error while waiting for a connection."  # py4j: its callback server's accept loop ended


class _DeadDriverFilter(logging.Filter):
    """py4j logs every broken connection with a traceback (its client and callback threads, some on
    the root logger); once a driver JVM has died those are the death said again in py4j's words,
    and the harness says it once. Only py4j's records and lost connections are dropped, and records
    of a call cut by an interrupt (KeyboardInterrupt and the like), which the interrupted caller reports."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("py4j") and record.getMessage() == _CALLBACK_SERVER_ENDED:
            return False  # the verdict of the query that runs into it says so; the next scenario revives it
        if record.exc_info and _interrupted(record.exc_info[1]):
            return False  # Ctrl-C or SIGTERM cut a py4j call: the caller says it was interrupted
        lost = bool(record.exc_info and connection_lost(record.exc_info[1]))
        if lost and _DISCARDED_GATEWAYS:
            return False  # a dead JVM's connection, already said; a live one's loss reaches its caller anyway
        return not ((record.name.startswith("py4j") or lost) and _any_dead(_DEATH_WAIT if lost else 0.0))


_FILTER = _DeadDriverFilter()


def _quiet_py4j_logs() -> None:
    for name in ("", "py4j", "py4j.clientserver", "py4j.java_gateway"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def _quiet_py4j_after_death(spark: Any) -> None:
    _quiet_py4j_logs()
    # PySpark's accumulator server (a socketserver) prints a traceback of its own when the JVM's
    # connection to it breaks; the same death again
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None and hasattr(server, "handle_error"):
        loud = server.handle_error

        def handle_error(request: Any, client_address: Any) -> None:
            if not _any_dead(_DEATH_WAIT if connection_lost(sys.exc_info()[1]) else 0.0):
                loud(request, client_address)

        server.handle_error = handle_error


def discard_dead_session() -> None:
    """Forget the process's SparkSession, SparkContext and py4j gateway after their JVM died, so that
    `get_session` launches a new JVM. Touches PySpark's class-level singletons (what `stop()` resets,
    plus the gateway that `stop()` keeps); each is looked up, so a PySpark without one is fine."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    with _LOCK:
        sc = getattr(SparkContext, "_active_spark_context", None)
        gateway = getattr(SparkContext, "_gateway", None)
        session = getattr(SparkSession, "_instantiatedSession", None)
        if session is not None:  # a cluster session's stop at exit (get_session) would fail on the dead JVM
            atexit.unregister(session.stop)
        if sc is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Unable to cleanly shutdown Spark JVM process": known
                try:
                    sc.stop()
                except Exception:  # noqa: BLE001 - the JVM is gone; what is left is Python state
                    pass
        if gateway is not None:
            try:
                gateway.shutdown_callback_server(raise_exception=False)
            except Exception:  # noqa: BLE001
                pass
            try:
                gateway.close(keep_callback_server=False)
            except Exception:  # noqa: BLE001
                pass
            _DRIVERS.pop(id(gateway), None)
            _DISCARDED_GATEWAYS.append(id(gateway))
        for cls, attrs in ((SparkContext, ("_active_spark_context", "_gateway", "_jvm")),
                           (SparkSession, ("_instantiatedSession", "_activeSession"))):
            for attr in attrs:
                if hasattr(cls, attr):
                    setattr(cls, attr, None)
        try:
            from pyspark.sql.context import SQLContext

            SQLContext._instantiatedContext = None
        except (ImportError, AttributeError):
            pass
        _SPARES.clear()
        _RUNTIME.clear()


def fresh_session(master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """A new SparkSession on a new driver JVM, after the last one died."""
    discard_dead_session()
    return get_session(master=master, conf=conf)


def live_session(spark: Any, master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """`spark` while its driver JVM lives; once it has died, a fresh session on a new JVM (for a
    process that keeps one session, e.g. a pytest worker: the item that saw the death failed with
    it, and the items after it run on the new session instead of failing on the dead one)."""
    if driver_death(spark) is None:
        return spark
    return fresh_session(master=master, conf=conf)
