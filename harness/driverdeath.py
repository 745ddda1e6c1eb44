"""A driver JVM that dies under the harness: detected (`driver_death`, `launch_death`), said once
(`DriverDeath.message`; py4j's own tracebacks of the same death kept quiet) and recovered from
(`discard_dead_session`: PySpark forgets the dead JVM). The sessions themselves are made, reused and
made again after a death (`fresh_session`, `live_session`) in `session`."""
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
from typing import Any, Callable

from .processes import alive

__all__ = ["DriverDeath", "connection_lost", "driver_death", "launch_death", "discard_dead_session", "on_discard",
           "SESSION_LOCK"]

# the one lock of the process's session: held while it is made or revived (`session`) and discarded (here);
# reentrant: a warm daemon that dies while a session is made on it is discarded there (`session`)
SESSION_LOCK = threading.RLock()
_ON_DISCARD: list[Callable[[], None]] = []  # what else forgets a discarded session (session's caches)


def on_discard(forget: Callable[[], None]) -> None:
    """Call `forget` (under SESSION_LOCK) whenever a dead session is discarded."""
    _ON_DISCARD.append(forget)


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
    shared: bool = False  # a warm daemon's JVM: it outlives this process's connections to it
    address: tuple[str, int] | None = None  # its py4j server (this process's, on a warm daemon's JVM)
    token: str | None = None  # that server's secret
    gone: bool = False  # found dead: every later question answers at once


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
    address, token = _parameters(gateway)
    _DRIVERS[id(gateway)] = _Driver(gateway, int(jvm.java.lang.ProcessHandle.current().pid()),
                                    getattr(gateway, "proc", None), memory, list(dict.fromkeys(dirs)),
                                    shared=bool(gateway.__dict__.get("eventtime_shared")), address=address,
                                    token=token)
    _quiet_py4j_after_death(spark)


_SHARED_DEATH_WAIT = 1.0  # a warm daemon's JVM is killed with its daemon, not left to exit by itself


def _death_wait(drivers: list[_Driver]) -> float:
    """How long a lost connection waits for these JVMs' exits: a JVM this process launched exits once
    its connection is gone (its stdin closes) and takes a moment to; a warm daemon's JVM lives on
    after a lost connection (an interrupted call), and one that died was killed, at once."""
    return _SHARED_DEATH_WAIT if drivers and all(d.shared for d in drivers) else _DEATH_WAIT


def _exit_status(driver: _Driver) -> int | None:
    """The JVM's exit status (negative: killed by that signal) once it has ended; None while it runs."""
    if driver.proc is not None:
        return driver.proc.poll()
    if driver.pid is not None and not alive(driver.pid):
        return 0  # gone, status unknown: it is not our child
    return None


PROBE_TIMEOUT_S = 30.0  # a live JVM answers a new connection within this, on a loaded machine too


def _answers(driver: _Driver, timeout: float = PROBE_TIMEOUT_S) -> bool | None:
    """Whether the JVM still answers this process: a new connection to its py4j server, answered.
    False: refused, or closed without an answer; a JVM sent SIGKILL never answers again (none of its
    threads runs its code after the kill), and closes its sockets while the kernel tears it down,
    which on a loaded machine is well before its exit is reported (`_exit_status`). None: no answer
    within `timeout` (a JVM that lives but is too busy to say so: not taken for dead)."""
    return _probe(driver.address, driver.token, timeout)


def _parameters(gateway: Any) -> tuple[tuple[str, int] | None, str | None]:
    """The address and secret of a py4j gateway's JVM side (read from Python: py4j's gateway asks the
    JVM for any attribute it does not have)."""
    params = gateway.__dict__.get("java_parameters") or gateway.__dict__.get("gateway_parameters")
    if params is None:
        return None, None
    return (str(params.address), int(params.port)), getattr(params, "auth_token", None)


def gateway_gone(gateway: Any) -> bool:
    """Whether the JVM of a py4j gateway no longer answers (`_answers`), for a gateway whose session
    was not made yet (a warm daemon killed while this run attached to it)."""
    address, token = _parameters(gateway)
    return _probe(address, token, PROBE_TIMEOUT_S) is False


