"""A job's file sink is Spark's own, and its paths are kept to the scenario (docs/jobs.md).

A job's `writeStream.format("parquet")...` runs Spark's `FileStreamSink`, which records each batch in
its `_spark_metadata` log: a batch that runs again after a crash between its write and its commit is
skipped, not written twice (the kit's earlier stand-in, which appended each batch, is kept here as a
control that fails the same scenario).

Every path a job names (relative, absolute, built from `__file__`, a URI) lands in the scenario's run
folder keeping its name, in `main` and in the batch function's own thread; `written:` names it as the
job writes it, and a path that would leave the run folder is refused at the job's line.
"""
from __future__ import annotations

import json
import os
import re
import textwrap

import pytest

from eventtime import jobs as kit_jobs
from eventtime import written as kit_written
from eventtime import load_scenario, run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_paths as jobs
from tests.spark.test_jobs import CONTRACT, _text
from tests.spark.test_jobs import _line as marked_line

pytestmark = pytest.mark.spark

# the same contract without its path parameter: a job's paths need none
NO_PARAMS = "".join(line for line in CONTRACT.splitlines(keepends=True) if "params:" not in line
                    and "kind: path" not in line)


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


def _loader(tmp_path, contract):
    """Loads a scenario text (its `WHERE` replaced by the path a test gives) against `contract`."""
    (tmp_path / "page_counts.contract.yaml").write_text(contract)

    def load(text: str, where: str = "out"):
        path = tmp_path / "s.scenario.yaml"
        path.write_text(text.replace("WHERE", json.dumps(where)))
        return load_scenario(str(path))
    return load


@pytest.fixture
def scenario_of(tmp_path):
    return _loader(tmp_path, CONTRACT)


@pytest.fixture
def kept_scenario(tmp_path):
    return _loader(tmp_path, NO_PARAMS)


def _appending_stand_in(fmt, path, partition_by, options, handed=None):
    """The kit's earlier file sink: each batch appended to the folder, no metadata log (the control). It
    records the rows of each batch id it is handed, as the kit's sink does for its cross-check."""
    from eventtime.harness.stream import read_rows

    def append_to_folder(batch, batch_id):
        if handed is not None:
            handed[batch_id] = read_rows(batch)
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
    monkeypatch.setattr(kit_written, "cross_check", lambda *a: None)  # the earlier kit had none
    result = run_scenario(scenario_of(RERUN), jobs.file_sink, session=spark)
    assert result.status == "failed", describe_failure(result)
    failed = [s.index for s in result.steps if s.status == "failed"]
    assert failed == [10], describe_failure(result)
    assert "2 unexpected" in describe_failure(result), describe_failure(result)


def test_a_stand_in_that_writes_unlike_spark_is_caught_by_the_cross_check_as_the_kits_error(spark, scenario_of,
                                                                                         monkeypatch):
    """The same appending stand-in, with the kit's cross-check: the folder holds batch 2 twice, the sink
    was handed it once; the step is the kit's error, not a verdict on the job."""
    monkeypatch.setattr(kit_jobs, "_file_sink", _appending_stand_in)
    result = run_scenario(scenario_of(RERUN), jobs.file_sink, session=spark)
    assert result.status == "error", describe_failure(result)
    step = next(s for s in result.steps if s.status == "error")
    assert step.index == 10, describe_failure(result)
    assert "read 4 row(s) back" in step.message and "1 row(s)" not in step.message, step.message
    assert "This is the kit's error in reading the folder back" in step.message, step.message


# -- paths kept to the scenario ------------------------------------------------------------------------
GOLD = textwrap.dedent("""\
    scenario: job-paths-kept
    description: The job writes where it writes in production; the folder is the run's own.
    contract: page_counts
    steps:
      - expect: {written: WHERE, rows: []}
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - add: {clicks: [{page: home, ts: "00:01:10"}]}
      - process
      - expect: {written: WHERE, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]}
    """)


def _line(marker: str) -> str:
    return marked_line(marker, jobs)


def _nothing_outside():
    """The folders the jobs name, as they would be outside the kit: none must appear."""
    return [p for p in ("data/gold", "data/silver", "data/checkpoints", "/data/gold", "tests/data", "/reference")
            if os.path.exists(p)]


