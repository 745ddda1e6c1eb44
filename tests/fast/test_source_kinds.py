"""Kafka-shaped and text sources (no JVM): their columns, how a scenario row becomes a record, each
problem at its file:line:column, and the model saying it predicts nothing for them.

Each accepted form is checked by the exact record it reads (bytes, offsets, timestamps), so a reader
that accepted everything or dropped a field fails here.
"""
from __future__ import annotations

import textwrap

import pytest

from eventtime.coltypes import parse_type
from eventtime.contractfile import ContractInvalid, load_contract_file
from eventtime.loader import ScenarioInvalid, load_scenario
from eventtime.sourcekinds import source_columns

# The schema of a row of Spark's Kafka source as the Structured Streaming + Kafka Integration Guide
# documents it (section "Reading Data from Kafka", the table after "Each row in the source has the
# following schema"), written here as the guide writes it; `headers` is "(optional)" there: present
# with the `includeHeaders` option.
GUIDE_KAFKA_SCHEMA = [
    ("key", "binary"),
    ("value", "binary"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "long"),
    ("timestamp", "timestamp"),
    ("timestampType", "int"),
    ("headers (optional)", "array"),
]


def test_the_kafka_source_has_the_schema_the_integration_guide_documents():
    documented = [(name.removesuffix(" (optional)"), t) for name, t in GUIDE_KAFKA_SCHEMA]
    with_headers = [(c.name, parse_type(c.type)) for c in source_columns("kafka", headers=True)]
    assert [n for n, _ in with_headers] == [n for n, _ in documented]
    for (name, ours), (_, theirs) in zip(with_headers, documented):
        assert ours.kind == parse_type(theirs).kind if theirs != "array" else ours.kind == "array", name
    # the guide's "array" of headers: each a (key string, value binary) pair, as Kafka's headers are
    assert with_headers[-1][1] == parse_type("array<struct<key: string, value: binary>>")
    plain = [c.name for c in source_columns("kafka")]
    assert plain == [n for n, _ in documented if n != "headers"]  # without includeHeaders: no headers
    # the control: a mutated table (value as string, as a job casting it might think) is told apart
    mutated = dict(documented, value="string")
    assert [mutated[c.name] for c in source_columns("kafka")][1] != source_columns("kafka")[1].type


CONTRACT = textwrap.dedent("""\
    contract: kafka_clicks
    description: clicks as Kafka JSON -> count per page and 10-second window.
    sources:
      clicks: {kind: kafka, topic: shop.clicks, headers: true}
      lines: {kind: text}
    output:
      columns: "page string, clicks bigint"
    """)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    (tmp_path / "kafka_clicks.contract.yaml").write_text(CONTRACT)
    return tmp_path


def scenario(project, steps: str, name: str = "k.scenario.yaml"):
    path = project / name
    path.write_text("scenario: k\ndescription: kafka rows\ncontract: kafka_clicks\nsteps:\n"
                    + textwrap.indent(textwrap.dedent(steps), "  "))
    return path


def problems(path):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(path)
    return [str(p) for p in info.value.problems]


T0 = 1704067200000000  # 2024-01-01T00:00:00Z in microseconds


def test_a_kafka_row_becomes_a_record_with_offsets_per_partition_across_steps_and_restarts(project):
    path = scenario(project, """\
        - add:
            clicks:
              - {key: u1, value: {page: home, ts: "2024-01-01T00:00:01"}, headers: {trace: t1}}
              - {value: "not json {", partition: 1, timestamp: "00:00:09"}
              - {value: {base64: AAE=}, key: {base64: dTI=}, headers: [[a, x], [a, null], [b, {base64: AA==}]]}
        - process
        - restart
        - advance: 5s
        - add:
            clicks:
              - {value: [1, 2.5, "é"], partition: 1}
              - {value: null, partition: 0}
              - {value: 42}
        - process
        """)
    sc = load_scenario(path)
    first, second = sc.steps[0].rows["clicks"], sc.steps[4].rows["clicks"]
    assert first == (
        (b"u1", b'{"page":"home","ts":"2024-01-01T00:00:01"}', "shop.clicks", 0, 0, T0, 0, (("trace", b"t1"),)),
        (None, b"not json {", "shop.clicks", 1, 0, T0 + 9_000_000, 0, ()),
        (b"u2", b"\x00\x01", "shop.clicks", 0, 1, T0, 0, (("a", b"x"), ("a", None), ("b", b"\x00"))),
    )
    # offsets count on per partition after the restart; the default timestamp is the clock at the add
    assert second == (
        (None, '[1,2.5,"é"]'.encode(), "shop.clicks", 1, 1, T0 + 5_000_000, 0, ()),
        (None, None, "shop.clicks", 0, 2, T0 + 5_000_000, 0, ()),
        (None, b"42", "shop.clicks", 0, 3, T0 + 5_000_000, 0, ()),
    )
    assert [c.name for c in sc.sources["clicks"].columns][-1] == "headers"


def test_a_text_row_is_a_line_or_a_mapping_written_as_one_json_line(project):
    path = scenario(project, """\
        - add:
            lines: ["plain line", {page: home, n: 1}, null]
        - process
        """)
    assert load_scenario(path).steps[0].rows["lines"] == (("plain line",), ('{"page":"home","n":1}',), (None,))


