"""Reading state costs nothing where a scenario does not check it: the commit that added state checks
against its parent, side by side in one run (issue 40).

    python benchmarks/state_cost.py                  # 3 rounds, 6 runs of each scenario per process
    python benchmarks/state_cost.py --rounds 5 --runs 8 [--base COMMIT --state COMMIT] [--now]

Sides: `base`, the commit before `expect: {state: ...}` (default 7b9b31a), and `state`, the commit that
added it (default 2fe4930: the state reader, the `state_reader` feature, the runner's state check), so
that nothing else differs; with `--now`, today's code as a third side. Each commit's files are copied
into a temporary folder (`git archive`: the repository's worktrees are left alone) and run with the
same interpreter, Spark and Java (`before_after.Side`). Each round runs one fresh process per side, the
sides in turn (the order reverses every round); a process runs each of SCENARIOS (bundled, no `state`
check) `--runs` times in one SparkSession and times each `run_scenario`, the first run of each discarded
(the JIT, the first query). Every run must pass. It prints the median per scenario and side and the
ratio to base, per scenario and over all of them (the median of the scenarios' ratios): the target is
a ratio inside the spread between rounds of one side, no cost that shows.

The `state` process also runs `dedup/dedup-state-contents` (three `state` checks) with its checks and
with them taken out, alternating, so the same run says what reading the state costs when a scenario
asks (per check).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from before_after import WAIT, ROOT, Side  # noqa: E402

BASE = "7b9b31a"  # the commit before state contents
STATE = "2fe4930"  # the commit that added them
SCENARIOS = ("scenarios/dedup/dedup-state-expiry.scenario.yaml",
             "scenarios/tumbling/append-late-row-dropped.scenario.yaml",
             "scenarios/join/inner-match-across-batches.scenario.yaml",
             "scenarios/session/merge-bridge-append.scenario.yaml")
WITH_STATE = "scenarios/dedup/dedup-state-contents.scenario.yaml"

# Runs inside either tree. argv: JSON list of scenario paths, runs per scenario, whether to time WITH_STATE.
RUNS = r'''
import dataclasses, json, sys, time
from eventtime import load_scenario, run_scenario
from eventtime.harness.session import get_session
paths, runs, with_state = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
spark = get_session()

def timed(sc):
    t0 = time.monotonic()
    result = run_scenario(sc, session=spark)
    seconds = time.monotonic() - t0
    if result.status != "passed":
        print(f"NOT PASSED {sc.path}: {result.status} {result.reason}", flush=True)
        sys.exit(1)
    return seconds

out = {}
for path in paths:
    sc = load_scenario(path)
    out[path] = [timed(sc) for _ in range(runs)][1:]
if with_state:  # the same scenario with its state checks and without them, alternating
    sc = load_scenario(sys.argv[4])
    def without_state(step):
        if getattr(step, "state", None) is None:
            return step
        copy = dataclasses.replace(step, state=None)
        object.__setattr__(copy, "_index", step.index)  # the loader's step number, not a field
        return copy
    bare = dataclasses.replace(sc, steps=tuple(map(without_state, sc.steps)),
                               requires_features=tuple(f for f in sc.requires_features if f != "state_reader"))
    checks = sum(1 for s in sc.steps if getattr(s, "state", None) is not None)
    pairs = [(timed(sc), timed(bare)) for _ in range(runs)][1:]
    out["state"] = {"checks": checks, "with": [a for a, _ in pairs], "without": [b for _, b in pairs]}
print("TIMES " + json.dumps(out))
'''


def _copy(commit: str, into: str, name: str) -> Path:
    """The files of `commit` in a folder of their own (nothing of the repository's state is touched)."""
    tree = Path(into) / name / "tree"  # a folder each: before_after.Side puts its import links beside the tree
    tree.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {commit} failed")
    return tree


def _process(side: Side, runs: int) -> dict:
    with_state = side.name == "state"
    done = subprocess.run([sys.executable, "-c", RUNS, json.dumps(SCENARIOS), str(runs), "1" if with_state else "0",
                           WITH_STATE], cwd=side.tree, env=side.env(), capture_output=True, text=True, timeout=WAIT)
    for line in done.stdout.splitlines():
        if line.startswith("TIMES "):
            return json.loads(line[6:])
    raise SystemExit(f"{side.name}: the run printed no figures:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=BASE, help="the commit before state checks (default: %(default)s)")
    parser.add_argument("--state", default=STATE, help="the commit that added them (default: %(default)s)")
    parser.add_argument("--now", action="store_true", help="today's code as a third side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=6, help="runs of each scenario per process (the first discarded)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eventtime-state-cost-") as folder:
        sides = [Side("base", _copy(args.base, folder, "base"), base=True, extra={}, env={}),
                 Side("state", _copy(args.state, folder, "state"), base=True, extra={}, env={})]
        sides += [Side("now", ROOT, base=False, extra={}, env={})] if args.now else []
        print(f"base {args.base}, state {args.state}, load average at start {os.getloadavg()}", flush=True)
        times: dict[str, dict[str, list[float]]] = {s.name: {p: [] for p in SCENARIOS} for s in sides}
        rounds: dict[str, list[float]] = {s.name: [] for s in sides}  # per round: the sum of the medians
        state: dict[str, list[float]] = {"with": [], "without": []}
        checks = 0
        for r in range(args.rounds):
            for side in (sides if r % 2 == 0 else sides[::-1]):
                got = _process(side, args.runs)
                for path in SCENARIOS:
                    times[side.name][path] += got[path]
                rounds[side.name].append(sum(statistics.median(got[p]) for p in SCENARIOS))
                if "state" in got:
                    checks = got["state"]["checks"]
                    state["with"] += got["state"]["with"]
                    state["without"] += got["state"]["without"]
                print(f"round {r + 1} {side.name}: the scenarios' medians sum to {rounds[side.name][-1]:.3f} s",
                      flush=True)
        print(f"\nload average at end {os.getloadavg()}")
        for side in sides[1:]:
            ratios = []
            for path in SCENARIOS:
                base, other = statistics.median(times["base"][path]), statistics.median(times[side.name][path])
                ratios.append(other / base)
                print(f"{Path(path).name}: base median {base:.3f} s, {side.name} {other:.3f} s "
                      f"(n={len(times[side.name][path])}), ratio {other / base:.3f}")
            print(f"ratio {side.name} / base over the scenarios: median {statistics.median(ratios):.3f}")
        print("per round, the sum of the scenarios' medians: " + "; ".join(
            f"{s.name} {['%.2f' % x for x in rounds[s.name]]}" for s in sides))
        with_, without = statistics.median(state["with"]), statistics.median(state["without"])
        print(f"{Path(WITH_STATE).name} (state): with its {checks} state checks {with_:.3f} s, without them "
              f"{without:.3f} s: {(with_ - without) / max(checks, 1) * 1000:.0f} ms per check read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
