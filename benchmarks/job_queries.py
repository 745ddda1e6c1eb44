"""What a job of several queries costs per step, against the same queries run one scenario each.

    python benchmarks/job_queries.py                 # 5 rounds
    python benchmarks/job_queries.py --rounds 9

One process, one SparkSession. Each round runs, sides alternated (which goes first swaps every round):
- job: one scenario of a job that starts four queries from one Kafka read (raw records kept in memory,
  deduplicated valid orders, revenue per minute through a batch function, big orders to an output
  topic), each step driving all four;
- separate: four scenarios with the same steps, each of a job that starts one of those queries.
It prints, per round, the seconds of the steps that run batches (start, process, restart) on each side
and their ratio (job / separate); the target is a ratio of at most 1 (a job costs no more than its
queries run separately). The verdicts must all be `passed`; the batches each query ran are compared
between the sides (the same per query, or the benchmark exits 1).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from eventtime import load_scenario, run_scenario  # noqa: E402
from eventtime.harness.session import get_session  # noqa: E402

ORDER = "order_id string, amount double, ts timestamp"
QUERIES = ("raw", "valid", "revenue", "alerts")


def _orders(spark):
    return (spark.readStream.format("kafka").option("subscribe", "orders").load()
            .select(F.from_json(F.col("value").cast("string"), ORDER).alias("o")).select("o.*"))


def _start(spark, which: str, orders) -> None:
    if which == "raw":
        orders.writeStream.queryName("raw").format("memory").start()
    elif which == "valid":
        (orders.where(F.col("amount") > 0).withWatermark("ts", "1 minute").dropDuplicates(["order_id", "ts"])
         .writeStream.queryName("valid").format("memory").start())
    elif which == "revenue":
        (orders.withWatermark("ts", "1 minute").groupBy(F.window("ts", "1 minute").alias("w"))
         .agg(F.sum("amount").alias("revenue")).select(F.col("w.start").alias("window_start"), "revenue")
         .writeStream.queryName("revenue").outputMode("append").foreachBatch(lambda batch, batch_id: None).start())
    else:
        (orders.where(F.col("amount") >= 100).select(F.col("order_id").alias("key"),
                                                      F.to_json(F.struct("order_id", "amount")).alias("value"))
         .writeStream.format("kafka").option("topic", "alerts").start())


def job_of_all(spark) -> None:
    orders = _orders(spark)
    for which in QUERIES:
        _start(spark, which, orders)


def job_of(which: str):
    def job(spark) -> None:
        _start(spark, which, _orders(spark))
    job.__name__ = f"job_of_{which}"
    return job


CONTRACT = textwrap.dedent("""\
    contract: orders_four
    description: orders -> raw, valid, revenue per minute, alerts
    sources:
      orders: {kind: kafka, topic: orders}
    queries:
      raw: {columns: "order_id string, amount double, ts timestamp"}
      valid: {columns: "order_id string, amount double, ts timestamp"}
      revenue: {columns: "window_start timestamp, revenue double"}
      alerts: {columns: "key string, value string"}
    """)


def _contract_of(which: str) -> str:
    """The contract of the job that starts only `which`: that query's line of CONTRACT."""
    head, _, queries = CONTRACT.partition("queries:\n")
    line = next(ln for ln in queries.splitlines() if ln.strip().startswith(which + ":"))
    return head.replace("orders_four", f"orders_{which}") + "queries:\n" + line + "\n"


def _scenario_text(steps: int, contract: str = "orders_four") -> str:
    lines = [f"scenario: {contract}", "description: orders in steps", f"contract: {contract}", "steps:"]
    for i in range(steps):
        second = 10 * i
        lines += ["  - add:", "      orders:"]
        for k in range(3):
            amount = 150.0 if k == 0 else 10.0 + k
            lines.append(f"        - {{value: {{order_id: o{i}-{k}, amount: {amount}, "
                         f"ts: \"2024-01-01T00:{second // 60:02d}:{second % 60:02d}\"}}}}")
        lines.append("  - process")
        if i == steps // 2:
            lines.append("  - restart")
    return "\n".join(lines) + "\n"


BATCH_STEPS = ("start", "process", "restart")


def _run(scenario, job, spark) -> tuple[float, dict[str, list]]:
    result = run_scenario(scenario, job, session=spark)
    if result.status != "passed":
        raise SystemExit(f"{job.__name__}: {result.status} {result.reason} "
                         f"{[(s.index, s.status, s.message) for s in result.steps if s.status != 'passed']}")
    seconds = sum(s.seconds for s in result.steps if s.kind in BATCH_STEPS)
    batches: dict[str, list] = {}
    for s in result.steps:
        for b in s.batches:
            batches.setdefault(b.query or "", []).append((b.batch_id, b.input_rows, b.watermark_after_ms))
    return seconds, batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="job-queries-"))
    (folder / "orders_four.contract.yaml").write_text(CONTRACT)
    (folder / "four.scenario.yaml").write_text(_scenario_text(args.steps))
    scenario = load_scenario(str(folder / "four.scenario.yaml"))
    alone = {}
    for which in QUERIES:
        (folder / f"orders_{which}.contract.yaml").write_text(_contract_of(which))
        (folder / f"{which}.scenario.yaml").write_text(_scenario_text(args.steps, f"orders_{which}"))
        alone[which] = load_scenario(str(folder / f"{which}.scenario.yaml"))
    spark = get_session()
    _run(scenario, job_of_all, spark)  # warm-up, not counted: the first plans of each query shape
    for which in QUERIES:
        _run(alone[which], job_of(which), spark)
    ratios, job_times, separate_times = [], [], []
    status = 0
    for r in range(args.rounds):
        sides = ["job", "separate"] if r % 2 == 0 else ["separate", "job"]
        timing: dict[str, float] = {}
        seen: dict[str, dict[str, list]] = {}
        for side in sides:
            t0 = time.monotonic()
            if side == "job":
                timing[side], seen[side] = _run(scenario, job_of_all, spark)
            else:
                timing[side], seen[side] = 0.0, {}
                for which in QUERIES:
                    seconds, batches = _run(alone[which], job_of(which), spark)
                    timing[side] += seconds
                    seen[side][which] = next(iter(batches.values()))
            wall = time.monotonic() - t0
            print(f"round {r + 1} {side:8}: batch steps {timing[side]:6.2f} s (wall {wall:6.2f} s)", flush=True)
        if seen["job"] != seen["separate"]:
            print(f"round {r + 1}: the queries ran other batches in the job than alone", flush=True)
            status = 1
        ratio = timing["job"] / timing["separate"]
        ratios.append(ratio)
        job_times.append(timing["job"])
        separate_times.append(timing["separate"])
        print(f"round {r + 1}: job / separate = {ratio:.3f}", flush=True)
    print(f"\nmedian over {args.rounds} rounds ({args.steps} adds, {len(QUERIES)} queries): job "
          f"{statistics.median(job_times):.2f} s, separate {statistics.median(separate_times):.2f} s, "
          f"ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
    return status


if __name__ == "__main__":
    sys.exit(main())
