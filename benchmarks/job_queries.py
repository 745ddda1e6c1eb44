"""What a job of several queries costs per step, against the same queries run one scenario each.

    python benchmarks/job_queries.py                 # 5 rounds
    python benchmarks/job_queries.py --rounds 9

One process, one SparkSession. Each round runs, sides alternated (which goes first swaps every round):
- job: one scenario of a job that starts four queries from one Kafka read (raw records kept in memory,
  deduplicated valid orders, revenue per minute through a batch function, big orders to an output
  topic), each step driving all four;
- separate: four scenarios with the same steps, each of a job that starts one of those queries.
It prints, per round, the seconds of the steps that run batches on each side and their ratio (job /
separate), for all of them, for the `process` steps alone and for the starts (start, restart); the
target is a ratio of at most 1 (a job costs no more than its queries run separately). A start calls
the job once per query (each query reads copies of the sources of its own, `eventtime.harness.jobrun`),
so a job of N queries builds N times N DataFrames at each start where its queries alone build N. The verdicts must all be `passed`; the batches each query ran are compared
between the sides (the same per query, or the benchmark exits 1).
"""
from __future__ import annotations

import argparse
import os
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


def _run(scenario, job, spark) -> tuple[dict[str, float], dict[str, list]]:
    result = run_scenario(scenario, job, session=spark)
    if result.status != "passed":
        raise SystemExit(f"{job.__name__}: {result.status} {result.reason} "
                         f"{[(s.index, s.status, s.message) for s in result.steps if s.status != 'passed']}")
    seconds = {kind: sum(s.seconds for s in result.steps if s.kind in kinds)
               for kind, kinds in (("all", BATCH_STEPS), ("process", ("process",)), ("starts", ("start", "restart")))}
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
    ratios: dict[str, list[float]] = {k: [] for k in ("all", "process", "starts")}
    status = 0
    for r in range(args.rounds):
        sides = ["job", "separate"] if r % 2 == 0 else ["separate", "job"]
        timing: dict[str, dict[str, float]] = {}
        seen: dict[str, dict[str, list]] = {}
        for side in sides:
            t0 = time.monotonic()
            if side == "job":
                timing[side], seen[side] = _run(scenario, job_of_all, spark)
            else:
                timing[side], seen[side] = {k: 0.0 for k in ratios}, {}
                for which in QUERIES:
                    seconds, batches = _run(alone[which], job_of(which), spark)
                    for k in ratios:
                        timing[side][k] += seconds[k]
                    seen[side][which] = next(iter(batches.values()))
            wall = time.monotonic() - t0
            print(f"round {r + 1} {side:8}: batch steps {timing[side]['all']:6.2f} s (process "
                  f"{timing[side]['process']:5.2f} s, starts {timing[side]['starts']:5.2f} s; wall {wall:6.2f} s)",
                  flush=True)
        if seen["job"] != seen["separate"]:
            print(f"round {r + 1}: the queries ran other batches in the job than alone", flush=True)
            status = 1
        for k in ratios:
            ratios[k].append(timing["job"][k] / timing["separate"][k])
        print(f"round {r + 1}: job / separate = {ratios['all'][-1]:.3f} (process {ratios['process'][-1]:.3f}, "
              f"starts {ratios['starts'][-1]:.3f})", flush=True)
    print(f"\nmedian ratio job / separate over {args.rounds} rounds ({args.steps} adds, {len(QUERIES)} queries, "
          f"load {os.getloadavg()[0]:.1f}):")
    for k in ratios:
        print(f"  {k:8} {statistics.median(ratios[k]):.3f} (min {min(ratios[k]):.3f}, max {max(ratios[k]):.3f})")
    return status


if __name__ == "__main__":
    sys.exit(main())
