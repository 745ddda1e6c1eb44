"""examples/consumer, installed from a freshly built wheel into a fresh virtual environment.

Proves the pytest plugin works for another repository: its own scenarios pass under `pytest -n 2`,
the bundled standard suite certifies its pipeline, results JSON is written by the controller, and
a scenario with a wrong expectation fails with the row diff and a re-run command. pip's cache is
reused, so only the first run downloads anything.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900  # seconds; a cold pip cache downloads pyspark (~450 MB)
RUN_TIMEOUT = 900


def _run(cmd, cwd, timeout, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def consumer(tmp_path_factory):
    import pyspark

    tmp = tmp_path_factory.mktemp("consumer")
    # The wheel is built from a copy of the tracked files: setuptools builds in the source tree's
    # build/, which two xdist workers (or a developer's own build) would otherwise share.
    source = tmp / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    rc, out = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "wheels"), str(source)],
                   cwd=tmp, timeout=INSTALL_TIMEOUT)
    assert rc == 0, out
    wheel = next((tmp / "wheels").glob("eventtime_conformance-*.whl"))
    venv.create(tmp / "venv", with_pip=True)
    py = tmp / "venv" / "bin" / "python"
    project = tmp / "project"
    shutil.copytree(ROOT / "examples" / "consumer", project)
    rc, out = _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[test]",
                    f"pyspark=={pyspark.__version__}", "-e", str(project)], cwd=tmp, timeout=INSTALL_TIMEOUT)
    assert rc == 0, out
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "VIRTUAL_ENV")}
    return py, project, env


def test_consumer_scenarios_and_bundled_suite_pass_under_xdist(consumer):
    py, project, env = consumer
    rc, out = _run([str(py), "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q",
                    "--eventtime-suite", "tumbling_count", "--eventtime-report-json", "results.json"],
                   cwd=project, env=env, timeout=RUN_TIMEOUT)
    assert rc == 0, out
    data = json.loads((project / "results.json").read_text())
    names = {r["scenario"] for r in data["results"]}
    assert {"orders-per-minute", "late-order-is-dropped"} <= names
    assert len(names) > 10  # the bundled tumbling_count scenarios ran too
    assert {r["implementation"] for r in data["results"]} == {"consumer_jobs.windows:count_per_window"}
    assert all(r["status"] in ("passed", "not_applicable") for r in data["results"])


def test_a_wrong_expectation_fails_with_the_diff(consumer):
    py, project, env = consumer
    good = (project / "tests" / "scenarios" / "orders-per-minute.scenario.yaml").read_text()
    bad = project / "tests" / "scenarios" / "wrong.scenario.yaml"
    bad.write_text(good.replace("scenario: orders-per-minute", "scenario: wrong-expectation")
                   .replace("[bob, \"09:00:00\", \"09:01:00\", 1]", "[bob, \"09:00:00\", \"09:01:00\", 5]"))
    try:
        rc, out = _run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", str(bad)], cwd=project, env=env,
                       timeout=RUN_TIMEOUT)
    finally:
        bad.unlink()
    assert rc == 1, out
    assert "1 missing, 1 unexpected" in out
    assert '- [bob, "09:00:00", "09:01:00", 5]' in out  # the failing step's YAML line
    assert "re-run: pytest 'tests/scenarios/wrong.scenario.yaml::wrong-expectation[" in out
