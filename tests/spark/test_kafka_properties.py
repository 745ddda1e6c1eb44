"""`no-query-dies` on records generated for a kafka source from its declared payload (`value:` in the
contract, docs/properties.md#kafka-sources): a job that parses the event time with a pattern that wants
milliseconds dies under ANSI on a time a producer writes without them; the failure is shrunk to a scenario
of at most 10 records that dies the same way run as an ordinary scenario; the job that parses the time in
its JSON schema holds on the same streams and passes the same file (the control). A job that reads a
record's headers dies the same way on a generated record without the header it takes with `element_at`; its
twin with `try_element_at` holds."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import load_scenario, run_scenario
from eventtime import spec as m
from eventtime.contractfile import load_contract_file
from eventtime.properties import check_properties
from eventtime.textreport import describe_failure

from tests.spark import jobs_kafka_properties as jobs

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: kafka_orders
    description: orders as Kafka JSON -> each order parsed, its event time from the payload's ts.
    sources:
      orders:
        kind: kafka
        value: {columns: "order_id string, amount double, ts timestamp", event_time: ts}
    params:
      out: {kind: path, conf: props.kafka.out, doc: the folder the job's batch function appends to}
    output:
      columns: "order_id string, amount double, ts timestamp"
      modes: [append]
    """)
FEW = {"derandomize": True, "database": None, "max_events": 6}
ANSI = {"spark.sql.ansi.enabled": "true"}


@pytest.fixture
def contract(tmp_path):
    (tmp_path / "kafka_orders.contract.yaml").write_text(CONTRACT)
    return load_contract_file(tmp_path / "kafka_orders.contract.yaml")


def test_an_ansi_fragile_timestamp_parse_dies_on_a_generated_record_and_is_shrunk(spark, contract, tmp_path):
    report = check_properties(contract, jobs.fragile_parse, session=spark, properties=["no-query-dies"],
                              max_examples=10, out_dir=tmp_path, conf=ANSI, **FEW)
    assert not report.held, report.describe()
    (p,) = report.properties
    assert p.counterexample is not None, report.describe()
    path = p.written or p.counterexample.write(tmp_path)
    text = path.read_text()
    assert "breaks the property 'no-query-dies'" in text.splitlines()[0] and "CANNOT_PARSE_TIMESTAMP" in text, text
    sc = load_scenario(str(path))
    records = sum(len(rows) for s in sc.steps if isinstance(s, m.AddStep) for rows in s.rows.values())
    assert 1 <= records <= 10, text
    result = run_scenario(sc, jobs.fragile_parse, session=spark, conf=ANSI)
    assert result.status == "error" and "CANNOT_PARSE_TIMESTAMP" in (result.reason or ""), describe_failure(result)
    control = run_scenario(sc, jobs.tolerant_parse, session=spark, conf=ANSI)
    assert control.status == "passed", describe_failure(control)


def test_a_tolerant_parse_holds_on_the_generated_records(spark, contract, tmp_path):
    report = check_properties(contract, jobs.tolerant_parse, session=spark, properties=["no-query-dies"],
                              max_examples=10, out_dir=tmp_path, conf=ANSI, **FEW)
    assert report.held, report.describe()
    (p,) = report.properties
    assert p.counterexample is None and p.held_on >= 5, report.describe()


HEADERS_CONTRACT = textwrap.dedent("""\
    contract: sourced_orders
    description: orders as Kafka JSON with headers -> each order with its `source` header.
    sources:
      orders:
        kind: kafka
        headers: true
        value: {columns: "order_id string, ts timestamp", event_time: ts}
        generate: {headers: {source: [web, app]}}
    output:
      columns: "order_id string, source string, ts timestamp"
      modes: [append]
    """)


def test_a_header_read_under_ansi_dies_on_a_generated_record_without_it(spark, tmp_path):
    (tmp_path / "sourced_orders.contract.yaml").write_text(HEADERS_CONTRACT)
    contract = load_contract_file(tmp_path / "sourced_orders.contract.yaml")
    report = check_properties(contract, jobs.header_first_source, session=spark, properties=["no-query-dies"],
                              max_examples=10, out_dir=tmp_path, conf=ANSI, **FEW)
    (p,) = report.properties
    assert p.counterexample is not None, report.describe()
    text = (p.written or p.counterexample.write(tmp_path)).read_text()
    assert "INVALID_ARRAY_INDEX" in text, text
    sc = load_scenario(str(p.written or p.counterexample.write(tmp_path)))
    result = run_scenario(sc, jobs.header_first_source, session=spark, conf=ANSI)
    assert result.status == "error" and "INVALID_ARRAY_INDEX" in (result.reason or ""), describe_failure(result)
    control = run_scenario(sc, jobs.header_source_or_null, session=spark, conf=ANSI)
    assert control.status == "passed", describe_failure(control)
    held = check_properties(contract, jobs.header_source_or_null, session=spark, properties=["no-query-dies"],
                            max_examples=10, conf=ANSI, **FEW)
    assert held.held and held.properties[0].held_on >= 5, held.describe()
