"""A job that starts several streaming queries runs them all under the kit (`eventtime.jobrun`, docs/jobs.md):
one clock, every query processed in each step, each query's own batches, watermark and output checked
by the name the user knows it by (`query:`), what each wrote read back; a restart restarts them all."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_of_queries as jobs
from tests.spark.test_jobs import _text

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: click_layers
    description: clicks read once -> raw records (a table), valid deduplicated records, clicks per page and minute.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    params:
      out: {kind: path, conf: jobs.test.out, doc: the folder the counts' batch function writes}
    queries:
      raw: {columns: "page string, ts timestamp"}
      valid: {columns: "page string, ts timestamp"}
      counts: {columns: "page string, window_start timestamp, clicks bigint"}
    """)

LAYERS = textwrap.dedent("""\
    scenario: three-queries-from-one-read
    description: Each query of the job sees every record; each is checked by its name.
    contract: click_layers
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: home, ts: "00:00:10"}, {page: bot, ts: "00:00:20"},
                       {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {query: valid, rows: [[home, "00:00:10"], [cart, "00:00:30"]], watermark: "00:00:30"}
      - expect: {query: counts, rows: [[home, "00:00:00", 2], [bot, "00:00:00", 1], [cart, "00:00:00", 1]],
                 watermark: "00:00:30"}
      - expect: {query: raw, table: raw_clicks, rows: [[home, "00:00:10"], [home, "00:00:10"], [bot, "00:00:20"],
                                                      [cart, "00:00:30"]]}
      - expect: {query: counts, written: out, rows: [[home, "00:00:00", 2], [bot, "00:00:00", 1], [cart, "00:00:00", 1]]}
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: home, ts: "00:01:40"}]}
      - restart
      - process
      - expect: {query: valid, rows: [[home, "00:01:40"]], watermark: "00:01:40"}
      - expect: {query: counts, rows: [[home, "00:00:00", 3], [home, "00:01:00", 1]]}  # its window is still open
      - expect: {query: counts, written: out, rows: [[home, "00:00:00", 3], [bot, "00:00:00", 1], [cart, "00:00:00", 1],
                                                    [home, "00:01:00", 1]]}
      - expect: {query: raw, table: raw_clicks, rows: [[home, "00:00:10"], [home, "00:00:10"], [bot, "00:00:20"],
                                                      [cart, "00:00:30"], [home, "00:00:10"], [home, "00:01:40"]]}
    """)


@pytest.fixture
def scenario_of(contract_beside):
    return contract_beside(CONTRACT)


def test_every_query_of_the_job_runs_and_each_is_checked_by_its_name(spark, scenario_of):
    result = run_scenario(scenario_of(LAYERS), jobs.layers, session=spark)
    assert result.status == "passed", describe_failure(result)
    queries = {b.query for s in result.steps for b in s.batches}
    assert queries == {"raw", "valid", "counts"}, queries


def test_a_wrong_expectation_of_one_query_fails_naming_that_step(spark, scenario_of):
    wrong = LAYERS.replace('- expect: {query: valid, rows: [[home, "00:01:40"]]', '- expect: {query: valid, rows: [[home, "00:01:41"]]')
    assert wrong != LAYERS
    result = run_scenario(scenario_of(wrong), jobs.layers, session=spark)
    assert result.status == "failed"
    failed = [s for s in result.steps if s.status == "failed"]
    assert [s.index for s in failed] == [10], describe_failure(result)


def test_each_query_keeps_its_own_rows_since_its_own_previous_expect(spark, scenario_of):
    # the counts' rows of the first batch are still there for an expect of counts after one of valid
    swapped = LAYERS.replace("watermark: \"00:00:30\"}\n  - expect: {query: counts",
                             "watermark: \"00:00:30\"}\n  - expect: {query: valid, no_output: true}\n"
                             "  - expect: {query: counts")
    assert swapped != LAYERS
    result = run_scenario(scenario_of(swapped), jobs.layers, session=spark)
    assert result.status == "passed", describe_failure(result)


# the same source, one output for whatever query a check looks at
ONE_OUTPUT = (CONTRACT.replace("contract: click_layers", "contract: two_tables").split("queries:")[0]
              + "output: {columns: \"page string, ts timestamp\"}\n")


