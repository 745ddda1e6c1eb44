"""Streams generated for a kafka source from its declared payload (`value: {columns, event_time}`): records
as a producer sends them (compact JSON of the fields, some missing, nulls, timestamps with offsets and
without milliseconds, now and then a payload that is not JSON), keys and partitions; each scenario loads
through the loader as a file; late records drawn from the event-time field; pools narrow fields; a wrong
`value:` is an error at its line."""
from __future__ import annotations

import json
import re
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings

from eventtime import spec as m
from eventtime.contractfile import ContractInvalid, load_contract_file
from eventtime.strategies import json_time, scenarios
from eventtime.timeparse import parse_time

ORDERS = textwrap.dedent("""\
    contract: orders
    description: orders read from Kafka, parsed with from_json
    sources:
      orders:
        kind: kafka
        value: {columns: "order_id string, amount double, ts timestamp", event_time: ts}
    output:
      columns: "order_id string, amount double"
    """)
S = 1_000_000
DELAY = 10 * S
KEY, VALUE, PARTITION = 0, 1, 3  # a loaded kafka row: Spark's Kafka columns (eventtime.sourcekinds)


def _contract(tmp_path, text=ORDERS):
    path = tmp_path / "orders.contract.yaml"
    path.write_text(text)
    return load_contract_file(path)


