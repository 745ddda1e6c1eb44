"""Per-step cost of the harness vs a bare MemoryStream loop, measured in one process, one session.

Both sides run the same batches of the tumbling count (the reference pipeline) and add rows the
same way (one bulk addData per step). The bare loop is what a hand-written test does:
addData, processAllAvailable, read the memory sink. The harness steps its clock one trigger at a
time and records every batch (rows, watermark, drops, state). Rounds alternate bare/harness so
that machine noise hits both; the figure is the ratio of the medians.

    python benchmarks/harness_vs_bare.py [--steps 20] [--rounds 3] [--rows 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime.spec import Params  # noqa: E402
from eventtime.pipelines.reference import tumbling_count  # noqa: E402
from eventtime.timeparse import parse_duration  # noqa: E402
from eventtime.harness import MemorySource, StreamRun, get_session  # noqa: E402

BASE_US = 1_704_067_200_000_000
PARAMS = Params({"window": parse_duration("10s"), "watermark_delay": parse_duration("5s"),
                 "output_mode": "append"})
COLUMNS = [("key", "string"), ("ts", "timestamp")]


def batches(steps: int, rows: int) -> list[list[tuple]]:
    """Each step moves event time 7 s forward, so windows keep closing and state keeps turning over."""
    return [[(f"k{j % 3}", BASE_US + (i * 7 + j % 7) * 1_000_000) for j in range(rows)] for i in range(steps)]


def bare(spark, data) -> list[float]:
    source = MemorySource(spark, "events", COLUMNS)
    name = f"bare_{uuid.uuid4().hex[:8]}"
    query = (tumbling_count({"events": source.dataframe()}, PARAMS).writeStream.format("memory")
             .queryName(name).outputMode("append")
             .option("checkpointLocation", tempfile.mkdtemp(prefix="bench-bare-")).start())
    times = []
    try:
        for rows in data:
            t0 = time.perf_counter()
            source.add(rows)
            query.processAllAvailable()
            spark.table(name).collect()
            times.append(time.perf_counter() - t0)
    finally:
        query.stop()
    return times


def harness(spark, data) -> list[float]:
    source = MemorySource(spark, "events", COLUMNS)
    run = StreamRun(spark, lambda: (tumbling_count({"events": source.dataframe()}, PARAMS), "append"),
                    checkpoint=tempfile.mkdtemp(prefix="bench-harness-") + "/cp", clock_start_ms=BASE_US // 1000)
    run.start()
    times = []
    try:
        for rows in data:
            t0 = time.perf_counter()
            source.add(rows)
            run.process()
            times.append(time.perf_counter() - t0)
    finally:
        run.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=5)
    args = ap.parse_args()
    spark = get_session()
    data = batches(args.steps, args.rows)
    harness(spark, data[:3])  # warm-up: the first query of a session pays for code generation
    bare(spark, data[:3])
    per_side: dict[str, list[float]] = {"bare": [], "harness": []}
    for r in range(args.rounds):
        for side, fn in (("bare", bare), ("harness", harness)) if r % 2 == 0 else (("harness", harness), ("bare", bare)):
            times = fn(spark, data)
            per_side[side].extend(times[1:])  # the first step of each query includes its start-up
    med = {k: statistics.median(v) * 1000 for k, v in per_side.items()}
    print(f"Spark {spark.version}, {args.steps} steps x {args.rounds} rounds, {args.rows} rows per step")
    for side in ("bare", "harness"):
        v = [x * 1000 for x in per_side[side]]
        print(f"  {side:8} median {med[side]:7.1f} ms/step   p10 {statistics.quantiles(v, n=10)[0]:7.1f}   "
              f"p90 {statistics.quantiles(v, n=10)[-1]:7.1f}   (n={len(v)})")
    print(f"  ratio harness/bare (medians): {med['harness'] / med['bare']:.3f}")


if __name__ == "__main__":
    main()
