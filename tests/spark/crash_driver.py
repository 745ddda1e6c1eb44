"""A driver that crashes: run by tests/spark/test_crash.py in its own process (and so its own JVM).

    python crash_driver.py whole|first|second CHECKPOINT OUT.json

`whole` runs all batches uninterrupted. `first` runs the first batches, then starts one more batch
that stays in flight (its rows wait on EVENTTIME_TEST_BLOCK_FILE), and once Spark has written that
batch's offsets (planned, not committed) the process kills itself with SIGKILL: no stop, no
cleanup, the JVM goes down with it. `second` is a new driver: new process, new JVM, new
SparkSession, sources replayed from their input log, the checkpoint the only thing carried over.
Each writes what it observed (batch id -> rows, final watermark, state rows) to OUT.json.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from eventtime.harness import get_session  # noqa: E402
from tests.spark.pipelines import blocks_while_file_exists, events_run  # noqa: E402

BASE_US = 1_704_067_200_000_000


def t(seconds: int) -> int:
    return BASE_US + seconds * 1_000_000


# state pending; the watermark advances and a window closes; a late row (dropped) and a pending
# window; the in-flight batch of the crash; one more after the crash
BATCHES = [
    [("a", t(3)), ("a", t(7))],
    [("a", t(16))],
    [("a", t(4)), ("b", t(12))],
    [("c", t(18)), ("a", t(24))],
    [("a", t(41))],
]
CRASH_AT = 3  # index in BATCHES of the add whose batch is in flight when the driver dies


def main() -> None:
    phase, checkpoint, out = sys.argv[1], sys.argv[2], sys.argv[3]
    spark = get_session()
    run, sources = events_run(spark, blocks_while_file_exists, checkpoint, timeout=120)
    source = sources["events"]
    report: dict = {"jvm_pid": int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())}

    def write() -> None:
        report["batches"] = {b.batch_id: [list(r) for r in b.rows] for b in run.history.values()}
        report["watermark_ms"] = max(run.history.values(), key=lambda b: b.batch_id).watermark_after_ms
        report["state_rows"] = max(run.history.values(), key=lambda b: b.batch_id).state_rows
        Path(out).write_text(json.dumps(report), encoding="utf-8")

    if phase == "second":
        for rows in BATCHES[: CRASH_AT + 1]:  # what the crashed driver had added: a replayable input
            source.add(rows)
        run.start()
        run.process()
        for rows in BATCHES[CRASH_AT + 1:]:
            source.add(rows)
            run.process()
        run.stop()
        write()
        return
    run.start()
    for i, rows in enumerate(BATCHES):
        if phase == "first" and i == CRASH_AT:
            Path(os.environ["EVENTTIME_TEST_BLOCK_FILE"]).touch()
            source.add(rows)
            in_flight = max(run.history) + 1
            run.clock.grant()
            offsets = Path(checkpoint, "offsets", str(in_flight))
            deadline = time.monotonic() + 120
            while not offsets.exists():
                if time.monotonic() > deadline:
                    raise SystemExit(f"batch {in_flight} never got its offsets logged within 120 s")
                time.sleep(0.01)
            report["in_flight"] = in_flight
            write()
            os.kill(os.getpid(), signal.SIGKILL)
        source.add(rows)
        run.process()
    run.stop()
    write()


if __name__ == "__main__":
    main()
