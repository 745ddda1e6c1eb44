"""What tests of a command as a user runs it share: the `eventtime` console script of this environment,
and a child's output lines read by a thread, each wait for one bounded and saying what it waited for."""
from __future__ import annotations

import contextlib
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

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
        self.proc = proc
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)  # the output ended: the child closed it, or ended

    def until(self, text: str, what: str) -> str:
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            try:
                line = self.queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self.queue.put(None)  # a later wait meets the end at once too
                status = self.proc.wait(timeout=60)
                raise AssertionError(f"no line with {text!r} ({what}): the output ended, the process exited "
                                     f"with {status}; the output:\n" + "\n".join(self.seen[-60:]))
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} ({what}) within {self.wait:.0f} s; the output:\n"
                             + "\n".join(self.seen[-60:]))


# A scenario for `eventtime watch` (contract tumbling_count): COUNT is the count it expects.
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
      rows: [[a, "00:00:00", "00:00:10", COUNT]]
"""


@contextlib.contextmanager
def watching(args: Sequence[str], *, cwd: Path, env: dict, wait: float) -> Iterator[tuple[subprocess.Popen, Lines]]:
    """`eventtime watch ARGS` as the console script, its output lines; killed at the end if still running.
    The child inherits this process's Ctrl-C disposition (ignored, in a background job of a script):
    the command takes Ctrl-C back either way (`own_sigint`)."""
    proc = subprocess.Popen([*console_script(), "watch", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        yield proc, Lines(proc, wait=wait)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)


def stop_watching(proc: subprocess.Popen, lines: Lines) -> int:
    """Ctrl-C, as a user stops it: its exit status once it said it stopped (bounded waits)."""
    import signal

    proc.send_signal(signal.SIGINT)
    lines.until("eventtime: stopped watching", "the stop on Ctrl-C")
    return proc.wait(timeout=120)
