"""Where a step's time goes, per trigger, for three query shapes, and what candidate settings change.

Shapes: the tumbling count of `harness_vs_bare.py`, an inner interval join (two sources) and a
session-window count, all from the reference pipelines. Each step adds rows and runs `StreamRun.process`
(a data batch, then the no-data batch that moves the watermark, then the trigger that runs nothing).
Per step it splits the wall time into the harness's observation (`_observe`: the offsets and commits
logs, the progress and the memory sink read back) and the rest (the triggers themselves, granting them,
py4j).

Spark's own split of a trigger (`durationMs`: addBatch, queryPlanning, walCommit, commitOffsets,
latestOffset, getBatch, triggerExecution) cannot come from the harness's queries: Spark times those parts
with the trigger clock, and the harness's clock is stepped, so every part reads 0. It comes from the same
query on the same data run bare (memory sink, default trigger, the real clock: addData,
processAllAvailable; the harness's query settings, `compat.query_conf`), medians per batch, data
batches and no-data batches apart.

Modes are SQL settings given to the query at start (the harness's `start(conf=...)`); rounds alternate
the modes in one process, one session, so machine noise hits all of them. The figure per mode is the
median per step, and its ratio to the baseline per shape.

    python benchmarks/batch_cost.py [--steps 12] [--rounds 3] [--modes base,wholestage_off,...]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime.spec import Params  # noqa: E402
from eventtime.pipelines.reference import interval_join, session_count, tumbling_count  # noqa: E402
from eventtime.timeparse import parse_duration  # noqa: E402
from eventtime.harness import MemorySource, StreamRun, get_session  # noqa: E402

BASE_US = 1_704_067_200_000_000
S = 1_000_000
COLUMNS = [("key", "string"), ("ts", "timestamp")]
PARTS = ("addBatch", "queryPlanning", "getBatch", "latestOffset", "walCommit", "commitOffsets", "triggerExecution")

MODES: dict[str, dict[str, str]] = {
    "base": {},
    "wholestage_off": {"spark.sql.codegen.wholeStage": "false"},
    # interpreted expressions too (an internal, testing-only setting of Spark's)
    "no_codegen": {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"},
    # state store background work only: maintenance (snapshots, cleanup) less often
    "maintenance_rare": {"spark.sql.streaming.stateStore.maintenanceInterval": "600s"},
}


def _p(**kw: str) -> Params:
    return Params({k: (parse_duration(v) if k != "output_mode" and k != "join_type" else v) for k, v in kw.items()})


def shape_tumbling(spark: Any, steps: int, rows: int) -> tuple[Callable, dict[str, MemorySource], list[dict]]:
    src = MemorySource(spark, "events", COLUMNS)
    params = _p(window="10s", watermark_delay="5s", output_mode="append")
    data = [{"events": [(f"k{j % 3}", BASE_US + (i * 7 + j % 7) * S) for j in range(rows)]} for i in range(steps)]
    return (lambda: (tumbling_count({"events": src.dataframe()}, params), "append")), {"events": src}, data


def shape_join(spark: Any, steps: int, rows: int) -> tuple[Callable, dict[str, MemorySource], list[dict]]:
    left = MemorySource(spark, "left", COLUMNS)
    right = MemorySource(spark, "right", COLUMNS)
    params = _p(left_delay="5s", right_delay="5s", bound="5s", join_type="inner")
    data = [{"left": [(f"k{j % 3}", BASE_US + (i * 7 + j) * S) for j in range(rows)],
             "right": [(f"k{j % 3}", BASE_US + (i * 7 + j + 2) * S) for j in range(rows)]} for i in range(steps)]
    return ((lambda: (interval_join({"left": left.dataframe(), "right": right.dataframe()}, params), "append")),
            {"left": left, "right": right}, data)


def shape_session(spark: Any, steps: int, rows: int) -> tuple[Callable, dict[str, MemorySource], list[dict]]:
    src = MemorySource(spark, "events", COLUMNS)
    params = _p(gap="3s", watermark_delay="5s")
    data = [{"events": [(f"k{j % 3}", BASE_US + (i * 7 + j % 4) * S) for j in range(rows)]} for i in range(steps)]
    return (lambda: (session_count({"events": src.dataframe()}, params), "append")), {"events": src}, data


SHAPES = {"tumbling": shape_tumbling, "join": shape_join, "session": shape_session}


class TimedRun(StreamRun):
    """A StreamRun that times its own observation of each batch and keeps each batch's progress."""

    observe_s = 0.0
    progress: list[dict]

    def _observe(self, batch_id: int) -> Any:
        t0 = time.perf_counter()
        obs = super()._observe(batch_id)
        self.observe_s += time.perf_counter() - t0
        p = self.compat.progress(self._query) or {}
        if p.get("batchId") == batch_id:
            self.progress.append(p.get("durationMs") or {})
        return obs


