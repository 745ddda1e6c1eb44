"""Warm pytest: a user's small project run with pytest cold and warm, side by side in each round.

The project is the example consumer (examples/consumer) with its click scenarios (five): the user's
transform, its Kafka payload and schema, bound in its pyproject.toml. Each measurement is a new
pytest process, as a user starts it; per round one cold run (`--eventtime-cold`: a JVM of its own)
and one warm run (`--eventtime-warm`: attached to the daemon the warm-up run started, so every
measured warm run is the second of two or later), in alternating order. Both use the same class-data
archive (recorded by a warm-up cold run) and a cache folder of the benchmark's own.

Per run: the first verdict (seconds from the process's start to the first test's result, from a small
plugin's timestamps), the whole run (the process's wall time, exit included) and the verdicts, which
must be the same in both modes. Ratios are warm / cold of the same round; the medians are printed.

    python benchmarks/warm_pytest.py [--rounds 5] [--python PATH] [--xdist] [--folders clicks|all|A,B]

`--xdist` adds a warm run with `pytest -n 2` to each round (its two workers attach to the one daemon),
compared with the serial warm run of the same round.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAIT = 900.0

TIMER = '''
import os, time
import pytest

START = float(os.environ["BENCH_START"])
OUT = os.environ["BENCH_OUT"]


def _note(what):
    with open(OUT, "a") as fh:
        fh.write(f"{what} {time.time() - START:.3f}\\n")


WORKER = [False]


def pytest_configure(config):
    WORKER[0] = hasattr(config, "workerinput")  # under xdist the controller notes each verdict once


def pytest_runtest_logreport(report):
    if report.when == "call" and not WORKER[0]:
        _note("verdict " + report.outcome)
'''


def _project(folder: Path, kept: set[str]) -> Path:
    project = folder / "project"
    shutil.copytree(ROOT / "examples" / "consumer", project, ignore=shutil.ignore_patterns("__pycache__", ".tox"))
    scenarios = project / "tests" / "scenarios"
    for sub in scenarios.iterdir():
        if sub.name not in kept:
            shutil.rmtree(sub)
    (project / "bench_timer.py").write_text(TIMER)
    return project


def _run(python: str, project: Path, mode: str, env: dict[str, str]) -> dict:
    out = project / f"timer-{mode}.txt"
    out.unlink(missing_ok=True)
    start = time.time()
    workers = ["-n", "2"] if mode.endswith("-n2") else []
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "bench_timer", *workers,
                           f"--eventtime-{mode.removesuffix('-n2')}", "tests/scenarios"],
                          cwd=project, capture_output=True, text=True, timeout=WAIT,
                          env={**env, "BENCH_START": repr(start), "BENCH_OUT": str(out)})
    wall = time.time() - start
    lines = out.read_text().split("\n") if out.exists() else []
    verdicts = [line.split()[1] for line in lines if line.startswith("verdict")]
    first = min((float(line.split()[2]) for line in lines if line.startswith("verdict")), default=float("nan"))
    if done.returncode != 0 or not verdicts or set(verdicts) != {"passed"}:
        raise SystemExit(f"{mode} run failed ({done.returncode}, {verdicts}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {"first": first, "wall": wall, "verdicts": verdicts}


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="the Python of an environment with the kit")
    parser.add_argument("--xdist", action="store_true", help="also a warm run with pytest -n 2 in each round")
    parser.add_argument("--folders", default="clicks",
                        help="the consumer's scenario folders the project keeps, comma-separated; 'all' for every one")
    args = parser.parse_args()
    available = {p.name for p in (ROOT / "examples" / "consumer" / "tests" / "scenarios").iterdir() if p.is_dir()}
    kept = available if args.folders == "all" else set(args.folders.split(","))
    if not kept <= available:
        raise SystemExit(f"--folders: no such folder {sorted(kept - available)}; the consumer has {sorted(available)}")
    with tempfile.TemporaryDirectory(prefix="eventtime-warm-bench-") as tmp:
        folder = Path(tmp)
        project = _project(folder, kept)
        env = {**os.environ, "EVENTTIME_CACHE_DIR": str(folder / "cache"), "PYTHONPATH": str(project),
               "EVENTTIME_DRIVER_LOG": str(folder / "driver.log")}
        env.pop("CI", None)
        # Python keeps compiled modules as a user's machine does (this variable, set on some CI and
        # container images, makes every run compile the kit and PySpark again: 0.5-1 s per run)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        try:
            print(f"warm-up (load {_load()}): a cold run records the class-data archive, a warm run starts the daemon",
                  flush=True)
            _run(args.python, project, "cold", env)
            started = _run(args.python, project, "warm", env)
            print(f"  the daemon's first run (its JVM's start included): first verdict {started['first']:.1f} s, "
                  f"whole {started['wall']:.1f} s", flush=True)
            rows, parallel = [], []
            for i in range(args.rounds):
                order = ["cold", "warm"] if i % 2 == 0 else ["warm", "cold"]
                if args.xdist:
                    order.insert(1, "warm-n2")
                got = {mode: _run(args.python, project, mode, env) for mode in order}
                if args.xdist:
                    parallel.append(got["warm-n2"]["wall"] / got["warm"]["wall"])
                    print(f"  warm with -n 2: whole run {got['warm-n2']['wall']:.2f} s, "
                          f"{parallel[-1]:.2f}x the serial warm run", flush=True)
                row = (got["cold"]["first"], got["warm"]["first"], got["cold"]["wall"], got["warm"]["wall"])
                rows.append(row)
                print(f"round {i + 1} (load {_load()}): first verdict cold {row[0]:.2f} s warm {row[1]:.2f} s "
                      f"({row[1] / row[0]:.2f}x); whole run cold {row[2]:.2f} s warm {row[3]:.2f} s "
                      f"({row[3] / row[2]:.2f}x)", flush=True)
        finally:
            subprocess.run([args.python, "-m", "eventtime.cli", "warm", "stop"], env=env, capture_output=True,
                           timeout=120)
    first = statistics.median(r[1] / r[0] for r in rows)
    whole = statistics.median(r[3] / r[2] for r in rows)
    print(f"\nmedian of {len(rows)} rounds: first verdict cold {statistics.median(r[0] for r in rows):.2f} s, "
          f"warm {statistics.median(r[1] for r in rows):.2f} s, ratio {first:.2f}x; whole run cold "
          f"{statistics.median(r[2] for r in rows):.2f} s, warm {statistics.median(r[3] for r in rows):.2f} s, "
          f"ratio {whole:.2f}x (load {_load()})")
    if parallel:
        print(f"warm with -n 2 / warm serial, whole run: median {statistics.median(parallel):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
