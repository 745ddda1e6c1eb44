"""The warm Spark's daemon (`python -m eventtime.harness.warmd`, started by `warm.attach`): a driver JVM
made as `get_session` makes one, kept for the runs that attach to it (the rules: `warm`).

One thread per connection on a loopback socket; each request is a line of JSON carrying the daemon's
secret. `ping` says how it is; `attach` gives the run a py4j server of its own in the JVM and holds
the connection until the run releases it or ends (a killed run's connection closes too); `stop` ends
the daemon. When the last run lets go, the daemon puts the JVM back as a new one would be (`_reset`)
or, where it cannot, retires.
"""
from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .driverlog import driver_log
from .processes import alive
from .warm import MARKER_ENV, SPEC_ENV, _read_line, _read_state

MAX_RUNS = 500  # runs one daemon serves before it retires (bounds what a run leaves in the JVM)
MAX_HEAP_FRACTION = 0.6  # used heap after a full GC, between runs, above which the daemon retires
STOP_QUERIES_S = 15.0  # how long a query left running by a run gets to stop between runs
# A streaming query's thread, as StreamExecution names it on every supported line (its class is an
# anonymous subclass, whose name differs between lines)
_QUERY_THREAD = "stream execution thread for "
_WORKER_MONITOR = "Idle Worker Monitor for "  # a Python worker pool's thread (PythonWorkerFactory.MonitorThread)


def _log(text: str) -> None:
    print(time.strftime("%Y-%m-%d %H:%M:%S ") + text, flush=True)


