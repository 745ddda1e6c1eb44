"""A run that survives its JVM, without Spark: the results file written as the run goes (atomic,
marked incomplete), recovery after driver deaths (bounded), the message of a dead driver, and the
faults of the run's surroundings told from Spark's captured error chains."""
from __future__ import annotations

import errno
import json
import logging
import os
import signal
import sys
import threading
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from eventtime.faults import (CALLBACK_SERVER_FAILED, CHECKPOINT_UNWRITABLE, NO_SPACE, PYTHON_WORKER_LATE,
                             classify_failure,
                              classify_os_error)
from eventtime.harness import driverdeath as dd
from eventtime.harness import session as hs
from eventtime.loader import load_scenario
from eventtime.parallel import Pair, Recovery, run_pairs
from eventtime.results import DRIVER_DIED, FAILED, PASSED, ScenarioResult, StepResult
from eventtime.resultsfile import RUNNING, ResultsWriter, read_results, write_results
from eventtime.scenarios import SUITE_DIR

SCHEMA = json.loads(resources.files("conformance").joinpath("schema/results.schema.json").read_text("utf-8"))


def _result(path: str, status: str = FAILED) -> ScenarioResult:
    sc = load_scenario(SUITE_DIR / path)
    res = ScenarioResult(sc, "pkg.mod:fn", status, spark_version="4.3.0", runtime={"spark_version": "4.3.0"})
    res.steps.append(StepResult(1, "expect", sc.steps[-1].where, status=status))
    return res


class FakeSessions:
    """Stand-in for isolated Spark sessions: a clone is named after its base."""

    def __init__(self):
        self.lock = threading.Lock()
        self.made = 0

    def isolated(self, base):
        with self.lock:
            self.made += 1
            return f"clone{self.made}-of-{base}"

    def activate(self, session):
        pass


