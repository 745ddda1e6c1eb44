"""Wall time of the standard suite: serial, `pytest -n 2`, and N queries at once in one JVM (--jobs N).

    python benchmarks/suite_throughput.py                     # every pair of the suite, all modes
    python benchmarks/suite_throughput.py --subset 24         # the first 24 scenario/implementation pairs
    python benchmarks/suite_throughput.py --contract tumbling_count --jobs 2 3

Each mode runs in a fresh process, one after another (never two modes at once), so every figure
includes starting Spark: (a) serial, one JVM; (b) `pytest tests/spark/test_suite.py -n 2`, two
JVMs; (c) `--jobs N`, one JVM with N worker threads, each on its own session. The pairs are those
of tests/spark/test_suite.py, in its order. Afterwards every mode's results are compared with the
serial run's: verdicts, and every observation (rows, watermarks, drops, state) without timings.
Exit 1 if any mode disagrees with the serial run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eventtime import find_scenario_files, load_scenario  # noqa: E402
from eventtime.parallel import Pair, observable, parse_jobs, run_pairs, suite_pairs  # noqa: E402
from eventtime.scenarios import SUITE_DIR, display_path  # noqa: E402


SUITE_TEST = "tests/spark/test_suite.py"


def select_pairs(subset: int | None, contracts: list[str]) -> list[tuple[Path, Pair, int]]:
    """(file, pair, position in the suite) for the suite's pairs in tests/spark/test_suite.py's
    order, of the given contracts, the first `subset`."""
    files, _ = find_scenario_files([SUITE_DIR])
    out = []
    for f in files:
        for pair in suite_pairs([load_scenario(f, display_path=display_path(f))]):
            out.append((Path(f), pair, len(out)))
    out = [item for item in out if not contracts or item[1].scenario.contract.name in contracts]
    return out[:subset] if subset else out


def suite_test_ids() -> list[str]:
    """The node ids of tests/spark/test_suite.py in collection order (pytest numbers repeated ids,
    so they are collected rather than rebuilt); collecting starts no JVM."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           SUITE_TEST], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return [line for line in proc.stdout.splitlines() if line.startswith(SUITE_TEST + "::")]


def worker(pairs_file: str, jobs: int, out: str) -> int:
    """Run the pairs listed in `pairs_file` with `jobs` at a time; write the results file `out`."""
    from eventtime.resultsfile import build_document, result_record, write_results
    from eventtime.harness import get_session

    pairs = []
    for path, impl in json.loads(Path(pairs_file).read_text()):
        pairs.append(Pair(load_scenario(Path(path), display_path=display_path(Path(path))), impl))
    spark = get_session()
    t0 = time.monotonic()
    records = [result_record(r) for r in run_pairs(pairs, jobs=jobs, session=spark)]
    seconds = time.monotonic() - t0
    write_results(out, build_document(records, tool="suite_throughput", seconds=seconds))
    return 0


