"""Streams generated for a text source (JSON lines its job parses, from its declared `value:`) and for static
inputs (no JVM): each line a compact JSON object of the declared fields (some missing, nulls, time-zone offsets)
or, where malformed input is possible, a line that is not one (control: `malformed: false`); the static rows
drawn once per stream in the declared columns, keys overlapping the stream's (matches and misses; control: a
static sharing no column name meets the stream's values far less), unique per key, a text folder's never null;
a text source without `value:` refused by name; closing lines and the properties that do not apply."""
from __future__ import annotations

import json
import re
import textwrap

from hypothesis import HealthCheck, given, settings

from eventtime import spec as m
from eventtime.contractfile import load_contract_file
from eventtime.strategies import not_generated, scenarios

LINES = textwrap.dedent("""\
    contract: order_lines
    description: orders as JSON lines, each with its customer's region from a table
    sources:
      orders:
        kind: text
        value: {columns: "order_id string, customer string, amount double, ts timestamp", event_time: ts}
    static:
      customers: {table: customers, columns: "customer string, region string"}
    output:
      columns: "order_id string, customer string, region string, amount double, ts timestamp"
    """)


def _contract(tmp_path, text=LINES):
    path = tmp_path / "order_lines.contract.yaml"
    path.write_text(text)
    return load_contract_file(path)


def _scenarios(contract, n=40, **kw):
    out: list[m.Scenario] = []

    @settings(max_examples=n, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(scenarios(contract, typed=True, restarts=False, triggers=False, max_events=8, delay="10s", **kw))
    def collect(sc):
        assert isinstance(sc, m.Scenario)  # loaded by the loader, as a file is
        out.append(sc)

    collect()
    return out


def _lines(sc):
    return [r[0] for s in sc.steps if isinstance(s, m.AddStep) for r in s.rows.get("orders", ())]


def _objects(lines):
    """Each line parsed as JSON (None where it is not a JSON object)."""
    out = []
    for line in lines:
        try:
            v = json.loads(line)
        except ValueError:
            v = None
        out.append(v if isinstance(v, dict) else None)
    return out


def test_lines_are_compact_json_of_the_declared_fields_with_edge_values(tmp_path):
    lines = [line for sc in _scenarios(_contract(tmp_path)) for line in _lines(sc)]
    assert lines and all(isinstance(line, str) for line in lines)  # a line is text, never null or bytes
    objects = [o for o in _objects(lines) if o is not None]
    fields = {"order_id", "customer", "amount", "ts"}
    assert objects and all(set(o) <= fields for o in objects)
    assert any(set(o) != fields for o in objects) and any(set(o) == fields for o in objects)  # a field missing
    assert any(o.get("customer", 0) is None for o in objects)  # null
    assert any(", " not in line and '":' in line for line in lines)  # compact, one JSON object a line
    times = [o["ts"] for o in objects if o.get("ts")]
    assert any(re.fullmatch(r".*T\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d", t) for t in times), times  # an offset
    assert any(re.fullmatch(r".*T\d\d:\d\d:\d\dZ", t) for t in times)  # a whole second, no fraction


def test_some_lines_are_not_json_unless_the_contract_says_malformed_false(tmp_path):
    lines = [line for sc in _scenarios(_contract(tmp_path), n=60) for line in _lines(sc)]
    assert any(o is None for o in _objects(lines))
    off = _contract(tmp_path, LINES.replace("event_time: ts}", "event_time: ts, malformed: false}"))
    lines = [line for sc in _scenarios(off, n=60) for line in _lines(sc)]
    assert lines and all(o is not None for o in _objects(lines))  # the control


def _meets(contract):
    """Of the streams with a customer, (those whose static holds one of theirs, those with one it lacks, all)."""
    matches = misses = keyed = 0
    for sc in _scenarios(contract, n=60):
        keys = {o.get("customer") for o in _objects(_lines(sc)) if o} - {None}
        static = {r[0] for r in sc.statics.get("customers", ())}
        keyed += bool(keys)
        matches += bool(keys & static)
        misses += bool(keys - static)
    return matches, misses, keyed


def test_static_rows_overlap_the_streams_keys_with_matches_and_misses(tmp_path):
    matches, misses, keyed = _meets(_contract(tmp_path))
    assert keyed >= 30 and matches * 2 >= keyed and misses * 2 >= keyed, (matches, misses, keyed)  # 30, 33 of 48
    # the control: a static whose column is named otherwise draws its own values, and meets the stream far less
    apart = _contract(tmp_path, LINES.replace('columns: "customer string, region string"',
                                              'columns: "client string, region string"'))
    by_chance, _, apart_keyed = _meets(apart)  # 9 of 43: the few texts both draw from
    assert by_chance * 2 * keyed < matches * apart_keyed, ((by_chance, apart_keyed), (matches, keyed))


def test_static_rows_are_in_the_declared_columns_unique_per_key(tmp_path):
    streams = _scenarios(_contract(tmp_path), n=60)
    tables = [sc.statics["customers"] for sc in streams if "customers" in sc.statics]
    assert len(tables) == len(streams) and any(len(t) >= 2 for t in tables) and any(not t for t in tables)
    assert all(len(r) == 2 for t in tables for r in t)
    assert all(len({r[0] for r in t}) == len(t) for t in tables)  # a dimension table's key
    assert any(r[1] is None for t in tables for r in t)  # nulls, as in any drawn column
    text = _contract(tmp_path, LINES.replace("{table: customers, ", "{path: ref/customers, format: text, ")
                     .replace('"customer string, region string"', '"customer string"'))
    assert all(r[0] is not None for sc in _scenarios(text, n=30) for r in sc.statics["customers"])


def test_pools_narrow_a_static_column(tmp_path):
    streams = _scenarios(_contract(tmp_path), pools={"customers.region": ["north"]})
    regions = {r[1] for sc in streams for r in sc.statics["customers"]}
    assert regions <= {"north", None} and "north" in regions, regions


def test_a_text_source_without_value_is_refused_by_name(tmp_path):
    bare = _contract(tmp_path, LINES.replace(
        '\n    value: {columns: "order_id string, customer string, amount double, ts timestamp", event_time: ts}', ""))
    assert bare.source("orders").value == ()
    said = not_generated(bare)
    assert said and "text source 'orders' declares no payload: give it `value: {columns: " in said, said
    assert not_generated(_contract(tmp_path)) is None  # the control: with `value:` it is generated


def test_closing_lines_and_what_does_not_apply(tmp_path):
    from eventtime.properties import _does_not_apply, closing_steps

    contract = _contract(tmp_path)
    add = closing_steps(contract)[0]
    line = json.loads(add[len("- add: "):])["orders"][0]
    assert line["ts"].startswith("2024-07-01T00:00:00"), add
    for prop in ("batch-boundary-independence", "stream-equals-batch"):
        assert "text source 'orders' has its event time inside the payload" in (_does_not_apply(prop, contract) or "")
    assert _does_not_apply("bounded-state", contract) is None
