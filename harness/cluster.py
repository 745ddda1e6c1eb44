"""Spark beyond one JVM: master URL checks, cluster settings for the session, and a standalone cluster on one host.

Spark is the distributed engine; this module only starts Spark's own standalone Master and Worker
processes (`spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`, shipped with the
pip-installed pyspark), waits for them within bounds, and stops them, even when the code using them fails.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import EventtimeError

__all__ = ["MASTER_FORMS", "MasterURLError", "ClusterError", "StandaloneCluster", "check_master", "is_local",
           "cluster_conf", "wait_for_executors", "spark_home", "child_environment", "CONNECT_MODE_VARIABLES"]

MASTER_FORMS = "local, local[N], local[*], local[N,F], local-cluster[W,C,M] (workers, cores, MiB each) or spark://HOST:PORT"

_LOCAL = re.compile(r"^local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*([1-9]\d*)\s*,\s*([1-9]\d*)\s*,\s*([1-9]\d*)\s*\]$")
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([1-9]\d{0,4})$")


class MasterURLError(EventtimeError, ValueError):
    """A master URL the harness cannot run on; the message names the accepted forms."""

    def __init__(self, url: str, why: str = ""):
        super().__init__(f"{url!r} is not a Spark master URL the harness runs on{': ' + why if why else ''}; "
                         f"accepted: {MASTER_FORMS}")
        self.url = url


class ClusterError(EventtimeError, RuntimeError):
    """A standalone cluster that did not come up (or an app that got no executors); says what was awaited."""


class _WaitExpired(ClusterError):
    """A bounded wait ran out (as opposed to a process that died while it was waited for)."""


def check_master(url: str) -> str:
    """`url` stripped if it is an accepted master URL (see MASTER_FORMS); else MasterURLError.

    Other masters (yarn, k8s://, mesos://) are refused: the harness reads each query's checkpoint
    logs from the driver's file system, which a cluster manager's default file system need not be.
    """
    text = (url or "").strip()
    if _LOCAL.match(text):
        return text
    m = _LOCAL_CLUSTER.match(text)
    if m:
        return text
    if text.startswith("local-cluster"):
        raise MasterURLError(url, "local-cluster takes [workers, cores per worker, MiB per worker], "
                                  "e.g. local-cluster[2,1,1024]")
    if text.startswith("local"):
        raise MasterURLError(url, "local takes a thread count, e.g. local[2]")
    if text.startswith("spark://"):
        hosts = text[len("spark://"):].split(",")
        for hp in hosts:
            hm = _HOST_PORT.match(hp)
            if not hm or int(hm.group(3)) > 65535:
                raise MasterURLError(url, f"{hp!r} is not HOST:PORT (port 1-65535)")
        return text
    return _refuse(url)


def _refuse(url: str) -> str:
    scheme = (url or "").split("://")[0].split("[")[0].strip()
    if scheme in ("yarn", "k8s", "mesos"):
        raise MasterURLError(url, f"{scheme} is not supported (the harness reads checkpoints on the driver's "
                                  "file system)")
    raise MasterURLError(url)


def is_local(master: str) -> bool:
    """True for `local` / `local[...]`: one JVM, no executors of its own."""
    return bool(_LOCAL.match(master.strip()))


def _executor_pythonpath() -> str:
    """The driver's import path for executors' Python workers: pipelines are pickled by reference, so the
    modules that define them (the checkout, a test directory) must import there too. The interpreter's
    own directories (standard library, site-packages) are left out: the executors' interpreter has its own."""
    own = {os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}}

    def inside_interpreter(path: str) -> bool:
        real = os.path.realpath(path)
        return any(real == o or real.startswith(o + os.sep) for o in own)

    entries = [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p) and not inside_interpreter(p)]
    return os.pathsep.join(dict.fromkeys(entries))


