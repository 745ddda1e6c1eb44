"""Kills the warm Spark's daemon under `pytest --eventtime-warm` runs at random points, many times, and
counts what went wrong.

    python benchmarks/warm_kills.py [--kills 100] [--seed 1] [--span 25|auto] [--bound 600] [--minutes M]

A user's project (three bundled tumbling scenario files bound to the reference pipeline, and a test file
whose session fixture is made from `eventtime_spark` and which reads `spark.conf`, the catalog and runs
small queries) is run by pytest again and again, each run a new process attached to the project's
daemon. In each round the daemon (and its JVM: its process group) is killed with SIGKILL after a delay
drawn uniformly from [0, SPAN] s after the run's start, so kills land in the attach, in a scenario's
steps, in a test, between items and after the run (those count as "no kill"; the round does not count
toward --kills). The daemon a run starts after a death is not killed again in that run; the next round
attaches to it.

Counted per round, each expected 0:
- hang: the run did not end within --bound seconds;
- tracebacks: a Python traceback or py4j's error names in the output (`Traceback`, `Py4JError`,
  `Py4JNetworkError`, `ConnectionRefused`, `py4j.protocol`);
- errored after the death: an item that failed or errored other than the one the Spark died under (its
  report says `the Spark driver died`), and any failure that does not say so;
- incomplete: a run that did not judge all its items or ended otherwise than passed or failed
  (pytest's exit 0 or 1).
Also reported: how many kills hit an item (its verdict says the Spark died under it) and the load.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["tumbling/append-late-row-dropped", "tumbling/out-of-order-across-batches",
             "tumbling/complete-mode"]
PROJECT = """\
[tool.pytest.ini_options]
eventtime_pipelines = ["tumbling_count = eventtime.pipelines.reference:tumbling_count"]
"""
CONFTEST = """\
import pytest


@pytest.fixture(scope="session")
def spark(eventtime_spark):  # the user's own session fixture, made from the kit's
    return eventtime_spark
"""
TESTS = """\
import pytest


@pytest.mark.parametrize("n", range(2))
def test_conf_and_catalog(spark, n):
    assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
    assert [d.name for d in spark.catalog.listDatabases()] == ["default"]
    assert spark.range(10 + n).selectExpr("sum(id) AS s").collect()[0].s == sum(range(10 + n))
