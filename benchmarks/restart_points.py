"""Exactly-once across restarts: every restart point of a set of scenarios, same and new SparkSession.

For each base scenario, a restart is inserted after every step that leaves the query running (before
and after each batch, after each add, i.e. with state pending, after a watermark advance, after a
late row), once as `restart` and once as `restart: {session: new}`. The model writes the
expectations of every variant; each runs on Spark against the contract's reference implementation
and is judged step by step (rows, watermark, drops, state), and its whole output is compared with
the uninterrupted run's (no row lost, none duplicated). Prints one line per variant and the totals.

    python benchmarks/restart_points.py [--sessions same,new] [SCENARIO ...]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime import load_scenario  # noqa: E402
from eventtime.differential import check_restarts  # noqa: E402
from eventtime.harness import get_session  # noqa: E402
from eventtime.scenarios import SUITE_DIR  # noqa: E402

# One base per kind of state that must survive: windows with a late row, the min policy across two
# inputs, dedup state, join buffers with outer nulls, sessions, update mode, an event-time timeout.
BASES = [
    "tumbling/append-late-row-dropped",
    "union/min-policy-different-delays",
    "dedup/dedup-state-expiry",
    "join/left-outer-null-after-watermark",
    "session/late-row-judged-by-own-session",
    "sliding/update-mode-row-partly-late",
    "stateful/inactivity-timeout-fires-strictly-after",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="same,new", help="which restarts: same, new or both (default)")
    ap.add_argument("scenarios", nargs="*", help=f"scenario files (default: {len(BASES)} bases of the suite)")
    args = ap.parse_args()
    paths = [Path(p) for p in args.scenarios] or [SUITE_DIR / f"{b}.scenario.yaml" for b in BASES]
    sessions = tuple(s.strip() for s in args.sessions.split(",") if s.strip())
    spark = get_session()
    t0 = time.monotonic()
    total = held = identical = 0
    rows_compared = 0
    for path in paths:
        scenario = load_scenario(path)
        checks = check_restarts(scenario, session=spark, sessions=sessions,
                                progress=lambda c: print(("  " + c.describe()).replace("\n", "\n    "), flush=True))
        total += len(checks)
        held += sum(c.holds for c in checks)
        identical += sum(c.output == c.baseline for c in checks)
        rows_compared += sum(sum(c.baseline.values()) for c in checks)
        print(f"{scenario.name}: {sum(c.holds for c in checks)}/{len(checks)} variants hold", flush=True)
    print(f"Spark {spark.version}: {total} restart variants of {len(paths)} scenarios ({', '.join(sessions)} "
          f"session) in {time.monotonic() - t0:.0f}s: {held} agree with the model and lose or duplicate "
          f"nothing; {identical} produce exactly the uninterrupted output ({rows_compared} rows compared); "
          f"{total - held} fail")
    return 0 if held == total else 1


if __name__ == "__main__":
    sys.exit(main())