def test_the_default_topic_is_the_sources_name_and_headers_are_left_out_unless_asked(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    (tmp_path / "plain.contract.yaml").write_text(textwrap.dedent("""\
        contract: plain
        description: d
        sources: {orders: {kind: kafka}}
        output: {columns: "n bigint"}
        """))
    path = tmp_path / "p.scenario.yaml"
    path.write_text(textwrap.dedent("""\
        scenario: p
        description: d
        contract: plain
        steps:
          - add: {orders: [{value: x}]}
          - process
        """))
    sc = load_scenario(path)
    assert sc.steps[0].rows["orders"] == ((None, b"x", "orders", 0, 0, T0, 0),)
    path.write_text(path.read_text().replace("{value: x}", "{value: x, headers: {a: b}}"))
    assert problems(path) == [f"{path}:5:31: kafka source 'orders': a kafka record has no key 'headers' (the source "
                              "reads no headers: say `headers: true` on the source) (keys: value, key, partition, "
                              "timestamp)"]


@pytest.mark.parametrize("row, place, message", [
    ('{value: {base64: "!!"}}', "7:28", "value: not valid base64"),
    ("{value: x, offset: 3}", "7:22", "a kafka record has no key 'offset'"),
    ("{value: x, partition: one}", "7:33", "`partition` is a whole number from 0, not 'one'"),
    ("{value: x, partition: -1}", "7:33", "`partition` is a whole number from 0, not -1"),
    ("{key: x}", "7:11", "a kafka record needs `value`"),
    ('"just text"', "7:11", "a kafka record is a mapping with `value`"),
    ("{value: x, headers: {k: 5}}", "7:35", "a header value is text, {base64: ...} or null, not an integer 5"),
    ("{value: x, headers: [[1, x]]}", "7:32", "a header key is text, not 1"),
    ("{value: x, headers: oops}", "7:31", "`headers` is a mapping {key: value} or a list of [key, value] pairs"),
    ('{value: x, timestamp: "nope"}', "7:33", "`timestamp`: cannot read timestamp 'nope'"),
    ("{value: {n: .nan}}", "7:19", "JSON has no NaN or infinity"),
])
def test_each_problem_in_a_kafka_row_is_said_at_its_place(project, row, place, message):
    path = scenario(project, f"""\
        - add:
            clicks:
              - {row}
        - process
        """)
    found = problems(path)
    assert len(found) == 1, found
    assert found[0].startswith(f"{path}:{place}: kafka source 'clicks': ") and message in found[0], found


def test_a_text_row_that_is_a_number_and_a_typed_row_that_is_text_are_problems(project, tmp_path):
    path = scenario(project, """\
        - add:
            lines: [12]
        - process
        """)
    assert problems(path) == [f"{path}:6:15: text source 'lines': a text row is a line of text, or a mapping or "
                              "list written as one JSON line, not an integer 12 (quote it)"]
    typed = tmp_path / "typed.scenario.yaml"
    typed.write_text(textwrap.dedent("""\
        scenario: t
        description: d
        contract: tumbling_count
        params: {window: 10s, watermark_delay: 0s}
        steps:
          - add: {events: ["a line"]}
          - process
        """))
    assert problems(typed) == [f"{typed}:6:20: a row of source 'events' is a list of values or a mapping of column "
                               "to value, not text"]


@pytest.mark.parametrize("source, place, message", [
    ("{kind: kafak}", "4:13", "a source's kind is one of rows, kafka, text, not 'kafak'; did you mean 'kafka'?"),
    ('{kind: kafka, columns: "a int"}', "4:20", "a kafka source has Spark's kafka columns"),
    ("{kind: text, topic: t}", "4:19", "`topic` is for a kafka source (`kind: kafka`), not a text source"),
    ('{columns: "a int", headers: true}', "4:25", "`headers` is for a kafka source"),
    ("{kind: kafka, topic: 7}", "4:27", "a kafka source's topic is a name, not 7"),
    ("{kind: kafka, event_time: ts}", "4:32", "event_time 'ts' is not a column of source 'x'"),
])
def test_each_problem_in_a_contracts_kafka_source_is_said_at_its_place(tmp_path, source, place, message):
    path = tmp_path / "bad.contract.yaml"
    path.write_text(f"contract: bad\ndescription: d\nsources:\n  x: {source}\noutput: {{columns: \"n int\"}}\n")
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    found = [str(p) for p in info.value.problems]
    assert len(found) == 1 and found[0].startswith(f"{path}:{place}: ") and message in found[0], found


def test_a_scenario_may_declare_a_kafka_source_but_not_change_its_kind(project):
    path = project / "s.scenario.yaml"
    path.write_text(textwrap.dedent("""\
        scenario: s
        description: d
        contract: kafka_clicks
        sources:
          clicks: {kind: kafka, topic: other, headers: true}
          lines: {kind: text}
        steps:
          - process
        """))
    found = problems(path)
    assert found == [f"{path}:5:11: source 'clicks' is kind kafka (topic 'shop.clicks', headers true) in contract "
                     "'kafka_clicks', not kind kafka (topic 'other', headers true)"]
    path.write_text(path.read_text().replace("topic: other", "topic: shop.clicks"))
    assert load_scenario(path).sources["clicks"].topic == "shop.clicks"


def test_the_model_predicts_nothing_for_a_kafka_source(project, capsys):
    """check-model says "not covered" naming the kafka source, and expect --write writes nothing."""
    from eventtime.cli import main

    path = scenario(project, """\
        - add: {clicks: [{value: {page: home}}]}
        - process
        - expect: {no_output: true}
        """)
    before = path.read_text()
    assert main(["check-model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "source 'clicks' is a kafka source: its event time is inside a payload" in out and "1 not covered" in out
    assert main(["expect", str(path), "--write"]) != 0
    captured = capsys.readouterr()
    assert "its event time is inside a payload" in captured.out + captured.err
    assert path.read_text() == before
