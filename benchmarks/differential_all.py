"""The long differential run over every contract family, in chunks that can be resumed.

    python benchmarks/differential_all.py [--per-family 1000] [--chunk 100] [--parallel 2]
                                          [--budget-minutes M] [--families F ...] [--log FILE]
    python benchmarks/differential_all.py --summary        # only the table from the log

Each family's `--per-family` generated scenarios run as chunks of `--chunk` examples, chunk k with
Hypothesis seed k (1, 2, ...), each chunk one `benchmarks/differential.py` process with its own
Spark driver; `--parallel` chunks run at once. Every finished chunk appends its figures to the log
(JSON lines), and a chunk already in the log for this Spark version is not run again, so a run
stopped by `--budget-minutes` (no chunk is started after it) or by anything else goes on where it
left off. A chunk that disagrees keeps its shrunk case in `--out` and the family stops there.
The table at the end sums the log per family: scenarios run, not applicable, disagreements, the
seeds and the chunks' wall time summed (with --parallel 2, about twice the elapsed time).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"{path}:{n}: not a JSON line, ignored", file=sys.stderr)
    return out


def installed_spark() -> str:
    from importlib.metadata import version

    return version("pyspark")


def summary(records: list[dict], spark: str, families: list[str], per_family: int) -> int:
    by_family: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r.get("spark") == spark:
            by_family[r["family"]].append(r)
    print(f"\nSpark {spark}: generated scenarios per family (target {per_family})")
    print(f"{'family':32} {'run':>6} {'n/a':>5} {'disagree':>8} {'seeds':>10} {'chunk s':>10} {'s/scenario':>10}")
    done = 0
    for family in families:
        rs = by_family.get(family, [])
        run = sum(r["run"] for r in rs)
        seconds = sum(r["seconds"] for r in rs)
        seeds = sorted(r["seed"] for r in rs)
        seed_text = "-" if not seeds else (str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
                                           if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds)))
        done += run >= per_family
        print(f"{family:32} {run:>6} {sum(r['not_applicable'] for r in rs):>5} "
              f"{sum(r['disagreements'] for r in rs):>8} {seed_text:>10} {seconds:>10.0f} "
              f"{(seconds / run if run else 0):>10.2f}")
        for r in rs:
            for path in r.get("written") or []:
                print(f"    seed {r['seed']}: disagreement written to {path}")
    print(f"{done} of {len(families)} families have at least {per_family} scenarios")
    return done


def main() -> int:
    from eventtime.differential import FAMILIES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--per-family", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=100, help="examples per chunk (one process, one seed)")
    ap.add_argument("--parallel", type=int, default=2, help="chunks running at once (default 2)")
    ap.add_argument("--budget-minutes", type=float, default=None, help="start no chunk after this many minutes")
    ap.add_argument("--families", nargs="*", choices=sorted(FAMILIES), default=None)
    ap.add_argument("--log", default="reports/differential/log.jsonl")
    ap.add_argument("--out", default="reports/differential", help="where disagreeing cases are written")
    ap.add_argument("--summary", action="store_true", help="print the table from the log; run nothing")
    args = ap.parse_args()
    if args.chunk < 1 or args.per_family < 1 or args.parallel < 1:
        ap.error("--per-family, --chunk and --parallel must be at least 1")
    families = args.families or sorted(FAMILIES)
    log = Path(args.log)
    spark = installed_spark()
    if args.summary:
        summary(read_log(log), spark, families, args.per_family)
        return 0

    records = [r for r in read_log(log) if r.get("spark") == spark]
    logged = {(r["family"], r["seed"]) for r in records}
    stopped = {r["family"] for r in records if r["disagreements"]}
    chunks = [(family, seed) for seed in range(1, -(-args.per_family // args.chunk) + 1) for family in families
              if (family, seed) not in logged and family not in stopped]
    print(f"Spark {spark}: {len(chunks)} chunks of {args.chunk} to run ({len(logged)} already in {log})", flush=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    t0 = time.monotonic()
    lock = threading.Lock()
    status = 0

    def run_chunk(family: str, seed: int) -> None:
        nonlocal status
        with lock:
            if family in stopped:
                return
            if args.budget_minutes is not None and time.monotonic() - t0 > args.budget_minutes * 60:
                skipped.append((family, seed))
                return
            print(f"  started {family} seed {seed}", flush=True)
        cmd = [sys.executable, str(ROOT / "benchmarks" / "differential.py"), "--family", family,
               "--examples", str(args.chunk), "--seed", str(seed), "--log", str(log), "--out", args.out]
        started = time.monotonic()
        try:  # the harness bounds every wait on Spark; this bounds the whole chunk besides
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, timeout=args.chunk * 60)
            code, lines = proc.returncode, proc.stdout.splitlines()
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            code, lines = -1, out.splitlines() + [f"timed out after {args.chunk * 60} s (the chunk's bound)"]
        last = next((ln for ln in reversed(lines) if ln.startswith("family ")), lines[-1] if lines else "")
        with lock:
            print(f"  done {family} seed {seed} in {time.monotonic() - started:.0f} s, exit {code}: {last}",
                  flush=True)
            if code != 0:
                status = 1
                stopped.add(family)
                for ln in lines[-40:]:
                    print(f"    {ln}")

    skipped: list[tuple[str, int]] = []
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        for future in [pool.submit(run_chunk, family, seed) for family, seed in chunks]:
            future.result()
    if skipped:
        print(f"budget of {args.budget_minutes:g} min spent: {len(skipped)} chunks left for the next run")
    print(f"\nthis run: {time.monotonic() - t0:.0f} s")
    done = summary(read_log(log), spark, families, args.per_family)
    return status or (0 if done == len(families) else 2)


if __name__ == "__main__":
    sys.exit(main())
