"""Micro-batch cost with the two checkpoint file managers Spark ships, measured in one run.

    python benchmarks/checkpoint_io.py [--rounds 4] [--steps 8]

Spark writes a streaming query's offset log, commit log and state store files through a
`CheckpointFileManager`. Its default uses Hadoop's FileContext API, which on a local disk without
Hadoop's native library shells out (`readlink`, `chmod`) for many file operations; the harness
gives its queries the FileSystem-API manager instead (`eventtime.harness.compat.SparkCompat.query_conf`).
This script runs the same tumbling count (10 s windows, 5 s delay, append; one row per step,
7 s apart, so most steps also run a no-data batch) with each manager, rounds alternated, on the
real clock so Spark's own `durationMs` figures are meaningful. It prints per manager the median
wall time of a step (addData + processAllAvailable), the medians of Spark's per-batch phases, and
the processes the machine forked per batch (from /proc/stat: system-wide, so run it on a quiet
machine). The first round of each manager is warm-up and not counted.
"""
from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEY = "spark.sql.streaming.checkpointFileManagerClass"
PHASES = ("triggerExecution", "addBatch", "queryPlanning", "walCommit", "commitOffsets")


def forks() -> int | None:
    """Processes forked on this machine since boot (Linux), or None elsewhere."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("processes "):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def one_round(spark, manager: str, steps: int, name: str) -> tuple[list[float], list[dict], int | None, int]:
    import json

    from eventtime.spec import Params
    from eventtime.pipelines.reference import tumbling_count
    from eventtime.timeparse import parse_duration
    from eventtime.harness import MemorySource

    t0_ms = 1_704_067_200_000
    params = Params({"window": parse_duration("10s"), "watermark_delay": parse_duration("5s"),
                     "output_mode": "append"})
    spark.conf.set(KEY, manager)  # a query keeps the settings it started with
    src = MemorySource(spark, "events", [("key", "string"), ("ts", "timestamp")])
    df = tumbling_count({"events": src.dataframe()}, params)
    with tempfile.TemporaryDirectory() as tmp:
        query = (df.writeStream.format("memory").queryName(name).outputMode("append")
                 .option("checkpointLocation", f"{tmp}/checkpoint").start())
        try:
            walls = []
            f0 = forks()
            for i in range(steps):
                ts = dt.datetime.fromtimestamp((t0_ms + i * 7000) / 1000, dt.timezone.utc).replace(tzinfo=None)
                src.add([("k", ts)])
                t = time.perf_counter()
                query.processAllAvailable()
                walls.append(time.perf_counter() - t)
            f1 = forks()
            progress = [json.loads(p.json()) for p in query._jsq.recentProgress()]
        finally:
            query.stop()
    return walls, progress, (f1 - f0) if f0 is not None and f1 is not None else None, len(progress)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--rounds", type=int, default=4, help="rounds per manager, the first one warm-up (default 4)")
    ap.add_argument("--steps", type=int, default=8, help="steps per round (default 8)")
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds must be at least 2 (the first round is warm-up)")

    from eventtime.harness import get_session
    from eventtime.harness.compat import compat_for

    spark = get_session()
    chosen = compat_for(spark).query_conf.get(KEY)
    if chosen is None:
        raise SystemExit("checkpoint_io: this Spark has no FileSystem-based checkpoint file manager")
    managers = {"FileContext (Spark's default)": chosen.replace("FileSystemBased", "FileContextBased"),
                "FileSystem (the harness's)": chosen}
    walls: dict[str, list[float]] = {m: [] for m in managers}
    progress: dict[str, list[dict]] = {m: [] for m in managers}
    forked: dict[str, list[tuple[int, int]]] = {m: [] for m in managers}
    t0 = time.monotonic()
    for r in range(args.rounds):
        for label, cls in managers.items():
            w, p, f, batches = one_round(spark, cls, args.steps, f"checkpoint_io_{r}_{len(walls[label])}")
            if r == 0:
                continue  # warm-up
            walls[label] += w[1:]  # the first step of a query includes its first planning
            progress[label] += p[1:]
            if f is not None:
                forked[label].append((f, batches))
    print(f"Spark {spark.version}: {args.rounds - 1} counted rounds x {args.steps} steps per manager, "
          f"{time.monotonic() - t0:.0f} s")
    medians = {}
    for label, cls in managers.items():
        medians[label] = statistics.median(walls[label])
        phases = ", ".join(f"{ph} {statistics.median([p['durationMs'].get(ph, 0) for p in progress[label]]):.0f}"
                           for ph in PHASES)
        fork_text = ""
        if forked[label]:
            fork_text = f"; processes forked per batch {sum(f for f, _ in forked[label]) / sum(b for _, b in forked[label]):.1f}"
        print(f"  {label}: {cls.rsplit('.', 1)[-1]}\n    step median {medians[label] * 1000:.0f} ms "
              f"(n={len(walls[label])}); per batch, median ms: {phases}{fork_text}")
    a, b = medians.values()
    print(f"step time FileSystem / FileContext: {b / a:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
