"""`written:` reads a folder back as the job wrote it (docs/jobs.md, *Checking what the job wrote*).

Spark's CSV sink writes no header by default, so a folder read with a header loses its first row: a
one-row file read as no rows passed `rows: []` (a false green). A partitioned folder's values are text
in its folder names, which Spark's reader types by inference (`date=2024-01-01` a date, `hour=10` an
int). The kit now reads with the writer's format, options and partitioning, in the written columns'
types, and cross-checks what it read against the rows it handed the sink: a disagreement is the kit's
error. The controls run the same scenarios with the kit's earlier reading.
"""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime import written as kit_written
from eventtime.harness.jobio import shown_file
from eventtime.textreport import describe_failure

from tests.spark import jobs_sinks as jobs

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: click_files
    description: clicks read from JSON files, written one row per click by the job's file sink.
    sources:
      clicks:
        columns: "page string, ts timestamp, amount double"
        from: {format: json, path: /data/clicks}
    output:
      columns: "page string, date string, hour string, ts timestamp, amount double"
      modes: [append]
    """)

# Three batches: one row (a header reader takes it for the names), then two, one with a separator and
# a quote in its text and a null.
WRITTEN = textwrap.dedent("""\
    scenario: file-sink-read-back
    description: What the job's file sink wrote is read back as it was written.
    contract: click_files
    steps:
      - add: {clicks: [{page: home, ts: "2024-01-01T10:00:10Z", amount: 1.5}]}
      - process
      - expect: {written: WHERE, rows: [[home, "2024-01-01", "10", "2024-01-01T10:00:10Z", 1.5]]}
      - add: {clicks: [{page: "a,b;c|d \\"q\\"", ts: "2024-01-01T11:30:00Z", amount: null},
                       {page: cart, ts: "2024-01-02T09:00:00.250Z", amount: 3.0}]}
      - process
      - expect:
          written: WHERE
          rows:
            - [home, "2024-01-01", "10", "2024-01-01T10:00:10Z", 1.5]
            - ["a,b;c|d \\"q\\"", "2024-01-01", "11", "2024-01-01T11:30:00Z", null]
            - [cart, "2024-01-02", "09", "2024-01-02T09:00:00.250Z", 3.0]
    """)

# A row written, `rows: []` expected: must fail.
NONE_EXPECTED = textwrap.dedent("""\
    scenario: file-sink-one-row
    description: One row written; an expectation of none must fail.
    contract: click_files
    steps:
      - add: {clicks: [{page: home, ts: "2024-01-01T10:00:10Z", amount: 1.5}]}
      - process
      - expect: {written: data/out, rows: []}
    """)

SINKS = {
    "csv": jobs.file_sink("csv"),
    "csv-header": jobs.file_sink("csv", header="true"),
    "csv-semicolon-header-gzip": jobs.file_sink("csv", sep=";", header="true", compression="gzip"),
    "csv-partitioned": jobs.file_sink("csv", partitioned=True),
    "csv-header-partitioned": jobs.file_sink("csv", partitioned=True, header="true"),
    "json": jobs.file_sink("json"),
    "json-partitioned": jobs.file_sink("json", partitioned=True),
    "json-timestamp-format": jobs.file_sink("json", timestampFormat="yyyy-MM-dd HH:mm:ss.SSS"),
    "parquet": jobs.file_sink("parquet"),
    "parquet-partitioned": jobs.file_sink("parquet", partitioned=True),
    "parquet-snappy-partitioned": jobs.file_sink("parquet", partitioned=True, compression="snappy"),
    "orc-partitioned": jobs.file_sink("orc", partitioned=True),
}


@pytest.fixture
def scenario_of(contract_beside):
    load = contract_beside(CONTRACT)
    return lambda text, where="data/out": load(text.replace("WHERE", where))


def _old_reading(spark, folder, fmt, how, declared):
    """The kit's earlier reading (the control): the format alone, CSV with a header and inferred types,
    partition columns typed by inference."""
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.load(folder)


@pytest.mark.parametrize("sink", list(SINKS))
def test_a_file_sinks_folder_reads_back_as_the_rows_handed_to_it(spark, scenario_of, sink):
    result = run_scenario(scenario_of(WRITTEN), SINKS[sink], session=spark)
    assert result.status == "passed", describe_failure(result)
    assert [s.status for s in result.steps if s.kind == "expect"] == ["passed", "passed"]


@pytest.mark.parametrize("sink", ["csv", "csv-partitioned", "json", "parquet-partitioned"])
def test_one_row_written_fails_an_expectation_of_none(spark, scenario_of, sink):
    result = run_scenario(scenario_of(NONE_EXPECTED), SINKS[sink], session=spark)
    assert result.status == "failed", describe_failure(result)
    assert "1 unexpected" in describe_failure(result), describe_failure(result)


def test_control_the_old_reading_passes_rows_none_on_a_one_row_csv(spark, scenario_of, monkeypatch):
    monkeypatch.setattr(kit_written, "read_folder", _old_reading)
    monkeypatch.setattr(kit_written, "cross_check", lambda *a: None)
    result = run_scenario(scenario_of(NONE_EXPECTED), SINKS["csv"], session=spark)
    assert result.status == "passed", describe_failure(result)  # the false green the new reading removes


@pytest.mark.parametrize("sink", ["csv", "parquet-partitioned", "json-partitioned"])
def test_control_the_old_reading_fails_rows_that_were_written(spark, scenario_of, monkeypatch, sink):
    monkeypatch.setattr(kit_written, "read_folder", _old_reading)
    monkeypatch.setattr(kit_written, "cross_check", lambda *a: None)
    result = run_scenario(scenario_of(WRITTEN), SINKS[sink], session=spark)
    assert result.status in ("failed", "error"), describe_failure(result)


def test_a_misreading_of_the_folder_is_the_kits_error_not_a_verdict(spark, scenario_of, monkeypatch):
    """The cross-check: the old reading with the new cross-check is caught as the kit's error."""
    monkeypatch.setattr(kit_written, "read_folder", _old_reading)
    result = run_scenario(scenario_of(NONE_EXPECTED), SINKS["csv"], session=spark)
    assert result.status == "error", describe_failure(result)
    step = next(s for s in result.steps if s.kind == "expect")
    assert step.status == "error" and "the kit's error in reading the folder back" in step.message, step.message
    assert "handed the job's csv sink 1 row(s)" in step.message, step.message


def test_a_batch_write_is_read_back_with_its_own_options_and_partitioning(spark, scenario_of):
    result = run_scenario(scenario_of(WRITTEN, "data/batches"), jobs.batch_write, session=spark)
    assert result.status == "passed", describe_failure(result)


def test_a_file_sink_in_update_mode_is_refused_as_spark_refuses_it(spark, scenario_of):
    result = run_scenario(scenario_of(NONE_EXPECTED), jobs.update_file_sink, session=spark)
    assert result.status == "error", describe_failure(result)
    assert "STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE" in result.reason, result.reason
    assert f"{shown_file(jobs.__file__)}:{_marked('update sink')}" in result.reason, result.reason


def _marked(marker: str) -> int:
    with open(jobs.__file__, encoding="utf-8") as fh:
        return next(n for n, line in enumerate(fh, 1) if line.rstrip().endswith(f"# <- {marker}"))
