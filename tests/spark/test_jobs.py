"""A pipeline written as a job runs unchanged under the harness (`eventtime.jobs`, docs/jobs.md).

The jobs in `jobs_under_test.py` read with `spark.readStream...load()` and write with `foreachBatch` or
`toTable`, set their own checkpoint, trigger and query name; a contract source's `from:` stands in for
the reader. The job's batch function runs for real in every micro-batch and what it wrote is checked
after a step; a restart that re-runs the last batch shows the idempotent job passing and the appending
one failing. Each substitution error names the line of the job's code that made the call.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from eventtime import load_scenario, run_scenario
from eventtime.harness.jobio import shown_file
from eventtime.textreport import describe_failure

from tests.spark import jobs_under_test as jobs

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: page_counts
    description: clicks read from JSON files -> clicks per page and 1-minute window, written by the job.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    params:
      out: {kind: path, conf: jobs.test.out, doc: the folder the job's batch function writes}
    output:
      columns: "page string, window_start timestamp, clicks bigint"
      modes: [update, append]
    """)

WRITES = textwrap.dedent("""\
    scenario: job-writes-its-partitions
    description: The job's foreachBatch overwrites the page partitions each batch touches.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: home, ts: "00:00:20"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {rows: [[home, "00:00:00", 2], [cart, "00:00:00", 1]]}
      - expect: {written: out, rows: [[home, "00:00:00", 2], [cart, "00:00:00", 1]]}
      - add: {clicks: [{page: home, ts: "00:00:40"}]}
      - restart
      - process
      - expect: {rows: [[home, "00:00:00", 3]]}
      - expect: {written: out, where: {page: home}, rows: [[home, "00:00:00", 3]]}
      - expect: {written: out, rows: [[home, "00:00:00", 3], [cart, "00:00:00", 1]]}
    """)

RERUN = textwrap.dedent("""\
    scenario: job-batch-runs-again-after-a-crash
    description: A crash after the last batch wrote and before it committed runs it again; the table is the same.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
      - restart: {rerun_last_batch: true}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
    """)

TABLE = textwrap.dedent("""\
    scenario: job-main-writes-a-table
    description: main(spark) starts its query with toTable and waits on it; windows reach the table once closed.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {table: page_counts, rows: []}
      - add: {clicks: [{page: home, ts: "00:01:10"}]}
      - process
      - expect: {table: page_counts, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
    """)

ONE_BATCH = textwrap.dedent("""\
    scenario: job-one-batch
    description: one batch
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
    """)


@pytest.fixture
def scenario_of(tmp_path):
    (tmp_path / "page_counts.contract.yaml").write_text(CONTRACT)

    def load(text: str):
        path = tmp_path / "s.scenario.yaml"
        path.write_text(text)
        return load_scenario(str(path))
    return load


def _line(marker: str, module=jobs) -> str:
    """`file:line` of the line of `module` (jobs_under_test.py) marked `# <- marker`."""
    path = Path(module.__file__)
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# <- {marker}"):
            return f"{shown_file(str(path))}:{number}"
    raise AssertionError(f"no line marked {marker}")


def _text(result) -> str:
    return "\n".join([result.reason or ""] + [f"{s.message or ''} " + " ".join(f.message for f in s.failures)
                                              for s in result.steps])


def test_a_job_runs_unchanged_and_its_writes_are_checked(spark, scenario_of):
    result = run_scenario(scenario_of(WRITES), jobs.build, session=spark)
    assert result.status == "passed", describe_failure(result)


def test_a_wrong_expectation_of_what_the_job_wrote_fails(spark, scenario_of):
    result = run_scenario(scenario_of(WRITES.replace('rows: [[home, "00:00:00", 3], [cart, "00:00:00", 1]]',
                                                     'rows: [[home, "00:00:00", 3], [cart, "00:00:00", 2]]')),
                          jobs.build, session=spark)
    assert result.status == "failed"
    failed = [s for s in result.steps if s.status == "failed"]
    assert [s.index for s in failed] == [10], describe_failure(result)
    text = describe_failure(result)
    assert "the rows written to 'out' (parquet): 1 missing, 1 unexpected" in text, text
    assert "watermark now: 00:00:40" in text, text  # the query's, not a stand-in's


