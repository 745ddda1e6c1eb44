"""A job's file sink is Spark's own, and its paths are kept to the scenario (docs/jobs.md).

A job's `writeStream.format("parquet")...` runs Spark's `FileStreamSink`, which records each batch in
its `_spark_metadata` log: a batch that runs again after a crash between its write and its commit is
skipped, not written twice (the kit's earlier stand-in, which appended each batch, is kept here as a
control that fails the same scenario).
"""
from __future__ import annotations

import textwrap

import pytest

from eventtime import jobs as kit_jobs
from eventtime import load_scenario, run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_paths as jobs

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
      out: {kind: path, conf: jobs.test.out, doc: the folder the job's file sink writes}
    output:
      columns: "page string, window_start timestamp, clicks bigint"
      modes: [append]
    """)

# Batch 1 reads 00:01:10 and moves the watermark past the first window; the no-data batch 2 after it
# emits that window to the file sink. The re-run restarts batch 1 and then batch 2 again: Spark's file
# sink has batch 2 in its log and skips it, so the window is in the folder once.
RERUN = textwrap.dedent("""\
    scenario: file-sink-batch-runs-again
    description: A crash after the file sink wrote and before the batch committed; the folder is the same.
    contract: page_counts
    steps:
      - expect: {written: out, rows: []}
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: out, rows: []}
      - add: {clicks: [{page: home, ts: "00:01:10"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
      - restart: {rerun_last_batch: true}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
    """)


@pytest.fixture
def scenario_of(tmp_path):
    (tmp_path / "page_counts.contract.yaml").write_text(CONTRACT)

    def load(text: str):
        path = tmp_path / "s.scenario.yaml"
        path.write_text(text)
        return load_scenario(str(path))
    return load


def _appending_stand_in(fmt, path, partition_by, options):
    """The kit's earlier file sink: each batch appended to the folder, no metadata log (the control)."""
    def append_to_folder(batch, batch_id):
        out = batch.write.mode("append").format(fmt)
        if partition_by:
            out = out.partitionBy(*partition_by)
        out.save(path)
    return append_to_folder


def test_a_file_sink_skips_a_batch_that_runs_again_as_spark_does(spark, scenario_of):
    result = run_scenario(scenario_of(RERUN), jobs.file_sink, session=spark)
    assert result.status == "passed", describe_failure(result)
    rerun = [b.batch_id for s in result.steps[8:] for b in s.batches]
    assert 2 in rerun, f"batch 2 ran again after the restart: {rerun}"


def test_control_an_appending_stand_in_writes_the_batch_that_runs_again_twice(spark, scenario_of, monkeypatch):
    monkeypatch.setattr(kit_jobs, "_file_sink", _appending_stand_in)
    result = run_scenario(scenario_of(RERUN), jobs.file_sink, session=spark)
    assert result.status == "failed", describe_failure(result)
    failed = [s.index for s in result.steps if s.status == "failed"]
    assert failed == [10], describe_failure(result)
    assert "2 unexpected" in describe_failure(result), describe_failure(result)
