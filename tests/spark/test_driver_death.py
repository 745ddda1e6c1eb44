"""A run survives its driver JVM: killed mid-step, during a restart, between scenarios, or the run
itself stopped by SIGTERM / Ctrl-C. Each test runs `eventtime run` in its own process (and so its
own JVM) on five small scenarios and checks what a person and a results file get.

Each test costs a JVM start or more (~5-10 s each): these are few on purpose; the long form (many
kills at random points) is benchmarks/driver_kills.py.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # CI runs it on the newest line (tests/README.md)

ROOT = Path(__file__).parents[2]
# the first has a restart (its second build) after step 2 has processed its first rows
SCENARIOS = ["restart/restart-keeps-window-exactly-once", "tumbling/append-late-row-dropped",
             "tumbling/out-of-order-across-batches", "tumbling/window-bounds", "tumbling/complete-mode"]
PIPELINE = "tests.spark.pipelines:kills_driver"
# seconds: a backstop against a hang, never a measure of speed (no timed tests): the kit bounds each of
# its own waits, so a run that is only slow ends by itself (test_faults.py: 240 s was exceeded by a
# correct run at load 29); 600 s is the hang bound of test_bounds.py
BOUND = 600


def _scenarios(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for i, name in enumerate(SCENARIOS):  # numbered so they run in this order
        (folder / f"{i}-{name.split('/')[1]}.scenario.yaml").write_text(
            (ROOT / "scenarios" / f"{name}.scenario.yaml").read_text())
    return folder


def _start(tmp_path, kill="", *extra):
    env = child_environment(EVENTTIME_TEST_KILL=kill,
                            PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = open(tmp_path / "out.txt", "w")
    proc = subprocess.Popen([sys.executable, "-m", "eventtime.cli", "run", str(_scenarios(tmp_path)),
                             "--pipeline", PIPELINE, "--json", str(tmp_path / "results.json"), *extra],
                            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    return proc, time.monotonic()


def _output(tmp_path):
    return (tmp_path / "out.txt").read_text()


def _verdict_lines(text):
    return [line for line in text.splitlines()
            if line.startswith(("PASS ", "FAIL ", "ERROR ", "N/A ")) and f"  [{PIPELINE}]  (" in line]


def _wait_for_verdicts(proc, tmp_path, n):
    deadline = time.monotonic() + BOUND
    while len(_verdict_lines(_output(tmp_path))) < n:
        assert proc.poll() is None, f"the run ended before {n} verdicts:\n{_output(tmp_path)[-3000:]}"
        assert time.monotonic() < deadline, f"no {n} verdicts within {BOUND}s:\n{_output(tmp_path)[-3000:]}"
        time.sleep(0.05)


def _finish(proc, t0):
    try:
        proc.wait(timeout=BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the run did not end within {BOUND}s")
    return proc.returncode, time.monotonic() - t0


def _jvm_of(pid):
    """The pid of the java process that `pid` launched (pyspark's gateway)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and "java" in stat.split("(", 1)[1].split(")")[0]:
                return int(entry.name)
    return None


def _results(tmp_path):
    from eventtime.resultsfile import read_results

    return read_results(tmp_path / "results.json")


def _check_clean(text):
    assert "Traceback" not in text, text[-4000:]
    assert "Py4J" not in text and "ConnectionRefused" not in text and "ConnectionReset" not in text, text[-4000:]


@pytest.mark.parametrize("kill, step", [("batch:1", "step 2 (process)"), ("build:2", "step 4 (restart)")],
                         ids=["mid-step", "during-a-restart"])
def test_a_driver_killed_mid_run_loses_no_verdict_and_the_run_goes_on_in_a_fresh_session(tmp_path, kill, step):
    proc, t0 = _start(tmp_path, kill)
    rc, seconds = _finish(proc, t0)
    text = _output(tmp_path)
    assert rc == 1, text[-3000:]
    _check_clean(text)
    # one message: what died, where, how, what to try; said once
    assert text.count("the Spark driver died: its JVM") == 1, text
    assert f"was killed by SIGKILL during {step} of scenario restart-keeps-window-exactly-once" in text, text
    assert "what to try:" in text and "memory: spark.driver.memory" in text
    assert "starting a fresh Spark session" in text
    doc = _results(tmp_path)
    assert doc.incomplete is None  # every pair got its verdict
    statuses = [(r["scenario"], r["status"], r.get("cause")) for r in doc.results]
    assert ("restart-keeps-window-exactly-once", "error", "driver_died") in statuses
    # the other four ran on the fresh session, and pass as they do without a kill
    assert sorted(s for s in statuses if s[0] != "restart-keeps-window-exactly-once") == sorted(
        (n, "passed", None) for n in ("tumbling-append-late-row-dropped", "tumbling-out-of-order-across-batches",
                                      "tumbling-window-bounds", "tumbling-complete-mode"))
    assert "1 driver death" in text.splitlines()[-1]


def test_with_jobs_every_pair_on_the_dead_driver_says_so_and_the_rest_run_on_a_fresh_one(tmp_path):
    proc, t0 = _start(tmp_path, "batch:1", "--jobs", "2")
    rc, seconds = _finish(proc, t0)
    text = _output(tmp_path)
    assert rc == 1, text[-3000:]
    _check_clean(text)
    assert text.count("the Spark driver died: its JVM") == 1, text  # one death, said once
    doc = _results(tmp_path)
    assert doc.incomplete is None and len(doc.results) == len(SCENARIOS)
    died = [r["scenario"] for r in doc.results if r.get("cause") == "driver_died"]
    assert "restart-keeps-window-exactly-once" in died and len(died) <= 2  # and the pair beside it, if running
    assert all(r["status"] == "passed" for r in doc.results if r["scenario"] not in died)
    assert "1 driver death" in text.splitlines()[-1]


def test_a_driver_killed_after_a_verdict_keeps_that_verdict(tmp_path):
    proc, t0 = _start(tmp_path)
    _wait_for_verdicts(proc, tmp_path, 1)
    kept = _results(tmp_path)  # written as the run goes: the first verdict is on disk already
    assert [r["status"] for r in kept.results] == ["passed"] and kept.incomplete is not None
    jvm = _jvm_of(proc.pid)
    assert jvm is not None
    os.kill(jvm, signal.SIGKILL)  # between scenarios, or early in the second: wherever it lands
    rc, seconds = _finish(proc, t0)
    text = _output(tmp_path)
    _check_clean(text)
    doc = _results(tmp_path)
    assert doc.incomplete is None
    assert doc.results[0]["scenario"] == "restart-keeps-window-exactly-once" and doc.results[0]["status"] == "passed"
    died = [r for r in doc.results if r.get("cause") == "driver_died"]
    assert len(died) <= 1  # none when the kill fell between two scenarios
    assert len(doc.results) == len(SCENARIOS) == len(_verdict_lines(text))
    assert all(r["status"] == "passed" for r in doc.results if r.get("cause") is None)
    assert rc == (1 if died else 0)
    assert "starting a fresh Spark session" in text and text.count("the Spark driver died: its JVM") == 1, text


def test_a_run_gives_up_after_three_deaths_in_a_row_and_says_what_did_not_run(tmp_path):
    proc, t0 = _start(tmp_path, "build:all")
    rc, seconds = _finish(proc, t0)
    text = _output(tmp_path)
    assert rc == 1
    _check_clean(text)
    doc = _results(tmp_path)
    assert [r.get("cause") for r in doc.results] == ["driver_died"] * 3
    assert doc.incomplete is not None and "died 3 times in a row" in doc.incomplete["reason"]
    assert [n["scenario"] for n in doc.incomplete["not_run"]] == ["tumbling-window-bounds", "tumbling-complete-mode"]
    assert "2 not run" in text.splitlines()[-1]


@pytest.mark.parametrize("sig, code, reason", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                               (signal.SIGINT, 130, "interrupted (Ctrl-C)")],
                         ids=["SIGTERM", "Ctrl-C"])