def bare_run(spark: Any, shape: str, mode: str, steps: int, rows: int) -> list[dict[str, float]]:
    """Spark's durationMs of every batch of the bare query (the first step's batches left out)."""
    from eventtime.harness.compat import compat_for
    from eventtime.harness.stream import apply_conf, restore_conf

    build, sources, data = SHAPES[shape](spark, steps, rows)
    # the harness's own query settings too (its checkpoint file manager), so the log writes compare
    previous = apply_conf(spark, {**compat_for(spark).query_conf, **MODES[mode]})
    try:
        df, output_mode = build()
        query = (df.writeStream.format("memory").queryName(f"bare_{shape}_{time.monotonic_ns()}")
                 .outputMode(output_mode).option("checkpointLocation", tempfile.mkdtemp(prefix="bench-bare-")).start())
    finally:
        restore_conf(spark, previous)
    try:
        for batch in data:
            for name, rows_ in batch.items():
                sources[name].add(rows_)
            query.processAllAvailable()
        progress = [p for p in query.recentProgress if p["batchId"] > 1]
    finally:
        query.stop()
    return [{"data": float(p["numInputRows"] > 0), **{k: float(v) for k, v in p["durationMs"].items()}}
            for p in progress]


def one_run(spark: Any, shape: str, mode: str, steps: int, rows: int) -> list[dict[str, float]]:
    build, sources, data = SHAPES[shape](spark, steps, rows)
    run = TimedRun(spark, build, checkpoint=tempfile.mkdtemp(prefix="bench-cost-") + "/cp",
                   clock_start_ms=BASE_US // 1000)
    run.start(conf=MODES[mode])
    out = []
    try:
        for batch in data:
            run.observe_s, run.progress = 0.0, []
            t0 = time.perf_counter()
            for name, rows_ in batch.items():
                sources[name].add(rows_)
            run.process()
            wall = time.perf_counter() - t0
            split = {"step": wall * 1000, "observe": run.observe_s * 1000, "batches": float(len(run.progress))}
            split["other"] = split["step"] - split["observe"]
            out.append(split)
    finally:
        run.close()
    return out[1:]  # the first step includes the query's start-up


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=5)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--modes", default="base,wholestage_off")
    args = ap.parse_args()
    shapes, modes = args.shapes.split(","), args.modes.split(",")
    spark = get_session()
    for shape in shapes:  # warm-up: the first query of a shape pays for class loading and code generation
        for mode in modes:
            one_run(spark, shape, mode, 3, args.rows)
    got: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    spark_split: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for shape in shapes:
            order = modes if r % 2 == 0 else list(reversed(modes))
            for mode in order:
                got[shape, mode].extend(one_run(spark, shape, mode, args.steps, args.rows))
                spark_split[shape, mode].extend(bare_run(spark, shape, mode, args.steps, args.rows))
        load.append(os.getloadavg()[0])
    print(f"Spark {spark.version}, {args.steps} steps x {args.rounds} rounds, {args.rows} rows per step per source, "
          f"load average {min(load):.1f}-{max(load):.1f}")
    print("Spark's split of a batch, bare query on the real clock: median ms per batch")
    print(f"  {'shape':9} {'mode':17} {'batch':8} " + " ".join(f"{c[:10]:>10}" for c in PARTS))
    for shape in shapes:
        for mode in modes:
            for kind, flag in (("data", 1.0), ("no-data", 0.0)):
                rows = [p for p in spark_split[shape, mode] if p["data"] == flag]
                if rows:
                    print(f"  {shape:9} {mode:17} {kind:8} "
                          + " ".join(f"{statistics.median(p.get(c, 0.0) for p in rows):10.1f}" for c in PARTS)
                          + f"   (n={len(rows)})")
    cols = ("step", "observe", "other", "batches")
    print("the harness: median ms per step (observe: reading back each batch; other: the triggers)")
    print(f"  {'shape':9} {'mode':17} " + " ".join(f"{c[:10]:>10}" for c in cols))
    for shape in shapes:
        base = statistics.median(s["step"] for s in got[shape, modes[0]])
        for mode in modes:
            rows = got[shape, mode]
            med = {c: statistics.median(s[c] for s in rows) for c in cols}
            ratio = med["step"] / base
            print(f"  {shape:9} {mode:17} " + " ".join(f"{med[c]:10.1f}" for c in cols)
                  + f"   x{ratio:.3f} (n={len(rows)})")


if __name__ == "__main__":
    main()