def _run_mode(name: str, cmd: list[str], out: Path) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.monotonic() - t0
    load_after = os.getloadavg()[0]
    doc = json.loads(out.read_text()) if out.exists() else None
    if doc is None or proc.returncode not in (0, 1):
        print(f"{name}: results file {'missing' if doc is None else 'written'} (exit {proc.returncode}); last output:\n"
              + "\n".join(proc.stdout.splitlines()[-20:]), file=sys.stderr)
    inner = (doc or {}).get("run", {}).get("seconds")
    print(f"{name:>22}: {wall:7.1f} s wall"
          + (f" ({inner:.1f} s running pairs)" if inner else "")
          + f", load {load_before:.1f} -> {load_after:.1f}", flush=True)
    return {"mode": name, "wall": wall, "inner": inner, "load": (load_before, load_after),
            "results": {(r["scenario"], r["implementation"]): r for r in (doc or {}).get("results", [])}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subset", type=int, default=None, metavar="K", help="only the first K pairs")
    ap.add_argument("--contract", action="append", default=[], metavar="NAME", help="only this contract (repeatable)")
    ap.add_argument("--jobs", type=parse_jobs, nargs="+", default=[2, 3, 4], metavar="N",
                    help="concurrent-query modes to measure (default 2 3 4)")
    ap.add_argument("--no-serial", action="store_true", help="skip the serial mode (compare with pytest -n 2)")
    ap.add_argument("--no-xdist", action="store_true", help="skip the pytest -n 2 mode")
    ap.add_argument("--worker", nargs=2, metavar=("PAIRS_JSON", "OUT_JSON"), help=argparse.SUPPRESS)
    ap.add_argument("--worker-jobs", type=parse_jobs, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker[0], args.worker_jobs, args.worker[1])

    selected = select_pairs(args.subset, args.contract)
    pairs = [pair for _, pair, _ in selected]
    if not pairs:
        print("suite_throughput: no pairs selected", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="suite-throughput-"))
    pairs_file = tmp / "pairs.json"
    pairs_file.write_text(json.dumps([[str(f), pair.implementation] for f, pair, _ in selected]))
    print(f"{len(pairs)} scenario/implementation pairs ({len({p.scenario.name for p in pairs})} scenarios), "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)

    def in_process(jobs: int) -> tuple[str, list[str], Path]:
        out = tmp / f"jobs{jobs}.json"
        return ("serial (1 JVM)" if jobs == 1 else f"--jobs {jobs} (1 JVM)",
                [sys.executable, str(Path(__file__).resolve()), "--worker", str(pairs_file), str(out),
                 "--worker-jobs", str(jobs)], out)

    modes = []
    if not args.no_serial:
        modes.append(in_process(1))
    if not args.no_xdist:
        out = tmp / "xdist.json"
        selection = [SUITE_TEST]
        if args.subset or args.contract:
            ids = suite_test_ids()
            if len(ids) != len(select_pairs(None, [])):
                print(f"suite_throughput: {SUITE_TEST} collects {len(ids)} tests, not one per suite pair",
                      file=sys.stderr)
                return 2
            selection = [ids[i] for _, _, i in selected]
        modes.append(("pytest -n 2 (2 JVMs)", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                                               "--eventtime-report-json", str(out), *selection], out))
    modes += [in_process(j) for j in args.jobs if j > 1]
    measured = [_run_mode(name, cmd, out) for name, cmd, out in modes]

    base = measured[0]
    keys = [(p.scenario.name, p.implementation) for p in pairs]
    print()
    print(f"| mode | wall time | pairs running | vs {base['mode']} | verdicts as {base['mode']} | observations as {base['mode']} |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    disagree = 0
    for m in measured:
        missing = [k for k in keys if k not in m["results"]]
        verdicts = sum(1 for k in keys if k in m["results"] and k in base["results"]
                       and m["results"][k]["status"] == base["results"][k]["status"])
        same_obs = sum(1 for k in keys if k in m["results"] and k in base["results"]
                       and observable(m["results"][k]) == observable(base["results"][k]))
        disagree += (verdicts < len(keys)) + (same_obs < len(keys))
        inner = f"{m['inner']:.1f} s" if m["inner"] else "-"
        print(f"| {m['mode']} | {m['wall']:.1f} s | {inner} | {m['wall'] / base['wall']:.2f}× | {verdicts}/{len(keys)}"
              f"{f' ({len(missing)} missing)' if missing else ''} | {same_obs}/{len(keys)} |")
        for k in keys:
            if k in m["results"] and k in base["results"] and observable(m["results"][k]) != observable(base["results"][k]):
                print(f"    differs: {k[0]} [{k[1]}]: {base['results'][k]['status']} vs {m['results'][k]['status']}")
    statuses: dict[str, int] = {}
    for r in base["results"].values():
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"\nverdicts of {base['mode']}: {statuses}; results files in {tmp}")
    fastest = min(measured, key=lambda m: m["wall"])
    print(f"fastest: {fastest['mode']} ({fastest['wall']:.1f} s)")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