"""
RAW = ("Traceback", "Py4JError", "Py4JNetworkError", "ConnectionRefused", "py4j.protocol")
DIED = "the Spark driver died"


def _project(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(PROJECT)
    (folder / "conftest.py").write_text(CONFTEST)
    for i, name in enumerate(SCENARIOS):  # named so that scenarios and tests take turns in the run
        (folder / f"test_{i}a-{name.split('/')[1]}.scenario.yaml").write_text(
            (ROOT / "scenarios" / f"{name}.scenario.yaml").read_text())
        (folder / f"test_{i}b_session.py").write_text(TESTS)


ITEMS = len(SCENARIOS) * 3  # each scenario file and its two tests


def _daemon_pid(cache: Path) -> int | None:
    for path in (cache / "warm").glob("*.json"):
        try:
            return int(json.loads(path.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            continue
    return None


def _results(xml: Path) -> list[tuple[str, str, str]]:
    """(item, outcome, what its report says) per item: outcome passed, failed, error or skipped."""
    try:
        tree = ET.parse(xml)
    except (OSError, ET.ParseError):
        return []
    found = []
    for case in tree.iter("testcase"):
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
                text += (child.get("message") or "") + "\n" + (child.text or "")
        found.append((f"{case.get('classname')}::{case.get('name')}", outcome, text))
    return found


def _env(cache: Path) -> dict[str, str]:
    env = {**os.environ, "EVENTTIME_CACHE_DIR": str(cache), "EVENTTIME_WARM_IDLE": "300",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for key in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS", "CI"):
        env.pop(key, None)
    return env


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]


def one_round(project: Path, cache: Path, delay: float, bound: float) -> dict:
    out, xml = project / "out.txt", project / "junit.xml"
    t0 = time.monotonic()
    killed = None
    with open(out, "w") as fh:
        proc = subprocess.Popen(_pytest("--eventtime-warm", f"--junitxml={xml}", "-o", "junit_logging=no"),
                                stdout=fh, stderr=subprocess.STDOUT, env=_env(cache), cwd=project)
        kill_at = t0 + delay
        while proc.poll() is None and time.monotonic() < kill_at:
            time.sleep(0.01)  # the benchmark's clock: when to kill, drawn at random; decides no result
        while proc.poll() is None and killed is None and time.monotonic() - t0 < bound:
            pid = _daemon_pid(cache)  # none while a daemon starts: the kill waits for it
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                    killed = pid
                except ProcessLookupError:
                    pass
            if killed is None:
                time.sleep(0.05)
        try:
            proc.wait(timeout=max(bound - (time.monotonic() - t0), 1))
            hang = False
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            hang = True
    text = out.read_text()
    results = _results(xml)
    bad = [r for r in results if r[1] in ("failure", "error")]
    died = [r for r in bad if DIED in r[2]]
    unclear = [r for r in bad if DIED not in r[2]]
    return {"seconds": time.monotonic() - t0, "killed": killed is not None, "hit_item": int(bool(died)),
            "hang": hang, "tracebacks": int(any(word in text for word in RAW)),
            "errored_after": max(len(died) - 1, 0) + len(unclear),
            "incomplete": int(proc.returncode not in (0, 1) or len(results) != ITEMS),
            "items": len(results), "rc": proc.returncode, "bad": [r[0] for r in unclear]}


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=100, help="kills that land in a run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--span", default="25", help="kills are drawn from [0, SPAN] s after a run starts; 'auto': SPAN "
                    "is the length of the latest round that ran whole (no kill in it), 30 s until there is one, so "
                    "kills keep landing in runs as the machine's load changes their length")
    ap.add_argument("--bound", type=float, default=600.0, help="seconds a run may take before it counts as a hang")
    ap.add_argument("--max-rounds", type=int, default=0, help="stop after this many rounds (0: 3 x --kills)")
    ap.add_argument("--minutes", type=float, default=0.0, help="start no round after this many minutes (0: no limit)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    keys = ("hang", "tracebacks", "errored_after", "incomplete", "hit_item")
    totals = dict.fromkeys(keys, 0)
    kills = rounds = 0
    loads = []
    auto = args.span == "auto"
    span = 30.0 if auto else float(args.span)
    at_load = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="eventtime-warm-kills-") as tmp:
        project, cache = Path(tmp) / "project", Path(tmp) / "cache"
        _project(project)
        # a cold run first: its JVM records the class-data archive at its exit, as a user's machine has it
        # (a daemon killed with SIGKILL never records one)
        cold = subprocess.run(_pytest("--eventtime-cold"), cwd=project, env=_env(cache), capture_output=True,
                              text=True, timeout=args.bound)
        print(f"cold run first: exit {cold.returncode}, {time.monotonic() - t0:.0f}s", flush=True)
        try:
            while kills < args.kills and rounds < (args.max_rounds or 3 * args.kills) and not (
                    args.minutes and time.monotonic() - t0 > args.minutes * 60):
                delay = rng.uniform(0, span)
                r = one_round(project, cache, delay, args.bound)
                rounds += 1
                kills += int(r["killed"])
                loads.append(_load())
                at_load += int(r["killed"] and float(loads[-1].split()[0]) >= 8)
                if auto and not r["killed"] and not r["hang"]:
                    span = r["seconds"]
                for key in keys:
                    totals[key] += int(r[key])
                print(f"round {rounds:3}: kill after {delay:5.1f}s  killed={r['killed']!s:5} hit_item={r['hit_item']} "
                      f"rc={r['rc']:3} items={r['items']} hang={r['hang']!s:5} tracebacks={r['tracebacks']} "
                      f"errored_after={r['errored_after']} incomplete={r['incomplete']} "
                      f"({r['seconds']:.1f}s, load {loads[-1]}){' ' + str(r['bad']) if r['bad'] else ''}",
                      flush=True)
                if r["tracebacks"] or r["errored_after"]:
                    print((project / "out.txt").read_text()[-4000:], flush=True)
        finally:
            pid = _daemon_pid(cache)
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    first = [float(x.split()[0]) for x in loads]
    print()
    print(f"{rounds} rounds, {kills} kills in a run, in {time.monotonic() - t0:.0f}s (1-min load "
          f"{min(first, default=0):.1f}-{max(first, default=0):.1f}, mean {sum(first) / max(len(first), 1):.1f}; "
          f"{at_load} of the kills at 1-min load >= 8): "
          f"{totals['hit_item']} kills hit an item (said in words); hangs {totals['hang']}, raw tracebacks "
          f"{totals['tracebacks']}, errored items after a death {totals['errored_after']}, incomplete runs "
          f"{totals['incomplete']}")
    return 1 if totals["hang"] or totals["tracebacks"] or totals["errored_after"] or totals["incomplete"] else 0


if __name__ == "__main__":
    sys.exit(main())
