"""A local Spark Connect server from the installed pyspark, started and stopped within bounds.

Spark 4.x ships the server in pyspark's jars (`spark-connect_*.jar`) and `sbin/start-connect-server.sh`;
the script daemonises through `spark-daemon.sh`, so this module runs the same class in the
foreground instead (`spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`),
which makes the server a child process it can wait for and stop (with its whole process group).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping

from .cluster import (ClusterError, Supervised, _bounded_wait, _free_ports, _terminate, _WaitExpired, child_environment,
                      spark_home)
from .session import TEST_CONF

__all__ = ["ConnectServer", "ConnectServerError", "SERVER_CLASS"]

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# How long a Python worker the server starts (the streaming data source's runner, the foreachBatch
# worker) waits to connect and authenticate to the JVM: Spark's default, 15 s, ran out at a load
# average of 18 on two cores (CANNOT_OPEN_SOCKET in the server's log, measured). A bound, not a pace.
# The JVM's own wait for such a worker to connect back is fixed at 10 s (PythonWorkerFactory.
# createSimpleWorker in Spark 4.0 to 4.3 selects with a constant 10000 ms; no setting lengthens it, and
# these workers never go through the daemon, whose wait is 60 s): under that load it can still fail
# ("Python worker failed to connect back"), an error of the run, never a verdict.
WORKER_CONNECT_TIMEOUT_S = 120


class ConnectServerError(ClusterError):
    """The server did not come up (or died); says what was awaited and where its log is."""


class ConnectServer(Supervised):
    """`with ConnectServer(port=P) as server:` a Spark Connect server at `server.url` (sc://HOST:PORT).

    Entering starts it and waits (bounded by `timeout`) until its port accepts connections; leaving
    stops it, even when the code inside failed. The server's Spark runs `master` with the harness's
    test settings (one shuffle partition, UTC) plus `conf`, and its Python workers run this
    interpreter, so the data sources and foreachBatch functions the harness ships find pyspark and pyarrow.
    """

    def __init__(self, *, port: int | None = None, host: str = "127.0.0.1", master: str = "local[2]",
                 conf: Mapping[str, str] | None = None, timeout: float = 120.0, log_dir: str | None = None,
                 stop_timeout: float = 30.0):
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"port {port} is not between 1 and 65535")
        self.host = host
        self.port = port or _free_ports(host, 1)[0]
        self.master = master
        self.conf = {**TEST_CONF, "spark.python.authenticate.socketTimeout": f"{WORKER_CONNECT_TIMEOUT_S}s",
                     **dict(conf or {})}
        self.timeout = timeout
        self.stop_timeout = stop_timeout
        self._log_dir_given = log_dir is not None
        self.log_dir = Path(log_dir) if log_dir else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed = False
        self._work_dir: str | None = None

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self.log_dir / "connect-server.log" if self.log_dir else None

    def start(self) -> None:
        if self._proc is not None:
            raise ConnectServerError("the server is already started")
        submit = spark_home() / "bin" / "spark-submit"
        if not submit.exists():
            raise ConnectServerError(f"no spark-submit in the installed Spark ({submit})")
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="eventtime-connect-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # The server's working folder and warehouse (where the harness stages rows, checkpoints and
        # output) are its own, removed when it stops: nothing lands in the caller's directory.
        self._work_dir = tempfile.mkdtemp(prefix="eventtime-connect-work-")
        # WARN: at INFO the server logged ~15 MB in 20 minutes of scenarios, CPU the queries need.
        conf = {"spark.log.level": "WARN", "spark.sql.warehouse.dir": str(Path(self._work_dir) / "warehouse"),
                **self.conf, "spark.connect.grpc.binding.port": str(self.port),
                "spark.connect.grpc.binding.address": self.host}
        cmd = [str(submit), "--class", SERVER_CLASS, "--name", "eventtime Spark Connect server",
               "--master", self.master]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        env = self.environment()
        assert self.log_path is not None
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=env, cwd=self._work_dir, start_new_session=True)
        try:
            _bounded_wait(self._answers, self.timeout, poll=0.25,
                          what=lambda: f"the Spark Connect server to listen on {self.host}:{self.port} "
                                       f"(log: {self.log_path})", check=self._check_alive)
        except _WaitExpired as exc:
            raise ConnectServerError(str(exc)) from None

    def environment(self) -> dict[str, str]:
        """The server's environment: a classic Spark application, not a Connect client, whose Python
        workers run this interpreter."""
        return child_environment(spark_server=True, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
                                 SPARK_HOME=str(spark_home()),
                                 SPARK_AUTH_SOCKET_TIMEOUT=str(WORKER_CONNECT_TIMEOUT_S))

    def _answers(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            tail = ""
            if self.log_path is not None and self.log_path.exists():
                lines = self.log_path.read_text(errors="replace").splitlines()
                tail = "\n".join(lines[-15:])
            raise ConnectServerError(f"the Spark Connect server exited with status {self._proc.returncode} "
                                     f"before it listened (log: {self.log_path}):\n{tail}")

    def stop(self) -> None:
        """Stop the server and its process group; idempotent. Logs are removed unless something failed."""
        if self._proc is not None:
            _terminate(self._proc, self.stop_timeout)
            self._proc = None
        if self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None
        if self.log_dir is not None and not (self._failed or self._log_dir_given):
            shutil.rmtree(self.log_dir, ignore_errors=True)
