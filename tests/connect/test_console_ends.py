"""`eventtime run` and `certify` as a user runs them (the console script, a child process), on a local
Spark and over Spark Connect: each ends by itself with its verdicts, within a bounded wait. Over Connect,
the console script's fast exit once waited for ever on the Connect client's idle pool worker
(tests/fast/test_cli_exit.py shows that mechanism without Spark)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment

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


def _console_script() -> list[str]:
    """The `eventtime` console script of this environment (its fast exit is what is tested here)."""
    script = Path(sys.executable).with_name("eventtime")
    if script.exists():
        return [str(script)]
    found = shutil.which("eventtime")
    if found is None:
        pytest.skip("no `eventtime` console script installed in this environment")
    return [found]


def _ends(words: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(_console_script() + words + ["--timeout", "180"], cwd=ROOT, capture_output=True,
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
