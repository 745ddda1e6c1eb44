"""Whether a process runs, by its pid, for processes this one did not start (a JVM a daemon launched, the
JVM that writes a class-data archive, a warm Spark's daemon)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive"]


def alive(pid: int) -> bool:
    """Whether `pid` runs. A zombie does not: it has ended and waits for its parent to collect it, and
    when its parent was killed with it, in a container whose first process collects no one, it waits
    for good (`kill(pid, 0)` still succeeds on it). Another user's process counts as running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): what kill said
    return state != "Z"
