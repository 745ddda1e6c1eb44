"""The SparkSession the harness runs on: one per process, tuned for fast deterministic tests."""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any, Mapping

from .cluster import check_master, cluster_conf, expected_executors, is_local, wait_for_executors

__all__ = ["TEST_CONF", "DEFAULT_MASTER", "get_session", "other_session", "prepare_session", "runtime_info"]

DEFAULT_MASTER = "local[2]"

# Measured: one step takes ~0.5 s with a single shuffle partition and ~10 s with the default 200.
# The JVMs the harness launches compile with C1 only (-XX:TieredStopAtLevel=1), as build tools do
# for short-lived test JVMs: a test run is over before C2's optimised code pays back the CPU its
# compiler threads take on two cores (benchmarks/jit_tiers.py, BENCHMARKS.md "JIT tiers").
_TEST_JVM = "-Duser.timezone=UTC -XX:TieredStopAtLevel=1"
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
    (anything else: `eventtime.harness.cluster.MasterURLError`). On a cluster the executors get the driver's
    Python path and UTC (`eventtime.harness.cluster.cluster_conf`), and the session is returned once its
    executors have registered (bounded wait). An already running session is reused as it is (its
    master cannot change in-process).
    """
    from pyspark.sql import SparkSession

    # Python workers (createDataFrame, UDFs) must run the interpreter that runs the harness, not
    # whichever `python3` comes first on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with _LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            return prepare_session(active)
        master = check_master(master or DEFAULT_MASTER)
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in {**TEST_CONF, **cluster_conf(master, conf), **dict(conf or {})}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        if not is_local(master):  # leave the cluster in order: a JVM that just exits makes its workers relaunch
            atexit.register(spark.stop)  # executors and log errors while it shuts down
            wait_for_executors(spark, expected_executors(master))
        return prepare_session(spark)


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
    return spark


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
