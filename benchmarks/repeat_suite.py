"""Runs the bundled suite N times in one process and prints how many verdicts ever changed.

    python benchmarks/repeat_suite.py --runs 30 --jobs 3 [PATH...]

Every scenario against every implementation of its contract, once per run, in one process (with
`--jobs N`, N pairs at a time in one JVM, as `eventtime certify --jobs N` runs them). A verdict that
differs between runs is a flaky pair; the target is none. Exit 1 when any verdict changed.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime import find_scenario_files, load_scenario  # noqa: E402
from eventtime.parallel import Pair, run_pairs  # noqa: E402
from eventtime.harness import get_session  # noqa: E402
from eventtime.scenarios import SUITE_DIR  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=1, help="pairs run at once in the one JVM (default 1)")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    files, _ = find_scenario_files(args.paths or [SUITE_DIR])
    scenarios = [load_scenario(f) for f in files]
    spark = get_session()
    seen: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    t0 = time.monotonic()
    pairs = [Pair(sc, impl, f"eventtime run {sc.path} --pipeline {impl}")
             for sc in scenarios for impl in sc.contract.implementations]
    for i in range(args.runs):
        t = time.monotonic()
        statuses: collections.Counter = collections.Counter()
        for pair, result in zip(pairs, run_pairs(pairs, jobs=args.jobs, session=spark)):
            seen[(pair.scenario.name, pair.implementation)][result.status] += 1
            statuses[result.status] += 1
        print(f"run {i + 1}/{args.runs}: {time.monotonic() - t:.1f}s "
              f"({', '.join(f'{n} {s}' for s, n in sorted(statuses.items()))})", flush=True)
    changed = {k: v for k, v in seen.items() if len(v) > 1}
    verdicts = sum(sum(v.values()) for v in seen.values())
    print(f"Spark {spark.version}, --jobs {args.jobs}: {args.runs} runs x {len(seen)} scenario/implementation pairs = "
          f"{verdicts} verdicts in {time.monotonic() - t0:.0f}s; pairs whose verdict ever changed: {len(changed)}")
    for (name, impl), counts in sorted(seen.items()):
        if len(counts) > 1 or "passed" not in counts:
            print(f"  {name} [{impl}]: {dict(counts)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
