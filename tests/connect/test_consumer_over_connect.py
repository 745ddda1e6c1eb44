"""The example consumer's suite over Spark Connect, from its own environment with no JVM (no java on
PATH, no JAVA_HOME): the same scenarios pass and a wrong expectation fails, naming the diff.

It lives in the connect stage, not beside the consumer's other tests: a Python worker the server starts
(the staged source's runner, the foreachBatch writer) must connect back within Spark's constant 10 s
(docs/reliability.md, python_worker_late), and CI's connect stage runs after the Spark stages, when the
two cores are least shared. The consumer project is built as tests/consumer builds it (the stage's `consumer`
fixture, tests/connect/conftest.py).
"""
from __future__ import annotations

import json
import shutil

import pytest

from tests.consumer.test_consumer_example import (JOB_SCENARIOS, RUN_TIMEOUT, SHOP_SCENARIOS, _connect_here, _run,
                                                  _wrong_expectation)

pytestmark = pytest.mark.skipif(not _connect_here(), reason="the installed pyspark ships no Spark Connect server "
                                "(Spark 4.x does)")


def _without_jvm(env, py):
    """`env` with no way to a JVM: no JAVA_HOME, and PATH only the consumer venv's bin (java lives
    among the system's tools, so they all go)."""
    out = {k: v for k, v in env.items() if k not in ("JAVA_HOME", "SPARK_HOME", "SPARK_REMOTE")}
    out["PATH"] = str(py.parent)
    return out


def test_the_shops_suite_passes_over_spark_connect_from_a_client_with_no_jvm(consumer, connect_server):
    py, project, env, _ = consumer
    client = _without_jvm(env, py)
    assert shutil.which("java", path=client["PATH"]) is None
    # the control: this environment cannot start a JVM, so whatever passes below went through Connect
    rc, out = _run([str(py), "-c", "from pyspark.sql import SparkSession; SparkSession.builder.master('local[1]')"
                    ".getOrCreate()"], cwd=project, env=client, timeout=RUN_TIMEOUT)
    assert rc != 0 and "JAVA_GATEWAY_EXITED" in out, out
    bad = _wrong_expectation(project, "wrong.scenario.yaml", "wrong-expectation")
    try:
        # the jobs' contracts have nothing judged over Spark Connect (a job's substitution is classic PySpark's):
        # expected here, and said, as a team's Connect job would say it
        rc, out = _run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q",
                        "--eventtime-remote", connect_server.url, "--eventtime-report-json", "results-connect.json",
                        "--eventtime-allow-not-applicable", "page_windows",
                        "--eventtime-allow-not-applicable", "orders_medallion",
                        "tests"], cwd=project, env=client, timeout=RUN_TIMEOUT)
    finally:
        bad.unlink()
    assert rc == 1 and "1 failed, 9 passed, 5 skipped" in out, out
    assert "1 missing, 1 unexpected" in out and "revenue: 10.01}" in out
    data = json.loads((project / "results-connect.json").read_text())
    statuses = {r["scenario"]: r["status"] for r in data["results"]}
    assert statuses.pop("wrong-expectation") == "failed"
    assert statuses == {name: "not_applicable" if name in JOB_SCENARIOS else "passed" for name in SHOP_SCENARIOS}
    assert {r["runtime"]["master"] for r in data["results"]} == {"spark connect (client has no JVM)"}