def _records(contract, n=40, **kw):
    """Every record of `n` derandomized generated scenarios, each scenario's records in arrival order."""
    out: list[list[tuple]] = []

    @settings(max_examples=n, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(scenarios(contract, typed=True, restarts=False, triggers=False, max_events=8, delay="10s", **kw))
    def collect(sc):
        assert isinstance(sc, m.Scenario)  # loaded by the loader, as a file is
        out.append([r for s in sc.steps if isinstance(s, m.AddStep) for r in s.rows["orders"]])

    collect()
    return out


def _payloads(records):
    """Each record's value parsed as JSON (None where it is not a JSON object)."""
    out = []
    for r in records:
        try:
            v = json.loads(bytes(r[VALUE]).decode("utf-8")) if r[VALUE] is not None else None
        except (ValueError, UnicodeDecodeError):
            v = None
        out.append(v if isinstance(v, dict) else None)
    return out


def test_records_are_compact_json_of_the_declared_fields_some_missing(tmp_path):
    streams = _records(_contract(tmp_path))
    records = [r for s in streams for r in s]
    payloads = [p for p in _payloads(records) if p is not None]
    assert payloads and all(set(p) <= {"order_id", "amount", "ts"} for p in payloads)
    assert any(set(p) != {"order_id", "amount", "ts"} for p in payloads)  # an optional field missing
    assert any(set(p) == {"order_id", "amount", "ts"} for p in payloads)
    assert any(p.get("amount", 0) is None for p in payloads)  # null
    raw = [bytes(r[VALUE]).decode("utf-8", "replace") for r in records if r[VALUE] is not None]
    assert any(", " not in t and '":' in t for t in raw)  # compact, as producers write it
    assert {r[PARTITION] for r in records} == {0, 1, 2}
    assert any(r[KEY] is None for r in records) and any(r[KEY] is not None for r in records)


def test_timestamps_are_written_as_json_producers_write_them(tmp_path):
    times = [p["ts"] for s in _records(_contract(tmp_path)) for p in _payloads(s) if p and p.get("ts")]
    assert any(re.fullmatch(r".*T\d\d:\d\d:\d\d\+02:00", t) for t in times), times  # an offset, no fraction
    assert any(re.fullmatch(r".*T\d\d:\d\d:\d\dZ", t) for t in times)  # a whole second, no milliseconds
    assert any(re.fullmatch(r".*\.\d{3}(Z|[+-]\d\d:\d\d)", t) for t in times)
    assert json_time(parse_time("2024-01-01T00:00:03.5Z"), "+02:00") == "2024-01-01T02:00:03+02:00"
    assert json_time(parse_time("2024-01-01T00:00:03.5Z"), "Z.000") == "2024-01-01T00:00:03.500Z"
    assert json_time(parse_time("0001-01-01T00:00:00Z"), "-05:30") == "0001-01-01T00:00:00Z"  # no year 0


def test_a_late_record_is_drawn_from_the_event_time_field(tmp_path):
    def late(stream):
        seen = None
        for p in _payloads(stream):
            if not p or not p.get("ts"):
                continue
            t = parse_time(p["ts"]) if p["ts"][-1] == "Z" or p["ts"][-6] in "+-" else parse_time(p["ts"] + "Z")
            if seen is not None and t < seen - DELAY:
                return True
            seen = t if seen is None else max(seen, t)
        return False

    assert any(late(s) for s in _records(_contract(tmp_path)))


def test_some_payloads_are_not_json_unless_narrowed_off(tmp_path):
    records = [r for s in _records(_contract(tmp_path), n=60) for r in s]
    assert any(p is None for p in _payloads(records))
    off = _contract(tmp_path, ORDERS.replace("event_time: ts}", "event_time: ts, malformed: false}"))
    records = [r for s in _records(off, n=60) for r in s]
    assert all(p is not None for p in _payloads(records))


def test_pools_narrow_payload_fields(tmp_path):
    contract = _contract(tmp_path)
    ids = {p.get("order_id") for s in _records(contract, pools={"order_id": ["o1", "o2"]}) for p in _payloads(s) if p}
    assert ids <= {"o1", "o2", None} and ids & {"o1", "o2"}, ids
    ids = {p.get("order_id") for s in _records(contract, pools={"orders.order_id": ["o3"]}) for p in _payloads(s) if p}
    assert ids <= {"o3", None} and "o3" in ids, ids
    # control: without the pool, other text is drawn
    assert {p.get("order_id") for s in _records(contract) for p in _payloads(s) if p} - {"o1", "o2", None}


@pytest.mark.parametrize("value, said", [
    ('{columns: "order_id string, ts timestamp", event_time: at}', "6:67: event_time 'at' is not a field of source "
                                                                   "'orders''s value"),
    ('{columns: "order_id string, ts string", event_time: ts}', "event_time field 'ts' must be a timestamp, not string"),
    ('{columns: "order_id string", malformed: sometimes}', "`malformed` is true"),
    ('{columns: "order_id strin"}', "6:"),
    ('{colums: "order_id string"}', "`value` of kafka source 'orders' is the payload the job parses"),
    ('{columns: "order_id string", evnet_time: ts}', "a kafka source's `value` has no key 'evnet_time'"),
])
def test_a_wrong_value_is_an_error_at_its_line(tmp_path, value, said):
    text = ORDERS.replace('{columns: "order_id string, amount double, ts timestamp", event_time: ts}', value)
    with pytest.raises(ContractInvalid) as info:
        _contract(tmp_path, text)
    assert f"orders.contract.yaml:{said}" in str(info.value) or said in str(info.value), str(info.value)
    assert "orders.contract.yaml:6:" in str(info.value), str(info.value)


def test_value_is_for_a_kafka_or_text_source_only(tmp_path):
    text = ORDERS.replace("kind: kafka", "columns: \"order_id string\"")
    with pytest.raises(ContractInvalid, match=r"orders.contract.yaml:6:\d+: `value` is for a kafka or text source"):
        _contract(tmp_path, text)
    assert _contract(tmp_path, ORDERS.replace("kind: kafka", "kind: text")).source("orders").value


def test_bounded_state_closes_with_a_record_and_boundaries_say_they_do_not_apply(tmp_path):
    from eventtime.properties import _does_not_apply, closing_steps

    contract = _contract(tmp_path)
    add = closing_steps(contract, {"order_id": ["o1"]})[0]
    record = json.loads(add[len("- add: "):])["orders"][0]
    assert record == {"value": {"order_id": "o1", "amount": 1.0, "ts": record["value"]["ts"]}}, add
    assert record["value"]["ts"].startswith("20") and _does_not_apply("bounded-state", contract) is None
    for prop in ("batch-boundary-independence", "stream-equals-batch"):
        said = _does_not_apply(prop, contract)
        assert said is not None and "kafka source 'orders' has its event time inside the payload" in said, prop
    # control: a kafka source without an event-time field moves no watermark: bounded-state does not apply
    plain = _contract(tmp_path, ORDERS.replace(", event_time: ts}", "}"))
    assert _does_not_apply("bounded-state", plain) is not None and closing_steps(plain)[0] == "- add: {}"


def test_a_shrunk_payload_keeps_a_rare_draw_only_when_the_failure_needs_it(tmp_path):
    """Hypothesis shrinks integers towards 0, so the rare draws (a payload that is not JSON, a field left out,
    a record sent again) are the top of their range: the smallest payload of any kind is a JSON object with
    every declared field, and a failure that needs a record that is not JSON still finds one (the control)."""
    from hypothesis import find

    from eventtime.strategies import payloads

    spec = _contract(tmp_path).sources[0]
    smallest = find(payloads(spec), lambda p: True)
    assert isinstance(smallest, dict) and set(smallest) == {"order_id", "amount", "ts"}, smallest
    assert not isinstance(find(payloads(spec), lambda p: not isinstance(p, dict)), dict)


HEADED = ORDERS.replace("    kind: kafka\n", "    kind: kafka\n    headers: true\n")
HEADERS = 7  # a loaded kafka row's headers column, after Spark's seven (eventtime.sourcekinds)


def _headers(records):
    return [[(k, None if v is None else bytes(v)) for k, v in r[HEADERS]] for r in records]


def test_a_source_read_with_headers_gets_generated_headers(tmp_path):
    from eventtime.strategies import HEADER_KEYS

    drawn = [h for s in _records(_contract(tmp_path, HEADED)) for h in _headers(s)]
    assert any(not h for h in drawn) and any(len(h) >= 2 for h in drawn), drawn  # none, and several
    assert {k for h in drawn for k, _ in h} <= set(HEADER_KEYS)
    values = {v for h in drawn for _, v in h}
    assert None in values and b"\xff\xfe" in values, values  # null, and bytes that are not UTF-8
    assert any(len({k for k, _ in h}) < len(h) for h in drawn), drawn  # a key repeated
    # control: a source read without headers has no headers column
    assert all(len(r) == HEADERS for s in _records(_contract(tmp_path)) for r in s)


def test_the_contract_narrows_headers(tmp_path):
    narrowed = HEADED.replace("event_time: ts}\n", "event_time: ts}\n    generate: {headers: {source: [web, app]}, "
                                                   "order_id: [o1]}\n")
    drawn = [h for s in _records(_contract(tmp_path, narrowed)) for h in _headers(s)]
    assert {k for h in drawn for k, _ in h} == {"source"}, drawn
    assert {v for h in drawn for _, v in h} <= {b"web", b"app", None}, drawn
    bad = ORDERS.replace("event_time: ts}\n", "event_time: ts}\n    generate: {headers: {source: [web]}}\n")
    with pytest.raises(ContractInvalid, match="reads no headers: say `headers: true`"):
        _contract(tmp_path, bad)
    bad = HEADED.replace("event_time: ts}\n", "event_time: ts}\n    generate: {headers: [source]}\n")
    with pytest.raises(ContractInvalid, match=r"maps a header's key to the values"):
        _contract(tmp_path, bad)


@pytest.mark.parametrize("generate, said", [
    ("{amount: {min: 0}}", "a range of 'amount' needs both `min` and `max`: give `max` too"),
    ("{headers: {source: [web, 7]}}", "8:40: the value 7 of header 'source' is not text (quote it) or null"),
    ("{amont: [1.0]}", "'amont' is not a column of the value of source 'orders'; did you mean 'amount'?"),
])
def test_a_wrong_generate_on_a_kafka_source_is_an_error_at_its_line(tmp_path, generate, said):
    with pytest.raises(ContractInvalid) as info:
        _contract(tmp_path, HEADED.replace("event_time: ts}\n", f"event_time: ts}}\n    generate: {generate}\n"))
    assert said in str(info.value), str(info.value)


def test_generate_on_a_kafka_source_without_its_payload_asks_for_value(tmp_path):
    text = ORDERS.replace('    value: {columns: "order_id string, amount double, ts timestamp", event_time: ts}\n',
                          "    generate: {amount: [1.0]}\n")
    with pytest.raises(ContractInvalid, match=r"names its payload's fields: declare them first with `value:"):
        _contract(tmp_path, text)
