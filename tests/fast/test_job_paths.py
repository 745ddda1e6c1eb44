"""What a job wrote, read back without Spark: which folders hold nothing a reader would read."""
from __future__ import annotations

import json
import os

import pytest

from eventtime.harness.jobio import shown_file
from eventtime.harness.jobio import SubstitutionError
from eventtime.harness.jobpaths import PathOutside, kept_path, kept_to
from eventtime.written import nothing_written


def _log(folder, batch, *entries):
    log = folder / "_spark_metadata"
    log.mkdir(parents=True, exist_ok=True)
    (log / str(batch)).write_text("v1\n" + "".join(json.dumps(e) + "\n" for e in entries))


def test_a_folder_that_does_not_exist_holds_nothing(tmp_path):
    assert nothing_written(str(tmp_path / "gold"))


def test_a_file_sink_log_that_records_no_file_holds_nothing(tmp_path):
    _log(tmp_path, 0)
    (tmp_path / "part-0000.parquet").write_bytes(b"PAR1")  # not in the log: Spark's readers skip it
    assert nothing_written(str(tmp_path))


def test_a_file_sink_log_that_records_a_file_holds_it(tmp_path):  # the control of the one above
    _log(tmp_path, 0)
    _log(tmp_path, 1, {"path": "file:/x/part-0000.parquet", "size": 4, "isDir": False, "action": "add"})
    assert not nothing_written(str(tmp_path))


def test_bookkeeping_files_are_not_data(tmp_path):
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-0000.parquet.crc").write_text("")
    (tmp_path / "_temporary" / "0").mkdir(parents=True)
    (tmp_path / "_temporary" / "0" / "part-0000.parquet").write_bytes(b"PAR1")
    assert nothing_written(str(tmp_path))
    (tmp_path / "page=home").mkdir()
    (tmp_path / "page=home" / "part-0000.parquet").write_bytes(b"PAR1")
    assert not nothing_written(str(tmp_path))


# -- where a job's paths land (`jobpaths.kept_path`) ------------------------------------------------
@pytest.mark.parametrize("written, lands", [
    ("data/gold/revenue", "files/data/gold/revenue"),
    ("./data/gold/revenue/", "files/data/gold/revenue"),
    ("data/tmp/../gold", "files/data/gold"),
    ("/data/gold/revenue", "files/data/gold/revenue"),
    ("/data/../../gold", "files/gold"),  # an absolute path's `..` stops at the root: it stays inside
    ("file:/data/gold", "files/data/gold"),
    ("file:///data/gold", "files/data/gold"),
    ("s3a://bucket/gold/revenue", "files/s3a/bucket/gold/revenue"),
    ("hdfs://namenode:8020/gold", "files/hdfs/namenode_8020/gold"),
    ("hdfs:///gold", "files/hdfs/gold"),
])
def test_a_path_lands_in_the_run_folder_keeping_its_name(tmp_path, written, lands):
    assert kept_path(written, str(tmp_path)) == str(tmp_path / lands)


def test_a_path_under_the_working_directory_lands_where_its_relative_form_does(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    monkeypatch.chdir(project)
    run = str(tmp_path / "run")
    from_file = os.path.join(str(project / "jobs"), "..", "data", "gold")  # os.path.dirname(__file__) + ..
    assert kept_path(from_file, run) == kept_path("data/gold", run) == os.path.join(run, "files", "data", "gold")


def test_a_folder_of_the_run_is_kept_where_it_is(tmp_path):
    own = str(tmp_path / "paths" / "out")  # a `kind: path` parameter's folder
    assert kept_path(own, str(tmp_path)) == own
    assert kept_path("file:" + own, str(tmp_path)) == own


@pytest.mark.parametrize("written, why", [
    ("../shared/gold", "climbs above the working directory"),
    ("data/../../gold", "climbs above the working directory"),
    ("s3a://bucket/../other/gold", "climbs above s3a://bucket"),
])
def test_a_path_that_climbs_out_is_refused(tmp_path, written, why):
    with pytest.raises(PathOutside, match=why):
        kept_path(written, str(tmp_path))


def test_a_path_through_a_symbolic_link_out_of_the_run_is_refused(tmp_path):
    run, outside = tmp_path / "run", tmp_path / "outside"
    (run / "files" / "data").mkdir(parents=True)
    outside.mkdir()
    (run / "files" / "data" / "link").symlink_to(outside)
    with pytest.raises(PathOutside, match="through a symbolic link"):
        kept_path("data/link/gold", str(run))
    with pytest.raises(PathOutside, match="through a symbolic link"):  # a run folder's path too
        kept_path(str(run / "files" / "data" / "link" / "gold"), str(run))
    assert kept_path("data/gold", str(run)) == str(run / "files" / "data" / "gold")  # the control


class _Writer:
    """Stands in for a DataFrameWriter: only the patch runs (a refused path never reaches pyspark)."""


def test_a_batch_write_that_would_leave_is_refused_naming_the_jobs_line(tmp_path):
    from pyspark.sql.readwriter import DataFrameWriter

    with kept_to(str(tmp_path)):
        with pytest.raises(SubstitutionError) as caught:
            DataFrameWriter.parquet(_Writer(), "../escape")  # type: ignore[arg-type]  # <- escape
    line = next(n for n, text in enumerate(open(__file__, encoding="utf-8"), 1) if text.rstrip().endswith("# <- escape"))
    assert f"{shown_file(__file__)}:{line}" in str(caught.value), caught.value
    assert "the path of parquet(...) '../escape' would leave the scenario's run folder" in str(caught.value)


def test_the_patches_are_gone_once_no_thread_keeps_paths(tmp_path):
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

    own = DataFrameWriter.parquet, DataFrameReader.load
    with kept_to(str(tmp_path)):
        assert DataFrameWriter.parquet is not own[0]
    assert (DataFrameWriter.parquet, DataFrameReader.load) == own


@pytest.mark.parametrize("written", ["data/gold/revenue_by_window", "s3a://lake/gold/revenue", "/lake/gold"])
def test_written_names_a_path_as_the_job_writes_it(tmp_path, written):
    from eventtime.loader import load_scenario

    from tests.fast.test_jobs_files import SCENARIO, _problems, _write

    text = SCENARIO.replace("written: out,", f"written: {written!r},")
    assert load_scenario(str(_write(tmp_path, scenario=text))).steps[2].written.path == written
    found = _problems(_write(tmp_path, scenario=text.replace(f"written: {written!r},", "written: limit,")))
    assert any(":7:" in p and "not 'limit'" in p for p in found), found  # the control: an int parameter


def test_the_paths_a_run_named_are_remembered_until_it_is_forgotten(tmp_path):
    from eventtime.harness.jobpaths import forget_paths, named_paths

    run = str(tmp_path)
    gold = kept_path("data/gold", run)
    kept_path("data/checked", run, record=False)  # a check's read, not the job's
    assert named_paths(run) == {gold}
    forget_paths(run)
    assert named_paths(run) == set()
