"""Queries of one job chained through a folder or a table (docs/jobs.md, *Every query of the job*): gold
reads as a stream what silver writes, through Spark's own file source over silver's file sink, in the
same step; a re-run batch is not written twice, so gold does not count it twice."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_of_queries as jobs
from tests.spark.test_jobs import _line, _text

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: click_chain
    description: clicks -> silver (valid, deduplicated) -> gold (clicks per page and minute, read from silver).
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    queries:
      data/silver/clicks: {columns: "page string, ts timestamp"}
      gold: {columns: "page string, window_start timestamp, clicks bigint", key: [page, window_start]}
    """)

FOLDER = textwrap.dedent("""\
    scenario: silver-folder-read-by-gold
    description: gold reads silver's folder in the step silver writes it, and closes a minute on its own watermark.
    contract: click_chain
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: home, ts: "00:00:10"}, {page: bot, ts: "00:00:20"},
                       {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: data/silver/clicks, rows: [[home, "00:00:10"], [cart, "00:00:30"]]}
      - expect: {query: gold, no_output: true, watermark: "00:00:30"}
      - add: {clicks: [{page: home, ts: "00:01:40"}]}
      - process
      - expect: {query: gold, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]], watermark: "00:01:40"}
      - add: {clicks: [{page: cart, ts: "00:02:30"}]}
      - process
      - expect: {query: gold, rows: [[home, "00:01:00", 1]], watermark: "00:02:30"}
      - restart: {rerun_last_batch: true}
      - process
      # silver's file sink skips the batch it already wrote; gold runs its last batch again and its
      # sink (memory: not idempotent) gets the minute it closes once more
      - expect: {written: data/silver/clicks, rows: [[home, "00:00:10"], [cart, "00:00:30"], [home, "00:01:40"],
                                                     [cart, "00:02:30"]]}
      - expect: {query: gold, rows: [[home, "00:01:00", 1]], watermark: "00:02:30"}
    """)


@pytest.fixture
def scenario_of(contract_beside):
    return contract_beside(CONTRACT)


