"""Streams generated from a user's contract for the property checks (`eventtime.strategies`, typed=True):
every declared column of its declared type, nulls where a column may be null (never the event time), edge
values, rows late by less than, exactly and more than the watermark delay, duplicates; each scenario
loads through the same loader as a file; narrowed by value pools; what cannot be generated refused by name."""
from __future__ import annotations

import textwrap
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from eventtime import spec as m
from eventtime.contractfile import load_contract_file
from eventtime.strategies import TEXT_EDGES, scenarios

WIDE = textwrap.dedent("""\
    contract: wide
    description: a column of every kind of type
    sources:
      clicks:
        columns: "page string, n int, amount decimal(12,2), ok boolean, day date, at timestamp, tags array<string>, attrs map<string,int>, who struct<id: long, name: string>, blob binary, x double, ts timestamp"
        event_time: ts
    output:
      columns: "page string, clicks bigint"
      modes: [update, append]
    """)
S = 1_000_000
EXAMPLES = 40


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "wide.contract.yaml"
    path.write_text(WIDE)
    return load_contract_file(path)


_DRAWN: dict[str, list[list[tuple]]] = {}


def _draw(contract, n=EXAMPLES, **kw):
    """Every row of `n` derandomized generated scenarios, per source, in arrival order per scenario (drawn
    once per arguments in this module)."""
    key = repr((contract.name, n, sorted(kw.items())))
    if key in _DRAWN:
        return _DRAWN[key]
    out: list[list[tuple]] = []

    @settings(max_examples=n, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(scenarios(contract, typed=True, restarts=False, triggers=False, max_events=8, **kw))
    def collect(sc):
        assert isinstance(sc, m.Scenario)
        out.append([r for s in sc.steps if isinstance(s, m.AddStep) for r in s.rows["clicks"]])

    collect()
    _DRAWN[key] = out
    return out


def test_every_column_gets_nulls_but_the_event_time(wide):
    names = [c.name for c in wide.sources[0].columns]
    nulls = Counter(name for rows in _draw(wide) for r in rows for name, v in zip(names, r) if v is None)
    assert set(nulls) == set(names) - {"ts"}, nulls


def test_edge_values_of_the_declared_types_are_drawn(wide):
    names = [c.name for c in wide.sources[0].columns]
    seen: dict[str, set] = {n: set() for n in names}
    for rows in _draw(wide):
        for r in rows:
            for n, v in zip(names, r):
                seen[n].add(v if not isinstance(v, (list, tuple, dict)) and not hasattr(v, "items") else repr(v))
    assert seen["page"] & set(TEXT_EDGES), "text that looks like a time, empty or unicode text"
    assert {2 ** 31 - 1, -(2 ** 31)} & seen["n"], "an int's bounds"
    assert any(isinstance(v, int) and v % S for v in seen["ts"]), "an event time off its whole second"
    assert any(isinstance(v, int) and v % 1000 for v in seen["ts"]), "a sub-millisecond event time"


def test_rows_are_late_within_exactly_at_and_beyond_the_delay(wide):
    delay = 10 * S
    lags = Counter()
    for rows in _draw(wide, delay="10s", resolution="1s", max_step="20s"):
        top = None
        for r in rows:
            ts = r[-1] - r[-1] % S  # the whole second (edges move a time by under a second)
            if top is not None and ts < top:
                lag = top - ts
                lags["within" if lag < delay else "at" if lag == delay else "beyond"] += 1
            top = ts if top is None else max(top, ts)
    assert lags["within"] and lags["beyond"], lags
    assert lags["at"] or lags["beyond"] > 5, lags


def test_duplicate_rows_are_drawn(wide):
    assert any(len(set(map(repr, rows))) < len(rows) for rows in _draw(wide))


def test_a_pool_narrows_a_column(wide):
    values = {r[0] for rows in _draw(wide, n=30, pools={"page": ["home", "cart"]}) for r in rows}
    assert values <= {"home", "cart", None} and {"home", "cart"} & values, values
    # control: without the pool, other text is drawn
    assert {r[0] for rows in _draw(wide) for r in rows} - {"home", "cart", None}


def test_a_kafka_source_is_refused_by_name(tmp_path):
    path = tmp_path / "k.contract.yaml"
    path.write_text(textwrap.dedent("""\
        contract: k
        description: kafka
        sources:
          orders: {kind: kafka, topic: orders}
        output:
          columns: "n bigint"
        """))
    contract = load_contract_file(path)

    @settings(max_examples=1, database=None)
    @given(scenarios(contract, typed=True))
    def draw(sc):
        pass

    # a kafka source is generated from its declared payload (`value:`, tests/fast/test_kafka_streams.py):
    # without one it is refused by name, saying what to add
    with pytest.raises(ValueError, match=r"kafka source 'orders' declares no payload: give it `value: "):
        draw()




NARROWED = WIDE.replace("contract: wide", "contract: narrowed").replace("    event_time: ts\n", "    event_time: ts\n    generate: {page: [home, cart], n: {min: 10, max: 12}, "
                                                      "amount: {min: '0.50', max: '2.00'}, x: {min: -1, max: 1}}\n")


def test_the_contract_narrows_columns_with_generate(tmp_path):
    path = tmp_path / "narrowed.contract.yaml"
    path.write_text(NARROWED)
    contract = load_contract_file(path)
    drawn = [r for rows in _draw(contract, n=30) for r in rows]
    pages, ns = {r[0] for r in drawn}, {r[1] for r in drawn}
    amounts = {float(r[2]) for r in drawn if r[2] is not None}
    xs = {r[10] for r in drawn if r[10] is not None}
    assert pages <= {"home", "cart", None} and {"home", "cart"} & pages, pages
    assert ns <= {10, 11, 12, None} and {10, 12} & ns, ns  # the range's bounds are drawn as edges
    assert amounts and all(0.5 <= a <= 2.0 for a in amounts), amounts
    assert xs and all(-1 <= x <= 1 for x in xs) and 0 in xs, xs
    # code's pool by column name replaces the contract's for that column only
    drawn = [r for rows in _draw(contract, n=30, pools={"page": ["checkout"]}) for r in rows]
    assert {r[0] for r in drawn} <= {"checkout", None} and {r[1] for r in drawn} <= {10, 11, 12, None}
    # control: the same contract without `generate:` draws other values
    assert {r[1] for rows in _draw(wide_contract(tmp_path)) for r in rows} - {10, 11, 12, None}


def wide_contract(tmp_path):
    path = tmp_path / "wide.contract.yaml"
    path.write_text(WIDE)
    return load_contract_file(path)


@pytest.mark.parametrize("generate, said", [
    ("{n: {min: 5, max: 1}}", "7:19: `min` 5 is above `max` 1"),
    ("{nn: [1]}", "7:16: 'nn' is not a column of source 'clicks'; did you mean 'n'?"),
    ("{ts: [1]}", "'ts' is the event time: its values are drawn around the watermark delay"),
    ("{page: {min: 1, max: 2}}", "'page' is a string column (not a number)"),
    ("{n: [1, two]}", "7:23: a generated value of 'n' (int): expected a whole number, got text 'two'"),
    ("{n: [3000000000]}", "3000000000 is out of range for int"),
    ("{n: []}", "is an empty pool"),
    ("[n]", "`generate` of source 'clicks' maps a column to the values generated for it"),
])
def test_a_wrong_generate_is_an_error_at_its_line(tmp_path, generate, said):
    from eventtime.contractfile import ContractInvalid

    path = tmp_path / "bad.contract.yaml"
    path.write_text(WIDE.replace("    event_time: ts\n", f"    event_time: ts\n    generate: {generate}\n"))
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    assert said in str(info.value), str(info.value)


def test_streams_are_drawn_within_what_the_implementation_supports(wide):
    """`@implementation(supports={"output_mode": ...})`: a stream outside it would only be not applicable."""
    def modes(**kw):
        seen = []

        @settings(max_examples=20, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
        @given(scenarios(wide, typed=True, restarts=False, triggers=False, max_events=2, **kw))
        def collect(sc):
            seen.append(sc.params.get("output_mode"))

        collect()
        return set(seen)

    assert modes(supports={"output_mode": ("append",)}) == {"append"}
    assert modes() == {"update", "append"}  # control: the contract's modes, both drawn
