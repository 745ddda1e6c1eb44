"""Isolated SparkSessions over one SparkContext, so that several queries can run at once in one JVM.

A query's SQL settings are applied with `spark.conf.set` on its session for the moment it starts
(`StreamRun._apply_conf`); two threads doing that on one session would see each other's settings.
A cloned session shares the SparkContext (executors, the JVM, the py4j gateway and callback server)
but has its own copy of the SQL conf and its own `StreamingQueryManager`, so each worker thread gets
one. MemoryStream, MemorySink and the stepped clock are per query already.

PySpark keeps "the active session" in a class attribute shared by all Python threads (set by
`createDataFrame` among others) and in a JVM thread-local; `activate` sets both for the calling
thread. Whoever runs worker threads activates its own session again when they are done, so that
`get_session()` keeps returning the process's own session.
"""
from __future__ import annotations

from typing import Any

__all__ = ["isolated_session", "activate"]


def _session_class(jvm: Any) -> Any:
    """The JVM SparkSession class that holds the active-session thread-local (classic on 4.x)."""
    from .compat import _jvm_class

    for name in ("org.apache.spark.sql.classic.SparkSession", "org.apache.spark.sql.SparkSession"):
        cls = _jvm_class(jvm, name)
        if cls is not None:
            return cls
    raise RuntimeError("no org.apache.spark.sql.SparkSession class in this JVM")


def isolated_session(spark: Any) -> Any:
    """A new SparkSession on `spark`'s SparkContext with a copy of its SQL conf (runtime settings
    included) and its own streaming query manager."""
    from pyspark.sql import SparkSession

    # private[sql] in Scala, public in bytecode on every supported Spark (3.4-4.3)
    clone = spark._jsparkSession.cloneSession()
    return SparkSession(spark.sparkContext, clone)


def activate(spark: Any) -> None:
    """Make `spark` the active session of the calling thread (Python side and JVM thread-local)."""
    from pyspark.sql import SparkSession

    SparkSession._activeSession = spark
    _session_class(spark.sparkContext._jvm).setActiveSession(spark._jsparkSession)