def _valid(path):
    data = json.loads(path.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    return data


def test_the_file_holds_every_verdict_so_far_and_is_incomplete_until_the_run_finishes(tmp_path):
    out = tmp_path / "r.json"
    writer = ResultsWriter(out, tool="run", command="eventtime run", started_at="2026-01-01T00:00:00Z")
    for n in (1, 2):
        writer.add(_result("tumbling/append-late-row-dropped.scenario.yaml", PASSED))
        data = _valid(out)
        assert len(data["results"]) == n and data["incomplete"] == {"reason": RUNNING}
    writer.finish()
    data = _valid(out)
    assert "incomplete" not in data and len(data["results"]) == 2
    back = read_results(out)
    assert back.incomplete is None and not back.warnings


def test_a_run_that_ends_early_says_why_and_what_did_not_run(tmp_path):
    out = tmp_path / "r.json"
    writer = ResultsWriter(out, tool="certify", command=None, started_at="2026-01-01T00:00:00Z")
    writer.add(_result("tumbling/append-late-row-dropped.scenario.yaml"))
    writer.finish("terminated (SIGTERM)", [("tumbling-window-bounds", "w.scenario.yaml", "m:f")])
    data = _valid(out)
    assert data["incomplete"] == {"reason": "terminated (SIGTERM)", "not_run": [
        {"scenario": "tumbling-window-bounds", "file": "w.scenario.yaml", "implementation": "m:f"}]}
    back = read_results(out)
    assert back.incomplete["reason"] == "terminated (SIGTERM)"
    assert back.warnings == [f"{out}: an incomplete run (terminated (SIGTERM)): 1 verdicts, "
                             "1 scenario × implementation pairs not run"]


def test_eventtime_report_says_a_run_is_incomplete(tmp_path, capsys):
    from eventtime.cli import main

    out = tmp_path / "r.json"
    writer = ResultsWriter(out, tool="run", command=None, started_at="2026-01-01T00:00:00Z")
    writer.add(_result("tumbling/append-late-row-dropped.scenario.yaml", PASSED))
    writer.finish("interrupted (Ctrl-C)", [])
    md = tmp_path / "r.md"
    assert main(["report", str(out), "--markdown", str(md)]) == 0
    assert "an incomplete run (interrupted (Ctrl-C))" in capsys.readouterr().err
    assert "**Incomplete run**" in md.read_text()
    writer.finish()  # control: the same file, complete, says nothing of the kind
    assert main(["report", str(out), "--markdown", str(md)]) == 0
    assert "incomplete" not in capsys.readouterr().err and "Incomplete" not in md.read_text()


def test_a_write_that_fails_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    write_results(out, {"format": "eventtime-results", "results": [1]})
    before = out.read_text()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        write_results(out, {"format": "eventtime-results", "results": [1, 2]})
    assert out.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left behind


# -- recovery ----------------------------------------------------------------------------------------

def _runner(dies):
    """A stand-in runner: the pairs named in `dies` end with the driver dead."""
    calls = []

    def run(scenario, implementation, *, session, rerun=None, **kwargs):
        calls.append((scenario, session))
        if scenario in dies:
            return SimpleNamespace(scenario=scenario, session=session, cause=DRIVER_DIED,
                                   reason=f"the Spark driver died: in {scenario}\n  what to try: ...")
        return SimpleNamespace(scenario=scenario, session=session, cause=None, reason=None)
    return run, calls


def _pairs(n):
    return [Pair(f"s{i}", "impl") for i in range(n)]


def _fresh():
    made = []

    def fresh():
        made.append(f"session{len(made) + 2}")
        return made[-1]
    return fresh, made


def test_after_a_death_the_rest_runs_on_a_fresh_session():
    runner, calls = _runner({"s1"})
    fresh, made = _fresh()
    recovery = Recovery(fresh=fresh, limit=3)
    results = list(run_pairs(_pairs(4), session="session1", runner=runner, recovery=recovery))
    assert [(r.scenario, r.session) for r in results] == [
        ("s0", "session1"), ("s1", "session1"), ("s2", "session2"), ("s3", "session2")]
    assert made == ["session2"] and recovery.deaths == 1 and recovery.not_run == [] and recovery.gave_up is None


def test_a_run_gives_up_after_limit_deaths_in_a_row_and_names_the_pairs_left():
    runner, calls = _runner({"s1", "s2", "s3", "s4"})
    fresh, made = _fresh()
    recovery = Recovery(fresh=fresh, limit=3)
    results = list(run_pairs(_pairs(6), session="session1", runner=runner, recovery=recovery))
    assert [r.scenario for r in results] == ["s0", "s1", "s2", "s3"]
    # s0 completed on session1, so its death is the first in a row; s2 and s3 died on fresh ones
    assert recovery.deaths == 3 and made == ["session2", "session3"]
    assert [p.scenario for p in recovery.not_run] == ["s4", "s5"]
    assert "died 3 times in a row" in recovery.gave_up and "in s3" in recovery.gave_up


def test_a_completed_pair_between_deaths_resets_the_count():
    runner, calls = _runner({"s0", "s2", "s4", "s6"})  # control: deaths, but never two in a row
    fresh, made = _fresh()
    recovery = Recovery(fresh=fresh, limit=2)
    results = list(run_pairs(_pairs(8), session="session1", runner=runner, recovery=recovery))
    assert len(results) == 8 and recovery.deaths == 4 and recovery.not_run == []


def test_without_recovery_the_first_death_ends_the_run():
    runner, calls = _runner({"s1"})
    recovery = Recovery(limit=0)
    results = list(run_pairs(_pairs(3), session="session1", runner=runner, recovery=recovery))
    assert [r.scenario for r in results] == ["s0", "s1"] and [p.scenario for p in recovery.not_run] == ["s2"]
    assert "does not recover" in recovery.gave_up


def test_with_jobs_the_pairs_not_started_on_the_dead_driver_run_on_the_fresh_one():
    died = threading.Event()
    lock = threading.Lock()

    def runner(scenario, implementation, *, session, rerun=None, **kwargs):
        base = session.split("-of-")[-1]
        with lock:
            dead = scenario == "s1" or (base == "session1" and died.is_set())
            if scenario == "s1":
                died.set()
        return SimpleNamespace(scenario=scenario, base=base, cause=DRIVER_DIED if dead else None,
                               reason="the Spark driver died" if dead else None)

    fresh, made = _fresh()
    recovery = Recovery(fresh=fresh, limit=3)
    results = list(run_pairs(_pairs(8), jobs=2, session="session1", runner=runner, sessions=FakeSessions(),
                             recovery=recovery))
    assert [r.scenario for r in results] == [f"s{i}" for i in range(8)]  # in order, none lost, none twice
    assert made == ["session2"] and recovery.not_run == []
    assert all(r.base == "session2" for r in results if r.cause is None and r.scenario > "s2")


# -- the message of a dead driver --------------------------------------------------------------------

class _Proc:
    def __init__(self, status):
        self.status = status

    def poll(self):
        return self.status


def _dead_spark(monkeypatch, status, tmp_path, pid=4242):
    gateway = SimpleNamespace()
    spark = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=gateway))
    monkeypatch.setitem(dd._DRIVERS, id(gateway), dd._Driver(gateway, pid, _Proc(status),
                                                               {"spark.driver.memory": "1g"}, [str(tmp_path)]))
    return spark


