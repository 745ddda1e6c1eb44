"""The edit-run loop: from saving a scenario file to its verdict, `eventtime watch` (one warm session)
vs a fresh `eventtime run` of the same file (what re-running by hand costs), side by side in one run.

A 6-step scenario (add, process, expect, add, process, expect) of the tumbling count, run against a
pipeline module of its own. Rounds alternate: one save seen by the watcher, one cold run, so that
machine noise hits both; the figures are the medians and their ratio.

    python benchmarks/watch_latency.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

JOB = """\
from pyspark.sql import functions as F


def count(events, window, watermark_delay):
    return (events.withWatermark("ts", watermark_delay)
            .groupBy("key", F.window("ts", window)).agg(F.count(F.lit(1)).alias("count"))
            .select("key", F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "count"))
"""

SCENARIO = """\
scenario: timed
description: Two windows, each written once the watermark passes its end (round ROUND).
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:07"]]}
  - process
  - expect: {no_output: true, watermark: "00:00:02"}
  - add: {events: [[b, "00:00:30"]]}
  - process
  - expect: {rows: [[a, "00:00:00", "00:00:10", 2]], watermark: "00:00:25"}
"""

WAIT = 600.0


def _reader(proc: subprocess.Popen, lines: queue.Queue) -> None:
    for line in proc.stdout:  # type: ignore[union-attr]
        lines.put((time.monotonic(), line.rstrip("\n")))


def _until(lines: queue.Queue, text: str, what: str) -> float:
    deadline = time.monotonic() + WAIT
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SystemExit(f"watch_latency: no {what!r} within {WAIT:.0f} s")
        try:
            at, line = lines.get(timeout=left)
        except queue.Empty:
            continue
        if text in line:
            if not line.startswith("PASS") and "timed" in line:
                raise SystemExit(f"watch_latency: the scenario did not pass: {line}")
            return at


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="watch-latency-"))
    (work / "jobs.py").write_text(JOB)
    scenario = work / "timed.scenario.yaml"
    scenario.write_text(SCENARIO.replace("ROUND", "0"))
    env = {**os.environ, "PYTHONPATH": str(work)}
    eventtime = [sys.executable, "-m", "eventtime.cli"]
    proc = subprocess.Popen([*eventtime, "watch", scenario.name, "--pipeline", "jobs:count", "--poll", "0.1"],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc, lines), daemon=True).start()
    warm, cold = [], []
    try:
        _until(lines, "watching (Ctrl-C stops)", "the first round")
        for i in range(1, args.rounds + 1):
            while not lines.empty():  # what came before this save
                lines.get_nowait()
            saved = time.monotonic()
            scenario.write_text(SCENARIO.replace("ROUND", str(i)))
            warm.append(_until(lines, "timed", "the verdict after the save") - saved)
            _until(lines, "watching (Ctrl-C stops)", "the round's totals")
            t0 = time.monotonic()
            done = subprocess.run([*eventtime, "run", scenario.name, "--pipeline", "jobs:count"], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=WAIT)
            cold.append(time.monotonic() - t0)
            if done.returncode != 0:
                raise SystemExit(f"watch_latency: the cold run failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
            print(f"round {i}: watch {warm[-1]:.2f} s, cold run {cold[-1]:.2f} s", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    w, c = statistics.median(warm), statistics.median(cold)
    print(f"save -> verdict, 6-step scenario, median of {args.rounds}: watch {w:.2f} s, cold `eventtime run` "
          f"{c:.2f} s, ratio {w / c:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
