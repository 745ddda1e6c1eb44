"""A warm Spark: one driver JVM kept between runs by a small daemon process (`warmd`), which a run
attaches to instead of launching a JVM of its own. What a cold start costs (the JVM, the SparkContext,
the JIT's first compilations, the first query's planning) is paid once per daemon, not once per run.

The rules, and why:
- **Local masters only.** A cluster or Spark Connect run has no JVM of its own to keep warm.
- **Never shared between users or projects.** The daemon's state file (its pid, port and secret) lives
  in the user's cache folder, the folder readable by the user only, the file mode 0600; the daemon
  listens on loopback and answers only a request carrying its secret. A daemon is keyed by the
  working directory, the Python interpreter, PySpark, the session's settings, the environment the JVM
  reads and the kit's own launch code (`daemon_key`): a run that differs in any of them gets a daemon
  of its own.
- **Each run as if cold.** The daemon gives each run (each xdist worker) a py4j server of its own in
  the JVM (its own callbacks: the stepped clock, foreachBatch), a new SparkSession (its own SQL conf,
  temporary views, functions and streaming query manager), and Python workers of its own (a marker in
  the workers' environment keys a worker pool per run; the pool is stopped when the run ends, so a
  changed module is imported afresh). Between runs (no run attached) the daemon stops any query left
  running, drops the tables, databases and global views the runs made, clears cached data and
  restores the Hadoop configuration; what it cannot undo (files or jars added to the SparkContext, a
  query that does not stop, a heap that stays full) retires it: the next run starts a new one and says
  why (`warmd`).
- **Faults.** A daemon that does not answer within `PING_TIMEOUT_S` is killed and replaced; one that
  died is replaced; a daemon that cannot be started leaves the run on a cold JVM of its own, saying
  why. None of these fails the run. A daemon killed during a run is a driver death for that run (its
  current scenario fails saying so, the next ones run on a new daemon), as a cold JVM's death is.
- **Bounded life.** The daemon exits after `idle` seconds without a run attached (default 30 min),
  and `eventtime warm stop` ends it at once.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from .processes import alive

__all__ = ["ENV_WARM", "ENV_IDLE", "DEFAULT_IDLE_S", "WarmUnavailable", "warm_dir", "daemon_key", "attach",
           "daemons", "stop_daemon", "Daemon", "attached_pid", "NOTES", "Notes",
           "OVER_CONNECT"]

ENV_WARM = "EVENTTIME_WARM"  # 1/0: the faces' switch, read by projectconfig.warm_wanted
ENV_IDLE = "EVENTTIME_WARM_IDLE"  # seconds a daemon waits for the next run before it exits
DEFAULT_IDLE_S = 1800
SPEC_ENV = "EVENTTIME_WARMD_SPEC"  # how a client tells a daemon it starts what to be
MARKER_ENV = "EVENTTIME_WARM_CLIENT"  # in the Python workers' environment: one worker pool per run

PING_TIMEOUT_S = 5.0  # a daemon that does not answer a ping within this is taken as hung
ATTACH_TIMEOUT_S = 60.0  # the daemon may be resetting after the last run (bounded there too)
START_TIMEOUT_S = 180.0  # a JVM's launch on a loaded machine
LOCK_TIMEOUT_S = START_TIMEOUT_S + 30.0  # another process of this run may be starting the daemon

# what of the environment the daemon's JVM (and its Python workers) read at launch
_ENV_PREFIXES = ("SPARK_", "PYSPARK_", "JAVA_", "HADOOP_", "EVENTTIME_", "_JAVA_")
_ENV_NAMES = ("TZ", "LANG", "LC_ALL")
# ... but not what PySpark sets in the process once it has a context (a second session of the same run,
# after a driver death, must find the same daemon), nor the kit's switches and pointers to its logs
_ENV_IGNORED = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE",
                ENV_WARM, ENV_IDLE, SPEC_ENV, "EVENTTIME_DRIVER_LOG")
# per run, not per daemon: each run's Python workers get its own import path (`worker_conf`)
_PER_RUN_SETTINGS = ("spark.executorEnv.PYTHONPATH", "spark.sql.warehouse.dir")


class WarmUnavailable(Exception):
    """No warm Spark for this run: the message says why (the run starts cold)."""


def warm_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The per-user folder of the daemons' state files (beside the class-data archives)."""
    from .jvmarchive import cache_dir

    return cache_dir(environ).parent / "warm"


