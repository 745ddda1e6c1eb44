"""Cost of running a job as it ships (its readers and writer substituted, docs/jobs.md) against the plain
memory-sink path, measured side by side in one run.

    python benchmarks/substitution.py --rounds 3 --cycles 4

The same query (clicks per page and 1-minute window, update mode) runs two ways, rounds alternated in
one SparkSession: *plain*, a `transform(clicks)` pipeline whose output the kit's memory sink keeps;
*job*, a `build(spark)` job reading `readStream.json(...)` (substituted) and writing through a
`foreachBatch` function that overwrites the touched partitions of a parquet folder, checked after each
step with `expect: {written: ...}`. Each scenario has `--cycles` cycles of add, process, expect and
restart. Printed, as medians and job/plain ratios: a query start (the `restart` step: build, start,
first trigger), a step (`process`), and a step's check (the plain `rows` check against the job's
`rows` check plus reading its table back).
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
    (batch.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("page")
     .parquet(batch.sparkSession.conf.get("bench.out")))


def build(spark: Any) -> Any:
    clicks = spark.readStream.schema("page string, ts timestamp").json("/data/clicks")
    return _counts(clicks).writeStream.outputMode("update").foreachBatch(_overwrite)


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
    from eventtime import runner
    from eventtime.harness.session import get_session

    spark = get_session()
    checks: dict[str, list[float]] = {"plain": [], "job": []}
    original_expect = runner._SparkSteps.expect

    def timed_expect(self: Any, step: Any, since: Any) -> bool:
        t0 = time.perf_counter()
        try:
            return original_expect(self, step, since)
        finally:
            checks["job" if self.build.job else "plain"].append(time.perf_counter() - t0)

    runner._SparkSteps.expect = timed_expect  # type: ignore[method-assign]
    folder = Path(tempfile.mkdtemp(prefix="bench-substitution-"))
    (folder / "pyproject.toml").write_text("")
    (folder / "bench.contract.yaml").write_text(CONTRACT)
    scenarios = {}
    for side in ("plain", "job"):
        path = folder / f"{side}.scenario.yaml"
        path.write_text(scenario_text(args.cycles, side == "job"))
        scenarios[side] = load_scenario(str(path))
    starts: dict[str, list[float]] = {"plain": [], "job": []}
    steps: dict[str, list[float]] = {"plain": [], "job": []}
    step_checks: dict[str, list[float]] = {"plain": [], "job": []}
    for round_ in range(args.rounds + 1):  # round 0 warms the JVM up and is not counted
        for side, fn in (("plain", transform), ("job", build)) if round_ % 2 else (("job", build), ("plain", transform)):
            checks[side].clear()
            result = run_scenario(scenarios[side], fn, session=spark)
            if result.status != "passed":
                raise SystemExit(f"{side}: {result.status}: {result.reason or [s.message for s in result.steps]}")
            if round_ == 0:
                continue
            starts[side] += [s.seconds for s in result.steps if s.kind == "restart"]
            steps[side] += [s.seconds for s in result.steps if s.kind == "process"]
            per_cycle = len(checks[side]) // args.cycles
            step_checks[side] += [sum(checks[side][i:i + per_cycle]) for i in range(0, len(checks[side]), per_cycle)]
            print(f"round {round_} {side}: {result.seconds:.1f} s", flush=True)

    def row(what: str, values: dict[str, list[float]]) -> None:
        plain, job = statistics.median(values["plain"]), statistics.median(values["job"])
        print(f"| {what} | {plain * 1000:.0f} ms | {job * 1000:.0f} ms | **{job / plain:.2f}** | "
              f"n={len(values['plain'])}/{len(values['job'])} |")

    import pyspark

    print(f"\nSpark {pyspark.__version__}, {args.rounds} rounds x {args.cycles} cycles, rounds alternated")
    print("| what | plain (memory sink) median | job (substituted, foreachBatch) median | ratio | samples |")
    print("| --- | ---: | ---: | ---: | --- |")
    row("query start (`restart`: build, start, first trigger)", starts)
    row("step (`process`: add's batch and its no-data batch)", steps)
    row("a step's checks (plain: `rows`; job: `rows` + `written` read back)", step_checks)


if __name__ == "__main__":
    main()
