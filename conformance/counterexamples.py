"""Counterexample files not reviewed yet: written by `check-properties`, left out of a test run until moved.

A counterexample `check-properties` writes is a scenario file whose expect steps hold what the property demands:
it fails until the job is fixed, and it is reviewed like a snapshot before it becomes a test. So that a user who
runs `pytest` (or `eventtime run` with no PATH) after a check does not get red tests from files nobody has read,
the folder a check writes to holds a marker file, `.eventtime-counterexamples`, listing the files it wrote there
(one name a line). The rule, the same for every face (the pytest plugin, `eventtime run`):

- a scenario file listed in its own folder's marker is left out when a run walks a folder, and the run says how
  many it left out, where, and how to make one a test (`left_out_note`);
- named on the command line (the file itself) it runs as any scenario;
- moved to another folder (under the scenario folder), renamed, or with its line deleted from the marker, it is
  a scenario like any other.

Standard library only: the pytest plugin reads it while it collects.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["MARKER", "record", "unreviewed", "named", "left_out_note"]

MARKER = ".eventtime-counterexamples"

_HEADER = """\
# Written by `eventtime check-properties`: the scenario files listed below are counterexamples it shrank and
# wrote here, not reviewed yet. pytest and `eventtime run` leave them out when they walk this folder, and say so;
# a file named on the command line runs. Review one as a snapshot, move it under your scenario folder (or delete
# its line here) and it is a regression test. One file name a line.
"""


def record(folder: Path, name: str) -> None:
    """Note in `folder`'s marker that `check-properties` wrote the counterexample `name` there."""
    marker = folder / MARKER
    names = _listed(marker)
    if name not in names:
        text = marker.read_text(encoding="utf-8") if marker.is_file() else _HEADER
        marker.write_text(text + ("" if text.endswith("\n") else "\n") + name + "\n", encoding="utf-8")


def _listed(marker: Path) -> set[str]:
    try:
        text = marker.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    return {line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")}


def unreviewed(path: Path) -> bool:
    """Whether `path` is a counterexample `check-properties` wrote and nobody has moved yet."""
    return path.name in _listed(path.parent / MARKER)


def named(path: Path, args: Iterable[str | Path], start: Path) -> bool:
    """Whether `path` is one of the command line's `args` (relative to `start`; a pytest node id's `::` part
    ignored): such a file runs, as the user asked for it. A folder named runs what it holds but these."""
    target = path.resolve()
    return any((start / str(arg).split("::")[0]).resolve() == target for arg in args)


def left_out_note(files: Sequence[Path], shown: Iterable[str]) -> str:
    """What a run says of the counterexamples it left out (`shown`: their folders, as the run names files)."""
    folders = ", ".join(dict.fromkeys(shown))
    return (f"{len(files)} counterexample file(s) written by `eventtime check-properties` left out, not reviewed yet, "
            f"in {folders} (listed in its {MARKER}): to make one a test, review it and move it under your scenario "
            "folder; to run one as it is, name it on the command line")