def cluster_conf(master: str, conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """Settings a session on `master` needs beyond the test conf; empty for local masters.

    - executors' Python workers import what the driver imports (PYTHONPATH) and run in UTC (TZ),
      like the JVMs (`-Duser.timezone=UTC` in the test conf);
    - on `local-cluster[W,C,M]` an executor gets M MiB (Spark refuses to start when the default
      1024 MiB executor does not fit a smaller worker), unless spark.executor.memory is given.
    """
    conf = dict(conf or {})
    if is_local(master):
        return {}
    out = {"spark.executorEnv.TZ": "UTC"}
    path = _executor_pythonpath()
    if path:
        out["spark.executorEnv.PYTHONPATH"] = path
    m = _LOCAL_CLUSTER.match(master.strip())
    if m and "spark.executor.memory" not in conf:
        out["spark.executor.memory"] = f"{m.group(3)}m"
    return {k: v for k, v in out.items() if k not in conf}


def worker_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """Settings every session needs, local or not: Python workers (UDFs, pandas functions) import
    what the driver imports. A local worker does not see the driver's sys.path either: a test run's
    `pythonpath = ["src"]` reaches the driver only, so a UDF defined in the user's package would fail
    with ModuleNotFoundError on the worker."""
    path = _executor_pythonpath()
    if not path or "spark.executorEnv.PYTHONPATH" in (conf or {}):
        return {}
    return {"spark.executorEnv.PYTHONPATH": path}


def expected_executors(master: str) -> int:
    """How many executors a session on `master` waits for before its first query: W on local-cluster, 1 on
    a standalone master (it gets what the workers offer), 0 locally."""
    m = _LOCAL_CLUSTER.match(master.strip())
    if m:
        return int(m.group(1))
    return 0 if is_local(master) else 1


def wait_for_executors(spark: Any, count: int, timeout: float = 120.0) -> int:
    """Wait (bounded) until `count` executors have registered with the session; returns how many did.

    Without this the first scenario's first step would pay for executor start-up, and an app a
    standalone master cannot place (no worker with enough free cores or memory) would hang in Spark.
    """
    if count <= 0:
        return 0
    sc = spark.sparkContext._jsc.sc()

    def registered() -> int:
        return int(sc.getExecutorMemoryStatus().size()) - 1  # the driver is listed too

    _bounded_wait(lambda: registered() >= count, timeout, poll=0.2,
                  what=lambda: (f"{count} executor(s) to register with the application on {spark.sparkContext.master} "
                                f"({registered()} did); does the cluster have workers with free cores and "
                                f"{spark.sparkContext.getConf().get('spark.executor.memory', '1g')} of memory "
                                "for each executor?"))
    return registered()


def _bounded_wait(done: Callable[[], bool], timeout: float, *, poll: float, what: Callable[[], str],
                  check: Callable[[], None] | None = None) -> None:
    """Poll `done` until it holds; ClusterError naming `what` after `timeout` seconds. `check` may raise
    earlier (a process that died). The pause between polls only paces them; the deadline decides."""
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        if done():
            return
        if time.monotonic() >= deadline:
            raise _WaitExpired(f"waited {timeout:g} s for {what()}")
        time.sleep(poll)


def spark_home() -> Path:
    """The installed Spark (the pip-installed pyspark is one): SPARK_HOME, else pyspark's own."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def _free_ports(host: str, count: int) -> list[int]:
    """`count` distinct ports free on `host` right now (held together while chosen, so they differ)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()



# Variables PySpark puts in os.environ, process-wide, once this process makes a Spark Connect session
# (pyspark.sql.session: SPARK_CONNECT_MODE_ENABLED on every Connect session, SPARK_LOCAL_REMOTE with
# an in-process local server); it never removes them. A child process that inherits them takes itself
# for a Connect client: a classic session there fails with CONNECT_URL_NOT_SET, and a Python worker's
# `pyspark.sql.functions` would build Connect columns. PySpark's own local server launcher drops the
# same ones. SPARK_CONNECT_AUTHENTICATE_TOKEN stays: PySpark sets it only for its in-process server,
# and a user sets it for a server that asks for it.
CONNECT_MODE_VARIABLES = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")


def child_environment(base: Mapping[str, str] | None = None, *, spark_server: bool = False,
                      **extra: str) -> dict[str, str]:
    """The environment for a process this package starts: `base` (default: this process's) without
    the Connect-mode variables PySpark left in it, plus `extra`. A `spark_server` (a Master, Worker
    or Connect server JVM) is never a Connect client, so it loses SPARK_REMOTE too; any other child
    keeps the user's SPARK_REMOTE, which is how a user asks for Connect."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in CONNECT_MODE_VARIABLES}
    if spark_server:
        env.pop("SPARK_REMOTE", None)
    env.update(extra)
    return env


class Supervised:
    """`with X(...) as x:` for processes this package starts: `start()` on entry (stopping whatever it
    started if it fails), `stop()` on exit whatever happens; `_failed` says whether to keep the logs
    (Ctrl-C is no failure)."""

    _failed = False

    def start(self) -> None:  # pragma: no cover - each supervisor has its own
        raise NotImplementedError

    def stop(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def __enter__(self) -> Any:
        try:
            self.start()
        except BaseException:
            self._failed = True
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt):
            self._failed = True
        self.stop()

class StandaloneCluster(Supervised):
    """A standalone Spark cluster on one host: a Master and `workers` Workers, started and stopped.

        with StandaloneCluster(workers=2, host="127.0.0.1") as cluster:
            spark = get_session(master=cluster.master_url)
            ...

    Entering starts the master, waits until its status page answers, starts the workers and waits
    until the page lists them all ALIVE (each wait bounded by `timeout`). Leaving stops every process
    it started (SIGTERM to its process group, SIGKILL after `stop_timeout`), also when the block failed;
    stop the SparkSession first. Logs go to `log_dir` (a new temporary directory by default), which is
    kept when something failed (the error names it) and removed otherwise unless `keep_logs`.
    """

    MASTER_CLASS = "org.apache.spark.deploy.master.Master"
    WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

    def __init__(self, workers: int = 2, *, host: str = "127.0.0.1", cores: int = 1, memory: str = "1g",
                 timeout: float = 120.0, stop_timeout: float = 20.0, log_dir: str | os.PathLike[str] | None = None,
                 keep_logs: bool = False, spark_home: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None):
        if workers < 1:
            raise ValueError(f"a standalone cluster needs at least one worker, got workers={workers}")
        if cores < 1:
            raise ValueError(f"each worker needs at least one core, got cores={cores}")
        if not re.match(r"^[1-9]\d*[mMgG]$", memory):
            raise ValueError(f"worker memory is a size like 1g or 512m, got {memory!r}")
        if timeout <= 0 or stop_timeout <= 0:
            raise ValueError("timeout and stop_timeout are positive numbers of seconds")
        self.workers, self.host, self.cores, self.memory = workers, host, cores, memory
        self.timeout, self.stop_timeout = timeout, stop_timeout
        self.keep_logs = keep_logs
        self._spark_home = Path(spark_home) if spark_home else None
        self._env = dict(env) if env is not None else None
        self._log_dir_given = log_dir is not None
        self.log_dir: Path | None = Path(log_dir) if log_dir is not None else None
        self.port = self.webui_port = 0
        self.worker_webui_ports: list[int] = []
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._failed = False

    # -- what is run ----------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return f"spark://{self._url_host}:{self.port}"

    @property
    def status_url(self) -> str:
        """The master's JSON status page (workers, their state, applications)."""
        return f"http://{self._url_host}:{self.webui_port}/json/"

    @property
    def _url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    def _spark_class(self) -> str:
        home = self._spark_home or spark_home()
        script = home / "bin" / "spark-class"
        if not script.exists():
            raise ClusterError(f"no {script}: SPARK_HOME (or the pyspark installation) has no bin/spark-class")
        return str(script)

    def master_command(self) -> list[str]:
        return [self._spark_class(), self.MASTER_CLASS, "--host", self.host, "--port", str(self.port),
                "--webui-port", str(self.webui_port)]

    def worker_command(self, index: int) -> list[str]:
        assert self.log_dir is not None
        return [self._spark_class(), self.WORKER_CLASS, "--host", self.host,
                "--webui-port", str(self.worker_webui_ports[index]), "--cores", str(self.cores),
                "--memory", self.memory, "--work-dir", str(self.log_dir / f"worker-{index + 1}-work"),
                self.master_url]

    def _environment(self) -> dict[str, str]:
        env = child_environment(self._env, spark_server=True)
        env["SPARK_HOME"] = str(self._spark_home or spark_home())
        # executors' Python workers run the interpreter that started the cluster unless told otherwise
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        return env

    # -- lifecycle: see Supervised ---------------------------------------------------------------

    def start(self) -> None:
        if self._procs:
            raise ClusterError("this cluster is already started")
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="eventtime-cluster-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        ports = _free_ports(self.host, 2 + self.workers)
        self.port, self.webui_port, self.worker_webui_ports = ports[0], ports[1], ports[2:]
        env = self._environment()
        self._spawn("master", self.master_command(), env)
        self._wait(lambda: self._status() is not None,
                   lambda: f"the master's status page {self.status_url} to answer")
        for i in range(self.workers):
            self._spawn(f"worker-{i + 1}", self.worker_command(i), env)
        self._wait(lambda: self.alive_workers() >= self.workers,
                   lambda: f"{self.workers} ALIVE worker(s) on {self.status_url} ({self.alive_workers()} listed)")

    def _spawn(self, name: str, cmd: list[str], env: Mapping[str, str]) -> None:
        assert self.log_dir is not None
        with open(self.log_dir / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=dict(env), start_new_session=True)
        self._procs.append((name, proc))

    def _wait(self, done: Callable[[], bool], what: Callable[[], str]) -> None:
        try:
            _bounded_wait(done, self.timeout, poll=0.25, what=what, check=self._check_alive)
        except _WaitExpired as exc:
            raise ClusterError(f"{exc}; logs in {self.log_dir}") from None

    def _check_alive(self) -> None:
        for name, proc in self._procs:
            code = proc.poll()
            if code is not None:
                raise ClusterError(f"the {name} process exited with code {code} while starting; its log: "
                                   f"{self.log_dir}/{name}.log:\n{self._tail(name)}")

    def _tail(self, name: str, lines: int = 15) -> str:
        assert self.log_dir is not None
        try:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join("    " + line for line in text.splitlines()[-lines:])

    def _status(self) -> dict[str, Any] | None:
        """The master's JSON status, or None while it does not answer."""
        try:
            with urllib.request.urlopen(self.status_url, timeout=2) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        status = self._status() or {}
        return sum(1 for w in status.get("workers", ()) if w.get("state") == "ALIVE")

    def stop(self) -> None:
        """Stop every process this cluster started (workers first, then the master); idempotent."""
        for _name, proc in reversed(self._procs):
            _terminate(proc, self.stop_timeout)
        self._procs.clear()
        if self.log_dir is not None and not (self._failed or self.keep_logs or self._log_dir_given):
            shutil.rmtree(self.log_dir, ignore_errors=True)

    @property
    def pids(self) -> list[int]:
        return [p.pid for _, p in self._procs]


def _terminate(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGTERM to the process's group (the JVM and any executors it launched), SIGKILL if it outlives `timeout`."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(proc, signal.SIGKILL)  # whatever is left of the group (executors of a killed worker)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
        pass


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the process id
    except (ProcessLookupError, PermissionError):
        pass