def test_an_idempotent_batch_function_survives_its_batch_running_again(spark, scenario_of):
    result = run_scenario(scenario_of(RERUN), jobs.build, session=spark)
    assert result.status == "passed", describe_failure(result)
    restart = next(s for s in result.steps if s.kind == "restart")
    assert [b.batch_id for b in restart.batches + result.steps[5].batches][:1] == [0], "batch 0 ran again"


def test_an_appending_batch_function_fails_when_its_batch_runs_again(spark, scenario_of):
    result = run_scenario(scenario_of(RERUN), jobs.build_appending, session=spark)
    assert result.status == "failed", describe_failure(result)
    failed = [s for s in result.steps if s.status == "failed"]
    assert [s.index for s in failed] == [6]
    assert re.search(r"unexpected.*home", describe_failure(result), re.S | re.I)


def test_a_main_that_starts_its_query_and_waits_writes_its_table(spark, scenario_of):
    result = run_scenario(scenario_of(TABLE), jobs.main, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert "page_counts" not in [t.name for t in spark.catalog.listTables()], "the table stayed in its scenario"


FILES = textwrap.dedent("""\
    scenario: job-file-sink
    description: Spark's parquet file sink writes each batch to the run's own folder.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: out, rows: []}
      - add: {clicks: [{page: home, ts: "00:01:10"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
    """)


def test_a_file_sink_writes_each_batch_to_the_runs_own_folder(spark, scenario_of):
    result = run_scenario(scenario_of(FILES), jobs.file_sink, session=spark)
    assert result.status == "passed", describe_failure(result)


@pytest.mark.parametrize("job, marker, words", [
    (jobs.unmatched_reader, "unmatched", "matches no source of contract 'page_counts'"),
    (jobs.file_age, "option", "option maxFileAge='1h'"),
    (jobs.connector_sink, "sink", "sink format 'org.apache.spark.sql.cassandra' cannot be observed"),
    (jobs.file_sink_outside, "outside", "the parquet sink's path '../out' would leave the scenario's run folder"),
], ids=["unmatched-reader", "unsupported-option", "unobservable-sink", "file-sink-outside"])
def test_each_substitution_error_names_the_jobs_line(spark, scenario_of, job, marker, words):
    result = run_scenario(scenario_of(ONE_BATCH), job, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert _line(marker) in text, text
    assert words in text, text


def test_an_option_that_sizes_production_batches_is_noted_at_its_line_not_refused(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_BATCH), jobs.batch_limit, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert [n for n in result.notes if _line("batch size") in n and "maxFilesPerTrigger='1'" in n], result.notes


def test_a_batch_function_that_raises_names_the_batch_and_the_jobs_frames(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_BATCH), jobs.raising, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert "raised ValueError in batch 0: no carts here" in text, text
    assert f'File "{jobs.__file__}", line {_line("raise").rpartition(":")[2]}' in text, text
    assert "py4j" not in text and "eventtime" not in text.split("no carts here", 1)[1], text


CLOSES = textwrap.dedent("""\
    scenario: a-check-of-what-was-written-closes-since-the-previous-expect
    description: An expect of what the job wrote closes "since the previous expect", like any expect.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
      - expect: {no_output: true}
    """)


def test_an_expect_of_what_the_job_wrote_closes_since_the_previous_expect(spark, scenario_of):
    result = run_scenario(scenario_of(CLOSES), jobs.build, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: without the written check in between, the batch's rows are there to see
    control = run_scenario(scenario_of(CLOSES.replace("  - expect: {written: out, rows: [[home, \"00:00:00\", 1], "
                                                      "[cart, \"00:00:00\", 1]]}\n", "")), jobs.build, session=spark)
    assert control.status == "failed", describe_failure(control)
