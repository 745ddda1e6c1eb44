"""What a job wrote, read back without Spark: which folders hold nothing a reader would read."""
from __future__ import annotations

import json

from eventtime.runner import nothing_written


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