def test_a_live_driver_is_not_reported_dead(monkeypatch, tmp_path):
    assert dd.driver_death(_dead_spark(monkeypatch, None, tmp_path)) is None  # control


def test_a_killed_driver_is_said_once_with_signal_memory_and_what_to_try(monkeypatch, tmp_path):
    death = dd.driver_death(_dead_spark(monkeypatch, -signal.SIGKILL, tmp_path))
    text = death.message("during step 3 (process) of scenario s [m:f]")
    assert text.splitlines()[0] == ("the Spark driver died: its JVM (pid 4242) was killed by SIGKILL during step 3 "
                                    "(process) of scenario s [m:f]")
    assert "memory: spark.driver.memory 1g" in text and "out-of-memory killer" in text


def test_a_crashed_jvm_names_its_error_file_and_its_first_lines(monkeypatch, tmp_path):
    (tmp_path / "hs_err_pid4242.log").write_text(
        "#\n# A fatal error has been detected by the Java Runtime Environment:\n#\n"
        "#  SIGSEGV (0xb) at pc=0x0000, pid=4242, tid=77\n#\n# If you would like to submit a bug report\n"
        "---------------  S U M M A R Y ------------\n")
    death = dd.driver_death(_dead_spark(monkeypatch, -signal.SIGABRT, tmp_path))
    text = death.message()
    assert f"JVM error file: {tmp_path / 'hs_err_pid4242.log'}" in text
    assert "JVM: A fatal error has been detected by the Java Runtime Environment:" in text
    assert "JVM: SIGSEGV (0xb) at pc=0x0000, pid=4242, tid=77" in text and "bug report" not in text
    assert "was killed by SIGABRT" in text and "the error file above" in text


@pytest.mark.parametrize("exc, lost", [(ConnectionRefusedError(111, "refused"), True), (EOFError(), True),
                                       (ValueError("a pipeline's own error"), False)])
def test_a_lost_connection_is_told_from_other_errors(exc, lost):
    try:
        try:
            raise exc
        except BaseException as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert dd.connection_lost(outer) is lost


# -- a JVM that dies while its session starts ----------------------------------------------------------

def test_a_driver_that_dies_while_starting_is_said_and_another_started_up_to_the_bound(monkeypatch, capsys):
    from eventtime.commands import spark as cli

    tries = []

    def get_session(master=None, warm=None):
        tries.append(master)
        if len(tries) < 3:
            raise ConnectionResetError(104, "Connection reset by peer")
        return "a live session"

    death = dd.DriverDeath(77, -signal.SIGKILL, None, [], {})
    monkeypatch.setattr(hs, "get_session", get_session)
    monkeypatch.setattr(dd, "launch_death", lambda after=None: death)
    monkeypatch.setattr(dd, "discard_dead_session", lambda: None)
    monkeypatch.setattr(cli, "own_sigint", lambda spark: spark)
    assert cli.start_session("local[2]") == "a live session" and len(tries) == 3
    err = capsys.readouterr().err
    assert err.count("the Spark driver died: its JVM (pid 77) was killed by SIGKILL while its session was starting") == 2

    tries.clear()
    monkeypatch.setattr(cli, "MAX_DEATHS", 2)  # the bound: two deaths, no third start
    assert cli.start_session("local[2]") is None and len(tries) == 2
    assert "died 2 times in a row while starting" in capsys.readouterr().err


