"""Properties on streams generated for a text source (JSON lines, from its declared `value:`) and a static
input (a customers table drawn once per stream, keys overlapping the orders'), docs/properties.md, *Text
sources* and *Static inputs*: a parse written for `Z` dies on a generated time it was not written for (under
ANSI, Spark 4.3.0 refuses `+02:00`, microseconds and no zone, takes `.000Z`), and the stream it dies on is
written as a scenario file that dies the same way (the tolerant parse passes it: the control); an inner stream-static join
breaks a conservation the left join keeps (the control); `stream-equals-batch` on a transform joining a static
table is judged with the table written for the batch run too (the control: without it no stream is judged).
Derandomized, no database, few examples of at most 5 events, not shrunk (shrinking is Spark runs by the
hundred, and test_properties.py shows it): the first stream a property breaks on is its counterexample."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import load_scenario, run_scenario
from eventtime import spec as m
from eventtime.contractfile import load_contract_file
from eventtime.properties import check_properties
from eventtime.textreport import describe_failure

from tests.spark import jobs_text_static as jobs

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: order_lines
    description: orders as JSON lines, each with its customer's region from a table.
    sources:
      orders:
        kind: text
        from: {path: in/orders}
        value: {columns: "order_id string, customer string, amount double, ts timestamp", event_time: ts}
    static:
      customers: {table: customers, columns: "customer string, region string"}
    params:
      out: {kind: path, conf: props.lines.out, doc: the folder the job's batch function appends to}
    output:
      columns: "order_id string, customer string, region string, amount double, ts timestamp"
      modes: [append]
    invariants:
      every_order_once: {conserve: {from: orders, into: [out], count: "=="}}
    """)
FEW = {"derandomize": True, "database": None, "max_events": 5, "shrink": False,
       "pools": {"customer": ["c1", "c2", "c3"]}}
ANSI = {"spark.sql.ansi.enabled": "true"}


@pytest.fixture
def contract(tmp_path):
    (tmp_path / "order_lines.contract.yaml").write_text(CONTRACT)
    return load_contract_file(tmp_path / "order_lines.contract.yaml")


def _lines(sc: m.Scenario) -> int:
    return sum(len(rows) for s in sc.steps if isinstance(s, m.AddStep) for rows in s.rows.values())


def test_a_parse_for_z_only_dies_on_a_generated_time_written_as_a_file_that_dies_the_same_way(spark, contract, tmp_path):
    report = check_properties(contract, jobs.zulu_only_parse, session=spark, properties=["no-query-dies"],
                              max_examples=10, out_dir=tmp_path, conf=ANSI, **FEW)
    (p,) = report.properties
    assert not report.held and p.counterexample is not None, report.describe()
    path = p.written or p.counterexample.write(tmp_path)
    text = path.read_text()
    assert "CANNOT_PARSE_TIMESTAMP" in text and "static:" in text, text
    sc = load_scenario(str(path))
    assert 1 <= _lines(sc) <= 10, text
    result = run_scenario(sc, jobs.zulu_only_parse, session=spark, conf=ANSI)
    assert result.status == "error" and "CANNOT_PARSE_TIMESTAMP" in (result.reason or ""), describe_failure(result)
    control = run_scenario(sc, jobs.left_join, session=spark, conf=ANSI)
    assert control.status == "passed", describe_failure(control)


def test_an_inner_join_loses_orders_the_conservation_keeps(spark, contract, tmp_path):
    broken = check_properties(contract, jobs.inner_join, session=spark, properties=["invariants"],
                              max_examples=10, out_dir=tmp_path, conf=ANSI, **FEW)
    (p,) = broken.properties
    assert not broken.held and p.counterexample is not None, broken.describe()
    held = check_properties(contract, jobs.left_join, session=spark, properties=["invariants", "no-query-dies"],
                            max_examples=8, out_dir=tmp_path, conf=ANSI, **FEW)
    assert held.held and all(q.held_on >= 4 for q in held.properties), held.describe()


PAGES_CONTRACT = textwrap.dedent("""\
    contract: click_sections
    description: clicks, each with its page's section from a table.
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts}
    static:
      pages: {table: pages, columns: "page string, section string"}
    output:
      columns: "page string, section string, ts timestamp"
      modes: [append]
    """)


def test_stream_equals_batch_writes_the_static_table_for_the_batch_run_too(spark, tmp_path, monkeypatch):
    from eventtime import streambatch

    (tmp_path / "click_sections.contract.yaml").write_text(PAGES_CONTRACT)
    contract = load_contract_file(tmp_path / "click_sections.contract.yaml")
    few = {**FEW, "pools": {"page": ["a", "b"]}}
    report = check_properties(contract, jobs.with_sections, session=spark, properties=["stream-equals-batch"],
                              max_examples=5, out_dir=tmp_path, **few)
    (p,) = report.properties
    assert report.held and p.held_on >= 3, report.describe()
    # the control: the batch run without the static table raises (no table `pages`), so nothing is judged
    monkeypatch.setattr(streambatch._StaticPlace, "enter", lambda self: None)
    bare = check_properties(contract, jobs.with_sections, session=spark, properties=["stream-equals-batch"],
                            max_examples=5, out_dir=tmp_path, **few)
    (q,) = bare.properties
    assert q.held_on == 0 and any("raised on batch" in why for why in q.not_judged), bare.describe()
