"""`eventtime run`, `certify` and `watch` (stopped with Ctrl-C) as a user runs them (the console script, a child process), on a local
Spark and over Spark Connect: each ends by itself with its verdicts, within a bounded wait. Over Connect,
the console script's fast exit once waited for ever on the Connect client's idle pool worker
(tests/fast/test_cli_exit.py shows that mechanism without Spark)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment
from tests.lines import WATCHED, console_script, stop_watching, watching

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


def test_watch_over_spark_connect_stops_on_ctrl_c_and_ends(connect_server, tmp_path):
    # on a local Spark: tests/spark/test_watch.py, the same console script
    (tmp_path / "one.scenario.yaml").write_text(WATCHED.replace("COUNT", "2"))
    with watching(["one.scenario.yaml", "--pipeline", "eventtime.pipelines.reference:tumbling_count", "--remote",
                   connect_server.url, "--timeout", "180"], cwd=tmp_path, env=child_environment(),
                  wait=ENDS_WITHIN) as (proc, lines):
        assert lines.until("watched", "the first run's verdict").startswith("PASS")
        lines.until("watching (Ctrl-C stops)", "the first round's totals")
        assert stop_watching(proc, lines) == 0
