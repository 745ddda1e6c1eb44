"""Scenario text written by the kit reads back as the values it was written from."""
from __future__ import annotations

import datetime as dt
import decimal

from eventtime.coltypes import parse_type
from eventtime.timeparse import parse_time


def test_a_decimal_of_38_digits_reads_as_itself():
    """Control found by the round trip above: the reader rounded through Python's default context (28
    digits) and raised decimal.InvalidOperation on a decimal(38,2) of 36 digits."""
    value = decimal.Decimal("123456789012345678901234567890123456.78")
    assert parse_type("decimal(38,2)").read(str(value), parse_time=parse_time, parse_date=dt.date.fromisoformat) == value
