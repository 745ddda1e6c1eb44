"""Static inputs (docs/jobs.md, *Static inputs*): the tables and folders a job reads with `spark.read`,
written by the kit with a scenario's rows, read by the job through Spark's own readers; `- static:`
writes them anew, and what a running query then sees is what Spark shows it."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_of_queries as jobs

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: click_pages
    description: clicks enriched with a table of pages and a CSV of page owners
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts, from: {format: json, path: /data/clicks}}
    static:
      pages: {table: pages, columns: "page string, section string"}
      owners: {path: ref/owners.csv, format: csv, options: {header: true}, columns: "page string, owner string"}
    output: {columns: "page string, section string, owner string, ts timestamp"}
    """)

MOVED = textwrap.dedent("""\
    scenario: a-page-moves
    description: a page moves to another section and gets another owner; the job sees it once it starts again
    contract: click_pages
    static:
      pages: [[home, main], [cart, shop]]
      owners: [{page: home, owner: ann}]
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:20"}]}
      - process
      - expect: {rows: [[home, main, ann, "00:00:10"], [cart, shop, null, "00:00:20"]]}
      - stop
      - static: {pages: [[home, landing], [cart, shop]], owners: [[home, bob]]}
      - start
      - add: {clicks: [{page: home, ts: "00:00:40"}]}
      - process
      - expect: {rows: [[home, landing, bob, "00:00:40"]]}
    """)


@pytest.fixture
def scenario_of(contract_beside):
    return contract_beside(CONTRACT)


def test_the_job_reads_the_static_inputs_the_scenario_gives_and_replaces(spark, scenario_of):
    result = run_scenario(scenario_of(MOVED), jobs.enriched, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: the section before the replacement is not what the job reads after it
    stale = MOVED.replace("[[home, landing, bob,", "[[home, main, bob,")
    assert stale != MOVED
    control = run_scenario(scenario_of(stale), jobs.enriched, session=spark)
    assert [s.index for s in control.steps if s.status == "failed"] == [9], describe_failure(control)


def test_a_static_input_replaced_under_a_running_query_fails_as_in_spark_and_says_why(spark, scenario_of):
    running = MOVED.replace("  - stop\n", "").replace("  - start\n", "")
    assert running.count("static:") == 2
    result = run_scenario(scenario_of(running), jobs.enriched, session=spark)
    assert result.status == "error", describe_failure(result)
    text = describe_failure(result)
    assert "FILE_NOT_EXIST" in text or "FileNotFoundException" in text, text  # Spark's own error
    assert "the static inputs 'pages' (line 11), 'owners' (line 11) were written anew while the query ran" in text, text

