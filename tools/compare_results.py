"""Compare two results files (`eventtime run/certify --json`) for what a change must not alter: each
(scenario, implementation)'s verdict, reason, notes and every step's status, message, failures and
per-batch observations (rows, watermarks, dropped rows, state, operators, event-time statistics).
Timings are left out (`seconds`, `duration_ms`, the run's clock times), and so is the command line.

    python tools/compare_results.py BEFORE.json AFTER.json

Prints each difference and exits 1 when there is one, else says how much was compared and exits 0.
Used to show that a refactoring kept behaviour: the whole suite before and after it."""
from __future__ import annotations

import json
import sys
from typing import Any

TIMING = {"seconds", "duration_ms", "started_at", "finished_at"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def observations(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(scenario, implementation) -> what the run observed of it, timings left out."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    out = {}
    for r in doc["results"]:
        key = (r["scenario"], r["implementation"])
        if key in out:
            raise SystemExit(f"{path}: {key} twice")
        out[key] = _strip({k: r[k] for k in ("file", "contract", "status", "reason", "notes", "steps", "rerun")})
    return out


def _diff(a: Any, b: Any, where: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in dict.fromkeys([*a, *b]) for d in _diff(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {json.dumps(a)[:300]} -> {json.dumps(b)[:300]}"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = observations(argv[0]), observations(argv[1])
    problems = [f"only in {argv[0]}: {k}" for k in before if k not in after]
    problems += [f"only in {argv[1]}: {k}" for k in after if k not in before]
    for key in before.keys() & after.keys():
        problems += _diff(before[key], after[key], f"{key[0]} [{key[1]}]")
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} difference(s)")
        return 1
    steps = sum(len(v["steps"]) for v in before.values())
    batches = sum(len(s.get("batches") or []) for v in before.values() for s in v["steps"])
    print(f"identical: {len(before)} (scenario, implementation) pairs, {steps} steps, {batches} batches "
          "(verdicts, reasons, notes, failures and per-batch observations; timings left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