def test_an_expect_must_say_which_query_when_there_are_several(spark, contract_beside):
    scenario = contract_beside(ONE_OUTPUT)(textwrap.dedent("""\
        scenario: unnamed
        description: two queries without names
        contract: two_tables
        steps:
          - add: {clicks: [{page: cart, ts: "00:00:10"}]}
          - process
          - expect: {table: cart_clicks, rows: [[cart, "00:00:10"]]}
          - expect: {rows: [[cart, "00:00:10"]]}
        """))
    result = run_scenario(scenario, jobs.unnamed, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert "the job started 2 queries ('all_clicks', 'cart_clicks'): say which one" in text, text
    assert result.steps[3].status == "passed", describe_failure(result)  # the table check before it


def test_a_job_that_starts_other_queries_on_another_call_is_refused(spark, contract_beside):
    one = textwrap.dedent("""\
        scenario: changing
        description: the job starts another query when it is called again at the restart
        contract: two_tables
        steps:
          - add: {clicks: [{page: cart, ts: "00:00:10"}]}
          - process
          - restart
          - process
        """)
    result = run_scenario(contract_beside(ONE_OUTPUT)(one), jobs.changing, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert "started the queries 'first', 'later' this time and 'first' at its first start" in text, text


def test_a_check_of_what_one_query_wrote_closes_only_that_querys_rows(spark, scenario_of):
    # the counts' folder checked first: it closes the counts' rows of the step, not the valid query's
    written = ('  - expect: {query: counts, written: out, rows: [[home, "00:00:00", 2], [bot, "00:00:00", 1], '
               '[cart, "00:00:00", 1]]}\n')
    counts = ('{query: counts, rows: [[home, "00:00:00", 2], [bot, "00:00:00", 1], [cart, "00:00:00", 1]],\n'
              '             watermark')
    assert written in LAYERS and counts in LAYERS
    moved = (LAYERS.replace(written, "", 1).replace("  - process\n", "  - process\n" + written, 1)
             .replace(counts, "{query: counts, no_output: true, watermark", 1))
    result = run_scenario(scenario_of(moved), jobs.layers, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: the same check naming the valid query closes the valid query's rows instead
    closing = moved.replace("  - expect: {query: counts, written: out,", "  - expect: {query: valid, written: out, "
                            "columns: [page],", 1).replace(
        'rows: [[home, "00:00:00", 2], [bot, "00:00:00", 1], [cart, "00:00:00", 1]]}\n  - expect: {query: valid',
        "rows: [[home], [bot], [cart]]}\n  - expect: {query: valid", 1)
    assert closing.count("columns: [page]") == 1 and "rows: [[home], [bot], [cart]]" in closing
    control = run_scenario(scenario_of(closing), jobs.layers, session=spark)
    assert control.status == "failed", describe_failure(control)
    assert [s.index for s in control.steps if s.status == "failed"][:1] == [4], describe_failure(control)


ONE_QUERY = textwrap.dedent("""\
    contract: plain_clicks
    description: clicks passed through, by a pipeline (a function of its inputs, one query).
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts}
    output:
      columns: "page string, ts timestamp"
    """)


def test_a_query_step_on_a_pipeline_of_one_query_says_it_runs_one(spark, contract_beside):
    # `query:` names one query of a job that starts several; a pipeline's run has one query, and the step
    # says so (before `runs` meant one thing, every run looked like a job's queries and the step met
    # StreamRun.stop's own TypeError about `only`)
    scenario = contract_beside(ONE_QUERY)(textwrap.dedent("""\
        scenario: one-query
        description: a pipeline's run stopped by a query's name
        contract: plain_clicks
        steps:
          - add: {clicks: [{page: cart, ts: "00:00:10"}]}
          - process
          - expect: {rows: [[cart, "00:00:10"]]}
          - stop: {query: raw}
        """))
    result = run_scenario(scenario, lambda clicks: clicks, session=spark)
    assert result.status == "error", describe_failure(result)
    text = _text(result)
    assert "`query: raw` names one query of a job that starts several; this pipeline runs one query" in text, text
    assert "'only'" not in text, text
    assert result.steps[2].status == "passed", describe_failure(result)
