"""Runs scenarios on the classic harness and over Spark Connect and prints, per scenario x implementation, where they differ.

    python benchmarks/connect_vs_classic.py                      # the bundled suite, one folder at a time
    python benchmarks/connect_vs_classic.py scenarios/union scenarios/restart
    python benchmarks/connect_vs_classic.py --remote sc://HOST:PORT   # an existing server (default: start one)
    python benchmarks/connect_vs_classic.py --compare OUT            # only compare the results files in OUT

Each folder (or file) given is run twice, one after the other, each as one `eventtime run --json` in a
child process: classic (local[2], MemoryStream, manual clock) and over Spark Connect (`--remote`, a
server started by `eventtime connect-server` semantics unless --remote is given). Results stay in --out
as <label>.classic.json / <label>.connect.json, so a partial run can still be compared.

Differences come in three kinds: a scenario that needs the clock is *expected* to be not applicable
over Connect (listed with its reason, not counted); a different verdict otherwise (the target is none);
the same verdict with different observations (rows, watermarks, dropped rows, state rows of a batch).
It also prints the median time of a `process` step on each side, measured in the same run.
Exit 1 when a verdict differs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cluster_vs_local import observation_differences  # noqa: E402

from eventtime.resultsfile import read_results  # noqa: E402

CLOCK_REASON = "needs the manual processing-time clock"


def run_side(label: str, side: str, path: str, out: Path, remote: str | None, timeout: float) -> Path:
    results = out / f"{label}.{side}.json"
    cmd = [sys.executable, "-m", "eventtime.cli", "run", path, "--json", str(results), "--timeout", str(timeout), "-q"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("SPARK_REMOTE", None)
    if side == "connect":
        cmd += ["--remote", str(remote)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = proc.stdout.splitlines()
    print(f"   {side:8} {label}: {lines[-1] if lines else '(no output)'}  [{time.monotonic() - t0:.0f} s wall]",
          flush=True)
    return results


def _label(path: str) -> str:
    return Path(path).name.replace(".scenario.yaml", "")


def _process_seconds(records: list[dict[str, Any]]) -> list[float]:
    return [float(s["seconds"]) for r in records for s in r.get("steps") or []
            if s.get("kind") == "process" and s.get("status") == "passed" and s.get("seconds") is not None]


def compare(out: Path) -> int:
    classic: dict[Any, dict] = {}
    connect: dict[Any, dict] = {}
    for side, into in (("classic", classic), ("connect", connect)):
        for f in sorted(out.glob(f"*.{side}.json")):
            for r in read_results(f).results:
                into[(r.get("scenario"), r.get("implementation"))] = r
    both = sorted(set(classic) & set(connect), key=lambda k: (str(k[0]), str(k[1])))
    expected_na, verdicts, observed = [], [], []
    for k in both:
        a, b = classic[k], connect[k]
        label = f"{k[0]} [{k[1]}]"
        if b["status"] == "not_applicable" and a["status"] != "not_applicable":
            expected_na.append(f"{label}: {b.get('reason')}")
            if CLOCK_REASON not in str(b.get("reason")) and "over Spark Connect" not in str(b.get("reason")):
                verdicts.append(f"{label}: classic {a['status']}, connect not applicable ({b.get('reason')})")
            continue
        if a["status"] != b["status"]:
            why = "; ".join(filter(None, [f"classic: {a.get('reason')}" if a.get("reason") else "",
                                          f"connect: {b.get('reason')}" if b.get("reason") else ""]))
            verdicts.append(f"{label}: classic {a['status']}, connect {b['status']}" + (f" ({why})" if why else ""))
            verdicts.extend(f"    {line}" for line in observation_differences(a, b)[:8])
            continue
        diffs = observation_differences(a, b)
        if diffs:
            observed.append(f"{label}: both {a['status']}, observed differently:")
            observed.extend(f"    {line}" for line in diffs[:8])
    print(f"\n{len(both)} scenario x implementation pairs run on both sides")
    print(f"\nnot applicable over Connect only ({len(expected_na)}; expected: the clock, or a step Connect cannot "
          "reproduce):")
    print("\n".join(f"  {v}" for v in expected_na) or "  none")
    print(f"\nverdicts that differ otherwise ({sum(1 for v in verdicts if not v.startswith('    '))}; target 0):")
    print("\n".join(f"  {v}" for v in verdicts) or "  none")
    print(f"\nsame verdict, different observations ({sum(1 for v in observed if not v.startswith('    '))}):")
    print("\n".join(f"  {v}" for v in observed) or "  none")
    same = sum(1 for k in both if classic[k]["status"] == connect[k]["status"])
    print(f"\n{same} of {len(both)} pairs have the same verdict")
    for side, records in (("classic", classic), ("connect", connect)):
        secs = _process_seconds([records[k] for k in both if connect[k]["status"] != "not_applicable"])
        if secs:
            print(f"{side:8} process step: median {statistics.median(secs):.2f} s, mean {statistics.mean(secs):.2f} s "
                  f"over {len(secs)} steps")
    return 1 if verdicts else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("paths", nargs="*", metavar="PATH", help="scenario folders or files (default: each folder of "
                                                             "the bundled suite)")
    ap.add_argument("--remote", default=None, help="an existing Spark Connect server (default: start one)")
    ap.add_argument("--timeout", type=float, default=180.0, help="bound on each wait for Spark, seconds")
    ap.add_argument("--out", default="reports/connect-vs-classic", help="where the results files go")
    ap.add_argument("--compare", metavar="OUT", help="compare the results files in OUT; run nothing")
    args = ap.parse_args()
    if args.compare:
        return compare(Path(args.compare))
    paths = args.paths or sorted(str(p) for p in (ROOT / "scenarios").iterdir() if p.is_dir()
                                 and any(p.glob("*.scenario.yaml")))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def run_all(remote: str) -> None:
        for path in paths:
            run_side(_label(path), "classic", path, out, None, args.timeout)
            run_side(_label(path), "connect", path, out, remote, args.timeout)

    if args.remote:
        run_all(args.remote)
    else:
        from eventtime.harness.connect_server import ConnectServer

        with ConnectServer() as server:
            print(f"== Spark Connect server up: {server.url}", flush=True)
            run_all(server.url)
    print(f"\nboth sides: {time.monotonic() - t0:.0f} s")
    return compare(out)


if __name__ == "__main__":
    sys.exit(main())