def test_an_error_while_starting_that_is_no_death_is_not_hidden(monkeypatch):
    from eventtime.commands import spark as cli

    def get_session(master=None, warm=None):
        raise ValueError("a bad master URL")

    monkeypatch.setattr(hs, "get_session", get_session)
    monkeypatch.setattr(dd, "launch_death", lambda after=None: None)  # the JVM lives, or none was launched
    with pytest.raises(ValueError, match="a bad master URL"):
        cli.start_session("local[2]")


def test_a_live_session_is_kept_and_a_dead_one_replaced(monkeypatch, tmp_path):
    monkeypatch.setattr(hs, "fresh_session", lambda master=None, conf=None: "fresh")
    alive = _dead_spark(monkeypatch, None, tmp_path, pid=1)
    assert hs.live_session(alive) is alive  # control
    assert hs.live_session(_dead_spark(monkeypatch, -signal.SIGKILL, tmp_path, pid=2)) == "fresh"


def test_the_writer_writes_what_build_document_writes(tmp_path):
    from eventtime.resultsfile import build_document, result_record

    results = [_result("tumbling/append-late-row-dropped.scenario.yaml"),
               _result("tumbling/window-bounds.scenario.yaml", PASSED),
               _result("tumbling/append-late-row-dropped.scenario.yaml", PASSED)]
    results[2].implementation = "a.first:fn"  # sorts before the others of its scenario
    writer = ResultsWriter(tmp_path / "w.json", tool="run", command="c", started_at="2026-01-01T00:00:00Z")
    for r in results:
        writer.add(r)
    writer.finish()
    whole = write_results(tmp_path / "b.json", build_document(
        [result_record(r) for r in results], tool="run", command="c", started_at="2026-01-01T00:00:00Z"))
    spliced, built = json.loads((tmp_path / "w.json").read_text()), json.loads(whole.read_text())
    for doc in (spliced, built):
        doc["run"].pop("finished_at"), doc["run"].pop("seconds")
    assert spliced == built
    assert [r["implementation"] for r in spliced["results"]][:2] == ["a.first:fn", "pkg.mod:fn"]
    assert (tmp_path / "w.json").read_text().count("\n") == whole.read_text().count("\n")  # indented alike


def test_a_jvm_killed_before_it_sent_its_port_is_a_death_and_other_launch_errors_are_not(monkeypatch):
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_gateway", None)
    exited = RuntimeError("[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port number.")
    death = dd.launch_death(after=exited)
    assert death is not None and death.message().startswith("the Spark driver died: its JVM ended")
    assert dd.launch_death(after=RuntimeError("JAVA_HOME is not set")) is None  # control


# -- faults of the run's surroundings (eventtime.faults) ---------------------------------------------
# Error chains captured from real runs of tests/spark/test_faults.py's injections on Spark 3.4.4 and
# 4.3.0 (machine paths replaced by {checkpoint} and {tmp}; query plans cut).
FAULT_CHAINS = json.loads((Path(__file__).parent / "data" / "fault-chains.json").read_text())
CAUSE_OF = {"checkpoint4": CHECKPOINT_UNWRITABLE, "checkpoint3": CHECKPOINT_UNWRITABLE, "fill4": NO_SPACE,
            "inodes4": NO_SPACE, "callback4": CALLBACK_SERVER_FAILED}
CHECKPOINT, TMP = "/scratch/tmp/eventtime-abc/checkpoint", "/scratch/tmp"


def _placed(chain, checkpoint=CHECKPOINT, tmp=TMP):
    return [(cls, err, msg.replace("{checkpoint}", checkpoint).replace("{tmp}", tmp)) for cls, err, msg in chain]


