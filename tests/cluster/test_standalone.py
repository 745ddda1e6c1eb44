"""The bundled pipelines certified on a standalone Spark cluster: a master and two workers on loopback.

The fixture starts Spark's own Master and Workers from the installed pyspark (eventtime.harness.cluster) and
stops them afterwards; `eventtime certify` runs in a child process (its SparkSession is the cluster's
application; this process starts no JVM). A subset of the suite keeps CI within minutes; the whole
suite, local vs cluster, is `python benchmarks/cluster_vs_local.py` (docs/cluster.md).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from eventtime.harness.cluster import StandaloneCluster, child_environment

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
# Two stateful operators in one query (window after window, DataFrame and SQL) and an event-time timer
# in transformWithStateInPandas (Python workers on the executors): 6 scenario x implementation pairs.
CONTRACTS = ["chained_window_count", "hold_timer"]
CERTIFY_TIMEOUT = 1200  # seconds for the whole certify run; it took 4-6 min on two shared cores
# Bound on each wait for Spark: a cold cluster's first micro-batch took over 60 s (the default) once at
# load average 15; steps after it take 1-26 s.
STEP_TIMEOUT = "180"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(workers=2, host="127.0.0.1", cores=1, memory="1g",
                           log_dir=tmp_path_factory.mktemp("cluster-logs")) as c:
        yield c
    assert c.pids == []  # every process it started is stopped


def _json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read().decode("utf-8"))


def _status(cluster) -> dict:
    return _json(cluster.status_url)


def test_two_workers_alive(cluster):
    status = _status(cluster)
    assert status["status"] == "ALIVE"
    assert [w["state"] for w in status["workers"]] == ["ALIVE", "ALIVE"]
    assert all(w["host"] == "127.0.0.1" for w in status["workers"])


def test_certify_on_the_cluster(cluster, tmp_path):
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "eventtime.cli", "certify", "--master", cluster.master_url,
           "--json", str(results), "--timeout", STEP_TIMEOUT, "-q"]
    for contract in CONTRACTS:
        cmd += ["--contract", contract]
    # without PySpark's Connect-mode variables: tests/connect in the same pytest run leaves them here
    env = child_environment(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CERTIFY_TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith(("CERTIFIED", "REJECTED"))]
    assert verdicts and all(v.startswith("CERTIFIED") for v in verdicts), proc.stdout
    doc = json.loads(results.read_text())
    assert doc["run"]["master"] == cluster.master_url
    assert doc["counts"].get("passed", 0) >= 5 and set(doc["counts"]) <= {"passed", "not_applicable"}
    # the application had an executor on each worker
    apps = [a["id"] for a in _status(cluster)["completedapps"]]
    assert len(apps) == 1, apps
    for port in cluster.worker_webui_ports:
        worker = _json(f"http://127.0.0.1:{port}/json/")
        assert apps[0] in [e["appid"] for e in worker["finishedexecutors"] + worker["executors"]], worker