class WarmDaemon:
    def __init__(self, spark: Any, server: socket.socket, secret: str, spec: dict):
        self.spark = spark
        self.jvm = spark.sparkContext._jvm
        self.server = server
        self.secret = secret
        self.spec = spec
        self.state_path = Path(spec["state"])
        self.idle = float(spec["idle"])
        self.lock = threading.Condition()
        self.clients: set[str] = set()
        self.released: list[str] = []  # runs gone since the last reset (their worker pools to forget)
        self.served = 0
        self.resetting = False
        self.retiring = ""
        self.last_release = time.monotonic()
        self.baseline = self._baseline()
        self.jvm_pid = int(self.jvm.java.lang.ProcessHandle.current().pid())
        self.heap_mb = 0.0  # heap in use after the full garbage collection of the last reset

    # -- what the JVM is like when new -------------------------------------------------------------
    def _baseline(self) -> dict:
        sc = self.spark.sparkContext
        return {"files": set(self._scala_list(sc._jsc.sc().listFiles())),
                "jars": set(self._scala_list(sc._jsc.sc().listJars())),
                "hadoop": self._hadoop_conf(),
                "temp_dir": getattr(sc, "_temp_dir", None)}

    @staticmethod
    def _scala_list(seq: Any) -> list[str]:
        return [str(seq.apply(i)) for i in range(seq.size())]

    def _hadoop_conf(self) -> dict[str, str]:
        writer = self.jvm.java.io.StringWriter()
        self.jvm.org.apache.hadoop.conf.Configuration.dumpConfiguration(
            self.spark.sparkContext._jsc.hadoopConfiguration(), writer)
        return {p["key"]: p["value"] for p in json.loads(str(writer.toString())).get("properties", [])}

    # -- serving -------------------------------------------------------------------------------------
    def serve(self) -> None:
        self.server.settimeout(1.0)  # to look at the idle time between connections
        while True:
            if not alive(self.jvm_pid):  # killed under the daemon (out of memory): the next run starts a new one
                self.exit("its JVM ended")
            with self.lock:
                if not self.clients and not self.resetting:
                    if self.retiring:
                        self.exit(f"retired: {self.retiring}")
                    if time.monotonic() - self.last_release > self.idle:
                        self.exit(f"no run for {self.idle:.0f} s")
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(10.0)
                request = json.loads(_read_line(conn))
            except (OSError, ValueError):
                return
            if not hmac.compare_digest(str(request.get("secret", "")), self.secret):
                _send(conn, {"refused": "wrong secret"})
                return
            op = request.get("op")
            if op == "ping":
                _send(conn, self._ping())
            elif op == "stop":
                _send(conn, {"ok": True})
                self.exit("asked to stop")
            elif op == "attach":
                self._attach(conn, int(request.get("pid", 0)))
            else:
                _send(conn, {"refused": f"unknown request {op!r}"})

    def _ping(self) -> dict:
        stopped = bool(self.spark.sparkContext._jsc.sc().isStopped())  # the JVM answers, or the ping times out
        if stopped:
            self.retiring = self.retiring or "its SparkContext was stopped"
        with self.lock:
            return {"ok": True, "pid": os.getpid(), "clients": len(self.clients), "served": self.served,
                    "spark": self.spark.version, "retiring": self.retiring, "jvm_pid": self.jvm_pid,
                    "heap_mb_after_gc": self.heap_mb, "resetting": self.resetting,
                    "idle_s": 0 if self.clients or self.resetting else round(time.monotonic() - self.last_release, 1),
                    "idle_limit_s": self.idle}

    def _attach(self, conn: socket.socket, pid: int) -> None:
        with self.lock:
            if not self.lock.wait_for(lambda: not self.resetting, timeout=50.0):
                _send(conn, {"refused": "still resetting after the last run"})
                return
            if self.retiring:
                _send(conn, {"refused": f"retiring: {self.retiring}"})
                return
            self.served += 1
            client = f"{self.served}-{secrets.token_hex(4)}"
            self.clients.add(client)
        server = None
        try:
            server = self.jvm.org.apache.spark.api.python.Py4JServer(self.spark.sparkContext._jsc.sc().conf())
            server.start()
            # the run starts its sessions from the default one: a run beside it may have cleared that
            # with `spark.stop()` (PySpark's SparkSession.stop)
            from .isolation import _session_class

            _session_class(self.jvm).setDefaultSession(self.spark._jsparkSession)
            log = driver_log()
            _send(conn, {"port": int(server.getListeningPort()), "secret": str(server.secret()), "client": client,
                         "driver_log": log.path if log is not None else None})
            _log(f"run {client} (pid {pid}) attached")
            conn.settimeout(None)
            while True:  # until the run releases it or its process ends (the connection closes either way)
                try:
                    data = conn.recv(4096)
                except OSError:
                    break
                if not data or b"release" in data:
                    break
        except Exception as exc:  # noqa: BLE001 - this run goes cold (its side says why); the daemon serves on
            _log(f"run {client}: {exc}")
            with contextlib.suppress(OSError):
                _send(conn, {"refused": str(exc)})
        finally:
            if server is not None:
                with contextlib.suppress(Exception):
                    self._close_accumulators(server)
                with contextlib.suppress(Exception):
                    server.shutdown()
            self._release(client)

    def _release(self, client: str) -> None:
        with contextlib.suppress(Exception):
            self._stop_workers(client, forget=False)
        with self.lock:
            self.clients.discard(client)
            self.released.append(client)
            if self.clients:
                _log(f"run {client} released; {len(self.clients)} still attached")
                return
            self.resetting = True
        try:
            self._reset()
        except Exception as exc:  # noqa: BLE001 - what cannot be put back retires the daemon
            self.retiring = self.retiring or f"resetting after a run failed: {exc}"
        finally:
            with self.lock:
                self.resetting = False
                self.last_release = time.monotonic()
                self.lock.notify_all()
        _log(f"run {client} released; {self.served} served" + (f"; retiring: {self.retiring}" if self.retiring else ""))
        if self.retiring:
            self._withdraw()  # the next run starts a new daemon at once, and says why

    def _withdraw(self) -> None:
        """Take the state file away (a run that comes now starts a new daemon) and leave the reason."""
        state = _read_state(self.state_path)
        if state is not None and state.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                self.state_path.with_suffix(".retired").write_text(self.retiring)
            with contextlib.suppress(OSError):
                self.state_path.unlink()

    # -- between runs -------------------------------------------------------------------------------
    def _reset(self) -> None:
        """Put the JVM back as a new one is for the next run; retire where that cannot be done."""
        spark, sc = self.spark, self.spark.sparkContext
        self._stop_queries()
        for client in self.released:
            self._stop_workers(client, forget=True)
        self.released.clear()
        from .isolation import _session_class

        _session_class(self.jvm).setDefaultSession(spark._jsparkSession)
        for table in spark.catalog.listTables("global_temp"):
            spark.catalog.dropGlobalTempView(table.name)
        for db in spark.catalog.listDatabases():
            if db.name != "default":
                spark.sql(f"DROP DATABASE IF EXISTS `{db.name}` CASCADE")
        for table in spark.catalog.listTables("default"):
            if table.isTemporary:
                spark.catalog.dropTempView(table.name)
            else:
                spark.sql(f"DROP {'VIEW' if table.tableType == 'VIEW' else 'TABLE'} IF EXISTS `default`.`{table.name}`")
        warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")
        for leftover in Path(warehouse).glob("*") if os.path.isdir(warehouse) else []:
            shutil.rmtree(leftover, ignore_errors=True)
        spark.catalog.clearCache()
        self._restore_hadoop_conf()
        sc.setLogLevel("ERROR")
        files = set(self._scala_list(sc._jsc.sc().listFiles())) - self.baseline["files"]
        jars = set(self._scala_list(sc._jsc.sc().listJars())) - self.baseline["jars"]
        if files or jars:
            self.retiring = ("a run added files or jars to the SparkContext, which cannot be removed: "
                             + ", ".join(sorted(files | jars))[:300])
        self._clean_temp_dirs()
        runtime = self.jvm.java.lang.Runtime.getRuntime()
        self.jvm.java.lang.System.gc()
        in_use = int(runtime.totalMemory()) - int(runtime.freeMemory())
        self.heap_mb = round(in_use / 2**20, 1)
        used = in_use / int(runtime.maxMemory())
        if used > MAX_HEAP_FRACTION:
            self.retiring = self.retiring or f"{used:.0%} of its heap in use after a full garbage collection"
        if self.served >= MAX_RUNS:
            self.retiring = self.retiring or f"it served {self.served} runs"

    def _stop_queries(self) -> None:
        """Interrupt the streaming queries a run left running (its process ended under them): a query's
        thread takes an interrupt as its stop. One that does not end in time retires the daemon."""
        threads = [t for t in self.jvm.java.lang.Thread.getAllStackTraces().keySet().toArray()
                   if str(t.getName()).startswith(_QUERY_THREAD) and t.isAlive()]
        if not threads:
            return
        _log(f"stopping {len(threads)} {'query' if len(threads) == 1 else 'queries'} left running")
        reflect = self.jvm.java.lang.Class
        stop = reflect.forName("org.apache.spark.sql.streaming.StreamingQuery").getMethod("stop", None)
        for thread in threads:
            try:  # the query's own stop (an interrupt alone is taken as one only once the query is stopping)
                stop.invoke(_field(thread.getClass(), "$outer").get(thread), None)
            except Exception:  # noqa: BLE001 - a thread of another shape: the interrupt below is all there is
                thread.interrupt()
        deadline = time.monotonic() + STOP_QUERIES_S
        for thread in threads:
            thread.join(max(1, int((deadline - time.monotonic()) * 1000)))
        left = [str(t.getName()) for t in threads if t.isAlive()]
        if left:
            self.retiring = f"a query left running by a run did not stop within {STOP_QUERIES_S:.0f} s: {left[0]}"

    def _stop_workers(self, client: str, *, forget: bool) -> None:
        """Stop the Python worker pool(s) of run `client` (their workers imported that run's code);
        `forget`: also drop them from Spark's table of pools (done between runs, when no task uses it).

        Through Java reflection from the classes' names: py4j cannot call a method on the SparkEnv
        object itself, whose public methods name classes the driver's class path lacks (protobuf's,
        on Spark 4: py4j's method lookup fails with NoClassDefFoundError)."""
        reflect = self.jvm.java.lang.Class
        module = reflect.forName("org.apache.spark.SparkEnv$")
        env = _field(module, "env").get(_field(module, "MODULE$").get(None))
        if env is None:
            return
        pools = _field(reflect.forName("org.apache.spark.SparkEnv"), "pythonWorkers").get(env)
        env_vars = _field(reflect.forName("org.apache.spark.api.python.PythonWorkerFactory"), "envVars")
        entries = pools.toList()
        mine = []
        for i in range(entries.size()):
            entry = entries.apply(i)
            marker = env_vars.get(entry._2()).get(MARKER_ENV)
            if marker.isDefined() and str(marker.get()) == client:
                mine.append(entry)
        stop = reflect.forName("org.apache.spark.api.python.PythonWorkerFactory").getMethod("stop", None)
        identity = self.jvm.java.lang.System.identityHashCode
        stopped = set()
        for entry in mine:
            stop.invoke(entry._2(), None)
            stopped.add(identity(entry._2()))
            if forget:
                pools.remove(entry._1())
        # A pool's idle-worker monitor sleeps and looks forever, `stop` or not, and keeps the pool (and the
        # sockets of its workers) from being collected: one thread and one socket per run, for good. It
        # ends on an interrupt (its sleep throws).
        for thread in self.jvm.java.lang.Thread.getAllStackTraces().keySet().toArray():
            if stopped and str(thread.getName()).startswith(_WORKER_MONITOR):
                with contextlib.suppress(Exception):
                    if identity(_field(thread.getClass(), "$outer").get(thread)) in stopped:
                        thread.interrupt()

    def _close_accumulators(self, server: Any) -> None:
        """A run's PySpark registers an accumulator whose updates the JVM sends to that run's process over
        a socket it keeps open: the run gone, the socket would stay half-closed for as long as the JVM
        lives (one per run; nothing closes it once the accumulator is collected). Closed when the run
        lets go, found among the objects its py4j server holds for it."""
        reflect = self.jvm.java.lang.Class
        python_accumulator = reflect.forName("org.apache.spark.api.python.PythonAccumulatorV2")
        socket_field = _field(python_accumulator, "socket")
        close = reflect.forName("java.io.Closeable").getMethod("close", None)
        py4j = server.server()
        gateway = (py4j.getJavaServer() if hasattr(py4j, "getJavaServer") else py4j).getGateway()
        for held in list(gateway.getBindings().values()):
            if python_accumulator.isInstance(held):
                channel = socket_field.get(held)
                if channel is not None:
                    with contextlib.suppress(Exception):
                        close.invoke(channel, None)

    def _restore_hadoop_conf(self) -> None:
        now = self._hadoop_conf()
        if now == self.baseline["hadoop"]:
            return
        hadoop = self.spark.sparkContext._jsc.hadoopConfiguration()
        for key in set(now) - set(self.baseline["hadoop"]):
            hadoop.unset(key)
        for key, value in self.baseline["hadoop"].items():
            if now.get(key) != value:
                hadoop.set(key, value)

    def _clean_temp_dirs(self) -> None:
        """Each run's PySpark made a `pyspark-*` folder in the JVM's local dir; a run killed early left its own."""
        own = self.baseline["temp_dir"]
        if not own:
            return
        for folder in Path(own).parent.glob("pyspark-*"):
            if str(folder) != own:
                shutil.rmtree(folder, ignore_errors=True)

    # -- ending --------------------------------------------------------------------------------------
    def exit(self, why: str) -> None:
        _log(f"exiting: {why}")
        if self.retiring:
            self._withdraw()
        state = _read_state(self.state_path)
        if state is not None and state.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                self.state_path.unlink()
        with contextlib.suppress(Exception):
            self.spark.stop()
        os._exit(0)


