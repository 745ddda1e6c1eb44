"""`eventtime run`, `certify` and `watch` (stopped with Ctrl-C) as a user runs them (the console script, a child process), on a local
Spark and over Spark Connect: each ends by itself with its verdicts, within a bounded wait. Over Connect,
the console script's fast exit once waited for ever on the Connect client's idle pool worker
(tests/fast/test_cli_exit.py shows that mechanism without Spark)."""
from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment
from tests.lines import Lines, console_script

pytestmark = [pytest.mark.connect, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
ENDS_WITHIN = 420  # seconds: a cold JVM or server's first batches took 20-50 s on two shared cores
COMMANDS = {
    "run": ["run", "scenarios/tumbling/append-late-row-dropped.scenario.yaml",
            "--pipeline", "eventtime.pipelines.reference:tumbling_count"],
    "certify": ["certify", "--contract", "session_count_dynamic_gap",
                "--pipeline", "eventtime.pipelines.reference:session_count_dynamic_gap"],
}
SAYS = {"run": "1 passed, 0 failed", "certify": "CERTIFIED"}


def _ends(words: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(console_script() + words + ["--timeout", "180"], cwd=ROOT, capture_output=True,
                              text=True, timeout=ENDS_WITHIN, env=child_environment())
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"`eventtime {' '.join(words)}` did not end within {ENDS_WITHIN} s; its output:\n"
                             f"{exc.stdout}\n{exc.stderr}") from None


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_console_script_ends_by_itself_over_spark_connect(connect_server, command):
    done = _ends(COMMANDS[command] + ["--remote", connect_server.url])
    assert done.returncode == 0, done.stdout + done.stderr
    assert SAYS[command] in done.stdout
    assert "on Spark " in done.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_console_script_ends_by_itself_on_a_local_spark(command):
    done = _ends(COMMANDS[command] + ["--master", "local[2]"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert SAYS[command] in done.stdout


WATCHED = """\
scenario: watched
description: Two events of one key in a window, written once the watermark passes its end.
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:07"]]}
  - add: {events: [[b, "00:00:30"]]}
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 2]]
"""


def test_watch_over_spark_connect_stops_on_ctrl_c_and_ends(connect_server, tmp_path):
    # on a local Spark: tests/spark/test_watch.py, the same console script
    (tmp_path / "one.scenario.yaml").write_text(WATCHED)
    proc = subprocess.Popen([*console_script(), "watch", "one.scenario.yaml", "--pipeline",
                             "eventtime.pipelines.reference:tumbling_count", "--remote", connect_server.url,
                             "--timeout", "180"], cwd=tmp_path, env=child_environment(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = Lines(proc, wait=ENDS_WITHIN)
    try:
        assert lines.until("watched", "the first run's verdict").startswith("PASS")
        lines.until("watching (Ctrl-C stops)", "the first round's totals")
        proc.send_signal(signal.SIGINT)
        lines.until("eventtime: stopped watching", "the stop on Ctrl-C")
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
