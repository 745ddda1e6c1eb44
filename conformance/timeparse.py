"""Time literals and durations as scenario files write them, read exactly (integer microseconds)."""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from eventtime.harness.errors import EventtimeError

__all__ = ["Duration", "TimeFormatError", "parse_duration", "parse_time", "format_time", "format_relative",
           "format_duration_ms"]

MICROS_PER_MS = 1_000
MICROS_PER_SECOND = 1_000_000
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

# Spark turns a month in a watermark delay into 31 days (IntervalUtils.getDuration uses
# DAYS_PER_MONTH = 31); the kit does the same so that `total_us` matches the delay Spark applies.
DAYS_PER_MONTH = 31


class TimeFormatError(EventtimeError, ValueError):
    """A time literal or a duration that cannot be read; the message says what is accepted."""


_UNITS: dict[str, tuple[str, int]] = {}
for _names, _canon, _unit_us in (
    (("us", "µs", "microsecond", "microseconds"), "microsecond", 1),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), "millisecond", MICROS_PER_MS),
    (("s", "sec", "secs", "second", "seconds"), "second", MICROS_PER_SECOND),
    (("m", "min", "mins", "minute", "minutes"), "minute", 60 * MICROS_PER_SECOND),
    (("h", "hr", "hrs", "hour", "hours"), "hour", 3600 * MICROS_PER_SECOND),
    (("d", "day", "days"), "day", 86400 * MICROS_PER_SECOND),
    (("w", "week", "weeks"), "week", 7 * 86400 * MICROS_PER_SECOND),
    (("mo", "month", "months"), "month", 0),
):
    for _n in _names:
        _UNITS[_n] = (_canon, _unit_us)

_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)\s*,?", re.IGNORECASE)


@dataclass(frozen=True)
class Duration:
    """A non-negative span as written (`5s`, `10 minutes`, `1h30m`, `1 month`).

    `months` is kept apart from `micros` because a month is a calendar unit; Spark's watermark
    delay counts it as 31 days (`total_us`). `interval` renders the value as a Spark interval
    string (`"1 hour 30 minutes"`) for `withWatermark` and `window`.
    """

    micros: int
    months: int = 0
    text: str = ""

    @property
    def total_us(self) -> int:
        return self.micros + self.months * DAYS_PER_MONTH * 86400 * MICROS_PER_SECOND

    @property
    def total_ms(self) -> int:
        return self.total_us // MICROS_PER_MS

    @property
    def seconds(self) -> float:
        return self.total_us / MICROS_PER_SECOND

    @property
    def interval(self) -> str:
        parts = []
        if self.months:
            parts.append(f"{self.months} month" + ("s" if self.months != 1 else ""))
        rest = self.micros
        for unit, size in (("day", 86400 * MICROS_PER_SECOND), ("hour", 3600 * MICROS_PER_SECOND),
                           ("minute", 60 * MICROS_PER_SECOND), ("second", MICROS_PER_SECOND),
                           ("millisecond", MICROS_PER_MS), ("microsecond", 1)):
            n, rest = divmod(rest, size)
            if n:
                parts.append(f"{n} {unit}" + ("s" if n != 1 else ""))
        return " ".join(parts) or "0 seconds"

    def __str__(self) -> str:
        return self.interval


def parse_duration(text: object) -> Duration:
    """Read `5s`, `500 ms`, `10 minutes`, `1h30m`, `2 days`, `1 month`, `1.5s` (never negative)."""
    if isinstance(text, bool) or not isinstance(text, str):
        raise TimeFormatError(
            f"expected a duration with a unit such as '5s', '10 minutes' or '1h30m', got {text!r}")
    s = text.strip()
    pos, micros, months, seen = 0, 0, 0, set()
    if not s:
        raise TimeFormatError("empty duration; write e.g. '5s' or '10 minutes'")
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if not m or m.end() == pos:
            raise TimeFormatError(
                f"cannot read duration {text!r} at {s[pos:]!r}; write a number and a unit "
                "(ms, s, m, h, d, w, month), e.g. '5s', '10 minutes', '1h30m'")
        number, unit_text = m.group(1), m.group(2).lower()
        if unit_text not in _UNITS:
            raise TimeFormatError(
                f"unknown unit {m.group(2)!r} in duration {text!r}; use one of "
                "ms, s, m (minutes), h, d, w, month")
        unit, size = _UNITS[unit_text]
        if unit in seen:
            raise TimeFormatError(f"unit {unit!r} given twice in duration {text!r}")
        seen.add(unit)
        if len(number) > 15:
            raise TimeFormatError(f"duration {text!r} is too large")
        if unit == "month":
            if "." in number:
                raise TimeFormatError(f"months must be whole in duration {text!r}")
            months += int(number)
        else:
            whole, _, frac = number.partition(".")
            value = int(whole) * size
            if frac:
                scaled = int(frac) * size
                q, r = divmod(scaled, 10 ** len(frac))
                if r:
                    raise TimeFormatError(
                        f"duration {text!r} is finer than a microsecond")
                value += q
            micros += value
        pos = m.end()
    if micros + months * DAYS_PER_MONTH * 86400 * MICROS_PER_SECOND > 100 * 365 * 86400 * MICROS_PER_SECOND:
        raise TimeFormatError(f"duration {text!r} is longer than 100 years")
    return Duration(micros=micros, months=months, text=s)


