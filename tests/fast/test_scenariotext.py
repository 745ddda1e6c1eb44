"""Scenario text written by the kit: the model's fill (`eventtime expect --write`) and a snapshot of a Spark
run (`--snapshot`) write the same values the same way, and what they write reads back as what was observed.

Pure Python. The drift these tests guard against: two writers that quote text, place times in a zone and
print numbers each their own way, so that the same rows read differently (or back as other values)
depending on which face wrote them."""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime import snapshotedit as se
from eventtime.coltypes import INTEGRAL_RANGES, ColumnType, MapValue, parse_type
from eventtime.judge import Observed
from eventtime.loader import load_scenario_text
from eventtime.scenariotext import text_scalar, time_text, value_text
from eventtime.semantics import check_scenario, simulate
from eventtime.semantics.fill import model_checks, write_expectations
from eventtime.textreport import describe_failure
from eventtime.timeparse import parse_time
from eventtime.yamlsource import load_yaml

# keys that YAML folds (a line break), reads as another type unless quoted (`yes`, `on`, `null`), or must
# escape (a quote, a tab); in a zone away from UTC, so times are written in local time
ZONED = """\
scenario: zoned
description: keys a writer must quote or escape, in a zone away from UTC
contract: tumbling_count
timezone: Europe/Paris
params: {window: 10 seconds, watermark_delay: 5 seconds, output_mode: update}
sources:
  events: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [["two\\nlines", "00:00:03"], ["yes", "00:00:04"], ["on", "00:00:05"], ["say \\"hi\\"", "00:00:06"],
                   ["tab\\there", "00:00:07"], ["null", "00:00:08"], [plain, "00:00:16"]]}
  - process
  - expect: {rows: [], watermark: initial}
"""


def test_the_model_writes_checks_that_read_back_as_what_it_observed():
    """`expect --write` on keys YAML would fold or retype: the file it writes agrees with the model."""
    sc = load_scenario_text(ZONED, "zoned.scenario.yaml")
    new = write_expectations(simulate(sc), ZONED)
    result = check_scenario(load_scenario_text(new, "zoned.scenario.yaml"))
    assert result.status == "passed", new + describe_failure(result)


def test_the_model_and_a_snapshot_write_the_same_text_for_the_same_observation():
    """What the model observed, written by the model's fill and by a snapshot (as if Spark had observed
    it): the same rows and watermark, to the character."""
    sc = load_scenario_text(ZONED, "zoned.scenario.yaml")
    ((step, since, history),) = simulate(sc).observed_by_expects()
    assert sum(len(b.rows) for b in since) == 7  # every key's window, in update mode
    model = model_checks(sc, since, history)
    view = se.ExpectView(sc, step, Observed(since, history, "update", [c.name for c in sc.contract.output]))
    assert model["watermark"] == se.check_value(view, "watermark")
    snapshot_rows = se.check_value(view, "rows")  # sorted by their text
    model_rows = model["rows"]
    assert model_rows == "[" + ", ".join(snapshot_rows) + "]" or sorted(_items(model_rows)) == snapshot_rows, \
        (model_rows, snapshot_rows)


def test_the_model_writes_rows_in_the_columns_the_expect_compares():
    """An expect with `columns:` compares those columns (`judge.compared`); `expect --write` writes them."""
    text = ZONED.replace('["tab\\there", "00:00:07"], ["null", "00:00:08"], ', "").replace(
        "  - expect: {rows: [], watermark: initial}", "  - expect: {columns: [key, count], rows: [[plain, 5]]}")
    new = write_expectations(simulate(load_scenario_text(text, "cols.scenario.yaml")), text)
    assert new.splitlines()[-1] == ('  - expect: {columns: [key, count], rows: [["two\\nlines", 1], ["yes", 1], ["on", 1], '
                                    '[\'say "hi"\', 1], [plain, 1]], watermark: "00:00:11", dropped: 0, state_rows: 1}')
    result = check_scenario(load_scenario_text(new, "cols.scenario.yaml"))
    assert result.status == "passed", new + describe_failure(result)


# -- every value the writer writes reads back as itself ---------------------------------------------------
_SCALARS = ("byte", "short", "int", "long", "float", "double", "string", "boolean", "binary", "date", "timestamp",
            "timestamp_ntz")
_KEYS = st.sampled_from([parse_type(t) for t in _SCALARS if t not in ("float", "double")])  # a NaN key is no key
_NAMES = st.one_of(st.sampled_from(("yes", "on", "null", "true", "initial", "x", "a.b")), st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True))
_TYPES = st.recursive(
    st.one_of(st.sampled_from([parse_type(t) for t in _SCALARS]),
              st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: ColumnType("decimal", p, s)))),
    lambda inner: st.one_of(
        inner.map(lambda t: ColumnType("array", element=t)),
        st.tuples(_KEYS, inner).map(lambda kv: ColumnType("map", key=kv[0], value=kv[1])),
        st.lists(st.tuples(_NAMES, inner), min_size=1, max_size=3, unique_by=lambda f: f[0]).map(
            lambda fields: ColumnType("struct", fields=tuple(fields)))),
    max_leaves=4)
