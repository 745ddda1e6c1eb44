"""Every built-in property on every bundled implementation and on `examples/consumer`'s jobs.

    python benchmarks/property_suite.py                        # 10 streams per property, seed 1
    python benchmarks/property_suite.py --examples 40 --seed 7 --only ad_attribution

Issue 46 asks that the bundled contracts' implementations and `examples/consumer` pass every built-in
property that applies to them. For each contract and implementation (the bundled registry's, and the
consumer project's `eventtime_pipelines` run from its folder, as its user runs them) this runs
`eventtime check-properties CONTRACT --pipeline CONTRACT=IMPL --max-examples N --seed S --no-database
--json FILE` in a process of its own, attached to one warm Spark (`--warm`: a JVM start per check would be
most of the time), and reads each property's verdict from the results file. It prints a table (one row
per implementation, one column per property: `held N` with the streams it held on, `n/a` where it does
not apply, `BROKEN` with the counterexample's reasons below) and exits 1 when any property broke, was not
checked or judged nothing: a green run here is what the issue's done-when item asks.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSUMER = ROOT / "examples" / "consumer"
SHORT = {"no-query-dies": "dies", "exactly-once-rerun": "rerun", "restart-transparency": "restart",
         "bounded-state": "state", "batch-boundary-independence": "boundary", "stream-equals-batch": "batch",
         "invariants": "inv"}


def targets(only: set[str]) -> list[tuple[str, str, Path]]:
    """(contract, implementation, folder to run in): the bundled registry's, then the consumer's."""
    sys.path.insert(0, str(ROOT))
    from eventtime.registry import CONTRACTS

    found = [(name, impl, ROOT) for name, c in sorted(CONTRACTS.items()) for impl in c.implementations]
    settings = tomllib.loads((CONSUMER / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    for line in settings["eventtime_pipelines"]:
        name, _, impl = (part.strip() for part in line.partition("="))
        found.append((name, impl, CONSUMER))
    return [t for t in found if not only or t[0] in only]


def check(contract: str, impl: str, folder: Path, args: argparse.Namespace, out: Path) -> tuple[int, list[dict], float]:
    """One `check-properties` of every property; its exit code, its properties' entries and seconds."""
    command = [str(Path(sys.executable).with_name("eventtime")), "check-properties", contract,
               "--pipeline", f"{contract}={impl}", "--max-examples", str(args.examples), "--seed", str(args.seed),
               "--no-database", "--json", str(out), "--warm", "--jobs", str(args.jobs)]
    start = time.monotonic()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=args.bound,
                          env={**os.environ, "CI": "true"})
    took = time.monotonic() - start
    entries = json.loads(out.read_text()).get("properties", []) if out.is_file() else []
    if not entries:
        print(f"  {contract} / {impl}: exit {done.returncode}, no results file\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.returncode, entries, took


def cell(entry: dict) -> str:
    verdict = entry["verdict"]
    return {"held": f"held {entry['held_on']}", "does_not_apply": "n/a"}.get(verdict, verdict.upper())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10, help="generated streams per property")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="properties checked at once (check-properties --jobs)")
    parser.add_argument("--only", action="append", default=[], help="a contract's name (repeatable)")
    parser.add_argument("--bound", type=float, default=3600, help="seconds one check may take")
    args = parser.parse_args()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows, failing = _check_all(args, Path(tmp))
    finally:  # the warm daemons this run started (one per folder it ran in)
        for folder in (ROOT, CONSUMER):
            subprocess.run([str(Path(sys.executable).with_name("eventtime")), "warm", "stop", "--here"], cwd=folder,
                           capture_output=True, timeout=120)
    _table(rows, args)
    print(f"\n{len(rows)} implementations, {failing} with a property broken, not checked or judging nothing")
    return 1 if failing else 0


def _check_all(args: argparse.Namespace, tmp: Path) -> tuple[list[tuple[str, str, dict[str, str], float]], int]:
    rows: list[tuple[str, str, dict[str, str], float]] = []
    failing = 0
    for n, (contract, impl, folder) in enumerate(targets(set(args.only))):
        code, entries, took = check(contract, impl, folder, args, tmp / f"{n}.json")
        cells = {SHORT.get(e["property"], e["property"]): cell(e) for e in entries}
        bad = [e for e in entries if e["verdict"] not in ("held", "does_not_apply")]
        failing += bool(bad) or not entries or code not in (0, 1)
        rows.append((contract, impl, cells, took))
        print(f"{contract} / {impl}: exit {code}, {took:.0f} s: " + ", ".join(f"{k} {v}" for k, v in cells.items()),
              flush=True)
        for e in bad:
            why = ((e.get("counterexample") or {}).get("why") or ([e["not_checked"]] if e.get("not_checked") else [])
                   or [f"{j['count']} not judged: {j['reason']}" for j in e.get("not_judged", [])])
            print(f"    {e['property']}: {e['verdict']}: " + "; ".join(why)[:600], flush=True)
    return rows, failing


def _table(rows: list[tuple[str, str, dict[str, str], float]], args: argparse.Namespace) -> None:
    columns = list(SHORT.values())
    print(f"\n{args.examples} streams per property, seed {args.seed}\n")
    print("| contract | implementation | " + " | ".join(columns) + " | s |")
    print("| --- | --- | " + " | ".join("---" for _ in columns) + " | ---: |")
    for contract, impl, cells, took in rows:
        print(f"| {contract} | {impl} | " + " | ".join(cells.get(c, "") for c in columns) + f" | {took:.0f} |")


if __name__ == "__main__":
    sys.exit(main())