def test_gold_reads_the_folder_silver_writes_in_the_same_step(spark, scenario_of):
    result = run_scenario(scenario_of(FOLDER), jobs.through_a_folder, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert {b.query for s in result.steps for b in s.batches} == {"data/silver/clicks", "gold"}


def test_a_wrong_count_in_gold_fails(spark, scenario_of):
    wrong = FOLDER.replace('[cart, "00:00:00", 1]], watermark: "00:01:40"', '[cart, "00:00:00", 2]], '
                           'watermark: "00:01:40"')
    assert wrong != FOLDER
    result = run_scenario(scenario_of(wrong), jobs.through_a_folder, session=spark)
    assert result.status == "failed", describe_failure(result)
    assert [s.index for s in result.steps if s.status == "failed"] == [7], describe_failure(result)


TABLE_CONTRACT = (CONTRACT.replace("contract: click_chain", "contract: click_table_chain")
                  .replace("data/silver/clicks: {", "silver_clicks: {")
                  .replace('gold: {columns: "page string, window_start timestamp, clicks bigint", key: [page, window_start]}',
                           'gold: {columns: "page string, count bigint", key: [page]}'))

TABLE = textwrap.dedent("""\
    scenario: silver-table-read-by-gold
    description: gold reads the table silver writes; a re-run batch is skipped by the table's file sink, as in Spark.
    contract: click_table_chain
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: bot, ts: "00:00:20"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {query: gold, rows: [[home, 1], [cart, 1]]}
      - add: {clicks: [{page: home, ts: "00:01:40"}]}
      - process
      - expect: {query: gold, rows: [[home, 2], [cart, 1]]}
      - restart: {rerun_last_batch: true}
      - process
      # silver's table skips the batch it already wrote, so gold's re-run batch counts the same rows
      - expect: {table: silver_clicks, rows: [[home, "00:00:10"], [cart, "00:00:30"], [home, "00:01:40"]]}
      - expect: {query: gold, last_batch: [[home, 2], [cart, 1]]}
    """)


def test_gold_reads_the_table_silver_writes_and_a_rerun_batch_is_not_written_twice(spark, contract_beside):
    result = run_scenario(contract_beside(TABLE_CONTRACT)(TABLE), jobs.through_a_table, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: the table holding the re-run batch twice (what appending each batch gave) is not what Spark writes
    twice = TABLE.replace('[home, "00:01:40"]]}', '[home, "00:01:40"], [home, "00:01:40"]]}')
    assert twice != TABLE
    control = run_scenario(contract_beside(TABLE_CONTRACT)(twice), jobs.through_a_table, session=spark)
    assert [s.index for s in control.steps if s.status == "failed"] == [9], describe_failure(control)


ONE_STEP = textwrap.dedent("""\
    scenario: one-step
    description: one batch
    contract: click_chain
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}]}
      - process
    """)


# one query, no chain: the job's only query checked against `output`
PLAIN = CONTRACT.split("queries:")[0].replace("click_chain", "click_plain") + 'output: {columns: "page string, ts timestamp"}\n'


@pytest.mark.parametrize("job, marker, words", [
    (jobs.reads_before_it_is_written, "read before written",
     "no query the job started before this reader writes 'data/silver/clicks'"),
    (jobs.table_of_a_format_without_jars, "delta", "toTable('clicks_delta') creates a delta table, and Spark could not"),
    (jobs.reads_a_database, "jdbc read", "jdbc(...) reads from a database over JDBC, which the kit cannot stand in for"),
    (jobs.writes_a_database, "jdbc write", "save(...) writes to a database over JDBC, which the kit cannot stand in for"),
], ids=["reader-before-writer", "table-format-without-jars", "database-read", "database-write"])
def test_what_spark_or_the_kit_cannot_do_is_refused_at_the_jobs_line(spark, contract_beside, job, marker, words):
    database = "jdbc" in marker
    scenario = contract_beside(PLAIN if database else CONTRACT)(ONE_STEP.replace("click_chain", "click_plain")
                                                                if database else ONE_STEP)
    result = run_scenario(scenario, job, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert _line(marker, jobs) in text and words in text, text

ONE_STOPPED = textwrap.dedent("""\
    scenario: gold-stopped-alone
    description: gold stops while silver runs on; started again, it reads what silver wrote meanwhile.
    contract: click_chain
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}]}
      - process
      - stop: {query: gold}
      - add: {clicks: [{page: cart, ts: "00:01:30"}]}
      - process
      - expect: {written: data/silver/clicks, rows: [[home, "00:00:10"], [cart, "00:01:30"]]}
      - expect: {query: gold, no_output: true, watermark: "00:00:10"}
      - start: {query: gold}
      - process
      - expect: {query: gold, rows: [[home, "00:00:00", 1]], watermark: "00:01:30"}
    """)


def test_one_query_stops_and_starts_alone_while_the_others_run_on(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_STOPPED), jobs.through_a_folder, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: without its start, gold reads nothing of what silver wrote meanwhile
    control = run_scenario(scenario_of(ONE_STOPPED.replace("  - start: {query: gold}\n", "")), jobs.through_a_folder,
                           session=spark)
    assert result.status != control.status and control.status == "failed", describe_failure(control)


def test_a_query_the_job_does_not_start_cannot_be_stopped_alone(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_STOPPED.replace("stop: {query: gold}", "stop: {query: golden}")),
                          jobs.through_a_folder, session=spark)
    assert result.status == "error"
    assert ("the job started no query named 'golden' (did you mean 'gold'?); it started 'data/silver/clicks', "
            "'gold'") in _text(result)


def test_a_table_chain_restarted_in_a_new_session_keeps_its_table(spark, contract_beside):
    # a new session (a restarted driver) works in the scenario's database: the table silver wrote is there
    new = TABLE.replace("restart: {rerun_last_batch: true}", "restart: {session: new}")
    assert new != TABLE
    result = run_scenario(contract_beside(TABLE_CONTRACT)(new), jobs.through_a_table, session=spark)
    assert result.status == "passed", describe_failure(result)
