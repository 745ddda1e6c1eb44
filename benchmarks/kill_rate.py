"""Certifies every deliberately wrong implementation (tests/spark/wrong.py) against all scenarios of
its contract and prints which scenarios reject each one, and the kill rate.

    python benchmarks/kill_rate.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime import find_scenario_files, load_scenario, run_scenario  # noqa: E402
from eventtime.harness import get_session  # noqa: E402
from eventtime.scenarios import SUITE_DIR  # noqa: E402
from tests.spark.wrong import WRONG  # noqa: E402


def main() -> int:
    files, _ = find_scenario_files([SUITE_DIR])
    by_contract: dict[str, list] = {}
    for f in files:
        sc = load_scenario(f)
        by_contract.setdefault(sc.contract.name, []).append(sc)
    spark = get_session()
    t0 = time.monotonic()
    killed = 0
    print(f"Spark {spark.version}")
    print("| wrong implementation | contract | what is wrong | rejected by (scenarios) | not applicable |")
    print("|---|---|---|---|---|")
    for name, (contract, fn, what) in sorted(WRONG.items()):
        caught, na = [], 0
        ran = 0
        for sc in by_contract.get(contract, []):
            result = run_scenario(sc, fn, session=spark, implementation=f"wrong:{name}")
            if result.status == "not_applicable":
                na += 1
                continue
            ran += 1
            if result.status in ("failed", "error"):
                caught.append(f"{sc.name} ({result.status})")
        killed += bool(caught)
        print(f"| `{name}` | {contract} | {what} | {len(caught)}/{ran}: {', '.join(caught) or 'NONE'} | {na} |",
              flush=True)
    print()
    print(f"kill rate: {killed}/{len(WRONG)} = {killed / len(WRONG):.0%} in {time.monotonic() - t0:.0f}s")
    return 0 if killed == len(WRONG) else 1


if __name__ == "__main__":
    sys.exit(main())
