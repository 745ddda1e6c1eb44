"""Runs the bundled suite N times in one process and prints how many verdicts ever changed.

    python benchmarks/repeat_suite.py --runs 20 [PATH...]
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance import find_scenario_files, load_scenario, run_scenario  # noqa: E402
from harness import get_session  # noqa: E402
from scenarios import SUITE_DIR  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    files, _ = find_scenario_files(args.paths or [SUITE_DIR])
    scenarios = [load_scenario(f) for f in files]
    spark = get_session()
    seen: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    t0 = time.monotonic()
    for i in range(args.runs):
        t = time.monotonic()
        for sc in scenarios:
            for impl in sc.contract.implementations:
                seen[(sc.name, impl)][run_scenario(sc, impl, session=spark).status] += 1
        print(f"run {i + 1}/{args.runs}: {time.monotonic() - t:.1f}s", flush=True)
    changed = {k: v for k, v in seen.items() if len(v) > 1}
    verdicts = sum(sum(v.values()) for v in seen.values())
    print(f"Spark {spark.version}: {args.runs} runs x {len(seen)} scenario/implementation pairs = "
          f"{verdicts} verdicts in {time.monotonic() - t0:.0f}s; pairs whose verdict ever changed: {len(changed)}")
    for (name, impl), counts in sorted(seen.items()):
        if len(counts) > 1 or "passed" not in counts:
            print(f"  {name} [{impl}]: {dict(counts)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
