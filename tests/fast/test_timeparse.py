"""Time literals and durations: exact integer microseconds, clear errors, and round trips."""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime.timeparse import (
    DAYS_PER_MONTH,
    DEFAULT_DATE,
    Duration,
    TimeFormatError,
    check_zone,
    format_duration_ms,
    format_time,
    parse_date,
    parse_duration,
    parse_time,
)

FAST = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])

US = 1
MS = 1_000
S = 1_000_000
MIN = 60 * S
H = 3600 * S
D = 86400 * S
W = 7 * D
MONTH = DAYS_PER_MONTH * D

JAN1_2024 = 1_704_067_200 * S  # 2024-01-01T00:00:00Z in epoch microseconds


# -- durations -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, micros, months", [
    ("5s", 5 * S, 0),
    ("500 ms", 500 * MS, 0),
    ("500ms", 500 * MS, 0),
    ("10 minutes", 10 * MIN, 0),
    ("1 minute", MIN, 0),
    ("1m", MIN, 0),  # `m` is minutes, never months
    ("1h30m", H + 30 * MIN, 0),
    ("1h 30m", H + 30 * MIN, 0),
    ("1h,30m", H + 30 * MIN, 0),
    ("1min1h", H + MIN, 0),  # any order
    ("2 days", 2 * D, 0),
    ("1d", D, 0),
    ("4w", 4 * W, 0),
    ("1 week", W, 0),
    ("1.5s", 1 * S + 500 * MS, 0),
    ("1.25ms", 1250 * US, 0),
    ("0.000001s", 1, 0),
    ("1.5h", 90 * MIN, 0),
    ("7us", 7, 0),
    ("7µs", 7, 0),
    ("3 microseconds", 3, 0),
    ("2 millis", 2 * MS, 0),
    ("5 Seconds", 5 * S, 0),
    ("5 SEC", 5 * S, 0),
    ("2 hrs", 2 * H, 0),
    ("  10  minutes  ", 10 * MIN, 0),
    ("0s", 0, 0),
    ("1 month", 0, 1),
    ("2 months", 0, 2),
    ("1mo", 0, 1),
    ("1 month 2 days", 2 * D, 1),
    ("36500d", 36500 * D, 0),  # exactly the 100-year limit
])
def test_parse_duration_reads_exact_microseconds(text, micros, months):
    d = parse_duration(text)
    assert (d.micros, d.months) == (micros, months)
    assert d.text == text.strip()


@pytest.mark.parametrize("value, phrase", [
    ("5", "cannot read duration '5'"),
    ("s", "cannot read duration 's'"),
    ("-5s", "cannot read duration '-5s'"),
    ("five seconds", "cannot read duration"),
    ("1h30", "cannot read duration '1h30' at '30'"),
    ("1x", "unknown unit 'x'"),
    ("100 years", "unknown unit 'years'"),
    ("1h1h", "unit 'hour' given twice"),
    ("1 min 2 minutes", "unit 'minute' given twice"),
    ("0.0000001s", "finer than a microsecond"),
    ("1.0000005ms", "finer than a microsecond"),
    ("1.5 months", "months must be whole"),
    ("36501d", "longer than 100 years"),
    ("1200 months", "longer than 100 years"),
    ("1234567890123456s", "too large"),
    ("", "empty duration"),
    ("   ", "empty duration"),
    (5, "expected a duration with a unit"),
    (1.5, "expected a duration with a unit"),
    (True, "expected a duration with a unit"),
    (None, "expected a duration with a unit"),
])
def test_parse_duration_rejects_with_a_useful_message(value, phrase):
    with pytest.raises(TimeFormatError) as info:
        parse_duration(value)
    assert phrase in str(info.value)


def test_time_format_error_is_a_value_error():
    assert issubclass(TimeFormatError, ValueError)


def test_month_counts_as_31_days_like_spark():
    d = parse_duration("1 month")
    assert d.micros == 0 and d.months == 1
    assert d.total_us == 31 * D
    assert parse_duration("2 months 1 day").total_us == 63 * D


@pytest.mark.parametrize("text, interval", [
    ("1h30m", "1 hour 30 minutes"),
    ("1 hour", "1 hour"),
    ("90 minutes", "1 hour 30 minutes"),
    ("1.5s", "1 second 500 milliseconds"),
    ("1.25ms", "1 millisecond 250 microseconds"),
    ("1 month", "1 month"),
    ("3 months 2d", "3 months 2 days"),
    ("2w", "14 days"),
    ("0s", "0 seconds"),
    ("1us", "1 microsecond"),
])
def test_duration_interval_is_a_spark_interval_string(text, interval):
    d = parse_duration(text)
    assert d.interval == interval
    assert str(d) == interval


def test_duration_derived_units():
    d = parse_duration("1.5s")
    assert d.total_ms == 1500
    assert d.seconds == 1.5
    assert Duration(micros=1999).total_ms == 1  # floor
    assert Duration(micros=0, months=1).seconds == 31 * 86400.0


