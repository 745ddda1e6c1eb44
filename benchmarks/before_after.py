"""Today's code against an earlier commit, side by side in one run: cold start, per step, whole suite.

The earlier commit (`--base`, default: the main branch as issue 21 measured it) is checked out into a
temporary git worktree and run with the same interpreter, the same Spark and the same Java; only the
project's own code differs. Each measurement is a fresh process, and the sides alternate within every
round so that machine noise hits both. Extra sides (`--side NAME=KEY=VALUE,...`) are today's code with
Spark SQL settings added for its queries, or with `env:NAME=VALUE` in its environment (e.g.
`--side defaults=env:EVENTTIME_SPARK_TUNING=off`: today's code with Spark's default settings).

- `cold`: `eventtime run SCENARIO --pipeline ...tumbling_count` in a fresh process, timed from outside
  (JVM start, session, the scenario, exit): what a user who re-runs one scenario waits for. The
  scenario must pass on every side. Today's side maps the JVM class-data archive (`harness/jvmarchive.py`),
  recorded by a warm-up run before the rounds.
- `step`: per step of three query shapes (the tumbling count of `harness_vs_bare.py`, an inner interval
  join of two sources, a session-window count; 5 rows per source per step): `MemorySource.add` and
  `StreamRun.process` (the data batch, the no-data batch, the trigger that runs nothing), every batch
  observed. One process per side per round; each shape runs once untimed first, then `--steps` timed steps.
- `certify`: the whole standard suite as `./dev certify` runs it (`certify --jobs 3`); every pair's
  verdict must be the same on every side.

    python benchmarks/before_after.py [--base COMMIT] [--what cold,step,certify] [--rounds 3]
        [--steps 12] [--side NAME=KEY=VALUE,env:KEY=VALUE,...]

Prints medians per side and each side's ratio to the base.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# main as it was when issue 21 was filed (its figures were measured on this commit)
ISSUE_21_BASE = "77a89d6"
SCENARIO = "scenarios/tumbling/append-late-row-dropped.scenario.yaml"
WAIT = 1800.0

# Runs inside either tree: a tree from before the one import root has `conformance` and `harness`, a
# later one (and today's) `eventtime` and `eventtime.harness`. argv: package root, harness package, steps, JSON of extra settings.
STEP = r'''
import importlib, json, statistics, sys, tempfile, time
root, harness_pkg, steps, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
hs = importlib.import_module(harness_pkg)
ref = importlib.import_module(root + ".pipelines.reference")
try:
    Params = importlib.import_module(root + ".spec").Params
except ImportError:  # a tree whose scenario dataclasses' module is still named model
    Params = importlib.import_module(root + ".model").Params
parse_duration = importlib.import_module(root + ".timeparse").parse_duration
spark = hs.get_session(conf=extra)
BASE_US, S, COLS = 1_704_067_200_000_000, 1_000_000, [("key", "string"), ("ts", "timestamp")]

def params(**kw):
    return Params({k: v if k in ("output_mode", "join_type") else parse_duration(v) for k, v in kw.items()})

def tumbling(n):
    src = hs.MemorySource(spark, "events", COLS)
    p = params(window="10s", watermark_delay="5s", output_mode="append")
    data = [{"events": [(f"k{j % 3}", BASE_US + (i * 7 + j % 7) * S) for j in range(5)]} for i in range(n)]
    return (lambda: (ref.tumbling_count({"events": src.dataframe()}, p), "append")), {"events": src}, data

def join(n):
    left, right = hs.MemorySource(spark, "left", COLS), hs.MemorySource(spark, "right", COLS)
    p = params(left_delay="5s", right_delay="5s", bound="5s", join_type="inner")
    data = [{"left": [(f"k{j % 3}", BASE_US + (i * 7 + j) * S) for j in range(5)],
             "right": [(f"k{j % 3}", BASE_US + (i * 7 + j + 2) * S) for j in range(5)]} for i in range(n)]
    return ((lambda: (ref.interval_join({"left": left.dataframe(), "right": right.dataframe()}, p), "append")),
            {"left": left, "right": right}, data)

def session(n):
    src = hs.MemorySource(spark, "events", COLS)
    p = params(gap="3s", watermark_delay="5s")
    data = [{"events": [(f"k{j % 3}", BASE_US + (i * 7 + j % 4) * S) for j in range(5)]} for i in range(n)]
    return (lambda: (ref.session_count({"events": src.dataframe()}, p), "append")), {"events": src}, data

def run(shape, n):
    build, sources, data = shape(n)
    stream = hs.StreamRun(spark, build, checkpoint=tempfile.mkdtemp(prefix="bench-ba-") + "/cp",
                          clock_start_ms=BASE_US // 1000)
    stream.start()
    times, batches = [], 0
    for batch in data:
        t0 = time.perf_counter()
        for name, rows in batch.items():
            sources[name].add(rows)
        batches += len(stream.process())
        times.append(time.perf_counter() - t0)
    stream.stop()
    return times, batches

out = {}
for name, shape in (("tumbling", tumbling), ("join", join), ("session", session)):
    run(shape, 3)  # untimed: the shape's first query pays for its classes and code generation
    times, batches = run(shape, steps)
    out[name] = {"steps_s": times, "batches": batches}
print("STEP " + json.dumps(out))
'''


def _base_tree(commit: str, into: str) -> Path:
    tree = Path(into) / "base"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), commit],
                   check=True, capture_output=True, text=True)
    return tree


def _import_path(tree: Path) -> tuple[str, bool]:
    """The folder that makes an earlier tree's own packages importable ahead of the installed project,
    and whether the tree names them `eventtime` (as today) rather than `conformance` and `harness`.

    A tree with the `eventtime` root (conformance/ installed as `eventtime`, harness/ and scenarios/ as
    its subpackages) gets a folder holding `eventtime` as a link to its conformance/, and links to its
    harness/ and scenarios/ inside that: the layout the wheel installs. Entries of PYTHONPATH come
    before the editable install's import hook, so the earlier tree's modules are the ones imported."""
    if '"eventtime" = "conformance"' not in (tree / "pyproject.toml").read_text():
        return str(tree), False
    shim = tree.parent / "base-imports"
    if not shim.exists():
        shim.mkdir()
        (shim / "eventtime").symlink_to(tree / "conformance", target_is_directory=True)
        for sub in ("harness", "scenarios"):  # the worktree is temporary: links inside it are removed with it
            (tree / "conformance" / sub).symlink_to(tree / sub, target_is_directory=True)
    return os.pathsep.join([str(shim), str(tree)]), True


class Side:
    """One version of the code: where it runs from, how its modules are named, what it adds."""

    def __init__(self, name: str, tree: Path, *, base: bool, extra: dict[str, str], env: dict[str, str]):
        self.name, self.tree, self.base, self.extra, self.extra_env = name, tree, base, extra, env
        self.path, named_as_today = _import_path(tree) if base else ("", True)
        self.root = "eventtime" if named_as_today else "conformance"
        self.harness = "eventtime.harness" if named_as_today else "harness"

    def env(self) -> dict[str, str]:
        env = dict(os.environ, EVENTTIME_DRIVER_LOG=os.devnull, **self.extra_env)
        if self.base:  # the earlier tree's packages come from the tree itself, not from the installed project
            env["PYTHONPATH"] = self.path
        return env

    def cli(self) -> list[str]:
        """The side's `eventtime` command as its console script runs it (`console_main` since it exists)."""
        if "def console_main(" in (Path(self.tree) / "conformance" / "cli.py").read_text():
            return [sys.executable, "-c", f"from {self.root}.cli import console_main; console_main()"]
        return [sys.executable, "-c", f"import sys; from {self.root}.cli import main; sys.exit(main())"]

    def conf_args(self) -> list[str]:
        return [a for k, v in self.extra.items() for a in ("--spark-conf", f"{k}={v}")]


