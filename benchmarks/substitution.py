"""Cost of running a job as it ships (its readers and writer substituted, docs/jobs.md) against the plain
memory-sink path, measured side by side in one run.

    python benchmarks/substitution.py --rounds 3 --cycles 4

The same query (clicks per page and 1-minute window, update mode) runs two ways, rounds alternated in
one SparkSession: *plain*, a `transform(clicks)` pipeline whose output the kit's memory sink keeps;
*job*, a `build(spark)` job reading `readStream.json(...)` (substituted) and writing through a
`foreachBatch` function that overwrites the touched partitions of a parquet folder, checked after each
step with `expect: {written: ...}`; *idle job*, the same job whose batch function does nothing (the
substitution's own cost: Spark's foreachBatch sink, the Python call per batch, the batch observed).
Each scenario has `--cycles` cycles of add, process, expect and restart. Printed, as medians and
ratios to plain: a query start (the `restart` step: build, start, first trigger), a step (`process`),
a step with its checks (`process` plus the expects after it: the job's includes reading its table
back).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONTRACT = textwrap.dedent("""\
    contract: bench_page_counts
    description: clicks -> clicks per page and 1-minute window.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    params:
      out: {kind: path, conf: bench.out}
    output:
      columns: "page string, window_start timestamp, clicks bigint"
      modes: [update]
    """)


def _counts(clicks: Any) -> Any:
    from pyspark.sql import functions as F

    return (clicks.withWatermark("ts", "0 seconds")
            .groupBy("page", F.window("ts", "1 minute").alias("window"))
            .agg(F.count("*").alias("clicks"))
            .select("page", F.col("window.start").alias("window_start"), "clicks"))


def transform(clicks: Any) -> Any:
    from eventtime.runner import Output

    return Output(_counts(clicks), "update")


def _overwrite(batch: Any, batch_id: int) -> None:
    from pyspark.sql import functions as F

    (batch.withColumn("slot", F.date_format("window_start", "HHmm"))
     .write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("slot", "page")
     .parquet(batch.sparkSession.conf.get("bench.out")))


def build(spark: Any) -> Any:
    clicks = spark.readStream.schema("page string, ts timestamp").json("/data/clicks")
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(_overwrite)


def _nothing(batch: Any, batch_id: int) -> None:
    return None


def build_idle(spark: Any) -> Any:
    """The same job with a batch function that does nothing: what the substitution itself costs."""
    clicks = spark.readStream.schema("page string, ts timestamp").json("/data/clicks")
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(_nothing)


def scenario_text(cycles: int, job: bool) -> str:
    steps = []
    for i in range(cycles):
        minute = f"00:{i:02d}"
        steps.append(f'  - add: {{clicks: [[home, "{minute}:10"], [cart, "{minute}:20"]]}}')
        steps.append("  - process")
        steps.append(f'  - expect: {{rows: [[home, "{minute}:00", 1], [cart, "{minute}:00", 1]]}}')
        if job:
            rows = ", ".join(f'[{p}, "00:{j:02d}:00", 1]' for j in range(i + 1) for p in ("home", "cart"))
            steps.append(f"  - expect: {{written: out, rows: [{rows}]}}")
        steps.append("  - restart")
    return "scenario: bench\ndescription: bench\ncontract: bench_page_counts\nsteps:\n" + "\n".join(steps) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=4)
    args = parser.parse_args()

    from eventtime import load_scenario, run_scenario
    from eventtime.sparksteps import SparkSteps
    from eventtime.harness.session import get_session

    spark = get_session()
    sides = {"plain": transform, "idle": build_idle, "job": build}
    checks: dict[str, list[float]] = {side: [] for side in sides}
    original_expect = SparkSteps.expect

    def timed_expect(self: Any, step: Any, since: Any) -> bool:
        t0 = time.perf_counter()
        try:
            return original_expect(self, step, since)
        finally:
            checks[current[0]].append(time.perf_counter() - t0)

    current = ["plain"]
    SparkSteps.expect = timed_expect  # type: ignore[method-assign]
    folder = Path(tempfile.mkdtemp(prefix="bench-substitution-"))
    (folder / "pyproject.toml").write_text("")
    (folder / "bench.contract.yaml").write_text(CONTRACT)
    scenarios = {}
    for side in sides:
        path = folder / f"{side}.scenario.yaml"
        path.write_text(scenario_text(args.cycles, side == "job"))
        scenarios[side] = load_scenario(str(path))
    starts: dict[str, list[float]] = {side: [] for side in sides}
    steps: dict[str, list[float]] = {side: [] for side in sides}
    step_checks: dict[str, list[float]] = {side: [] for side in sides}
    order = list(sides)
    for round_ in range(args.rounds + 1):  # round 0 warms the JVM up and is not counted
        for side in order[round_ % 3:] + order[:round_ % 3]:  # each side first in turn
            fn = sides[side]
            current[0] = side
            checks[side].clear()
            result = run_scenario(scenarios[side], fn, session=spark)
            if result.status != "passed":
                from eventtime.textreport import describe_failure

                raise SystemExit(f"{side}: {describe_failure(result)}")
            if round_ == 0:
                continue
            starts[side] += [s.seconds for s in result.steps if s.kind == "restart"]
            processes = [s.seconds for s in result.steps if s.kind == "process"]
            steps[side] += processes
            per_cycle = len(checks[side]) // args.cycles
            step_checks[side] += [p + sum(checks[side][i * per_cycle:(i + 1) * per_cycle])
                                  for i, p in enumerate(processes)]
            print(f"round {round_} {side}: {result.seconds:.1f} s", flush=True)

    def row(what: str, values: dict[str, list[float]]) -> None:
        plain, idle, job = (statistics.median(values[side]) for side in sides)
        print(f"| {what} | {plain * 1000:.0f} ms | {idle * 1000:.0f} ms (**{idle / plain:.2f}**) | "
              f"{job * 1000:.0f} ms (**{job / plain:.2f}**) | n={len(values['plain'])} each |")

    import pyspark

    print(f"\nSpark {pyspark.__version__}, {args.rounds} rounds x {args.cycles} cycles, rounds alternated")
    print("| what | plain (memory sink) | idle job (ratio to plain) | job writing parquet (ratio to plain) | samples |")
    print("| --- | ---: | ---: | ---: | --- |")
    row("query start (`restart`: build, start, first trigger)", starts)
    row("step (`process`: the add's batch and its no-data batch)", steps)
    row("step with its checks (job: + its folder read back)", step_checks)


if __name__ == "__main__":
    main()
