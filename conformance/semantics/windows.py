"""Event-time windows: which tumbling or sliding windows a timestamp falls in, window_time, session merging.

Spark guide, "Types of time windows" and "Window Operations on Event Time"; the SQL functions
`window`, `window_time` and `session_window`. All arithmetic is on epoch microseconds.

- A time window is half-open, [start, end): a row at exactly `end` belongs to the next window.
- Window starts are aligned to the epoch: `start = ts - (ts mod slide)`, with the mathematical
  (floor) modulo, so a pre-1970 row at 1969-12-31T23:59:58 lies in [23:59:50, 00:00:00).
- A sliding window of length W every S puts a row in every window [s, s + W) with s a multiple
  of S that contains it (W/S windows when S divides W). A tumbling window is the case S = W.
- `window_time(w)` is `w.end - 1 microsecond`: the latest time inside the window.
- A session starts as [ts, ts + gap) for each row; sessions of one key merge when the next one
  starts at or before the end of the current one (touching sessions merge, unlike tumbling
  windows), and the merged session ends at the latest end of its parts. A row whose gap is not
  positive (or null) is not part of any session.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

__all__ = ["Window", "time_windows", "window_time", "Session", "merge_sessions", "parse_gap"]


@dataclass(frozen=True, order=True)
class Window:
    """A window [start, end) in epoch microseconds."""

    start: int
    end: int


def time_windows(ts: int, length: int, slide: int | None = None) -> list[Window]:
    """The windows of `length` (every `slide`, default: tumbling) that contain `ts`, earliest first."""
    if length <= 0 or (slide is not None and slide <= 0):
        raise ValueError("window length and slide must be positive")
    slide = slide or length
    last_start = ts - ts % slide  # Python's % is the floor modulo Spark uses since 3.3
    out = []
    start = last_start
    while start > ts - length:
        out.append(Window(start, start + length))
        start -= slide
    return sorted(out)


def window_time(window: Window) -> int:
    """`window_time(w)`: the window's end minus one microsecond."""
    return window.end - 1


@dataclass(frozen=True)
class Session:
    """A session window [start, end) of one key, with the aggregate buffer of its rows."""

    start: int
    end: int
    acc: tuple = ()


def merge_sessions(sessions: Iterable[Session], combine) -> list[Session]:
    """Merge sessions of one key (MergingSessionsIterator): sorted by start, a session that starts at
    or before the end of the current one joins it; `combine(acc, acc)` merges their buffers."""
    out: list[Session] = []
    for s in sorted(sessions, key=lambda x: (x.start, x.end)):
        if out and s.start <= out[-1].end:
            cur = out[-1]
            out[-1] = Session(cur.start, max(cur.end, s.end), combine(cur.acc, s.acc))
        else:
            out.append(s)
    return out


def parse_gap(value: object) -> int | None:
    """A per-row gap as `session_window` casts it (an interval string such as '10 seconds'), in
    microseconds; None when it cannot be read (Spark's cast gives null) or is null."""
    from ..timeparse import TimeFormatError, parse_duration

    if value is None or not isinstance(value, str):
        return None
    text = value.strip()
    sign = 1
    if text.startswith("-"):
        sign, text = -1, text[1:]
    try:
        duration = parse_duration(text)
    except TimeFormatError:
        return None
    return sign * duration.total_us
