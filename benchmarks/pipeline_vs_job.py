"""Times one scenario through the pipeline face against the same flows written as a job, side by side.

    python benchmarks/pipeline_vs_job.py                         # 3 pairs; a local Connect server it starts
    python benchmarks/pipeline_vs_job.py --pairs 5 --remote sc://HOST:PORT   # an existing server

A (the pipeline face): examples/clickstream-pipeline's scenario late-and-resent-clicks-across-updates,
its Spark Declarative Pipeline run unchanged (three updates, a restart), over Spark Connect (a pipeline
runs on Connect only). B (the job face): benchmarks/pipeline_vs_job/, the same flows as a job with a
`main()` (clickstream_job.py), its own contract, and a scenario of the same events, steps and expected
values, on classic Spark (local[2]): a job's own readers and writers are substituted in classic PySpark
only, so over Connect its scenario is not applicable (docs/jobs.md; measured: the kit says so and the
run judges nothing). The ratio therefore compares the faces as a user can run each, the server included:
an in-process JVM for the job, a local Connect server for the pipeline.

Each run is one whole `eventtime run --json` command in a child process, as a user runs it: a pair is
A then B, so a change of the shared machine's load falls on both, the ratio (A / B) is taken pair by
pair, then the median. A child process per run, not an in-process loop, because each face's cost
includes what a user pays per command (the JVM's or the client's start; for the pipeline, a dataflow
graph created and its definition files registered on the server at every update), and a warm
in-process loop would hide the first-run costs of one face and not the other. A run counts only if its
results say the scenario passed with every expect step judged (a timing of a run that judged nothing
is worthless): otherwise the script says why and exits 1. Each run's seconds by step kind are printed
too. Figures go to --out (one results file per run, summary.json); record them in BENCHMARKS.md,
section *The pipeline face against the same flows as a job*, with the command and the load.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eventtime.resultsfile import read_results  # noqa: E402

SCENARIO = "tests/scenarios/late-and-resent-clicks-across-updates.scenario.yaml"
JOB_SCENARIO = "scenarios/late-and-resent-clicks-across-updates.scenario.yaml"
SIDES = {  # label: (folder the command runs in, scenario file, over Connect)
    "pipeline": (ROOT / "examples" / "clickstream-pipeline", SCENARIO, True),
    "job": (ROOT / "benchmarks" / "pipeline_vs_job", JOB_SCENARIO, False),
}


def judged(path: Path) -> tuple[bool, str]:
    """Whether a run's results say its one scenario passed with every expect step judged, and what they say."""
    if not path.exists():
        return False, "no results file"
    records = read_results(path).results
    if len(records) != 1:
        return False, f"{len(records)} scenario runs, 1 expected"
    record = records[0]
    steps = record.get("steps") or []
    expects = [s for s in steps if s.get("kind") == "expect"]
    judged_ok = [s for s in expects if s.get("status") == "passed"]
    summary = f"{record.get('status')}, {len(judged_ok)} of {len(expects)} expect steps judged and held"
    if record.get("status") != "passed":
        return False, f"{summary}: {record.get('reason')}"
    return bool(expects) and len(judged_ok) == len(expects), summary


def step_seconds(path: Path) -> dict[str, float]:
    """The seconds a run's steps took, summed by kind (start, process, restart, expect, add)."""
    if not path.exists():
        return {}
    by_kind: dict[str, float] = {}
    for record in read_results(path).results:
        for step in record.get("steps") or []:
            if step.get("seconds") is not None:
                kind = str(step.get("kind"))
                by_kind[kind] = round(by_kind.get(kind, 0.0) + float(step["seconds"]), 1)
    return by_kind


def run_once(side: str, remote: str | None, out: Path, label: str, timeout: float) -> dict[str, Any]:
    """One whole `eventtime run` of a side's scenario; its wall time, load averages and whether it judged."""
    folder, scenario, over_connect = SIDES[side]
    results = out / f"{label}.{side}.json"
    results.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "eventtime.cli", "run", scenario, "--json", str(results),
           "--timeout", str(timeout), "-q"]
    if over_connect:
        cmd += ["--remote", str(remote)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("SPARK_REMOTE", None)
    load0, t0 = os.getloadavg()[0], time.monotonic()
    proc = subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds, load1 = time.monotonic() - t0, os.getloadavg()[0]
    ok, summary = judged(results)
    print(f"   {label} {side:11} {seconds:6.1f} s  exit {proc.returncode}  {summary}  "
          f"[load {load0:.1f} -> {load1:.1f}]", flush=True)
    if not ok or proc.returncode:
        print("      " + "\n      ".join(proc.stdout.splitlines()[-15:]), flush=True)
    steps = step_seconds(results)
    print(f"      steps by kind (s): {steps}", flush=True)
    return {"seconds": round(seconds, 1), "exit": proc.returncode, "judged": ok and proc.returncode == 0,
            "summary": summary, "steps": steps, "load": [round(load0, 2), round(load1, 2)]}


def table(rounds: list[dict[str, dict[str, Any]]], sides: list[str]) -> list[str]:
    """The figures: one line per pair, the pair's ratio pipeline / job, then the medians."""
    head = "| pair | " + " | ".join(f"{s} (s)" for s in sides) + " | pipeline / job |"
    lines = [head, "|" + "---|" * (len(sides) + 2)]
    ratios = []
    for i, r in enumerate(rounds, 1):
        ratio = r["pipeline"]["seconds"] / r["job"]["seconds"] if r["job"]["seconds"] else float("nan")
        ratios.append(ratio)
        lines.append(f"| {i} | " + " | ".join(f"{r[s]['seconds']:.1f}" for s in sides) + f" | {ratio:.2f} |")
    if rounds:
        medians = [statistics.median(r[s]["seconds"] for r in rounds) for s in sides]
        lines.append("| median | " + " | ".join(f"{m:.1f}" for m in medians)
                     + f" | {statistics.median(ratios):.2f} |")
    return lines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--pairs", type=int, default=3, help="rounds of A then B (default 3)")
    ap.add_argument("--remote", default=None, help="an existing Spark Connect server (default: start one)")
    ap.add_argument("--timeout", type=float, default=300.0, help="bound on each wait for Spark (default 300 s)")
    ap.add_argument("--out", default="reports/pipeline-vs-job", help="results files and summary.json")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    return args


def run_rounds(args: argparse.Namespace, remote: str, out: Path) -> int:
    sides = list(SIDES)
    rounds = []
    for i in range(1, args.pairs + 1):
        print(f"== pair {i} of {args.pairs}", flush=True)
        rounds.append({s: run_once(s, remote, out, f"pair{i}", args.timeout) for s in sides})
    print("\n" + "\n".join(table(rounds, sides)))
    unjudged = [f"pair {i} {s}" for i, r in enumerate(rounds, 1) for s in sides if not r[s]["judged"]]
    (out / "summary.json").write_text(json.dumps({"sides": sides, "rounds": rounds}, indent=1) + "\n")
    print(f"\nfigures in {out / 'summary.json'}; record the table in BENCHMARKS.md with the command and load")
    if unjudged:
        print(f"NOT A TIMING: {', '.join(unjudged)} did not pass with every check judged")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.remote:
        return run_rounds(args, args.remote, out)
    from eventtime.harness.connect_server import ConnectServer
    with ConnectServer() as server:
        print(f"== Spark Connect server up: {server.url}", flush=True)
        return run_rounds(args, server.url, out)


if __name__ == "__main__":
    sys.exit(main())
