"""The harness's JVM with C1 only (-XX:TieredStopAtLevel=1) against the JVM's default tiered C1+C2.

    python benchmarks/jit_tiers.py [--rounds 2] [--pairs 30] [--jobs 1]

The harness starts its driver with `-XX:TieredStopAtLevel=1` (`eventtime.harness.session.TEST_CONF`). This
script measures that choice: each round runs the first `--pairs` scenario/implementation pairs of
the standard suite (tests/spark/test_suite.py's order) once per mode, each in a fresh process with
its own JVM, the modes' order swapped every round, never two at once. Per process it records the
wall time of the pairs (Spark started beforehand, not counted), the CPU time the JVM used in them
(from /proc, so Linux only), and the verdicts. It prints per mode the medians over the rounds and the
ratios C1-only / default measured in this run, and exits 1 if a verdict differs between the modes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# c1-only is what the harness's JVMs run (`harness.session._TEST_JVM`, with the code cache it needs);
# both modes run the harness's garbage collector, so that only the JIT differs
MODES = {"c1-only": "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC",
         "default": "-Duser.timezone=UTC -XX:+UseSerialGC"}


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # fields from the 3rd on (the name may hold spaces)


def jvm_pid() -> int:
    """The driver JVM: the java process among this process's descendants (Linux /proc)."""
    parents = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parents[int(d.name)] = int(_stat(int(d.name))[1])
            except (OSError, ValueError):
                continue
    for pid in sorted(parents):
        p = parents.get(pid)
        while p and p != os.getpid():
            p = parents.get(p)
        if p == os.getpid() and b"java" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]:
            return pid
    raise RuntimeError("no java process under this one")


def jvm_cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def worker(mode: str, pairs: int, jobs: int, out: str) -> int:
    from benchmarks.suite_throughput import select_pairs
    from eventtime.parallel import run_pairs
    from eventtime.harness import get_session

    spark = get_session(conf={"spark.driver.extraJavaOptions": MODES[mode]})
    pid = jvm_pid()
    flags = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    tiered = [f for f in flags if "TieredStopAtLevel" in f]
    chosen = [pair for _, pair, _ in select_pairs(pairs, [])]
    cpu0, t0 = jvm_cpu_seconds(pid), time.monotonic()
    verdicts = {f"{r.scenario.name} [{r.implementation}]": r.status
                for r in run_pairs(chosen, jobs=jobs, session=spark)}
    seconds, cpu = time.monotonic() - t0, jvm_cpu_seconds(pid) - cpu0
    Path(out).write_text(json.dumps({"mode": mode, "seconds": seconds, "jvm_cpu": cpu, "flags": tiered,
                                     "verdicts": verdicts}))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=30, help="the first N pairs of the suite")
    ap.add_argument("--jobs", type=int, default=1, help="pairs at a time in the one JVM")
    ap.add_argument("--worker", choices=sorted(MODES), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rounds < 1 or args.pairs < 1 or args.jobs < 1:
        ap.error("--rounds, --pairs and --jobs must be at least 1")
    if args.worker:
        return worker(args.worker, args.pairs, args.jobs, args.out)

    results: dict[str, list[dict]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            order = list(MODES) if rnd % 2 == 0 else list(MODES)[::-1]
            for mode in order:
                out = Path(tmp) / f"{mode}-{rnd}.json"
                t0 = time.monotonic()
                proc = subprocess.run([sys.executable, __file__, "--worker", mode, "--pairs", str(args.pairs),
                                       "--jobs", str(args.jobs), "--out", str(out)], cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=args.pairs * 120)
                if proc.returncode != 0 or not out.exists():
                    print(f"round {rnd + 1} {mode}: the worker failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
                    return 1
                r = json.loads(out.read_text())
                r["process"] = time.monotonic() - t0
                results[mode].append(r)
                print(f"round {rnd + 1} {mode:8} pairs {r['seconds']:7.1f} s  JVM CPU {r['jvm_cpu']:7.1f} s  "
                      f"process {r['process']:6.1f} s  flags {' '.join(r['flags']) or '(none)'}  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in results[mode])

    print(f"\n{args.pairs} pairs, --jobs {args.jobs}, {args.rounds} rounds; medians")
    print(f"{'mode':10} {'pairs wall s':>12} {'JVM CPU s':>10} {'process s':>10}")
    for mode in MODES:
        print(f"{mode:10} {med(mode, 'seconds'):12.1f} {med(mode, 'jvm_cpu'):10.1f} {med(mode, 'process'):10.1f}")
    for key, label in (("seconds", "wall"), ("jvm_cpu", "JVM CPU"), ("process", "process")):
        print(f"c1-only / default, {label}: {med('c1-only', key) / med('default', key):.3f}")
    reference = results["default"][0]["verdicts"]
    differ = sorted({k for runs in results.values() for r in runs for k, v in r["verdicts"].items()
                     if reference.get(k) != v})
    print(f"verdicts: {len(reference)} pairs, {len(differ)} differ between runs")
    for k in differ:
        print(f"  differs: {k}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
