"""What tests of a command as a user runs it share: the `eventtime` console script of this environment,
and a child's output lines read by a thread, each wait for one bounded and saying what it waited for."""
from __future__ import annotations

import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest


def console_script() -> list[str]:
    """The `eventtime` console script of this environment (its fast exit is part of what a user runs)."""
    script = Path(sys.executable).with_name("eventtime")
    if script.exists():
        return [str(script)]
    found = shutil.which("eventtime")
    if found is None:
        pytest.skip("no `eventtime` console script installed in this environment")
    return [found]


class Lines:
    """The child's output lines, read by a thread; `until` waits (bounded) for a line that matches."""

    def __init__(self, proc: subprocess.Popen, *, wait: float):
        self.wait = wait
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            self.queue.put(line.rstrip("\n"))

    def until(self, text: str, what: str) -> str:
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            try:
                line = self.queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} ({what}) within {self.wait:.0f} s; the output:\n"
                             + "\n".join(self.seen[-60:]))
