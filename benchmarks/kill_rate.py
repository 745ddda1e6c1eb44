"""Certifies every deliberately wrong implementation (tests/spark/wrong.py) against all scenarios of
its contract and prints which scenarios catch each one, and the kill rate.

A kill is a `failed` verdict: the implementation ran and a check saw a wrong result. An `error`
(Spark refuses the query) is counted apart and kills nothing.

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
    print("| wrong implementation | contract | what is wrong | caught by (failed) | error | not applicable |")
    print("|---|---|---|---|---|---|")
    for name, (contract, fn, what) in sorted(WRONG.items()):
        caught, errors, na, ran = [], 0, 0, 0
        for sc in by_contract.get(contract, []):
            result = run_scenario(sc, fn, session=spark, implementation=f"wrong:{name}")
            if result.status == "not_applicable":
                na += 1
                continue
            ran += 1
            if result.status == "failed":
                caught.append(sc.name)
            elif result.status == "error":
                errors += 1
        killed += bool(caught)
        print(f"| `{name}` | {contract} | {what} | {len(caught)}/{ran}: {', '.join(caught) or 'NONE'} | {errors} | {na} |",
              flush=True)
    print()
    print(f"kill rate: {killed}/{len(WRONG)} = {killed / len(WRONG):.0%} in {time.monotonic() - t0:.0f}s")
    return 0 if killed == len(WRONG) else 1


if __name__ == "__main__":
    sys.exit(main())