def cold(side: Side) -> float:
    t0 = time.monotonic()
    done = subprocess.run(side.cli() + ["run", SCENARIO, "--pipeline", f"{side.root}.pipelines.reference:tumbling_count",
                                        *side.conf_args()],
                          cwd=side.tree, env=side.env(), capture_output=True, text=True, timeout=WAIT)
    wall = time.monotonic() - t0
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0 or not last.startswith("1 passed"):
        raise SystemExit(f"{side.name}: the cold run did not pass:\n{done.stdout}\n{done.stderr[-3000:]}")
    return wall


def step(side: Side, steps: int) -> dict:
    done = subprocess.run([sys.executable, "-c", STEP, side.root, side.harness, str(steps), json.dumps(side.extra)],
                          cwd=side.tree, env=side.env(), capture_output=True, text=True, timeout=WAIT)
    for line in done.stdout.splitlines():
        if line.startswith("STEP "):
            return json.loads(line[5:])
    raise SystemExit(f"{side.name}: the step run printed no figures:\n{done.stdout}\n{done.stderr[-3000:]}")


def certify(side: Side, folder: str, attempts: int = 3) -> tuple[float, dict[str, str]]:
    """The wall time and verdicts of one whole-suite run. A run that crashed before writing its results
    is run again (at most `attempts` in all, each said): the earlier tree has a rare crash of its own
    (an AttributeError releasing a py4j callback connection that is already gone, fixed since), and a
    crashed run has no wall time to compare."""
    for attempt in range(1, attempts + 1):
        results = Path(folder) / f"results-{side.name}-{time.monotonic_ns()}.json"
        t0 = time.monotonic()
        done = subprocess.run(side.cli() + ["certify", "--jobs", "3", "--json", str(results), *side.conf_args()],
                              cwd=side.tree, env=side.env(), capture_output=True, text=True, timeout=WAIT)
        wall = time.monotonic() - t0
        if results.exists():
            break
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"{side.name}: certify crashed without results (exit {done.returncode}, attempt {attempt} of "
              f"{attempts}): {last}", flush=True)
    else:
        raise SystemExit(f"{side.name}: certify wrote no results (exit {done.returncode}):\n{done.stderr[-3000:]}")
    data = json.loads(results.read_text())
    # the earlier tree's import root was `conformance`: its pipelines are named conformance.pipelines...
    verdicts = {f"{r['scenario']} | {r['implementation'].replace('conformance.', 'eventtime.', 1)}": r["status"]
                for r in data["results"]}
    return wall, verdicts


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _parse_side(text: str) -> tuple[str, dict[str, str], dict[str, str]]:
    name, _, pairs = text.partition("=")
    given = [p.split("=", 1) for p in pairs.split(",") if "=" in p]
    conf = {k: v for k, v in given if not k.startswith("env:")}
    env = {k[4:]: v for k, v in given if k.startswith("env:")}
    if not name or not (conf or env):
        raise SystemExit(f"--side {text!r}: expected NAME=KEY=VALUE[,env:KEY=VALUE...]")
    return name, conf, env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=ISSUE_21_BASE, help="the earlier commit (default: %(default)s)")
    parser.add_argument("--what", default="cold,step,certify")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--side", action="append", default=[], metavar="NAME=KEY=VALUE,...",
                        help="today's code with these Spark settings added (repeatable)")
    args = parser.parse_args()
    what = set(args.what.split(","))
    with tempfile.TemporaryDirectory(prefix="eventtime-before-after-") as folder:
        base_tree = _base_tree(args.base, folder)
        try:
            sides = [Side("base", base_tree, base=True, extra={}, env={}),
                     Side("now", ROOT, base=False, extra={}, env={})]
            sides += [Side(n, ROOT, base=False, extra=c, env=e) for n, c, e in map(_parse_side, args.side)]
            print(f"base {args.base}, load average at start {os.getloadavg()}", flush=True)
            if "cold" in what:
                for side in sides[1:]:  # records the JVM archive, warms the file cache
                    cold(side)
            colds: dict[str, list[float]] = {s.name: [] for s in sides}
            steps: dict[str, dict[str, list[float]]] = {s.name: {} for s in sides}
            walls: dict[str, list[float]] = {s.name: [] for s in sides}
            verdicts: dict[str, dict[str, str]] = {}
            for r in range(args.rounds):
                order = sides if r % 2 == 0 else sides[::-1]
                for side in order:
                    if "cold" in what:
                        colds[side.name].append(cold(side))
                        print(f"round {r + 1} cold {side.name}: {colds[side.name][-1]:.2f} s", flush=True)
                    if "step" in what:
                        for shape, got in step(side, args.steps).items():
                            steps[side.name].setdefault(shape, []).extend(got["steps_s"])
                            print(f"round {r + 1} step {side.name} {shape}: median "
                                  f"{_median(got['steps_s']) * 1000:.0f} ms ({got['batches']} batches)", flush=True)
                    if "certify" in what:
                        wall, got = certify(side, folder)
                        walls[side.name].append(wall)
                        if side.name in verdicts and verdicts[side.name] != got:
                            raise SystemExit(f"{side.name}: verdicts changed between rounds")
                        verdicts[side.name] = got
                        print(f"round {r + 1} certify {side.name}: {wall:.1f} s, {len(got)} pairs, "
                              f"{sum(v == 'passed' for v in got.values())} passed", flush=True)
            print(f"\nload average at end {os.getloadavg()}")
            base = sides[0].name
            if "cold" in what:
                for s in sides:
                    print(f"cold {s.name}: median {_median(colds[s.name]):.2f} s {['%.2f' % x for x in colds[s.name]]}"
                          f" ratio {_median(colds[s.name]) / _median(colds[base]):.3f}")
            if "step" in what:
                for shape in steps[base]:
                    for s in sides:
                        got = steps[s.name][shape]
                        print(f"step {shape} {s.name}: median {_median(got) * 1000:.1f} ms (n={len(got)}) ratio "
                              f"{_median(got) / _median(steps[base][shape]):.3f}")
            if "certify" in what:
                common = set.intersection(*(set(v) for v in verdicts.values()))
                for s in sides:
                    differ = sorted(k for k in common if verdicts[s.name][k] != verdicts[base][k])
                    print(f"certify {s.name}: median {_median(walls[s.name]):.1f} s {['%.1f' % x for x in walls[s.name]]}"
                          f" ratio {_median(walls[s.name]) / _median(walls[base]):.3f}; {len(verdicts[s.name])} pairs,"
                          f" {len(common)} on every side, {len(differ)} verdicts differ from {base}"
                          + (f": {differ[:5]}" if differ else ""))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                           capture_output=True, text=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