def daemon_key(master: str, settings: Mapping[str, str], environ: Mapping[str, str] = os.environ,
               cwd: str | None = None) -> str:
    """What a daemon is for: two runs share one only when all of this is equal."""
    import pyspark

    here = Path(__file__).parent
    launch_code = hashlib.sha256()
    for name in ("session.py", "coldstart.py", "warm.py", "warmd.py", "tuning.py", "jvmarchive.py"):
        with contextlib.suppress(OSError):
            launch_code.update((here / name).read_bytes())
    payload = {
        "cwd": os.path.realpath(cwd or os.getcwd()),
        "python": os.path.realpath(sys.executable), "prefix": sys.prefix,
        "pyspark": pyspark.__version__, "pyspark_path": os.path.dirname(pyspark.__file__),
        "master": master,
        "settings": {k: v for k, v in settings.items() if k not in _PER_RUN_SETTINGS},
        "env": {k: v for k, v in environ.items()
                if (k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES) and k not in _ENV_IGNORED},
        "launch_code": launch_code.hexdigest(),
        "user": os.getuid(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Paths:
    folder: Path
    key: str

    @property
    def state(self) -> Path:
        return self.folder / f"{self.key}.json"

    @property
    def lock(self) -> Path:
        return self.folder / f"{self.key}.lock"

    @property
    def log(self) -> Path:
        return self.folder / f"{self.key}.log"

    @property
    def driver_log(self) -> Path:
        return self.folder / f"{self.key}.driver.log"

    @property
    def retired(self) -> Path:
        return self.folder / f"{self.key}.retired"


def _private_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)  # an existing folder too: the secrets in it are the user's
    return folder


# -- talking to a daemon ------------------------------------------------------------------------------
def _request(state: Mapping[str, Any], message: Mapping[str, Any], timeout: float) -> tuple[socket.socket, dict]:
    """Send one request; (the open connection, the reply). OSError / ValueError when there is no answer."""
    sock = socket.create_connection(("127.0.0.1", int(state["port"])), timeout=timeout)
    try:
        sock.settimeout(timeout)
        sock.sendall((json.dumps({**message, "secret": state["secret"]}) + "\n").encode())
        reply = _read_line(sock)
        return sock, json.loads(reply)
    except BaseException:
        sock.close()
        raise


def _read_line(sock: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        data += chunk
    return data.decode()


def _read_state(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _is_daemon(pid: int) -> bool:
    """Whether `pid` still runs a daemon of ours (a pid may have been reused since the state was written)."""
    try:
        return b"eventtime.harness.warmd" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return alive(pid)  # no /proc: trust the pid


def _kill(state: Mapping[str, Any]) -> None:
    """End a daemon that does not answer, and its JVM (its child, which exits when its stdin closes)."""
    pid = int(state.get("pid", 0))
    if pid > 0 and _is_daemon(pid):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)  # the daemon leads its own process group: its JVM goes too
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _locked(path: Path, timeout: float) -> Iterator[None]:
    with open(path, "a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WarmUnavailable(f"another process held {path.name} for over {timeout:.0f} s "
                                          "(starting a warm Spark)") from None
                time.sleep(0.1)  # waiting for another process's lock; decides nothing
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _start(paths: _Paths, master: str, conf: Mapping[str, str], idle: float) -> dict:
    """Launch a daemon and wait (bounded) until it says it is ready; its state."""
    read_end, write_end = os.pipe()
    spec = {"master": master, "conf": dict(conf), "state": str(paths.state), "idle": idle,
            "ready_fd": write_end, "key": paths.key}
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET") and not k.startswith("PYTEST_")}
    env[SPEC_ENV] = json.dumps(spec)
    env.setdefault("EVENTTIME_DRIVER_LOG", str(paths.driver_log))  # the JVM's own output, kept
    with open(paths.log, "ab") as log:
        os.chmod(paths.log, 0o600)
        proc = subprocess.Popen([sys.executable, "-m", "eventtime.harness.warmd"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_end,), env=env,
                                start_new_session=True, close_fds=True)
    os.close(write_end)
    _STARTED.append(proc)  # kept: it outlives this process; Python must not warn it is still running
    try:
        ready, _, _ = select.select([read_end], [], [], START_TIMEOUT_S)
        said = os.read(read_end, 64) if ready else b""
    finally:
        os.close(read_end)
    if b"ready" not in said:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise WarmUnavailable(f"the warm Spark did not start within {START_TIMEOUT_S:.0f} s (log: {paths.log})")
        raise WarmUnavailable(f"the warm Spark exited while starting ({_log_tail(paths.log)}; log: {paths.log})")
    state = _read_state(paths.state)
    if state is None:
        raise WarmUnavailable(f"the warm Spark said it was ready but wrote no state file {paths.state}")
    return state


_STARTED: list[subprocess.Popen] = []


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        said = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return " | ".join(said[-lines:]) or "nothing logged"


def _daemon_for(paths: _Paths, master: str, conf: Mapping[str, str], idle: float) -> tuple[dict, str]:
    """A live daemon's state (started here if none answers) and a note for the user ('' when it was there)."""
    with _locked(paths.lock, LOCK_TIMEOUT_S):
        state = _read_state(paths.state)
        note = ""
        if state is not None:
            try:
                sock, reply = _request(state, {"op": "ping"}, PING_TIMEOUT_S)
                sock.close()
                if reply.get("ok") and not reply.get("retiring"):
                    return state, ""
                note = (f"the warm Spark (pid {state.get('pid')}) is retiring: {reply['retiring']}" if reply.get("ok")
                        else f"the warm Spark (pid {state.get('pid')}) refused this run: {reply.get('refused')}")
                if not reply.get("ok"):
                    _kill(state)
            except (OSError, ValueError) as exc:
                if isinstance(exc, ConnectionRefusedError) or not alive(int(state.get("pid", 0))):
                    note = f"the warm Spark (pid {state.get('pid')}) had ended"
                else:
                    note = f"the warm Spark (pid {state.get('pid')}) did not answer within {PING_TIMEOUT_S:.0f} s " \
                           f"({exc}); it was ended"
                _kill(state)  # whatever is left of it (a listener gone, the process still there)
            with contextlib.suppress(OSError):
                paths.state.unlink()
        retired = paths.retired
        if retired.exists():
            with contextlib.suppress(OSError):
                note = note or f"the last warm Spark retired: {retired.read_text().strip()}"
                retired.unlink()
        state = _start(paths, master, conf, idle)
        started = f"started a warm Spark (pid {state['pid']}, ends after {idle / 60:.0f} min without a run)"
        return state, (note + "; " + started) if note else started


# -- attached -----------------------------------------------------------------------------------------
@dataclass
class _Attachment:
    sock: socket.socket
    state: dict
    client: str
    temp_dirs: list[str] = field(default_factory=list)  # PySpark's, one per SparkContext made
    gateway: Any = None  # this run's py4j connection to the daemon's JVM
    base: Any = None  # the daemon's own session, each of this run's sessions a new one of
    run_conf: Mapping[str, str] = field(default_factory=dict)


_ATTACHED: list[_Attachment] = []


class Notes(list[str]):
    """What this process's sessions said of the warm Spark, the one channel from the harness to the faces,
    which show each once: `say` keeps a note and prints it on stderr as it comes (the commands), unless a
    face shows them itself (`on_stderr` false: pytest's summary, not the captured output of the test that
    happened to make the session)."""

    on_stderr = True

    def say(self, note: str) -> None:
        self.append(note)
        if self.on_stderr:
            print(f"eventtime: {note}", file=sys.stderr, flush=True)


NOTES = Notes()
OVER_CONNECT = "warm Spark not used: a run over Spark Connect has no JVM of its own to keep warm"


def attached_pid() -> int | None:
    """The pid of the daemon this process runs on, if it runs on one."""
    return int(_ATTACHED[-1].state["pid"]) if _ATTACHED else None


def attach(master: str, conf: Mapping[str, str], settings: Mapping[str, str], *,
           idle: float | None = None) -> tuple[Any, str]:
    """A SparkSession on a warm daemon's JVM, new for this process; and a note for the user ('' if none).

    `conf` is what the caller asked for (`get_session`'s), `settings` what the session is launched
    with (the key). WarmUnavailable (the run goes on cold) when no daemon can be had."""
    from .cluster import is_local, worker_conf

    if not is_local(master):
        raise WarmUnavailable(f"a warm Spark runs local masters only, not {master}")
    if idle is None:
        try:
            idle = float(os.environ.get(ENV_IDLE, DEFAULT_IDLE_S))
        except ValueError:
            idle = float(DEFAULT_IDLE_S)
    paths = _Paths(_private_folder(warm_dir()), daemon_key(master, settings))
    note = ""
    for attempt in range(2):  # a daemon that retires or dies between the ping and the attach: once more
        state, said = _daemon_for(paths, master, conf, idle)
        note = "; ".join(x for x in (note, said) if x)
        try:
            sock, reply = _request(state, {"op": "attach", "pid": os.getpid()}, ATTACH_TIMEOUT_S)
        except (OSError, ValueError) as exc:
            if attempt:
                raise WarmUnavailable(f"the warm Spark (pid {state.get('pid')}) did not take this run: {exc}") from None
            continue
        if "refused" in reply:
            sock.close()
            note = "; ".join(x for x in (note, f"the warm Spark (pid {state.get('pid')}) did not take this run: "
                                                f"{reply['refused']}") if x)
            if attempt:
                raise WarmUnavailable(f"the warm Spark (pid {state.get('pid')}) did not take this run: {reply['refused']}")
            continue
        sock.settimeout(None)
        attachment = _Attachment(sock, state, str(reply["client"]))
        try:
            spark = _session(int(reply["port"]), str(reply["secret"]), attachment,
                             {**worker_conf(conf), MARKER_KEY: attachment.client})
        except Exception as exc:
            sock.close()
            _undo(attachment)
            raise WarmUnavailable(f"attaching to the warm Spark (pid {state.get('pid')}) failed: {exc}") from exc
        _ATTACHED.append(attachment)
        if reply.get("driver_log"):  # the JVM's output (a failing UDF's traceback) is in the daemon's log
            from . import driverlog

            driverlog._CURRENT = driverlog.DriverLog(str(reply["driver_log"]))
            driverlog.python_loggers_to_log(driverlog._CURRENT)
        return spark, note
    raise WarmUnavailable("no warm Spark took this run")  # pragma: no cover - the loop returns or raises


MARKER_KEY = "spark.executorEnv." + MARKER_ENV


class _SharedContext:
    """The daemon's JavaSparkContext as this process sees it: every call goes to it except `stop`,
    which ends only this process's use of it (PySpark's `SparkContext.stop` calls it; the context
    belongs to the daemon and to the runs attached beside this one)."""

    def __init__(self, target: Any):
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_target"), name)

    def stop(self) -> None:
        return None


def _session(port: int, secret: str, attachment: _Attachment, run_conf: Mapping[str, str]) -> Any:
    """PySpark's SparkContext and a new SparkSession over the daemon's JVM, through this run's own py4j server."""
    from pyspark.java_gateway import launch_gateway

    saved = {k: os.environ.get(k) for k in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET")}
    os.environ["PYSPARK_GATEWAY_PORT"], os.environ["PYSPARK_GATEWAY_SECRET"] = str(port), secret
    try:  # PySpark's own connection code (its imports, pinned threads); the variables are this call's only:
        gateway = launch_gateway()  # a child process of this run must launch or attach on its own
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    attachment.gateway, attachment.run_conf = gateway, dict(run_conf)
    return _new_session(attachment)


def session_again() -> Any | None:
    """A new session for this process on the daemon it is attached to, or None when it is not attached:
    after a test or a job stopped the last one (`spark.stop()` ends this process's use of the context,
    not the daemon's JVM), the next one is made as the first was."""
    if not _ATTACHED or _ATTACHED[-1].gateway is None:
        return None
    return _new_session(_ATTACHED[-1])


def _new_session(attachment: _Attachment) -> Any:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from .isolation import _session_class

    gateway, run_conf = attachment.gateway, attachment.run_conf
    jvm = gateway.jvm

    def shared(*_: Any) -> _SharedContext:
        return _SharedContext(jvm.org.apache.spark.api.java.JavaSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate()))

    # Any later SparkContext of this process (after a `stop()`) is the daemon's again, never a second one.
    if not _ORIGINAL_INIT:
        _ORIGINAL_INIT.append(SparkContext.__dict__["_initialize_context"])
    SparkContext._initialize_context = lambda self, jconf: shared()  # type: ignore[method-assign]
    # As PySpark's first SparkContext of a process takes them: the JVM's spark.* properties (the master,
    # the app name), then the run's. A later one (after a stop) meets a JVM conf made at once.
    conf = SparkConf(loadDefaults=SparkContext._jvm is not None)
    for key, value in run_conf.items():
        conf.set(key, value)
    gateway.eventtime_shared = True  # its JVM is the daemon's: a lost connection is no death of it (driverdeath)
    sc = SparkContext(conf=conf, gateway=gateway, jsc=shared())
    if getattr(sc, "_temp_dir", None):
        attachment.temp_dirs.append(sc._temp_dir)
    if attachment.base is None:
        # The JVM's default session: the daemon's, set again when it took this run (PySpark makes a
        # process's first session the default, and its `spark.stop()` clears it). Every run's
        # sessions share the daemon's catalog and cache, which it resets between runs. This run
        # keeps its base: after a `spark.stop()` of its own, its next session is made from it.
        default = _session_class(jvm).getDefaultSession()
        if not default.isDefined():
            raise WarmUnavailable("the warm Spark has no session to start this run's from "
                                  "(a run attached beside this one stopped its session)")
        attachment.base = default.get()
    return SparkSession(sc, attachment.base.newSession())


def release() -> None:
    """End this process's use of the daemon: its py4j server and Python workers go, the daemon resets
    once no run is attached. Called at exit; the daemon does the same when the process dies."""
    import shutil

    if _ATTACHED:
        _accumulator_server_done()
    while _ATTACHED:
        attachment = _ATTACHED.pop()
        with contextlib.suppress(OSError):
            attachment.sock.sendall(b'{"op": "release"}\n')
        with contextlib.suppress(OSError):
            attachment.sock.close()
        for folder in attachment.temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)


def _accumulator_server_done() -> None:
    """This process's accumulator server (PySpark's: the JVM sends it the updates of the run's Python
    tasks) takes no more updates. Letting go, the daemon closes the run's connections to it: the server
    would read that close as an update cut short and print a traceback (EOFError) while the process
    ends (seen under load in 2 of 10 `pytest -n 2` runs whose tests stopped their session)."""
    from pyspark import SparkContext

    server = getattr(getattr(SparkContext, "_active_spark_context", None), "_accumulatorServer", None)
    if server is not None and hasattr(server, "server_shutdown"):
        server.server_shutdown = True  # its handlers stop at their next poll
        server.handle_error = lambda *_: None  # and one inside a read when the close comes says nothing


_ORIGINAL_INIT: list[Any] = []  # PySpark's SparkContext._initialize_context, while this process is attached


def _undo(attachment: _Attachment) -> None:
    """What an attach that failed half-way (the daemon killed meanwhile) left in PySpark: its gateway to
    the daemon's JVM, and the context made on it; the run then starts a JVM of its own."""
    from pyspark import SparkContext

    if attachment.gateway is not None and getattr(SparkContext, "_gateway", None) is attachment.gateway:
        from .driverdeath import discard_dead_session

        discard_dead_session()  # restores PySpark's own context start too (`forget`)
    elif _ORIGINAL_INIT:
        SparkContext._initialize_context = _ORIGINAL_INIT.pop()  # type: ignore[method-assign]


def forget() -> None:
    """The daemon died under this process: its connection is closed, nothing is sent, and PySpark
    launches a JVM of its own again if asked for a context."""
    while _ATTACHED:
        with contextlib.suppress(OSError):
            _ATTACHED.pop().sock.close()
    if _ORIGINAL_INIT:
        from pyspark import SparkContext

        SparkContext._initialize_context = _ORIGINAL_INIT.pop()  # type: ignore[method-assign]


atexit.register(release)


# -- status and stop (`eventtime warm`) ------------------------------------------------------------------
@dataclass
class Daemon:
    key: str
    pid: int
    cwd: str
    spark: str
    started: float
    answer: dict | None  # its reply to a ping; None: it did not answer


def daemons(environ: Mapping[str, str] = os.environ) -> list[Daemon]:
    """The user's daemons, each asked how it is (bounded)."""
    folder = warm_dir(environ)
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        state = _read_state(path)
        if state is None:
            continue
        answer = None
        try:
            sock, answer = _request(state, {"op": "ping"}, PING_TIMEOUT_S)
            sock.close()
        except (OSError, ValueError):
            pass
        found.append(Daemon(path.stem, int(state.get("pid", 0)), str(state.get("cwd", "")),
                            str(state.get("spark", "")), float(state.get("started", 0)), answer))
    return found


def stop_daemon(daemon: Daemon, environ: Mapping[str, str] = os.environ) -> str:
    """Ask a daemon to exit (killed when it does not answer); what happened, in words."""
    path = warm_dir(environ) / f"{daemon.key}.json"
    state = _read_state(path)
    if state is None:
        return "already gone"
    try:
        sock, reply = _request(state, {"op": "stop"}, PING_TIMEOUT_S)
        sock.close()
        return "stopped" if reply.get("ok") else f"refused: {reply.get('refused')}"
    except (OSError, ValueError):
        _kill(state)
        with contextlib.suppress(OSError):
            path.unlink()
        return "did not answer: killed"