def test_a_stopped_run_writes_its_verdicts_marked_incomplete(tmp_path, sig, code, reason):
    proc, t0 = _start(tmp_path)
    _wait_for_verdicts(proc, tmp_path, 1)
    jvm = _jvm_of(proc.pid)
    os.kill(proc.pid, sig)
    rc, seconds = _finish(proc, t0)
    text = _output(tmp_path)
    assert rc == code, text[-3000:]
    _check_clean(text)
    doc = _results(tmp_path)
    assert doc.incomplete is not None and doc.incomplete["reason"] == reason
    verdicts = len(_verdict_lines(text))
    assert len(doc.results) == verdicts >= 1
    assert len(doc.incomplete["not_run"]) == len(SCENARIOS) - verdicts
    deadline = time.monotonic() + 60
    while jvm is not None and Path(f"/proc/{jvm}").exists() and "Z" not in _state(jvm):
        assert time.monotonic() < deadline, f"the JVM {jvm} outlived its run by 60 s"
        time.sleep(0.1)


def _state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_under_pytest_xdist_the_item_that_saw_the_death_fails_with_it_and_the_next_get_a_fresh_session(tmp_path):
    folder = _scenarios(tmp_path)
    (tmp_path / "pytest.ini").write_text(f"[pytest]\neventtime_pipelines =\n    tumbling_count = {PIPELINE}\n")
    env = child_environment(EVENTTIME_TEST_KILL="batch:1",  # per worker process: its first query
                            PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-rA", str(folder),
                           "--eventtime-report-json", str(tmp_path / "results.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BOUND * 2)
    text = proc.stdout + proc.stderr
    doc = _results(tmp_path)
    died = [r for r in doc.results if r.get("cause") == "driver_died"]
    # each worker's first query killed its JVM: that item failed with the death, and every later
    # item of the worker passed on a fresh session
    assert 1 <= len(died) <= 2 and len(doc.results) == len(SCENARIOS), text[-4000:]
    assert all(r["status"] == "passed" for r in doc.results if r.get("cause") is None), text[-4000:]
    assert f"{len(died)} failed, {len(SCENARIOS) - len(died)} passed" in text, text[-4000:]
    # once per dead JVM in the failure reports (the short summary after them may repeat a reason,
    # depending on the terminal's width)
    reports = text.split("short test summary info")[0]
    assert reports.count("the Spark driver died: its JVM") == len(died), text[-6000:]
    assert "ConnectionRefused" not in text and "Py4JNetworkError" not in text, text[-6000:]
