"""A driver JVM on the class-data archive observes what one without it does (`eventtime.harness.jvmarchive`).

Three `eventtime run`s of the same scenarios, each its own process and JVM, with a cache folder of
this test's own: the archive off, the first start with it (recording), a later start (mapping it).
Every verdict and every batch's observations (rows, watermarks, dropped rows, state rows) must be the
same in the three."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # CI runs it on the newest line (tests/README.md)

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ["scenarios/tumbling/append-late-row-dropped.scenario.yaml",
             "scenarios/join/left-outer-null-after-watermark.scenario.yaml",
             "scenarios/session/append-closes-gap-after-last-event.scenario.yaml"]


def _run(tmp_path: Path, label: str, **env: str) -> tuple[dict, str]:
    out = tmp_path / f"{label}.json"
    proc = subprocess.run([sys.executable, "-m", "eventtime.cli", "run", *SCENARIOS, "--json", str(out), "-q"],
                          cwd=ROOT, env={**os.environ, "EVENTTIME_CACHE_DIR": str(tmp_path / "cache"), **env},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stderr


def _archive_written(folder: Path, within: float = 600.0) -> None:
    """Wait (bounded) until the recording JVM, which goes on after its run has ended, has written the
    archive: its cds log says so."""
    deadline = time.monotonic() + within
    while not any("Written dynamic archive" in log.read_text(errors="replace") for log in folder.glob("*.part.log")):
        assert time.monotonic() < deadline, f"the recording JVM wrote no archive in {within:.0f} s: {list(folder.iterdir())}"
        time.sleep(0.5)


def _views(results: dict) -> dict:
    """Per scenario x implementation: the verdict and, per step, every batch's observations."""
    return {(r["scenario"], r["implementation"]): (r["status"], [
        (s["index"], s["status"], s["watermark_ms"],
         [(b.get("input_rows"), b.get("watermark_before_ms"), b.get("watermark_after_ms"),
           sorted(map(repr, b.get("rows") or [])), b.get("dropped"), b.get("state_rows")) for b in s["batches"]])
        for s in r["steps"]]) for r in results["results"]}


def test_a_session_on_the_archive_observes_what_one_without_it_does(tmp_path):
    for path in SCENARIOS:
        assert (ROOT / path).is_file(), path
    off, _ = _run(tmp_path, "off", EVENTTIME_JVM_ARCHIVE="off")
    assert not list((tmp_path / "cache").rglob("*.jsa*"))  # no archive (the harness's compiled classes may be kept there)
    recording, said = _run(tmp_path, "record")
    assert "recording Spark's classes" in said
    folder = tmp_path / "cache" / "jvm"
    _archive_written(folder)
    using, said = _run(tmp_path, "use")  # puts the archive in place and maps it
    assert "recording" not in said and "did not use" not in said, said
    archives = list(folder.glob("*.jsa"))
    assert len(archives) == 1 and Path(str(archives[0]) + ".complete").is_file(), list(folder.iterdir())

    baseline = _views(off)
    assert len(baseline) >= len(SCENARIOS) and {v[0] for v in baseline.values()} == {"passed"}
    assert _views(recording) == baseline
    assert _views(using) == baseline
    # the comparison sees a batch that differs (control)
    changed = json.loads(json.dumps(using))
    first_batch = next(b for r in changed["results"] for s in r["steps"] for b in s["batches"] if b.get("rows"))
    first_batch["rows"] = first_batch["rows"][1:] + [["x"]]
    assert _views(changed) != baseline