# Every spelling the reader accepts for each unit, with its size (months: None).
_UNIT_SPELLINGS = {
    "us": US, "µs": US, "microsecond": US, "microseconds": US,
    "ms": MS, "milli": MS, "millis": MS, "millisecond": MS, "milliseconds": MS,
    "s": S, "sec": S, "secs": S, "second": S, "seconds": S,
    "m": MIN, "min": MIN, "mins": MIN, "minute": MIN, "minutes": MIN,
    "h": H, "hr": H, "hrs": H, "hour": H, "hours": H,
    "d": D, "day": D, "days": D,
    "w": W, "week": W, "weeks": W,
    "mo": None, "month": None, "months": None,
}
_LIMIT = 100 * 365 * D


@FAST
@given(n=st.integers(min_value=0, max_value=10 ** 9), unit=st.sampled_from(sorted(_UNIT_SPELLINGS)),
       space=st.sampled_from(["", " ", "  "]))
def test_parse_duration_of_generated_number_and_unit(n, unit, space):
    text = f"{n}{space}{unit}"
    size = _UNIT_SPELLINGS[unit]
    total = n * (MONTH if size is None else size)
    if total > _LIMIT:
        with pytest.raises(TimeFormatError, match="longer than 100 years"):
            parse_duration(text)
        return
    d = parse_duration(text)
    assert d.total_us == total
    if size is None:
        assert (d.months, d.micros) == (n, 0)
    else:
        assert (d.months, d.micros) == (0, total)


@FAST
@given(micros=st.integers(min_value=0, max_value=_LIMIT // 2), months=st.integers(min_value=0, max_value=500))
def test_interval_string_reads_back_to_the_same_duration(micros, months):
    d = Duration(micros=micros, months=months)
    again = parse_duration(d.interval)
    assert (again.micros, again.months) == (micros, months)


# -- timestamps ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("12:00:07", JAN1_2024 + 12 * H + 7 * S),
    ("12:00", JAN1_2024 + 12 * H),
    ("9:05", JAN1_2024 + 9 * H + 5 * MIN),
    ("00:00:00", JAN1_2024),
    ("12:00:07.25", JAN1_2024 + 12 * H + 7 * S + 250 * MS),
    ("12:00:07.000001", JAN1_2024 + 12 * H + 7 * S + 1),
    ("23:59:59.999999", JAN1_2024 + D - 1),
    ("  12:00:07  ", JAN1_2024 + 12 * H + 7 * S),
    ("2024-01-01T12:00:07Z", JAN1_2024 + 12 * H + 7 * S),
    ("2024-01-01T12:00:07", JAN1_2024 + 12 * H + 7 * S),
    ("2024-01-01 12:00:07.5", JAN1_2024 + 12 * H + 7 * S + 500 * MS),
    ("2024-01-01", JAN1_2024),
    ("2024-01-01T12:00Z", JAN1_2024 + 12 * H),
    ("2024-01-01T12:00:07+02:00", JAN1_2024 + 10 * H + 7 * S),
    ("2024-01-01T12:00:07-0230", JAN1_2024 + 14 * H + 30 * MIN + 7 * S),
    ("2024-01-01T12:00:07 Z", JAN1_2024 + 12 * H + 7 * S),
    ("1970-01-01T00:00:00Z", 0),
    ("1969-12-31T23:59:59Z", -S),
    ("2024-02-29T00:00:00Z", JAN1_2024 + (31 + 28) * D),
])
def test_parse_time_reads_epoch_microseconds_utc(text, expected):
    assert parse_time(text) == expected


def test_time_only_literal_falls_on_the_given_date():
    assert DEFAULT_DATE == dt.date(2024, 1, 1)
    assert parse_time("00:00:01", date=dt.date(1970, 1, 1)) == S
    assert parse_time("00:00:01", date=dt.date(2024, 1, 2)) == JAN1_2024 + D + S
    # a full ISO literal ignores the date
    assert parse_time("2024-01-01T00:00:00Z", date=dt.date(1999, 9, 9)) == JAN1_2024


def test_literal_without_offset_is_read_in_the_zone():
    # Paris is UTC+1 in winter and UTC+2 in summer
    assert parse_time("12:00", zone="Europe/Paris") == JAN1_2024 + 11 * H
    assert parse_time("12:00", date=dt.date(2024, 7, 1), zone="Europe/Paris") == \
        parse_time("2024-07-01T10:00:00Z")
    assert parse_time("2024-01-01T12:00:00", zone="America/New_York") == JAN1_2024 + 17 * H
    # an explicit offset wins over the zone
    assert parse_time("2024-01-01T12:00:00Z", zone="Europe/Paris") == JAN1_2024 + 12 * H
    assert parse_time("2024-01-01T12:00:00+01:00", zone="America/New_York") == JAN1_2024 + 11 * H
    for utc in (None, "", "UTC", "Z"):
        assert parse_time("12:00", zone=utc) == JAN1_2024 + 12 * H


