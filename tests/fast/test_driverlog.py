"""The driver log: a reader sees what was written after its mark, without Java stack frames; the
launch redirects file descriptors 1 and 2 (what a child process inherits) and restores them."""
from __future__ import annotations

import os
import subprocess
import sys

from eventtime.harness import driverlog
from eventtime.harness.driverlog import DriverLog, jvm_output_to_log


def test_lines_after_a_mark_without_java_frames(tmp_path):
    path = tmp_path / "driver.log"
    path.write_text("started\nWARN something early\n")
    log = DriverLog(str(path))
    mark = log.mark()
    with open(path, "a") as fh:
        fh.write("26/11/23 ERROR Executor: Exception in task 0.0\n"
                 "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                 '  File "job.py", line 7, in region\n'
                 "ValueError: no region for device bad-1\n"
                 "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:572)\n"
                 "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
                 "\t... 12 more\n"
                 "Caused by: java.io.IOException: gone\n")
    said = log.since(mark)
    assert said[0].endswith("Exception in task 0.0") and "WARN something early" not in said
    assert '  File "job.py", line 7, in region' in said and "ValueError: no region for device bad-1" in said
    assert not any("Thread.java" in line or "more" in line for line in said)
    assert said[-1] == "Caused by: java.io.IOException: gone"
    assert log.since(mark, limit=2) == [f"... 3 earlier lines in {path}", "ValueError: no region for device bad-1",
                                       "Caused by: java.io.IOException: gone"]
    assert log.since(log.mark()) == []


def test_a_child_launched_inside_writes_to_the_log_and_the_descriptors_come_back(tmp_path, monkeypatch):
    path = tmp_path / "driver.log"
    monkeypatch.setenv(driverlog.ENV, str(path))
    before = os.fstat(2)
    with jvm_output_to_log() as log:
        assert log is not None and log.path == str(path) and not log.temporary
        subprocess.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"], check=True)
    assert os.fstat(2).st_ino == before.st_ino  # fd 2 is the caller's again
    assert log.since(0) == ["out", "err"]
    # control: told to leave the output alone, nothing is redirected and no log is kept
    monkeypatch.setenv(driverlog.ENV, "-")
    with jvm_output_to_log() as none:
        assert none is None


def test_the_default_log_is_removed_at_exit_unless_kept(tmp_path):
    code = ("import subprocess, sys\n"
            "from eventtime.harness.driverlog import jvm_output_to_log\n"
            "with jvm_output_to_log() as log:\n"
            "    subprocess.run([sys.executable, '-c', 'print(1)'])\n"
            "print(log.path)\n"
            "if sys.argv[1] == 'keep':\n"
            "    log.keep()\n")
    env = {k: v for k, v in os.environ.items() if k != driverlog.ENV}
    env["TMPDIR"] = str(tmp_path)
    for mode, kept in (("drop", False), ("keep", True)):
        done = subprocess.run([sys.executable, "-c", code, mode], env=env, capture_output=True, text=True, check=True)
        path = done.stdout.strip().splitlines()[-1]
        assert path.startswith(str(tmp_path)) and os.path.exists(path) is kept, (mode, done.stdout)