@pytest.mark.parametrize("job, where", [
    (jobs.relative_sink, "data/gold/counts"),
    (jobs.absolute_sink, "/data/gold/counts"),
    (jobs.uri_sink, "s3a://lake/gold/counts"),
    (jobs.file_built_sink, os.path.relpath(jobs.HERE_GOLD)),  # named from the working directory
    (jobs.file_built_sink, os.path.normpath(jobs.HERE_GOLD)),  # or as the job builds it
], ids=["relative", "absolute", "s3a-uri", "from-file-relative", "from-file-absolute"])
def test_a_jobs_paths_land_in_the_run_folder_and_are_checked_by_their_name(spark, kept_scenario, job, where):
    before = _nothing_outside()
    result = run_scenario(kept_scenario(GOLD, where), job, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert _nothing_outside() == before, "a path was written outside the run folder"
    assert not [n for n in result.notes if "read as no rows" in n], result.notes


def test_control_a_path_the_job_does_not_write_is_the_kits_error_naming_what_it_writes(spark, kept_scenario):
    result = run_scenario(kept_scenario(GOLD, "data/gold/other"), jobs.relative_sink, session=spark)
    assert result.status == "error", describe_failure(result)
    # both checks of it: the one that would pass `rows: []` and the one that would fail, neither a verdict
    assert [s.index for s in result.steps if s.status == "error"] == [1, 6], describe_failure(result)
    said = describe_failure(result)
    assert ("s.scenario.yaml:5" in said and "`written: data/gold/other` names a path no query of the job writes "
            "(it writes data/gold/counts)") in said, said


# A typo of the job's folder: before the window closes, the right folder holds no rows either.
TYPO = textwrap.dedent("""\
    scenario: NAME
    description: The window is open after one batch; the folder the job writes holds no rows yet.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}]}
      - process
      - expect: {written: WHERE, rows: []}
    """)


def test_eventtime_run_errs_on_a_written_path_no_query_writes_instead_of_passing_rows_none(tmp_path):
    """As a user runs it: a `written:` path misspelt (`data/gold/count` for the job's `data/gold/counts`)
    once passed `rows: []`; now it is an error at the check's line naming the path the job writes. The
    control in the same run: the right path passes."""
    import subprocess
    from pathlib import Path

    from eventtime.harness.cluster import child_environment

    from tests.lines import console_script

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "page_counts.contract.yaml").write_text(NO_PARAMS)
    (tmp_path / "typo.scenario.yaml").write_text(TYPO.replace("NAME", "typo").replace("WHERE", "data/gold/count"))
    (tmp_path / "right.scenario.yaml").write_text(TYPO.replace("NAME", "right").replace("WHERE", "data/gold/counts"))
    env = child_environment(PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([*console_script(), "run", ".", "--pipeline", "tests.spark.jobs_paths:relative_sink"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "PASS  right  [tests.spark.jobs_paths:relative_sink]" in out, out
    assert "ERROR typo  [tests.spark.jobs_paths:relative_sink]" in out, out
    assert re.search(r"typo\.scenario\.yaml:7(:\d+)?: `written: data/gold/count` names a path no query of the job "
                     r"writes \(it writes data/gold/counts\)", out), out


BATCH = textwrap.dedent("""\
    scenario: job-batch-paths-kept
    description: A foreachBatch function writes a folder, reads it back and writes totals; all in the run.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - add: {clicks: [{page: home, ts: "00:01:10"}, {page: home, ts: "00:02:10"}]}
      - process
      - expect: {written: data/silver/counts, rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1],
                                                      [home, "00:01:00", 1]]}
      - expect: {written: "file:///data/gold/totals", rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1],
                                                             [home, "00:01:00", 1]]}
    """)


def test_a_batch_functions_writes_and_reads_are_kept_in_the_streams_thread(spark, kept_scenario):
    before = _nothing_outside()
    result = run_scenario(kept_scenario(BATCH, ""), jobs.batch_writes, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert _nothing_outside() == before, "a path was written outside the run folder"


@pytest.mark.parametrize("job, marker, words", [
    (jobs.sink_climbing_out, "sink climbs", "the parquet sink's path '../outside/counts' would leave the "
                                            "scenario's run folder: its `..` climbs above the working directory"),
    (jobs.batch_write_climbing_out, "batch climbs", "the path of parquet(...) 'data/../../outside' would leave "
                                                    "the scenario's run folder"),
    (jobs.batch_write_through_link, "through link", "through a symbolic link, outside the run folder"),
], ids=["file-sink-climbs", "batch-write-climbs", "batch-write-through-a-symlink"])
def test_a_path_that_would_leave_the_run_is_refused_at_the_jobs_line(spark, scenario_of, tmp_path, monkeypatch,
                                                                       job, marker, words):
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setattr(jobs, "OUTSIDE", str(outside))
    result = run_scenario(scenario_of(GOLD), job, session=spark)
    assert result.status == "error", describe_failure(result)
    text = _text(result)
    assert _line(marker) in text, text
    assert words in text, text
    assert "jobpaths.py" not in text and "stream.py" not in text, text  # the job's frames, not the kit's
    assert list(outside.iterdir()) == [], "nothing was written outside"
    assert not (tmp_path.parent / "outside").exists()


def test_a_static_read_in_main_is_looked_for_in_the_run_folder(spark, kept_scenario):
    result = run_scenario(kept_scenario(GOLD, "data/gold/counts"), jobs.main_reads_missing_static, session=spark)
    assert result.status == "error", describe_failure(result)
    text = _text(result)
    assert re.search(r"eventtime-[^/\s]+/files/reference/pages", text), text
    assert _line("static read").rpartition(":")[2] in text, text
