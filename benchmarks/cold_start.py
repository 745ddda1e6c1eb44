"""One scenario from a cold start: where the seconds go, and the JVM class-data archive on vs off.

Each measurement is a fresh process (its own JVM). Two kinds, alternated within each round so that
machine noise hits both modes:

- `run`: `eventtime run SCENARIO --pipeline PIPELINE` timed from outside, what a user waits for;
- `split`: the same start taken apart in one process: Python imports, JVM start (PySpark's gateway),
  SparkContext, SparkSession with its session state, py4j's callback server, loading the scenario,
  the first run of the scenario, and the same scenario again (warm, for comparison).

Modes: `off` (`EVENTTIME_JVM_ARCHIVE=off`: the JVM as before) and `archive` (the archive of
`eventtime.harness.jvmarchive`, in a cache folder of this benchmark's own, recorded once before the
rounds; that recording run's wall time, how long its JVM went on writing the archive after the run had
ended, and the archive's size are printed too). Verdicts must be `passed` in every run.

    python benchmarks/cold_start.py [--rounds 3] [--scenario PATH] [--pipeline REF]
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
SCENARIO = "scenarios/tumbling/append-late-row-dropped.scenario.yaml"
PIPELINE = "eventtime.pipelines.reference:tumbling_count"
WAIT = 900.0

SPLIT = r'''
import json, sys, time
T = [("start", time.monotonic())]
def mark(name):
    T.append((name, time.monotonic()))
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession
from eventtime.harness import session as hs
from eventtime.harness.jvmarchive import plan_archive
from eventtime.loader import load_scenario
from eventtime.runner import run_scenario
mark("python imports")
settings = dict(hs.TEST_CONF)
plan = plan_archive(settings)  # as get_session does
if plan.options:
    settings["spark.driver.extraJavaOptions"] += " " + plan.options
conf = SparkConf().setMaster("local[2]").setAppName("eventtime")
for key, value in settings.items():
    conf.set(key, value)
SparkContext._ensure_initialized(conf=conf)
mark("JVM start")
sc = SparkContext.getOrCreate(conf)
mark("SparkContext")
spark = SparkSession(sc)
spark._jsparkSession.sessionState()
mark("SparkSession")
hs.prepare_session(spark)
mark("callback server")
sc.setLogLevel("ERROR")
scenario = load_scenario(sys.argv[1])
mark("load scenario")
first = run_scenario(scenario, sys.argv[2], session=spark)
mark("first scenario")
again = run_scenario(scenario, sys.argv[2], session=spark)
mark("same scenario again")
print("SPLIT " + json.dumps({"plan": plan.action, "verdicts": [first.status, again.status],
                             "phases": {n: t - T[i][1] for i, (n, t) in enumerate(T[1:])},
                             "first_steps": [[s.kind, s.seconds] for s in first.steps]}))
'''


def _env(mode: str, cache: str) -> dict[str, str]:
    env = dict(os.environ, EVENTTIME_CACHE_DIR=cache, EVENTTIME_DRIVER_LOG=os.devnull)
    if mode == "off":
        env["EVENTTIME_JVM_ARCHIVE"] = "off"
    else:
        env.pop("EVENTTIME_JVM_ARCHIVE", None)
    return env


def timed_run(mode: str, cache: str, scenario: str, pipeline: str) -> tuple[float, str]:
    t0 = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).parent / "eventtime"), "run", scenario, "--pipeline", pipeline],
                          cwd=ROOT, env=_env(mode, cache), capture_output=True, text=True, timeout=WAIT)
    wall = time.monotonic() - t0
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0 or not last.startswith("1 passed"):
        raise SystemExit(f"{mode} run did not pass:\n{done.stdout}\n{done.stderr}")
    return wall, done.stderr


def split(mode: str, cache: str, scenario: str, pipeline: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SPLIT, scenario, pipeline], cwd=ROOT, env=_env(mode, cache),
                          capture_output=True, text=True, timeout=WAIT)
    for line in done.stdout.splitlines():
        if line.startswith("SPLIT "):
            found = json.loads(line[6:])
            if found["verdicts"] != ["passed", "passed"]:
                raise SystemExit(f"{mode} split did not pass: {found['verdicts']}")
            return found
    raise SystemExit(f"{mode} split printed no figures:\n{done.stdout}\n{done.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenario", default=SCENARIO)
    parser.add_argument("--pipeline", default=PIPELINE)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="eventtime-cold-") as cache:
        t0 = time.monotonic()
        wall, said = timed_run("archive", cache, args.scenario, args.pipeline)
        if "recording Spark's classes" not in said:
            raise SystemExit(f"the first run did not record an archive:\n{said}")
        written = _wait_written(Path(cache) / "jvm")
        split_of_first = time.monotonic() - t0
        archive = next(Path(cache).glob("jvm/*.part"))
        print(f"recording run: {wall:.1f} s (what its user waits for); the JVM wrote the archive "
              f"{written:.1f} s after that run had ended; archive {archive.stat().st_size / 2**20:.0f} MiB "
              f"({split_of_first:.0f} s in all)", flush=True)
        walls: dict[str, list[float]] = {"off": [], "archive": []}
        splits: dict[str, list[dict]] = {"off": [], "archive": []}
        for r in range(args.rounds):
            order = ("off", "archive") if r % 2 == 0 else ("archive", "off")
            for mode in order:
                wall, _ = timed_run(mode, cache, args.scenario, args.pipeline)
                walls[mode].append(wall)
                print(f"round {r + 1} {mode:7s} eventtime run: {wall:.2f} s", flush=True)
            for mode in reversed(order):
                found = split(mode, cache, args.scenario, args.pipeline)
                if found["plan"] != ("none" if mode == "off" else "use"):
                    raise SystemExit(f"{mode}: the JVM's archive plan was {found['plan']}")
                splits[mode].append(found)
                print(f"round {r + 1} {mode:7s} split: " + ", ".join(f"{k} {v:.2f}" for k, v in found["phases"].items()),
                      flush=True)
    print()
    print(f"load average at end: {os.getloadavg()}")
    med = {m: statistics.median(v) for m, v in walls.items()}
    print(f"eventtime run, median of {args.rounds}: off {med['off']:.2f} s, archive {med['archive']:.2f} s, "
          f"ratio {med['archive'] / med['off']:.3f}")
    print("split, median per phase (s): phase | off | archive | ratio")
    for phase in splits["off"][0]["phases"]:
        a = statistics.median(s["phases"][phase] for s in splits["off"])
        b = statistics.median(s["phases"][phase] for s in splits["archive"])
        print(f"  {phase} | {a:.2f} | {b:.2f} | {b / a if a else float('nan'):.2f}")
    cold = {m: statistics.median(sum(v for k, v in s["phases"].items() if k != "same scenario again")
                                 for s in splits[m]) for m in splits}
    print(f"  to the first verdict | {cold['off']:.2f} | {cold['archive']:.2f} | {cold['archive'] / cold['off']:.3f}")
    return 0


def _wait_written(folder: Path) -> float:
    """Seconds until the recording JVM's log says the archive is written whole (bounded)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < WAIT:
        if any("Written dynamic archive" in log.read_text(errors="replace") for log in folder.glob("*.part.log")):
            return time.monotonic() - t0
        time.sleep(0.5)  # polling a file another process writes; the figure is rounded to seconds anyway
    raise SystemExit(f"no archive written within {WAIT:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