def _field(cls: Any, name: str) -> Any:
    found = cls.getDeclaredField(name)
    found.setAccessible(True)
    return found


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall((json.dumps(message) + "\n").encode())


def _write_state(path: Path, state: dict) -> None:
    """Atomically, readable by the user only (it holds the secret)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(state, handle)
    os.replace(tmp, path)


def main() -> int:
    spec = json.loads(os.environ.pop(SPEC_ENV))
    ready_fd = int(spec["ready_fd"])
    from .session import get_session

    _log(f"starting: master {spec['master']}, cwd {os.getcwd()}")
    from . import session

    # A daemon lives for many runs: C2's optimised code pays back its compile time here, where a
    # short-lived test JVM's does not (session._TEST_JVM). Which compiler runs changes no result.
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        session.TEST_CONF[key] = session.TEST_CONF[key].replace("-XX:TieredStopAtLevel=1", "").strip()
    spark = get_session(master=spec["master"], conf=spec["conf"], warm=False)
    from .compat import compat_for

    # before the baseline: what the first query of a JVM loads once (the kit's compiled classes, added
    # to the SparkContext as a jar) belongs to a new JVM, not to a run
    with contextlib.suppress(Exception):
        compat_for(spark).query_conf  # noqa: B018
    server = socket.create_server(("127.0.0.1", 0))
    secret = secrets.token_hex(32)
    daemon = WarmDaemon(spark, server, secret, spec)
    _write_state(Path(spec["state"]), {"pid": os.getpid(), "port": server.getsockname()[1], "secret": secret,
                                       "key": spec["key"], "cwd": os.getcwd(), "spark": spark.version,
                                       "started": time.time()})
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    _log(f"ready on port {server.getsockname()[1]} (Spark {spark.version})")
    daemon.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