@pytest.mark.parametrize("value, phrase", [
    ("24:00", "hour must be in 0..23"),
    ("12:60", "minute must be in 0..59"),
    ("12:00:60", "second must be in 0..59"),
    ("2024-02-30", "day is out of range for month"),
    ("2023-02-29T00:00:00Z", "day is out of range for month"),
    ("2024-13-01", "month must be in 1..12"),
    ("2024-01-01T25:00", "hour must be in 0..23"),
    ("0000-01-01", "year 0 of '0000-01-01' is outside 0001-9999"),
    ("12024-01-01", "outside 0001-9999"),
    ("12:00:07.1234567", "cannot read timestamp '12:00:07.1234567'"),
    ("12:00:07Z", "cannot read timestamp"),
    ("noon", "cannot read timestamp 'noon'"),
    ("12", "cannot read timestamp"),
    ("2024/01/01", "cannot read timestamp"),
    ("", "cannot read timestamp"),
    ("2024-01-01T00:00:00+24:00", "invalid timestamp"),
    (43207, "expected a timestamp"),
    (True, "expected a timestamp"),
    (None, "expected a timestamp"),
    (dt.datetime(2024, 1, 1), "expected a timestamp"),
])
def test_parse_time_rejects_with_a_useful_message(value, phrase):
    with pytest.raises(TimeFormatError) as info:
        parse_time(value)
    assert phrase in str(info.value)


def test_unknown_zone_is_a_time_format_error():
    with pytest.raises(TimeFormatError, match="unknown time zone 'Mars/Olympus'"):
        parse_time("12:00", zone="Mars/Olympus")
    with pytest.raises(TimeFormatError, match="unknown time zone"):
        check_zone("../../etc/passwd")
    check_zone("Europe/Paris")  # no error
    check_zone("UTC")


# -- dates ---------------------------------------------------------------------------------------

def test_parse_date():
    assert parse_date("2024-03-05") == dt.date(2024, 3, 5)
    assert parse_date(" 2024-03-05 ") == dt.date(2024, 3, 5)
    assert parse_date(dt.date(2020, 1, 1)) == dt.date(2020, 1, 1)


@pytest.mark.parametrize("value, phrase", [
    ("2024-1-1", "expected a date such as '2024-01-01'"),
    ("2024-01-01T00:00", "expected a date"),
    ("01/02/2024", "expected a date"),
    (20240101, "expected a date"),
    (None, "expected a date"),
    ("2024-02-30", "invalid date '2024-02-30'"),
    ("2024-13-01", "invalid date"),
])
def test_parse_date_rejects(value, phrase):
    with pytest.raises(TimeFormatError) as info:
        parse_date(value)
    assert phrase in str(info.value)


# -- formatting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("micros, text", [
    (0, "1970-01-01T00:00:00Z"),
    (1, "1970-01-01T00:00:00.000001Z"),
    (1000, "1970-01-01T00:00:00.001Z"),
    (1500, "1970-01-01T00:00:00.0015Z"),
    (250_000, "1970-01-01T00:00:00.250Z"),
    (1_234_567, "1970-01-01T00:00:01.234567Z"),
    (-1, "1969-12-31T23:59:59.999999Z"),
    (D, "1970-01-02T00:00:00Z"),
    (JAN1_2024 + 12 * H + 7 * S, "2024-01-01T12:00:07Z"),
])
def test_format_time_iso(micros, text):
    assert format_time(micros) == text


def test_format_time_on_the_scenario_date_shows_only_the_clock():
    day = dt.date(2024, 1, 1)
    assert format_time(JAN1_2024 + 12 * H + 7 * S, date=day) == "12:00:07"
    assert format_time(JAN1_2024 + 250 * MS, date=day) == "00:00:00.250"
    assert format_time(JAN1_2024 + 1, date=day) == "00:00:00.000001"
    # another day keeps the full form
    assert format_time(JAN1_2024 + D, date=day) == "2024-01-02T00:00:00Z"
    assert format_time(JAN1_2024 - 1, date=day) == "2023-12-31T23:59:59.999999Z"


def test_format_time_of_nothing_is_a_dash():
    assert format_time(None) == "-"
    assert format_time(None, date=dt.date(2024, 1, 1)) == "-"


def test_format_duration_ms():
    assert format_duration_ms(0) == "0ms"
    assert format_duration_ms(999) == "999ms"
    assert format_duration_ms(1000) == "1.00s"
    assert format_duration_ms(1234.5) == "1.23s"


_MIN_US = parse_time("0001-01-01T00:00:00Z")
_MAX_US = parse_time("9999-12-31T23:59:59.999999Z")


@FAST
@given(st.integers(min_value=_MIN_US, max_value=_MAX_US))
def test_format_time_iso_output_reads_back(micros):
    text = format_time(micros)
    assert text.endswith("Z")
    assert parse_time(text) == micros


@FAST
@given(day=st.dates(min_value=dt.date(1970, 1, 1), max_value=dt.date(2100, 12, 31)),
       offset=st.integers(min_value=0, max_value=D - 1))
def test_format_time_clock_output_reads_back_on_its_date(day, offset):
    micros = parse_time("00:00:00", date=day) + offset
    text = format_time(micros, date=day)
    assert "T" not in text and "-" not in text
    assert parse_time(text, date=day) == micros