# the instants a time literal can state in any zone (the loader reads years 1 to 9999 of the local time)
_FIRST, _LAST = (int((dt.datetime(*d, tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
                     / dt.timedelta(microseconds=1)) for d in ((1, 1, 2), (9999, 12, 30)))
_ZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Chatham")


def _values(t: ColumnType) -> st.SearchStrategy:
    """Canonical values of `t` (what rows hold), null included."""
    k = t.kind
    if k in INTEGRAL_RANGES:
        bits = INTEGRAL_RANGES[k]
        base: st.SearchStrategy = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif k in ("float", "double"):
        base = st.floats(width=32 if k == "float" else 64)
    elif k == "decimal":
        top = 10 ** t.precision - 1  # every digit the type holds (38 is more than Python's default context)
        base = st.integers(-top, top).map(lambda n: decimal.Decimal(f"{n}E-{t.scale}"))
    elif k == "string":
        base = st.one_of(st.text(), st.sampled_from(("yes", "No", "on", "OFF", "null", "~", "True", "initial", "nan",
                                                     ".inf", "12:00:07", "0x1F", "1e3", "<<", "- a", "#", "a: b")))
    elif k == "boolean":
        base = st.booleans()
    elif k == "binary":
        base = st.one_of(st.binary(max_size=8), st.text(max_size=4).map(lambda s: s.encode("utf-8")))
    elif k == "date":
        base = st.dates()
    elif k in ("timestamp", "timestamp_ntz"):
        base = st.one_of(st.integers(_FIRST, _LAST), st.integers(0, 86_400_000_000).map(lambda us: 1_704_067_200_000_000 + us))
    elif k == "array":
        assert t.element is not None
        base = st.lists(_values(t.element), max_size=3).map(tuple)
    elif k == "map":
        assert t.key is not None and t.value is not None
        base = st.lists(st.tuples(_values(t.key).filter(lambda v: v is not None), _values(t.value)), max_size=3,
                        unique_by=lambda kv: repr(kv[0])).map(MapValue.of)
    else:
        base = st.tuples(*[_values(ft) for _, ft in t.fields])
    return st.one_of(st.none(), base, base, base)  # null one draw in four


ROUND_TRIP = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@ROUND_TRIP
@given(st.data(), _TYPES, st.sampled_from(_ZONES), st.dates(dt.date(1971, 1, 1), dt.date(2100, 1, 1)))
def test_every_value_written_reads_back_through_the_loader_as_itself(data, ctype, zone, date):
    """A value of any column type, written into a source's row, loads (the scenario loader, its YAML
    rules and its readers of each type) as the value it was written from."""
    value = data.draw(_values(ctype), label="value")
    sc = load_scenario_text(_ROW_SCENARIO.format(date=date, zone=zone, type=json.dumps(ctype.name), value="null"), "rt")
    text = value_text(value, ctype, sc)
    loaded = load_scenario_text(_ROW_SCENARIO.format(date=date, zone=zone, type=json.dumps(ctype.name), value=text),
                                "rt.scenario.yaml")
    (row,) = loaded.steps[0].rows["events"]
    assert ctype.equal(row[2], value), (text, row[2], value)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text())
def test_any_text_written_reads_back_as_itself_in_and_out_of_a_flow_list(value):
    """Text alone, many more draws than the round trip above can afford (the kit's YAML reader, which the
    loader reads a string column with): line breaks, controls, quotes, `yes`, `null`, leading spaces."""
    written = text_scalar(value)
    assert load_yaml(f"v: {written}").data["v"] == value, written
    assert load_yaml(f"v: [{written}, {{k: {written}}}]").data["v"] == [value, {"k": value}], written


_ROW_SCENARIO = """scenario: rt
description: one value written and read back
contract: tumbling_count
date: {date}
timezone: {zone}
params: {{window: 10 seconds, watermark_delay: 5 seconds}}
sources:
  events: {{columns: {{key: string, ts: timestamp, v: {type}}}, event_time: ts}}
steps:
  - add: {{events: [[a, "00:00:01", {value}]]}}
  - process
"""


def test_a_decimal_of_38_digits_reads_as_itself():
    """Control found by the round trip above: the reader rounded through Python's default context (28
    digits) and raised decimal.InvalidOperation on a decimal(38,2) of 36 digits."""
    value = decimal.Decimal("123456789012345678901234567890123456.78")
    assert parse_type("decimal(38,2)").read(str(value), parse_time=parse_time, parse_date=dt.date.fromisoformat) == value


def test_a_time_is_written_on_the_date_in_the_zone_or_with_the_offset_it_needs():
    sc = load_scenario_text(_ROW_SCENARIO.format(date="2024-10-27", zone="Europe/Paris", type="long", value="0"), "t")
    assert time_text(parse_time("09:30:00", date=sc.date, zone=sc.timezone), sc) == '"09:30:00"'
    # 02:30 happens twice that night (the clocks go back at 03:00): the second is written with its offset
    assert time_text(parse_time("2024-10-27T02:30:00+01:00"), sc) == '"2024-10-27T02:30:00+01:00"'
    # Amsterdam's clocks ran 19 minutes 32 seconds ahead of UTC in 1916: a time they passed twice has no
    # offset a literal can say (whole minutes), so it is written in UTC
    amsterdam = dataclasses.replace(sc, date=dt.date(1916, 9, 30), timezone="Europe/Amsterdam")
    twice = parse_time("1916-09-30T22:40:30Z")
    assert time_text(twice, amsterdam) == '"1916-09-30T22:40:30Z"'
    assert parse_time(time_text(twice, amsterdam).strip('"'), date=amsterdam.date, zone=amsterdam.timezone) == twice


def _items(flow: str) -> list[str]:
    """The rows of a flow list of rows as their texts (`[[a, 1], [b, 2]]` -> `[a, 1]`, `[b, 2]`)."""
    out, depth, start, quote = [], 0, 0, ""
    for i, ch in enumerate(flow):
        if quote:
            quote = "" if ch == quote and flow[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "[":
            depth += 1
            start = i if depth == 2 else start
        elif ch == "]":
            depth -= 1
            if depth == 1:
                out.append(flow[start:i + 1])
    return out
