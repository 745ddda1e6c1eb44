"""Runs the suite in local mode and on a cluster and prints, per scenario x implementation, where they differ.

    python benchmarks/cluster_vs_local.py                        # whole suite: local[2] vs a standalone
                                                                 # cluster (master + 2 workers on 127.0.0.1)
    python benchmarks/cluster_vs_local.py --master 'local-cluster[2,1,1024]'   # or an existing spark://HOST:PORT
    python benchmarks/cluster_vs_local.py scenarios/dedup scenarios/join/inner-match-across-batches.scenario.yaml
    python benchmarks/cluster_vs_local.py --compare OUT/local.json OUT/cluster.json     # only compare two results files

Each side is one `eventtime run --json` in a child process (one Spark application at a time); the
results files stay in --out. Differences are listed in two kinds: a different *verdict* (the target
is none: any is a finding to explain in the scenario), and the same verdict reached with different
*observations* (rows, watermarks, dropped rows, state rows of some batch). Exit 1 when a verdict differs.
The whole suite takes about 17 min on two cores with --jobs 3 (one Spark application per side).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eventtime.resultsfile import read_results  # noqa: E402
from eventtime.harness.cluster import MasterURLError, StandaloneCluster, check_master  # noqa: E402


def run_side(label: str, master: str, paths: list[str], out: Path, timeout: float, jobs: int) -> Path:
    """`eventtime run` of `paths` on `master`, results to out/<label>.json; prints its totals line."""
    results = out / f"{label}.json"
    cmd = [sys.executable, "-m", "eventtime.cli", "run", *paths, "--master", master, "--json", str(results),
           "--timeout", str(timeout), "--jobs", str(jobs), "-q"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    print(f"== {label}: {master} (--jobs {jobs})", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = proc.stdout.splitlines()
    print(f"   {lines[-1] if lines else '(no output)'}  [{time.monotonic() - t0:.0f} s wall, exit {proc.returncode}]",
          flush=True)
    if not results.exists():
        raise SystemExit(f"cluster_vs_local: the {label} run wrote no results (exit {proc.returncode}):\n"
                         + "\n".join(lines[-30:]))
    return results


def _batch_view(batch: dict[str, Any]) -> tuple:
    return (batch.get("input_rows"), batch.get("watermark_before_ms"), batch.get("watermark_after_ms"),
            sorted(map(repr, batch.get("rows") or [])), batch.get("dropped"), batch.get("state_rows"))


def observation_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Where two results of one scenario x implementation observed different things, step by step."""
    out = []
    steps_a, steps_b = a.get("steps") or [], b.get("steps") or []
    if len(steps_a) != len(steps_b):
        out.append(f"{len(steps_a)} vs {len(steps_b)} steps run")
    for sa, sb in zip(steps_a, steps_b):
        where = f"step {sa.get('index')} ({sa.get('kind')}, {sa.get('where')})"
        if sa.get("status") != sb.get("status"):
            out.append(f"{where}: {sa.get('status')} vs {sb.get('status')}")
        if sa.get("watermark_ms") != sb.get("watermark_ms"):
            out.append(f"{where}: watermark {sa.get('watermark_ms')} vs {sb.get('watermark_ms')} ms")
        ba, bb = sa.get("batches") or [], sb.get("batches") or []
        if len(ba) != len(bb):
            out.append(f"{where}: {len(ba)} vs {len(bb)} batches")
        names = ("input rows", "watermark before", "watermark after", "rows", "dropped", "state rows")
        for i, (x, y) in enumerate(zip(ba, bb)):
            for name, vx, vy in zip(names, _batch_view(x), _batch_view(y)):
                if vx != vy:
                    out.append(f"{where}, batch {i + 1}: {name} {vx} vs {vy}")
    return out