@pytest.mark.parametrize("case", FAULT_CHAINS, ids=[f"{c['spark']}-{c['injected']}" for c in FAULT_CHAINS])
def test_a_captured_fault_is_told_by_its_cause_in_words_a_person_can_act_on(case):
    fault = classify_failure(_placed(case["chain"]), checkpoint=CHECKPOINT, tempdir=TMP,
                             device_full=case["device_full"], callback_stopped=case["callback_stopped"])
    assert fault is not None and fault.cause == CAUSE_OF[case["injected"]]
    first = fault.reason.splitlines()[0]
    assert first == fault.reason  # one line
    if fault.cause == CHECKPOINT_UNWRITABLE:
        assert first.startswith(f"the checkpoint directory {CHECKPOINT} could not be written: ")
        assert f"{CHECKPOINT}/commits" in first  # Spark's words: what exactly could not be written
    elif fault.cause == NO_SPACE:
        assert first.startswith(f"no space left in {TMP} (it holds the query's checkpoint {CHECKPOINT}")
        # Spark's innermost words: "No space left on device", or Hadoop's "Mkdirs failed" on a full device
        assert ("No space left on device" in first or "Mkdirs failed" in first) and "STREAM_FAILED" not in first
    else:
        assert first.startswith("the Python callback server stopped: ")


def test_the_same_chain_elsewhere_is_the_pipelines_own_error():
    # a checkpoint fault names the checkpoint: the same words about another path are not ours
    chain = [c for c in FAULT_CHAINS if c["injected"] == "checkpoint4"][0]["chain"]
    assert classify_failure(_placed(chain, checkpoint="/data/out/ckpt"), checkpoint=CHECKPOINT,
                            tempdir=TMP) is None
    # a pipeline's own errors (the Python worker's, a cast) and a foreachBatch function that raises
    for chain in ([("org.apache.spark.sql.streaming.StreamingQueryException", "STREAM_FAILED", "[STREAM_FAILED] ..."),
                   ("org.apache.spark.api.python.PythonException", "PYTHON_EXCEPTION",
                    "[PYTHON_EXCEPTION] An exception was thrown from the Python worker.\nRuntimeError: boom")],
                  [("org.apache.spark.SparkNumberFormatException", "CAST_INVALID_INPUT",
                    "[CAST_INVALID_INPUT] The value 'x' of the type \"STRING\" cannot be cast to \"INT\"")],
                  [("py4j.Py4JException", None, "An exception was raised by the Python Proxy. Return Message: "
                                               "Traceback ...\nValueError: from foreachBatch")]):
        assert classify_failure(chain, checkpoint=CHECKPOINT, tempdir=TMP) is None
    # py4j in the chain is the callback server's only with its network words, or once it is known stopped
    proxy = [("py4j.Py4JException", None, "An exception was raised by the Python Proxy.")]
    assert classify_failure(proxy, checkpoint=CHECKPOINT, callback_stopped=True).cause == CALLBACK_SERVER_FAILED


def test_hadoop_saying_only_mkdirs_failed_is_no_space_only_when_the_device_is_seen_full():
    # 3.4.4 out of inodes: Hadoop's mkdirs returns false and the errno is lost
    case = [c for c in FAULT_CHAINS if c["injected"] == "inodes4" and c["spark"] == "3.4.4"][0]
    assert "No space left" not in json.dumps(case["chain"])
    for full, cause in ((True, NO_SPACE), (False, CHECKPOINT_UNWRITABLE)):
        fault = classify_failure(_placed(case["chain"]), checkpoint=CHECKPOINT, tempdir=TMP, device_full=full)
        assert fault is not None and fault.cause == cause


def test_a_checkpoint_outside_the_temporary_directory_is_named_by_its_own_directory():
    chain = [c for c in FAULT_CHAINS if c["injected"] == "fill4"][0]["chain"]
    fault = classify_failure(_placed(chain, checkpoint="/data/ckpt/q1"), checkpoint="/data/ckpt/q1", tempdir=TMP)
    assert fault is not None and fault.reason.startswith("no space left in /data/ckpt (it holds")


@pytest.mark.parametrize("code, cause", [(errno.ENOSPC, NO_SPACE), (errno.ENOTDIR, CHECKPOINT_UNWRITABLE),
                                         (errno.EROFS, CHECKPOINT_UNWRITABLE), (errno.EIO, None)])
