"""Ingest into MemoryStream: rows/s of the harness's bulk add, and per-batch cost, harness vs a bare loop.

One process, one session. The events are a `generate` step's rows (1,000,000 by default, seeded,
3 keys, one per millisecond, 1% late by 30 s) in 100 batches, fed to the tumbling count (10 s
windows, 5 s delay). Each batch is one add and everything it triggers:

- bare: what a hand-written test does, with the same bulk transport (one Arrow record batch per
  addData): addData, processAllAvailable, read the memory sink;
- harness: MemorySource.add and StreamRun.process (stepped triggers, every batch observed).

Rounds alternate bare/harness so machine noise hits both; the ratio is of the medians per batch.
Ingest rows/s is the harness's add alone (rows over seconds spent in MemorySource.add). For
reference the old path (a local DataFrame collected per add) is timed on a few batches.

    python benchmarks/ingest.py [--rows 1000000] [--batches 100] [--rounds 2]
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

from eventtime.contracts import Column  # noqa: E402
from eventtime.generate import GenerateSpec, generate_batches  # noqa: E402
from eventtime.spec import Params  # noqa: E402
from eventtime.pipelines.reference import tumbling_count  # noqa: E402
from eventtime.timeparse import parse_duration  # noqa: E402
from eventtime.harness import MemorySource, StreamRun, get_session  # noqa: E402
from eventtime.harness.compat import compat_for  # noqa: E402
from eventtime.harness.sparkvalues import arrow_payload, parse_schema  # noqa: E402

BASE_US = 1_704_067_200_000_000
PARAMS = Params({"window": parse_duration("10s"), "watermark_delay": parse_duration("5s"),
                 "output_mode": "append"})
COLUMNS = [("key", "string"), ("ts", "timestamp")]


def events(rows: int, batches: int) -> tuple[tuple[tuple, ...], ...]:
    spec = GenerateSpec(rows=rows, batches=batches, start=BASE_US, step=1000, seed=1, keys=3,
                        late_fraction=0.01, late_by=30_000_000)
    return generate_batches(spec, tuple(Column(n, t) for n, t in COLUMNS))


def bare(spark, data) -> tuple[list[float], float]:
    """A hand-written loop on a raw MemoryStream; returns per-batch seconds and seconds spent adding."""
    compat = compat_for(spark)
    from pyspark.sql.types import _parse_datatype_string

    jschema = spark._jsparkSession.parseDataType(_parse_datatype_string("key string, ts timestamp").json())
    stream = compat.memory_stream(jschema)
    deserializer = compat.row_deserializer(jschema)
    name = f"bare_{uuid.uuid4().hex[:8]}"
    df = compat.memory_stream_df(stream)
    query = (tumbling_count({"events": df}, PARAMS).writeStream.format("memory").queryName(name)
             .outputMode("append").option("checkpointLocation", tempfile.mkdtemp(prefix="bench-bare-")).start())
    schema = parse_schema(COLUMNS)  # parsed by the running session's JVM
    times, adding = [], 0.0
    try:
        for rows in data:
            t0 = time.perf_counter()
            stream.addData(compat.rows_from_arrow(arrow_payload(schema, rows), jschema, deserializer))
            adding += time.perf_counter() - t0
            query.processAllAvailable()
            spark.table(name).collect()
            times.append(time.perf_counter() - t0)
    finally:
        query.stop()
    return times, adding


def harness(spark, data) -> tuple[list[float], float]:
    source = MemorySource(spark, "events", COLUMNS)
    run = StreamRun(spark, lambda: (tumbling_count({"events": source.dataframe()}, PARAMS), "append"),
                    checkpoint=tempfile.mkdtemp(prefix="bench-harness-") + "/cp", clock_start_ms=BASE_US // 1000)
    run.start()
    times, adding = [], 0.0
    try:
        for rows in data:
            t0 = time.perf_counter()
            source.add(rows)
            adding += time.perf_counter() - t0
            run.process()
            times.append(time.perf_counter() - t0)
    finally:
        run.close()
    return times, adding


def old_path_rows_per_s(spark, data, batches: int = 3) -> float:
    """The add before the Arrow path: a local DataFrame from the Python rows, collected, then addData."""
    source = MemorySource(spark, "old", COLUMNS)
    source._deserializer = None  # force the fallback
    t0 = time.perf_counter()
    for rows in data[:batches]:
        source.add(rows)
    return sum(len(r) for r in data[:batches]) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    spark = get_session()
    t0 = time.perf_counter()
    data = events(args.rows, args.batches)
    gen_s = time.perf_counter() - t0
    harness(spark, data[:3])  # warm-up: the first query of a session pays for code generation
    bare(spark, data[:3])
    per_side: dict[str, list[float]] = {"bare": [], "harness": []}
    add_rate: dict[str, list[float]] = {"bare": [], "harness": []}
    wall: dict[str, list[float]] = {"bare": [], "harness": []}
    for r in range(args.rounds):
        for side, fn in (("bare", bare), ("harness", harness)) if r % 2 == 0 else (("harness", harness), ("bare", bare)):
            times, adding = fn(spark, data)
            per_side[side].extend(times[1:])  # the first batch of each query includes its start-up
            add_rate[side].append(args.rows / adding)
            wall[side].append(sum(times))
    old = old_path_rows_per_s(spark, data)
    med = {k: statistics.median(v) * 1000 for k, v in per_side.items()}
    print(f"Spark {spark.version}: {args.rows:,} events in {args.batches} batches of ~{args.rows // args.batches:,}, "
          f"{args.rounds} rounds per side (generating the rows: {gen_s:.1f} s)")
    for side in ("bare", "harness"):
        v = [x * 1000 for x in per_side[side]]
        q = statistics.quantiles(v, n=10)
        rates = ", ".join(f"{x:,.0f}" for x in add_rate[side])
        print(f"  {side:8} per batch median {med[side]:7.1f} ms  p10 {q[0]:7.1f}  p90 {q[-1]:7.1f}  (n={len(v)});  "
              f"ingest {rates} rows/s per round;  whole run {', '.join(f'{w:.1f}' for w in wall[side])} s")
    print(f"  ratio harness/bare (medians per batch): {med['harness'] / med['bare']:.3f}")
    print(f"  old path (local DataFrame collected per add), 3 batches: {old:,.0f} rows/s")


if __name__ == "__main__":
    main()
