"""`expect: {schema: DDL}` without Spark: the DDL read at its place, each difference named, and the
model saying it does not predict a schema.

The judge is fed schemas as the runner records them from a DataFrame (name, Spark simple type,
nullable); each kind of difference has a case that must be named, and the identical schema none.
"""
from __future__ import annotations

import textwrap

import pytest

from eventtime.judge import schema_differences
from eventtime.loader import ScenarioInvalid, load_scenario

SCENARIO = textwrap.dedent("""\
    scenario: schema
    description: The output schema, names in order, types, NOT NULL where asked.
    contract: tumbling_count
    params: {window: 10 seconds, watermark_delay: 0 seconds}
    steps:
      - add: {events: [[a, "00:00:01"]]}
      - process
      - expect:
          schema: "key string, window_start timestamp, window_end timestamp, count bigint NOT NULL"
    """)

SPARK = [("key", "string", True), ("window_start", "timestamp", True), ("window_end", "timestamp", True),
         ("count", "bigint", False)]


def load(tmp_path, text):
    path = tmp_path / "s.scenario.yaml"
    path.write_text(text)
    return path, load_scenario(path)


def test_the_schema_is_read_with_types_as_the_kit_writes_them_and_not_null(tmp_path):
    _, sc = load(tmp_path, SCENARIO)
    check = sc.steps[-1].schema
    assert check.columns == (("key", "string", False), ("window_start", "timestamp", False),
                             ("window_end", "timestamp", False), ("count", "long", True))
    assert (check.where.line, check.where.column) == (9, 15)


@pytest.mark.parametrize("schema, message", [
    ('"key strin, ts timestamp"', "schema: column 'key': unknown type 'strin'; did you mean 'string'?"),
    ('"key string, key long"', "schema: column 'key' appears twice"),
    ('"key"', "schema: 'key' is not 'name type'"),
    ('"n decimal(40,2) NOT NULL"', "schema: column 'n': decimal(40,2)"),
])
def test_a_schema_that_does_not_read_is_an_error_at_its_place(tmp_path, schema, message):
    text = SCENARIO.replace('"key string, window_start timestamp, window_end timestamp, count bigint NOT NULL"',
                            schema)
    path = tmp_path / "s.scenario.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(path)
    found = [str(p) for p in info.value.problems]
    assert len(found) == 1 and found[0].startswith(f"{path}:9:15: {message}"), found


def expected(tmp_path):
    return load(tmp_path, SCENARIO)[1].steps[-1].schema.columns


def test_the_same_schema_has_no_difference_and_nullability_is_checked_only_where_asked(tmp_path):
    want = expected(tmp_path)
    assert schema_differences(want, SPARK) == []
    # a NOT NULL column the DDL does not mark NOT NULL is fine (nullability only where asked)
    assert schema_differences(want, [(n, t, False) for n, t, _ in SPARK]) == []


@pytest.mark.parametrize("actual, difference", [
    ([c for c in SPARK if c[0] != "window_end"], "column 'window_end' (timestamp) is missing"),
    (SPARK + [("debug", "int", True)], "column 'debug' (int) is not expected"),
    ([c if c[0] != "count" else ("count", "int", False) for c in SPARK], "column 'count' is int, expected long"),
    ([c if c[0] != "count" else ("count", "bigint", True) for c in SPARK],
     "column 'count' is nullable, expected NOT NULL"),
    ([SPARK[1], SPARK[0], SPARK[2], SPARK[3]],
     "columns are in the order window_start, key, window_end, count, expected key, window_start, window_end, count"),
])
def test_each_difference_is_named(tmp_path, actual, difference):
    assert schema_differences(expected(tmp_path), actual) == [difference]


def test_nested_types_compare_by_the_kits_name_of_the_type():
    want = (("window", "struct<start:timestamp,end:timestamp>", False), ("revenue", "decimal(12,2)", False))
    spark = [("window", "struct<start:timestamp,end:timestamp>", True), ("revenue", "decimal(12,2)", True)]
    assert schema_differences(want, spark) == []
    assert schema_differences(want, [spark[0], ("revenue", "decimal(22,2)", True)]) == [
        "column 'revenue' is decimal(22,2), expected decimal(12,2)"]


def test_the_model_does_not_predict_a_schema(tmp_path, capsys):
    from eventtime.cli import main

    path, _ = load(tmp_path, SCENARIO)
    assert main(["check-model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "the model does not predict a pipeline's output schema" in out and "1 not covered" in out
