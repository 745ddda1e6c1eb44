"""The warm Spark's rules without a JVM: when a run asks for one (`projectconfig.warm_wanted`), what a
daemon is keyed by, where its secret lives, and how a daemon that died or hangs is found and replaced
(`harness.warm`; the daemon itself and the runs through it: tests/spark/test_warm.py)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from eventtime.harness import warm
from eventtime.projectconfig import SettingsError, warm_wanted


def test_a_note_is_kept_for_the_faces_and_said_on_stderr_unless_a_face_shows_them_itself(capsys):
    notes = warm.Notes()
    notes.say("ran on the warm Spark (pid 1)")
    notes.on_stderr = False  # pytest: its summary shows them
    notes.say("warm Spark not used, this run started its own: no daemon")
    assert list(notes) == ["ran on the warm Spark (pid 1)", "warm Spark not used, this run started its own: no daemon"]
    assert capsys.readouterr().err == "eventtime: ran on the warm Spark (pid 1)\n"


# -- when ------------------------------------------------------------------------------------------------
def test_off_by_default_and_the_command_line_wins():
    assert warm_wanted(None, None, "ini", {}) is False
    assert warm_wanted(True, "false", "ini", {"EVENTTIME_WARM": "0"}) is True
    assert warm_wanted(False, "true", "ini", {"EVENTTIME_WARM": "1"}) is False


def test_the_environment_over_the_ini_key():
    assert warm_wanted(None, "true", "ini", {}) is True
    assert warm_wanted(None, "true", "ini", {"EVENTTIME_WARM": "0"}) is False
    assert warm_wanted(None, None, "ini", {"EVENTTIME_WARM": "yes"}) is True


def test_off_in_ci_unless_the_command_line_asks():
    assert warm_wanted(None, "true", "ini", {"CI": "true", "EVENTTIME_WARM": "1"}) is False
    assert warm_wanted(True, None, "ini", {"CI": "true"}) is True


def test_a_value_that_is_not_yes_or_no_names_where_it_came_from():
    with pytest.raises(SettingsError, match=r"pyproject.toml: eventtime_warm: 'sometimes'"):
        warm_wanted(None, "sometimes", "pyproject.toml: eventtime_warm", {})
    with pytest.raises(SettingsError, match="EVENTTIME_WARM"):
        warm_wanted(None, None, "ini", {"EVENTTIME_WARM": "maybe"})


# -- what a daemon is for ----------------------------------------------------------------------------------
SETTINGS = {"spark.sql.shuffle.partitions": "1", "spark.executorEnv.PYTHONPATH": "/a",
            "spark.sql.warehouse.dir": "/w"}


def test_one_daemon_per_folder_settings_and_environment():
    key = warm.daemon_key("local[2]", SETTINGS, {}, cwd="/p")
    assert key == warm.daemon_key("local[2]", SETTINGS, {}, cwd="/p")
    assert key != warm.daemon_key("local[2]", SETTINGS, {}, cwd="/q")
    assert key != warm.daemon_key("local[1]", SETTINGS, {}, cwd="/p")
    assert key != warm.daemon_key("local[2]", {**SETTINGS, "spark.sql.shuffle.partitions": "2"}, {}, cwd="/p")
    assert key != warm.daemon_key("local[2]", SETTINGS, {"JAVA_HOME": "/jdk"}, cwd="/p")
    # per run, not per daemon: each run's workers get its own import path; the switch itself is no setting
    assert key == warm.daemon_key("local[2]", {**SETTINGS, "spark.executorEnv.PYTHONPATH": "/b"}, {}, cwd="/p")
    assert key == warm.daemon_key("local[2]", SETTINGS, {"EVENTTIME_WARM": "1", "HOME": "/h"}, cwd="/p")
    # what PySpark sets in the process once it has a context: the same run's next session finds the same daemon
    assert key == warm.daemon_key("local[2]", SETTINGS, {"SPARK_BUFFER_SIZE": "65536",
                                                         "SPARK_AUTH_SOCKET_TIMEOUT": "15"}, cwd="/p")


def test_a_cluster_master_runs_cold():
    with pytest.raises(warm.WarmUnavailable, match="local masters only"):
        warm.attach("spark://host:7077", {}, SETTINGS)


# -- its secret ---------------------------------------------------------------------------------------------
def test_the_state_folder_is_the_users_only(tmp_path):
    folder = tmp_path / "warm"
    folder.mkdir(mode=0o755)
    warm._private_folder(folder)
    assert os.stat(folder).st_mode & 0o777 == 0o700


def test_the_state_file_is_readable_by_the_user_only(tmp_path):
    from eventtime.harness.warmd import _write_state

    path = tmp_path / "k.json"
    _write_state(path, {"pid": 1, "secret": "s"})
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["secret"] == "s"


# -- a daemon that died or hangs ------------------------------------------------------------------------------
def _paths(tmp_path: Path) -> warm._Paths:
    return warm._Paths(warm._private_folder(tmp_path / "warm"), "k")


def _started(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []

    def start(paths, master, conf, idle):
        calls.append(paths.key)
        return {"pid": 4242, "port": 1, "secret": "s"}

    monkeypatch.setattr(warm, "_start", start)
    return calls


def test_a_daemon_that_ended_is_replaced(tmp_path, monkeypatch):
    paths = _paths(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with socket.socket() as free:  # a port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    paths.state.write_text(json.dumps({"pid": dead.pid, "port": port, "secret": "s"}))
    calls = _started(monkeypatch)
    state, note = warm._daemon_for(paths, "local[2]", {}, 60)
    assert calls == ["k"] and state["pid"] == 4242
    assert note.startswith(f"the warm Spark (pid {dead.pid}) had ended; started a warm Spark (pid 4242")


def test_a_daemon_that_does_not_answer_is_ended_and_replaced(tmp_path, monkeypatch):
    paths = _paths(tmp_path)
    server = socket.create_server(("127.0.0.1", 0))  # accepts, never answers: a hung daemon
    held: list = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
    hung = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    paths.state.write_text(json.dumps({"pid": hung.pid, "port": server.getsockname()[1], "secret": "s"}))
    killed: list = []
    monkeypatch.setattr(warm, "_kill", lambda state: killed.append(state["pid"]))
    monkeypatch.setattr(warm, "PING_TIMEOUT_S", 0.5)
    calls = _started(monkeypatch)
    try:
        state, note = warm._daemon_for(paths, "local[2]", {}, 60)
    finally:
        hung.kill()
        server.close()
    assert killed == [hung.pid] and calls == ["k"]
    assert f"the warm Spark (pid {hung.pid}) did not answer within 0 s" in note


def _answering(secret: str) -> socket.socket:
    """A daemon's socket that answers one ping carrying `secret` (anything else is refused)."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        conn, _ = server.accept()
        with conn:
            request = json.loads(conn.makefile().readline())
            ok = request["secret"] == secret and request["op"] == "ping"
            conn.sendall((json.dumps({"ok": True} if ok else {"refused": "wrong secret"}) + "\n").encode())

    threading.Thread(target=answer, daemon=True).start()
    return server


@pytest.mark.parametrize("secret", ["s", "not-the-one"])
def test_a_daemon_that_answers_is_used_one_that_refuses_is_replaced(tmp_path, monkeypatch, secret):
    paths = _paths(tmp_path)
    server = _answering(secret)
    port = server.getsockname()[1]
    paths.state.write_text(json.dumps({"pid": os.getpid(), "port": port, "secret": "s"}))
    monkeypatch.setattr(warm, "_kill", lambda state: None)
    calls = _started(monkeypatch)
    state, note = warm._daemon_for(paths, "local[2]", {}, 60)
    server.close()
    if secret == "s":
        assert calls == [] and note == "" and state["port"] == port
    else:  # the control: a daemon that does not take this user's secret is not used
        assert calls == ["k"] and "refused this run: wrong secret" in note


# -- `eventtime warm` -----------------------------------------------------------------------------------------
def test_status_with_no_daemon_says_so(tmp_path):
    from tests.lines import console_script

    env = {**os.environ, "EVENTTIME_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([*console_script(), "warm", "status"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "no warm Spark running" in done.stdout
