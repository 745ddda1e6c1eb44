"""The end of a run: from an `eventtime run`'s last line of output to the end of its process.

What a user waits for after the verdicts are printed. Two ways of ending, alternated within each
round, each a fresh process (its own JVM):

- `teardown`: `main()` returns to the interpreter, which exits as usual (frees every module and
  object, py4j's proxies among them);
- `console`: the `eventtime` console script (`eventtime.cli.console_main`): the exit handlers run, the
  streams are flushed, and the process ends without that teardown.

Timed from outside: the moment the run's totals line arrives on the pipe, and the moment the process
has exited (its JVM's output goes to the driver log, so the pipe is this process's alone). The whole
run's wall time is printed too; verdicts must be `passed` in every run.

    python benchmarks/run_end.py [--rounds 6]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "scenarios/tumbling/append-late-row-dropped.scenario.yaml"
PIPELINE = "eventtime.pipelines.reference:tumbling_count"
WAIT = 600.0

MODES = {
    "teardown": [sys.executable, "-c", "import sys; from eventtime.cli import main; sys.exit(main())"],
    "console": [sys.executable, "-c", "from eventtime.cli import console_main; console_main()"],
}


def one(mode: str) -> tuple[float, float]:
    """(seconds from the totals line to the exit, seconds of the whole run)."""
    start = time.monotonic()
    proc = subprocess.Popen([*MODES[mode], "run", SCENARIO, "--pipeline", PIPELINE], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    totals_at = None
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if " passed, " in line and " failed" in line:
            totals_at = time.monotonic()
    proc.wait(timeout=WAIT)
    end = time.monotonic()
    if proc.returncode != 0 or totals_at is None or not lines[-1].startswith("1 passed, 0 failed"):
        raise SystemExit(f"{mode}: exit {proc.returncode}, output:\n{''.join(lines[-5:])}")
    return end - totals_at, end - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    os.environ.setdefault("EVENTTIME_DRIVER_LOG", os.devnull)
    ends: dict[str, list[float]] = {m: [] for m in MODES}
    walls: dict[str, list[float]] = {m: [] for m in MODES}
    one("console")  # untimed: the class-data archive recorded, the compiled classes cached
    for r in range(args.rounds):
        for mode in (MODES if r % 2 == 0 else reversed(list(MODES))):
            end, wall = one(mode)
            ends[mode].append(end)
            walls[mode].append(wall)
            print(f"round {r + 1} {mode:9} end {end * 1000:7.1f} ms  run {wall:6.2f} s", flush=True)
    print()
    for mode in MODES:
        print(f"{mode:9} end median {statistics.median(ends[mode]) * 1000:7.1f} ms  "
              f"run median {statistics.median(walls[mode]):6.2f} s  (n={args.rounds})")
    ratio = statistics.median(ends["console"]) / statistics.median(ends["teardown"])
    saved = statistics.median(ends["teardown"]) - statistics.median(ends["console"])
    print(f"end: console / teardown {ratio:.3f}; {saved * 1000:.0f} ms saved per run; "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
