"""Spark settings that suit a test's tiny micro-batches: what the harness gives the queries it starts,
unless the session already sets them.

Each one leaves every verdict and every batch's observations of the whole suite unchanged
(`benchmarks/conf_suite.py --baseline-env EVENTTIME_SPARK_TUNING=off`) and is measured in BENCHMARKS.md,
"Settings for tiny batches":

- `spark.sql.streaming.pollingDelay` = 0, per query: a trigger that finds nothing to run sleeps this long
  (10 ms by default) before it returns; every `process` step ends with such a trigger.
- `spark.sql.codegen.wholeStage` = false and `spark.sql.codegen.factoryMode` = NO_CODEGEN, per query:
  expressions are interpreted rather than compiled. For batches of a few rows, generating and compiling
  Java code per query and per task costs more than it saves (the first query of a process most: its
  first `add` and `process` steps). Spark's own test suites run their queries both ways and require the
  same answers.

With them go the two classes the harness compiles into the driver JVM (`jvmclasses`): the checkpoint
file manager that writes local files without a `chmod` process each, and the front that answers the
stepped clock's time in the JVM.

`EVENTTIME_SPARK_TUNING=off` leaves Spark's defaults (and Spark's own FileSystem checkpoint manager,
the Python clock called directly), e.g. to rule out a code-generation difference when
a pipeline behaves unlike production.
"""
from __future__ import annotations

import os

__all__ = ["ENV", "QUERY_CONF", "enabled", "query_conf"]

ENV = "EVENTTIME_SPARK_TUNING"

# Not among them: Hadoop's raw local file system for `file:` paths (`fs.file.impl`), which would spare
# the `chmod` process the checksummed default runs per file it creates. transformWithState's state
# store casts the local file system to the checksummed class and fails with a ClassCastException
# (measured on 4.3.0: every transformWithState pair of the suite).
QUERY_CONF: dict[str, str] = {
    "spark.sql.streaming.pollingDelay": "0",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def enabled() -> bool:
    return os.environ.get(ENV, "on").strip().lower() not in ("off", "0", "false", "no")


def query_conf() -> dict[str, str]:
    """SQL settings for each query the harness starts."""
    return dict(QUERY_CONF) if enabled() else {}
