"""Exactly-once across a driver crash: the checkpoint alone carries the query into a new process."""
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # CI runs it on the newest line (tests/README.md)

DRIVER = Path(__file__).with_name("crash_driver.py")


def _drive(phase, checkpoint, out, env):
    proc = subprocess.run([sys.executable, str(DRIVER), phase, str(checkpoint), str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    return proc


def _gone(pid, within):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_a_batch_in_flight_when_the_driver_dies_is_run_once_by_the_next_driver(tmp_path):
    env = child_environment(EVENTTIME_TEST_BLOCK_FILE=str(tmp_path / "block"),
                            PYTHONPATH=os.pathsep.join([str(DRIVER.parents[2]), os.environ.get("PYTHONPATH", "")]))
    whole = _drive("whole", tmp_path / "whole-checkpoint", tmp_path / "whole.json", env)
    assert whole.returncode == 0, whole.stderr[-3000:]

    first = _drive("first", tmp_path / "checkpoint", tmp_path / "first.json", env)
    assert first.returncode == -9, f"the first driver should die by SIGKILL: {first.returncode}\n{first.stderr[-3000:]}"
    crashed = json.loads((tmp_path / "first.json").read_text())
    # the JVM dies with its driver (py4j's gateway exits when its parent's pipe closes); a JVM
    # left behind could still write to the checkpoint, so the next driver must not start before
    assert _gone(crashed["jvm_pid"], 60), f"the crashed driver's JVM {crashed['jvm_pid']} is still alive"
    in_flight = crashed["in_flight"]
    checkpoint = tmp_path / "checkpoint"
    assert (checkpoint / "offsets" / str(in_flight)).exists()
    assert not (checkpoint / "commits" / str(in_flight)).exists()  # planned, never committed

    (tmp_path / "block").unlink()
    second = _drive("second", checkpoint, tmp_path / "second.json", env)
    assert second.returncode == 0, second.stderr[-3000:]
    resumed = json.loads((tmp_path / "second.json").read_text())
    expected = json.loads((tmp_path / "whole.json").read_text())

    assert str(in_flight) not in crashed["batches"] and str(in_flight) in resumed["batches"]
    assert not set(crashed["batches"]) & set(resumed["batches"])  # no committed batch ran twice
    both = {**crashed["batches"], **resumed["batches"]}
    assert both == expected["batches"]  # batch by batch, the same rows as without the crash
    rows = Counter(tuple(r) for b in both.values() for r in b)
    assert rows == Counter(tuple(r) for b in expected["batches"].values() for r in b)
    def window(key, start, end, count):
        return (key, 1_704_067_200_000_000 + start * 1_000_000, 1_704_067_200_000_000 + end * 1_000_000, count)

    # the semantics: 00:00:04 arrives after the watermark passed 00:00:10 and is dropped; every
    # window that the final watermark (00:00:36) closed is emitted once
    assert rows == Counter([window("a", 0, 10, 2), window("a", 10, 20, 1), window("b", 10, 20, 1),
                            window("c", 10, 20, 1), window("a", 20, 30, 1)])
    assert resumed["watermark_ms"] == expected["watermark_ms"]
    assert resumed["state_rows"] == expected["state_rows"]
