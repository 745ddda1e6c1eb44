"""Spark Connect pieces that need no server: URL checks, what is not applicable, the staged source's offsets.

The staged source runs on a Connect server's driver; here its reader runs in this process against a
staging folder written with pyarrow in the layout the client's Connect writes produce, which is
enough to pin down its offsets, its partitions and the per-trigger pin that keeps several sources
in one batch.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import subprocess
import sys
from pathlib import Path

import pytest

from eventtime.harness.connect import check_remote
from eventtime.loader import load_scenario
from eventtime.runner import connect_applicability

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "scenarios"


@pytest.mark.parametrize("url", ["sc://127.0.0.1:15002", "sc://localhost", "sc://h.example:443/;use_ssl=true",
                                 "sc://[::1]:15002"])
def test_connect_urls_accepted(url):
    assert check_remote(f" {url} ") == url


@pytest.mark.parametrize("url", ["", "http://host:15002", "sc://", "sc://host:0", "sc://host:70000", "host:15002"])
def test_bad_connect_urls_name_the_form(url):
    with pytest.raises(ValueError, match=r"not a Spark Connect URL; accepted: sc://HOST:PORT"):
        check_remote(url)


@pytest.mark.parametrize("path, why", [
    ("clock/processing-time-trigger.scenario.yaml", "advances processing time"),
    ("clock/current-timestamp-follows-clock.scenario.yaml", "advances processing time"),
    ("seeds/periodic-one-batch-per-trigger.scenario.yaml", "processing-time"),
])
def test_clock_scenarios_are_not_applicable_over_connect(path, why):
    reason = connect_applicability(load_scenario(SUITE / path))
    assert reason is not None and "needs the manual processing-time clock" in reason and why in reason


@pytest.mark.parametrize("path", ["union/min-policy-different-delays.scenario.yaml",
                                  "restart/rows-added-while-stopped.scenario.yaml",
                                  "tumbling/append-late-row-dropped.scenario.yaml"])
def test_scenarios_without_the_clock_apply_over_connect(path):
    assert connect_applicability(load_scenario(SUITE / path)) is None


def test_a_feature_the_connect_client_lacks_is_named_as_connect_s():
    # PySpark 4.0's Connect client has no transformWithStateInPandas where its classic API has one:
    # the reason must not read as if Spark 4.0 lacked it; a classic session's reason stays as it was.
    from eventtime.applicability import OVER_CONNECT, applicability

    scenario = load_scenario(SUITE / "stateful/hold-timer-fires-inclusive.scenario.yaml")
    classic = applicability(scenario, "4.0.5", frozenset())
    connect = applicability(scenario, "4.0.5", frozenset(), connect=True)
    assert classic == "needs Spark feature(s) transform_with_state, not available in Spark 4.0.5"
    assert connect == f"{classic} {OVER_CONNECT}"
    assert applicability(scenario, "4.0.5", frozenset({"transform_with_state"}), connect=True) is None


def _cli(*args, env=None):
    import os

    return subprocess.run([sys.executable, "-m", "eventtime.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_cli_refuses_a_bad_remote_and_remote_with_master():
    bad = _cli("run", "scenarios/union", "--remote", "http://x:1")
    assert bad.returncode == 2 and "not a Spark Connect URL" in bad.stderr
    both = _cli("run", "scenarios/union", "--remote", "sc://127.0.0.1:1", "--master", "local[1]")
    assert both.returncode == 2 and "either --master" in both.stderr
    env = _cli("run", "scenarios/union", env={"SPARK_REMOTE": "nonsense"})
    assert env.returncode == 2 and "SPARK_REMOTE" in env.stderr


def test_remote_of_honours_spark_remote_unless_a_master_is_given(monkeypatch):
    from eventtime.commands.spark import remote_of as _remote_of

    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002")
    assert _remote_of(argparse.Namespace(remote=None, master=None)) == "sc://127.0.0.1:15002"
    assert _remote_of(argparse.Namespace(remote=None, master="local[2]")) is None
    assert _remote_of(argparse.Namespace(remote="sc://h:1", master=None)) == "sc://h:1"
    monkeypatch.delenv("SPARK_REMOTE")
    assert _remote_of(argparse.Namespace(remote=None, master=None)) is None


def test_connect_server_command_expands_the_url():
    from eventtime.commands.around import expand
    from eventtime.commands.connect_server import PLACEHOLDER

    assert expand(["--", "eventtime", "run", "--remote", "{remote}"], PLACEHOLDER, "sc://h:1") == [
        "eventtime", "run", "--remote", "sc://h:1"]


# -- child processes of a process that made a Connect session --------------------------------------------
CONNECT_MODE = {"SPARK_CONNECT_MODE_ENABLED": "1", "SPARK_LOCAL_REMOTE": "1"}
# exits 11 when PySpark in the child takes itself for a Connect client, 10 when not
IS_REMOTE = "import sys; from pyspark.sql.utils import is_remote; sys.exit(10 + is_remote())"


def test_children_do_not_inherit_pysparks_connect_mode(monkeypatch):
    """PySpark sets SPARK_CONNECT_MODE_ENABLED (SPARK_LOCAL_REMOTE too, for an in-process server) in
    os.environ once this process makes a Connect session and never removes them: a child inheriting
    them is a Connect client (a classic session there fails with CONNECT_URL_NOT_SET; `pytest
    tests/connect tests/cluster` failed so). The commands `eventtime cluster` / `connect-server` run,
    the cluster's and the Connect server's JVMs get an environment without them."""
    from eventtime.commands.around import run_command
    from eventtime.harness.cluster import StandaloneCluster, child_environment
    from eventtime.harness.connect_server import ConnectServer

    for key, value in {**CONNECT_MODE, "SPARK_REMOTE": "sc://users-server:15002"}.items():
        monkeypatch.setenv(key, value)
    assert subprocess.run([sys.executable, "-c", IS_REMOTE], timeout=120).returncode == 11  # the control
    assert run_command([sys.executable, "-c", IS_REMOTE], {"EVENTTIME_MASTER": "spark://127.0.0.1:7077"}) == 10
    assert subprocess.run([sys.executable, "-c", IS_REMOTE], env=child_environment(), timeout=120).returncode == 10
    for server_env in (StandaloneCluster(workers=1)._environment(), ConnectServer().environment()):
        assert not set(server_env) & {*CONNECT_MODE, "SPARK_REMOTE"}  # a Spark server is no Connect client
    child = child_environment(EXTRA="x")
    assert child["SPARK_REMOTE"] == "sc://users-server:15002" and child["EXTRA"] == "x"  # the user's choice stays
    assert not set(child) & set(CONNECT_MODE)


# -- the staged source's reader, in this process ------------------------------------------------------------
def _ts(seconds: int) -> _dt.datetime:
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=seconds)


def _release(root: Path, gen: int, adds: list[tuple[str, int, list[tuple]]]) -> None:
    import pickle

    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = [{"source": source, "seq": seq, "rows": pickle.dumps(rows)} for source, seq, rows in adds]
    folder = root / "stage" / f"gen={gen}"
    folder.mkdir(parents=True)
    schema = pa.schema([("source", pa.string()), ("seq", pa.int32()), ("rows", pa.binary())])
    pq.write_table(pa.Table.from_pylist(recs, schema=schema), folder / "part-0.parquet")
    (folder / "_SUCCESS").write_text("")


def _reader(root: Path, source: str, token: str):
    from eventtime.harness.connect_source import StagedStreamReader

    return StagedStreamReader({"root": f"file:{root}", "source": source, "token": token})


def test_offsets_move_only_with_complete_releases(tmp_path):
    reader = _reader(tmp_path, "a", "t1")
    assert reader.latestOffset() is None  # nothing released: no offset, as a MemoryStream without data
    _release(tmp_path, 1, [("a", 1, [("x", _ts(3))]), ("b", 1, [("y", _ts(1))])])
    (tmp_path / "stage" / "gen=2").mkdir()  # a generation still being written: no _SUCCESS yet
    assert reader.latestOffset() == {"adds": 1, "source": "a"}
    _release(tmp_path, 3, [("a", 2, []), ("a", 3, [("z", _ts(5)), ("w", _ts(6))])])
    assert reader.latestOffset() == {"adds": 3, "source": "a"}
    parts = reader.partitions({"adds": 1}, {"adds": 3})
    assert [list(reader.read(p)) for p in parts] == [[], [("z", _ts(5)), ("w", _ts(6))]]
    assert reader.partitions(None, {"adds": 1})[0].rows == [("x", _ts(3))]


def test_sources_of_one_trigger_see_the_same_release(tmp_path):
    """A release landing between two sources' offset calls of one trigger stays invisible to the
    second until the next trigger; a reader of another start (token) is not bound by the pin."""
    _release(tmp_path, 1, [("a", 1, [("x", _ts(1))]), ("b", 1, [("y", _ts(1))])])
    a, b = _reader(tmp_path, "a", "t2"), _reader(tmp_path, "b", "t2")
    assert a.latestOffset() == {"adds": 1, "source": "a"} and b.latestOffset() == {"adds": 1, "source": "b"}  # trigger 1
    assert a.latestOffset() == {"adds": 1, "source": "a"}  # trigger 2: a pins generation 1 ...
    _release(tmp_path, 2, [("a", 2, [("x", _ts(2))]), ("b", 2, [("y", _ts(2))])])  # ... the release lands ...
    assert b.latestOffset() == {"adds": 1, "source": "b"}  # ... and b still answers for the pinned generation
    assert a.latestOffset() == {"adds": 2, "source": "a"} and b.latestOffset() == {"adds": 2, "source": "b"}  # trigger 3: both
    control = _reader(tmp_path, "b", "other-start")
    assert control.latestOffset() == {"adds": 2, "source": "b"}  # the control: unpinned, it sees the newest release



def test_an_available_now_query_reads_to_the_release_it_started_with(tmp_path):
    """`prepareForTriggerAvailableNow` (a pipeline update's flows) fixes the target at the newest release
    when the query starts, shared by every source of that start; a later release is the next start's."""
    from eventtime.harness.compat import available_now_mixin
    from eventtime.harness.connect_source import data_source

    import uuid

    start, later = uuid.uuid4().hex, uuid.uuid4().hex  # pins live on this machine's disk: fresh starts
    _release(tmp_path, 1, [("a", 1, [("x", _ts(1))]), ("b", 1, [("y", _ts(1))])])
    mixin = available_now_mixin()
    source = data_source(mixin)
    made = source.stream_reader_class
    a, b = (made({"root": f"file:{tmp_path}", "source": s, "token": start}) for s in "ab")
    if mixin is not None:  # the engine asks a reader with the mixin for (start, limit) (admission control)
        assert a.latestOffset({"adds": 0, "source": "a"}, None) == {"adds": 1, "source": "a"}
    a.prepareForTriggerAvailableNow()
    _release(tmp_path, 2, [("a", 2, [("x", _ts(2))]), ("b", 2, [("y", _ts(2))])])
    b.prepareForTriggerAvailableNow()  # the same start: the pin a took, not the newer release
    for _ in range(3):  # the data batch's trigger and those after it: never past the target
        assert a.latestOffset() == {"adds": 1, "source": "a"} and b.latestOffset() == {"adds": 1, "source": "b"}
    control = _reader(tmp_path, "a", start)  # a processing-time reader of the same start is not held
    assert [control.latestOffset() for _ in range(2)][-1] == {"adds": 2, "source": "a"}
    nxt = _reader(tmp_path, "a", later)
    nxt.prepareForTriggerAvailableNow()
    assert nxt.latestOffset() == {"adds": 2, "source": "a"}
    if mixin is None:  # this pyspark has no mixin: the engine runs one batch per AvailableNow start
        assert made is data_source(None).stream_reader_class
    else:  # the engine takes the AvailableNow path only for a reader that is an instance of the mixin
        assert issubclass(made, mixin) and not issubclass(data_source(None).stream_reader_class, mixin)
    # only a query started for Trigger.AvailableNow (a pipeline's flow) gets it; others keep the plain reader
    from eventtime.harness.connect_source import StagedStreamReader

    options = {"root": f"file:{tmp_path}", "source": "a", "token": later, "schema": "x int"}
    assert type(source(options).streamReader(None)) is StagedStreamReader
    assert type(source({**options, "available_now": "true"}).streamReader(None)) is made


# -- a step waits until the query has read what was released -----------------------------------------------
def _stub_run(logs_per_call, reading=("a", "b"), released=None, timeout=60.0):
    """A ConnectStreamRun over no server: `processAllAvailable` counts its calls, the checkpoint's logs
    are read from `logs_per_call` (one per read: commits, offsets, adds per source by batch)."""
    from types import SimpleNamespace

    from eventtime.harness.connect import ConnectStreamRun

    run = ConnectStreamRun.__new__(ConnectStreamRun)
    calls = []
    run.name, run.timeout = "stub", timeout
    run._query = SimpleNamespace(processAllAvailable=lambda: calls.append(1))
    run.staging = SimpleNamespace(release=lambda: False, reading=set(reading),
                                  released=released if released is not None else {"a": 2, "b": 1})
    reads = iter(logs_per_call)
    run._read_logs = lambda: next(reads)
    run._observe_new = lambda logs: logs
    run._bounded = lambda fn, what, timeout=None: fn()  # in this thread: the stub never blocks
    return run, calls


def _logs(batch, adds):
    return {batch: {}}, {batch: {}}, {batch: adds}


def test_a_step_polls_again_until_the_newest_batch_read_every_released_add():
    """processAllAvailable() may return on a trigger that polled the sources just before the release:
    then the newest committed batch has not read the step's adds, and the harness asks again."""
    stale, done = _logs(0, {"a": 1, "b": 1}), _logs(1, {"a": 2, "b": 1})
    run, calls = _stub_run([stale, done])
    assert run._run_available("the step") == done and len(calls) == 2
    run, calls = _stub_run([done])  # the control: everything read at the first return, one call
    assert run._run_available("the step") == done and len(calls) == 1
    run, calls = _stub_run([({}, {}, {}), done])  # no batch committed yet
    assert run._run_available("the step") == done and len(calls) == 2


def test_sources_the_query_does_not_read_are_not_waited_for():
    run, _ = _stub_run([], reading=("a",), released={"a": 1, "other": 3})
    assert run._unread(_logs(0, {"a": 1})) == {}
    assert run._unread(_logs(0, {})) == {"a": 1}  # a source with no offset yet has read nothing


def test_a_query_that_never_reads_the_release_times_out_naming_the_source():
    from eventtime.harness.stream import HarnessTimeout

    stale = _logs(0, {"a": 1, "b": 1})
    run, calls = _stub_run(iter(lambda: stale, None), timeout=0.05)
    with pytest.raises(HarnessTimeout, match=r"to read the released adds \(a: 2\)"):
        run._run_available("the step")
