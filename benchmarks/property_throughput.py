"""Generated streams per minute: `check-properties` against the same streams run one `eventtime run` each.

    python benchmarks/property_throughput.py                  # 2 rounds of 8 streams per job
    python benchmarks/property_throughput.py --rounds 3 --examples 12

Issue 46 asks that a job's properties be fast enough to check in CI: at least five times the throughput of
running the same generated scenarios one `eventtime run` each. Two jobs, written as data engineers write them
(a zero-argument `main()` with its own session, reading JSON files, writing Parquet folders):
- one: clicks per page and 10-second window in append mode (one query);
- four: raw clicks, clicks deduplicated within the watermark, the windowed count and the clicks of one page,
  each a query of its own from one read (four queries).
Each round, per job, sides alternated (which goes first swaps every round):
- check: `check_properties(..., properties=["no-query-dies"])` in this process on one session: every
  generated stream is run once (the property with one run per stream), derandomized (`--properties`:
  others, whose variants, a restart or a batch run again, are scenarios of their own);
- runs: the scenarios that check ran, each written as a scenario file and run by `eventtime run FILE
  --snapshot create --yes` (its observation steps have no values yet: the snapshot fills them, which is the
  work the check does with them), one process each, as a user runs scenarios one by one (cold, the
  default; `--warm-runs`: each attached to a warm Spark daemon, `eventtime run --warm`).
It prints scenarios per minute on each side and their ratio (check / runs); the target is at least 5.
Every run of the `runs` side must exit 0, and the check must hold, or the benchmark exits 1 (as it does
when a ratio is under the target).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

JOBS = textwrap.dedent('''\
    """Clicks jobs for the benchmark: a zero-argument main() each, with its own session."""
    from pyspark.sql import SparkSession, functions as F


    def _clicks(spark):
        return (spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")
                .withWatermark("ts", "10 seconds"))


    def _counts(clicks):
        return (clicks.groupBy("page", F.window("ts", "10 seconds").alias("window")).agg(F.count("*").alias("clicks"))
                .select("page", F.col("window.start").alias("window_start"), "clicks"))


    def _to(df, path, mode="append"):
        return (df.writeStream.outputMode(mode).format("parquet").option("path", path)
                .option("checkpointLocation", path + "/_checkpoint").start())


    def one():
        spark = SparkSession.builder.appName("clicks-one").getOrCreate()
        _to(_counts(_clicks(spark)), "data/counts")


    def four():
        spark = SparkSession.builder.appName("clicks-four").getOrCreate()
        clicks = _clicks(spark)
        _to(clicks, "data/raw")
        _to(clicks.dropDuplicatesWithinWatermark(["page"]), "data/first")
        _to(_counts(clicks), "data/counts")
        _to(clicks.where(F.col("page") == "a"), "data/page_a")
    ''')
SOURCES = textwrap.dedent("""\
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    """)
CONTRACTS = {
    "one": "contract: clicks_one\ndescription: clicks per page and 10-second window\n" + SOURCES
           + 'queries:\n  data/counts: {columns: "page string, window_start timestamp, clicks bigint"}\n',
    "four": "contract: clicks_four\ndescription: raw, first per page, counts, page a\n" + SOURCES + textwrap.dedent("""\
        queries:
          data/raw: {columns: "page string, ts timestamp"}
          data/first: {columns: "page string, ts timestamp"}
          data/counts: {columns: "page string, window_start timestamp, clicks bigint"}
          data/page_a: {columns: "page string, ts timestamp"}
        """),
}
POOLS = {"page": ["a", "b", None]}


def _project(where: Path) -> None:
    (where / "bench_jobs.py").write_text(JOBS)
    for job, text in CONTRACTS.items():
        (where / f"clicks_{job}.contract.yaml").write_text(text)


def _check(spark, where: Path, job: str, examples: int, props: list[str]) -> tuple[float, list[str]]:
    """The in-process check of `job`: its seconds and the scenario texts it ran (each generated stream, and
    each variant a property ran beside it: a restart, a batch run again), in order."""
    from eventtime import properties
    from eventtime.contractfile import load_contract_file

    texts: list[str] = []
    plain = properties.observe_run

    def recording(text, *args, **kwargs):
        if text not in texts:
            texts.append(text)
        return plain(text, *args, **kwargs)

    contract = load_contract_file(where / f"clicks_{job}.contract.yaml")
    properties.observe_run = recording
    try:
        t0 = time.monotonic()
        report = properties.check_properties(contract, f"bench_jobs:{job}", session=spark,
                                             properties=props, max_examples=examples,
                                             derandomize=True, database=None, max_events=6, pools=POOLS)
        seconds = time.monotonic() - t0
    finally:
        properties.observe_run = plain
    if not report.held:
        raise SystemExit(f"{job}: the check did not hold:\n{report.describe()}")
    return seconds, texts


def _runs(where: Path, job: str, texts: list[str], warm: bool) -> float:
    """The same streams, one `eventtime run --snapshot create` process each: their seconds in all."""
    eventtime = Path(sys.executable).with_name("eventtime")
    total = 0.0
    for i, text in enumerate(texts):
        path = where / "runs" / f"{job}-{i}.scenario.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        cmd = [str(eventtime), "run", str(path), "--snapshot", "create", "--yes", "--contracts", str(where),
               "--pipeline", f"clicks_{job}=bench_jobs:{job}"] + (["--warm"] if warm else [])
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=where, capture_output=True, text=True, timeout=900,
                              env={**os.environ, "PYTHONPATH": str(where)})
        total += time.monotonic() - t0
        if done.returncode != 0:
            raise SystemExit(f"{job}: eventtime run of stream {i} exited {done.returncode}:\n{done.stdout[-2000:]}"
                             f"\n{done.stderr[-2000:]}")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--examples", type=int, default=8, help="generated streams per check (max_examples)")
    parser.add_argument("--properties", nargs="+", default=["no-query-dies"],
                        help="the properties checked (default no-query-dies: one run per stream)")
    parser.add_argument("--warm-runs", action="store_true",
                        help="each `eventtime run` with --warm (attached to a warm Spark daemon; stopped at the end)")
    parser.add_argument("--jobs", nargs="+", default=["one", "four"], choices=sorted(CONTRACTS))
    args = parser.parse_args()
    os.environ.pop("CI", None)  # the snapshot writes the files on the `runs` side
    from eventtime.harness.session import get_session

    where = Path(tempfile.mkdtemp(prefix="property-throughput-"))
    _project(where)
    sys.path.insert(0, str(where))
    os.chdir(where)
    spark = get_session()
    print(f"load average at start: {os.getloadavg()[0]:.1f}; {args.examples} streams per check")
    ratios: dict[str, list[float]] = {job: [] for job in args.jobs}
    texts_of: dict[str, list[str]] = {}
    for r in range(args.rounds):
        for job in args.jobs:
            if r % 2 == 0 or job not in texts_of:
                check_s, texts = _check(spark, where, job, args.examples, args.properties)
                runs_s = _runs(where, job, texts, args.warm_runs)
            else:  # the runs first: the texts of the check the previous round ran (derandomized: the same)
                runs_s = _runs(where, job, texts_of[job], args.warm_runs)
                check_s, texts = _check(spark, where, job, args.examples, args.properties)
            texts_of[job] = texts
            per_min_check, per_min_runs = 60 * len(texts) / check_s, 60 * len(texts) / runs_s
            ratios[job].append(per_min_check / per_min_runs)
            print(f"round {r + 1} {job}: {len(texts)} scenarios; check {per_min_check:.1f}/min ({check_s:.0f} s), "
                  f"runs {per_min_runs:.1f}/min ({runs_s:.0f} s); ratio {per_min_check / per_min_runs:.1f}x; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    for job, rs in ratios.items():
        print(f"{job}: ratio check/runs per round: {', '.join(f'{x:.1f}x' for x in rs)}; "
              f"min {min(rs):.1f}x (target >= 5x)")
    return 0 if all(min(rs) >= 5 for rs in ratios.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