def test_the_harness_own_file_errors_name_the_temporary_directory(code, cause):
    fault = classify_os_error(OSError(code, os.strerror(code)), directory=TMP)
    assert (fault.cause if fault else None) == cause
    if fault is not None:
        assert TMP in fault.reason and os.strerror(code) in fault.reason


def _lost_connection_record() -> logging.LogRecord:
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        # py4j's own words, on the root logger (java_gateway.GatewayClient.send_command)
        return logging.getLogger().makeRecord("root", logging.ERROR, __file__, 1, "Exception while sending command.",
                                              (), sys.exc_info())


def _no_driver_dead(monkeypatch, death_wait):
    """The death filter's view of a process whose drivers all live and none was discarded; a lost
    connection waits `death_wait` seconds for a death to be seen."""
    monkeypatch.setattr(dd, "_DEATH_WAIT", death_wait)
    monkeypatch.setattr(dd, "_DRIVERS", {})
    monkeypatch.setattr(dd, "_launch_died", lambda: False)
    monkeypatch.setattr(dd, "_DISCARDED_GATEWAYS", [])


def test_a_discarded_dead_jvms_late_connection_errors_are_not_logged_again(monkeypatch):
    # a JavaObject of the dead gateway finalized while a fresh session runs: py4j logs the broken
    # connection with a traceback, long after the death was said
    _no_driver_dead(monkeypatch, 0.0)
    record = _lost_connection_record()
    assert dd._FILTER.filter(record) is True  # control: no JVM has died, the record is shown
    dd._DISCARDED_GATEWAYS.append(1)
    assert dd._FILTER.filter(record) is False
    other = logging.getLogger().makeRecord("root", logging.ERROR, __file__, 1, "a pipeline's own error", (), None)
    assert dd._FILTER.filter(other) is True  # only lost connections are dropped


def test_a_lost_connection_seen_while_the_run_replaces_the_dead_driver_is_not_logged(monkeypatch):
    # a py4j thread logs the broken connection and its filter waits for the JVM's exit; meanwhile
    # the run sees the death, discards that driver and starts a live one: no driver left is dead,
    # yet the record is the same death said again (seen in a clean-clone CI run on 3.4.4)
    _no_driver_dead(monkeypatch, 5.0)
    record = _lost_connection_record()
    discard = threading.Timer(0.2, lambda: dd._DISCARDED_GATEWAYS.append(1))
    discard.start()
    try:
        assert dd._FILTER.filter(record) is False
    finally:
        discard.cancel()
    _no_driver_dead(monkeypatch, 0.3)
    assert dd._FILTER.filter(record) is True  # control: nothing discarded during the wait, the record is shown


def test_a_python_worker_spark_started_late_is_the_machines_load_never_a_verdict():
    # the consumer's suite over Spark Connect at a load average above 20 (CI): the chain a step's error left,
    # as the Connect client raises it (a SparkException with the server's words), and the driver's own word
    for chain in ([("pyspark.errors.exceptions.connect.SparkException", None,
                    "Python worker failed to connect back.")],
                  [("org.apache.spark.sql.streaming.StreamingQueryException", "STREAM_FAILED", "[STREAM_FAILED] ..."),
                   ("org.apache.spark.SparkException", None, "Python worker failed to connect back."),
                   ("java.net.SocketTimeoutException", None,
                    "Timed out while waiting for the Python worker to connect back")]):
        fault = classify_failure(chain, checkpoint=CHECKPOINT, tempdir=TMP, load=(21.5, 2))
        assert fault is not None and fault.cause == PYTHON_WORKER_LATE
        assert "constant 10 s" in fault.reason and "load average 21.5 on 2 cores" in fault.reason
        assert "not a verdict on the pipeline" in fault.reason
    # without a known load (over Connect the load is the server's) the reason names none
    assert "load average" not in classify_failure(chain, checkpoint=None).reason
    # control: a Python worker's own exception (the pipeline's UDF raising) is no fault
    udf = [("org.apache.spark.api.python.PythonException", "PYTHON_EXCEPTION",
            "[PYTHON_EXCEPTION] An exception was thrown from the Python worker.\nValueError: worker failed")]
    assert classify_failure(udf, checkpoint=CHECKPOINT, tempdir=TMP, load=(21.5, 2)) is None