_TIME_ONLY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$")
_ISO = re.compile(
    r"^([+-]?\d{4,6})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?$")


def _zone(name: str | None) -> _dt.tzinfo:
    if name in (None, "", "UTC", "Z"):
        return _dt.timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a folder such as 'America', a long name
        raise TimeFormatError(f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris' or 'UTC'") from exc


def check_zone(name: str) -> None:
    _zone(name)


def _micros(dt: _dt.datetime) -> int:
    delta = dt - _EPOCH
    return (delta.days * 86400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


def parse_time(text: object, *, date: _dt.date | None = None, zone: str | None = None) -> int:
    """Read a timestamp literal into epoch microseconds (UTC).

    `12:00:07`, `12:00:07.250` and `12:00` are times on `date`; `2024-01-01T12:00:07`,
    `2024-01-01 12:00:07.5`, `2024-01-01` and forms with `Z` or `+02:00` are full ISO-8601.
    A literal without an offset is read in `zone` (default UTC).
    """
    if isinstance(text, bool) or not isinstance(text, str):
        raise TimeFormatError(
            f"expected a timestamp such as '12:00:07' or '2024-01-01T12:00:07Z', got {text!r}")
    s = text.strip()
    tz = _zone(zone)
    if s.startswith("-") and _TIME_ONLY.match(s[1:]):  # that long before `date`'s midnight (format_relative)
        base = date or DEFAULT_DATE
        midnight = _micros(_dt.datetime(base.year, base.month, base.day, tzinfo=tz))
        return midnight - (parse_time(s[1:], date=base, zone=zone) - midnight)
    m = _TIME_ONLY.match(s)
    try:
        if m:
            base = date or DEFAULT_DATE
            hh, mm, ss = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
            frac = (m.group(4) or "").ljust(6, "0")
            local = _dt.datetime(base.year, base.month, base.day, hh, mm, ss, int(frac or 0))
            return _micros(local.replace(tzinfo=tz))
        m = _ISO.match(s)
        if m:
            year = int(m.group(1))
            if not 1 <= year <= 9999:
                raise TimeFormatError(f"year {year} of {text!r} is outside 0001-9999")
            frac = (m.group(7) or "").ljust(6, "0")
            local = _dt.datetime(year, int(m.group(2)), int(m.group(3)), int(m.group(4) or 0),
                                 int(m.group(5) or 0), int(m.group(6) or 0), int(frac or 0))
            off = m.group(8)
            if off:
                if off == "Z":
                    return _micros(local.replace(tzinfo=_dt.timezone.utc))
                sign = -1 if off[0] == "-" else 1
                digits = off[1:].replace(":", "")
                delta = _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
                return _micros(local.replace(tzinfo=_dt.timezone(sign * delta)))
            return _micros(local.replace(tzinfo=tz))
    except ValueError as exc:
        if isinstance(exc, TimeFormatError):
            raise
        raise TimeFormatError(f"invalid timestamp {text!r}: {exc}") from exc
    raise TimeFormatError(
        f"cannot read timestamp {text!r}; write 'HH:MM:SS[.ffffff]' (on the scenario's date) "
        "or ISO-8601 such as '2024-01-01T12:00:07Z'")


DEFAULT_DATE = _dt.date(2024, 1, 1)


def parse_date(text: object) -> _dt.date:
    if isinstance(text, _dt.date):
        return text
    if not isinstance(text, str) or not re.match(r"^\d{4}-\d{2}-\d{2}$", text.strip()):
        raise TimeFormatError(f"expected a date such as '2024-01-01', got {text!r}")
    try:
        return _dt.date.fromisoformat(text.strip())
    except ValueError as exc:
        raise TimeFormatError(f"invalid date {text!r}: {exc}") from exc


def format_time(micros: int | None, *, date: _dt.date | None = None) -> str:
    """Render epoch microseconds as ISO-8601 UTC, or as `HH:MM:SS[.fff]` when on `date`."""
    if micros is None:
        return "-"
    try:
        dt = _EPOCH + _dt.timedelta(microseconds=micros)
    except OverflowError:
        return f"{micros}us since 1970-01-01T00:00:00Z"
    frac = dt.microsecond
    clock = dt.strftime("%H:%M:%S")
    if frac:
        clock += ("." + f"{frac:06d}").rstrip("0") if frac % 1000 else "." + f"{frac // 1000:03d}"
    if date is not None and dt.date() == date:
        return clock
    return f"{dt.date().isoformat()}T{clock}Z"


def format_relative(micros: int | None, *, date: _dt.date | None = None) -> str:
    """As `format_time`, and an instant less than a day before `date` as the time before its midnight,
    `-HH:MM:SS[.fff]` (a watermark of `00:00:03 - 5 s` is `-00:00:02`), so that a sentence that shows it
    beside the scenario's times shows them all in its form; a time literal reads that form back."""
    if micros is None or date is None:
        return format_time(micros, date=date)
    midnight = _micros(_dt.datetime(date.year, date.month, date.day, tzinfo=_dt.timezone.utc))
    before = midnight - micros
    if not 0 < before < 86_400_000_000:
        return format_time(micros, date=date)
    return "-" + format_time(midnight + before, date=date)  # the offset, read as a time of that day


def format_duration_ms(ms: float) -> str:
    return f"{ms / 1000:.2f}s" if ms >= 1000 else f"{ms:.0f}ms"