def compare(local_path: Path, cluster_path: Path) -> int:
    local, cluster = read_results(local_path), read_results(cluster_path)
    key = lambda r: (r.get("scenario"), r.get("implementation"))  # noqa: E731
    a = {key(r): r for r in local.results}
    b = {key(r): r for r in cluster.results}
    print(f"\nlocal:   {local_path} ({local.run.get('master')}, Spark {local.spark_version}, {len(a)} pairs)")
    print(f"cluster: {cluster_path} ({cluster.run.get('master')}, Spark {cluster.spark_version}, {len(b)} pairs)")
    verdicts, observed = [], []
    for k in sorted(set(a) | set(b), key=lambda k: (str(k[0]), str(k[1]))):
        ra, rb = a.get(k), b.get(k)
        label = f"{k[0]} [{k[1]}]"
        if ra is None or rb is None:
            verdicts.append(f"{label}: only in the {'cluster' if ra is None else 'local'} run")
            continue
        if ra["status"] != rb["status"]:
            why = "; ".join(filter(None, [f"local: {ra.get('reason')}" if ra.get("reason") else "",
                                          f"cluster: {rb.get('reason')}" if rb.get("reason") else ""]))
            verdicts.append(f"{label}: local {ra['status']}, cluster {rb['status']}" + (f" ({why})" if why else ""))
            for line in observation_differences(ra, rb)[:8]:
                verdicts.append(f"    {line}")
            continue
        diffs = observation_differences(ra, rb)
        if diffs:
            observed.append(f"{label}: both {ra['status']}, observed differently:")
            observed.extend(f"    {line}" for line in diffs[:8])
    print(f"\nverdicts that differ ({sum(1 for v in verdicts if not v.startswith('    '))}; target 0):")
    print("\n".join(f"  {v}" for v in verdicts) or "  none")
    print(f"\nsame verdict, different observations ({sum(1 for v in observed if not v.startswith('    '))}):")
    print("\n".join(f"  {v}" for v in observed) or "  none")
    same = sum(1 for k in set(a) & set(b) if a[k]["status"] == b[k]["status"])
    print(f"\n{same} of {len(set(a) | set(b))} scenario x implementation pairs have the same verdict")
    return 1 if verdicts else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or directories (default: the bundled suite)")
    ap.add_argument("--master", default=None,
                    help="the cluster side: local-cluster[W,C,M] or spark://HOST:PORT (default: start a standalone "
                         "cluster, see --workers)")
    ap.add_argument("--workers", type=int, default=2, help="workers of the standalone cluster started (default 2)")
    ap.add_argument("--host", default="127.0.0.1", help="address the standalone cluster binds to (default 127.0.0.1)")
    ap.add_argument("--local-master", default="local[2]", help="the local side (default local[2])")
    ap.add_argument("--timeout", type=float, default=180.0,
                    help="bound on each wait for Spark, seconds (default 180: a cold cluster's first batch is slow)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="scenarios run at once in each side's Spark application (eventtime run --jobs; default 1)")
    ap.add_argument("--out", default="reports/cluster-vs-local", help="where the two results files go")
    ap.add_argument("--compare", nargs=2, metavar=("LOCAL.json", "CLUSTER.json"),
                    help="compare two existing results files; run nothing")
    args = ap.parse_args()
    if args.compare:
        return compare(Path(args.compare[0]), Path(args.compare[1]))
    try:
        local_master = check_master(args.local_master)
        master = check_master(args.master) if args.master else None
    except MasterURLError as exc:
        ap.error(str(exc))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    local = run_side("local", local_master, args.paths, out, args.timeout, args.jobs)
    if master:
        cluster = run_side("cluster", master, args.paths, out, args.timeout, args.jobs)
    else:
        with StandaloneCluster(workers=args.workers, host=args.host) as sc:
            print(f"== standalone cluster up: {sc.master_url} ({args.workers} workers, status {sc.status_url})",
                  flush=True)
            cluster = run_side("cluster", sc.master_url, args.paths, out, args.timeout, args.jobs)
    print(f"\nboth runs: {time.monotonic() - t0:.0f} s")
    return compare(local, cluster)


if __name__ == "__main__":
    sys.exit(main())