def _probe(address: tuple[str, int] | None, token: str | None, timeout: float) -> bool | None:
    """py4j's own first question (its authentication; without a secret, a look-up in the default JVM
    view) on a connection of its own: nothing of a session is touched."""
    if address is None:
        return None
    from py4j import protocol as proto

    if token:
        question = f"{proto.AUTH_COMMAND_NAME}\n{token}\n"
    else:
        question = (proto.REFLECTION_COMMAND_NAME + proto.REFL_GET_UNKNOWN_SUB_COMMAND_NAME + "java\n"
                    + proto.DEFAULT_JVM_ID + "\n" + proto.END_COMMAND_PART)
    try:
        with socket.create_connection(address, timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(question.encode())
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = sock.recv(256)
                if not chunk:
                    return False
                answer += chunk
    except socket.timeout:
        return None
    except OSError:  # refused, reset
        return False
    return answer.startswith(proto.RETURN_MESSAGE.encode())


def _gone(driver: _Driver) -> bool:
    """Whether the driver JVM has died or is dying: its exit reported, or it no longer answers (`_answers`)."""
    if not driver.gone and (_exit_status(driver) is not None or _answers(driver) is False):
        driver.gone = True
    return driver.gone


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

    The death is decided by the JVM itself, not by when its exit is reported: a killed JVM's exit is
    reported only once the kernel has torn it down, which on a loaded machine comes well after its
    connections closed (a dead daemon's session then failed its next call with a raw Py4JError). So
    the JVM is asked (`_answers`): one that no longer answers is dead, whatever the exception said
    (py4j's "An error occurred while calling o34.conf" says nothing of a lost connection) or whether
    one was raised at all (the check between tests, before any call reaches the session).

    `after`: the exception that made the caller ask (kept for the callers; the JVM decides). Once
    dead, its exit status is waited for, bounded (_DEATH_WAIT), for the message: how it ended."""
    gateway = _gateway_of(spark)
    driver = _DRIVERS.get(id(gateway)) if gateway is not None else None
    if driver is None or not _gone(driver):
        return None
    deadline = time.monotonic() + _death_wait([driver])
    status = _exit_status(driver)
    while status is None and time.monotonic() < deadline:
        time.sleep(0.05)  # how it ended, for the message; that it died is decided
        status = _exit_status(driver)
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
    deadline = time.monotonic() + min(within, _death_wait(list(_DRIVERS.values())))
    discarded = len(_DISCARDED_GATEWAYS)
    if within > 0 and any(_gone(d) for d in list(_DRIVERS.values())):
        return True  # a lost connection: the JVM says whether it lives, whenever its exit is reported
    while True:
        if len(_DISCARDED_GATEWAYS) > discarded:
            return True
        if any(d.gone or _exit_status(d) is not None for d in list(_DRIVERS.values())) or _launch_died():
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

    with SESSION_LOCK:
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
        forget_java_functions()
        for forget in _ON_DISCARD:
            forget()


def forget_java_functions() -> None:
    """Python UDFs and UDTFs made before a driver death or a stopped SparkContext (a job module's
    `@F.udf` at import) keep the JVM function PySpark made on their first use (`_judf_placeholder`,
    `_judtf_placeholder`): a handle on the dead JVM, or one whose tasks report to the stopped
    context's accumulator server (an error in the driver's log for each). Cleared, each makes its
    function again for the new context at its next use, as on its first. Looked up by name: a
    PySpark without one has nothing of that kind to clear."""
    import gc

    kinds = []
    for module, name, attr in (("pyspark.sql.udf", "UserDefinedFunction", "_judf_placeholder"),
                               ("pyspark.sql.udtf", "UserDefinedTableFunction", "_judtf_placeholder")):
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type):
            kinds.append((kind, attr))
    if not kinds:
        return
    for obj in gc.get_objects():
        for kind, attr in kinds:
            if isinstance(obj, kind) and getattr(obj, attr, None) is not None:
                setattr(obj, attr, None)
