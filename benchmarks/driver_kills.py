"""Kills the driver JVM of `eventtime run` at random points, many times, and counts what went wrong.

    python benchmarks/driver_kills.py [--kills 50] [--seed 1] [--bound 240]

Each round runs `eventtime run --json` in its own process on six small scenarios (one with a
restart, one with a stop and start) and kills its driver JVM with SIGKILL after a random delay,
drawn uniformly from the first JVM's start to a little past the usual length of the run, so kills
land in JVM start-up, mid-step, during restarts, between scenarios, and some after the run (those
count as "no kill"). The fresh session a run starts after a death is not killed again.

Counted per round, each expected 0:
- hang: the run did not end within --bound seconds;
- lost verdicts: a verdict printed that the results file does not hold, or a pair neither in
  the file nor listed as not run;
- tracebacks: a Python traceback (or py4j's error names) in the output;
- unclear: a kill that hit a scenario without the one message `the Spark driver died: its JVM`.
Also reported: how many kills hit a scenario, and how many scenarios the runs completed after a
death on a fresh session.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["restart/restart-keeps-window-exactly-once", "restart/rows-added-while-stopped",
             "tumbling/append-late-row-dropped", "tumbling/out-of-order-across-batches",
             "tumbling/window-bounds", "tumbling/complete-mode"]


def _java_child(pid: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        if name == "java" and int(rest.split()[1]) == pid:
            return int(entry.name)
    return None


def _verdicts(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith(("PASS ", "FAIL ", "ERROR ", "N/A ")) and "  [" in line and "]  (" in line]


def one_round(work: Path, delay: float, bound: float) -> dict:
    folder = work / "scenarios"
    folder.mkdir(parents=True)
    for i, name in enumerate(SCENARIOS):
        (folder / f"{i}-{name.split('/')[1]}.scenario.yaml").write_text(
            (ROOT / "scenarios" / f"{name}.scenario.yaml").read_text())
    out = work / "out.txt"
    results = work / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    t0 = time.monotonic()
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "eventtime.cli", "run", str(folder),
                                 "--pipeline", "eventtime.pipelines.reference:tumbling_count", "--json", str(results)],
                                stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=work)
        jvm = None
        while jvm is None and proc.poll() is None and time.monotonic() - t0 < bound:
            jvm = _java_child(proc.pid)
            time.sleep(0.02)
        killed = False
        kill_at = time.monotonic() + delay
        while proc.poll() is None and time.monotonic() < kill_at:
            time.sleep(0.01)
        if proc.poll() is None and jvm is not None:
            try:
                os.kill(jvm, signal.SIGKILL)
                killed = True
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=max(bound - (time.monotonic() - t0), 1))
            hang = False
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            hang = True
    text = out.read_text()
    printed = len(_verdicts(text))
    try:
        doc = json.loads(results.read_text())
        held = len(doc["results"])
        not_run = len((doc.get("incomplete") or {}).get("not_run") or [])
    except (OSError, ValueError, KeyError):
        held, not_run = 0, 0
    died = text.count("the Spark driver died: its JVM")
    hit = killed and (died > 0 or "starting a fresh Spark session" in text)
    return {"seconds": time.monotonic() - t0, "killed": killed, "hit": hit, "hang": hang,
            "lost": max(printed - held, 0) + max(len(SCENARIOS) - held - not_run, 0),
            "tracebacks": int("Traceback" in text or "Py4JNetworkError" in text or "ConnectionRefused" in text),
            "unclear": int(hit and died != 1), "after_death": _after_death(text), "rc": proc.returncode}


def _after_death(text: str) -> int:
    """Verdicts printed after the first death message: scenarios that completed on a fresh session."""
    at = text.find("the Spark driver died: its JVM")
    return 0 if at < 0 else sum(1 for line in _verdicts(text[at:]) if not line.startswith("ERROR "))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bound", type=float, default=240.0, help="seconds a round may take before it counts as a hang")
    ap.add_argument("--span", type=float, default=30.0, help="kills are drawn from [0, SPAN] s after the JVM starts")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    totals = {"hang": 0, "lost": 0, "tracebacks": 0, "unclear": 0, "hit": 0, "after_death": 0}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="eventtime-kills-") as tmp:
        for i in range(args.kills):
            delay = rng.uniform(0, args.span)
            r = one_round(Path(tmp) / f"round{i}", delay, args.bound)
            for key in totals:
                totals[key] += int(r[key])
            print(f"round {i + 1:3}: kill after {delay:5.1f}s  hit={r['hit']!s:5} rc={r['rc']:3} "
                  f"hang={r['hang']!s:5} lost={r['lost']} tracebacks={r['tracebacks']} unclear={r['unclear']} "
                  f"after_death={r['after_death']} ({r['seconds']:.1f}s)", flush=True)
    print()
    print(f"{args.kills} rounds in {time.monotonic() - t0:.0f}s: {totals['hit']} kills hit a run; "
          f"hangs {totals['hang']}, lost verdicts {totals['lost']}, tracebacks {totals['tracebacks']}, "
          f"unclear messages {totals['unclear']}; {totals['after_death']} verdicts completed on a fresh "
          "session after a death")
    return 1 if totals["hang"] or totals["lost"] or totals["tracebacks"] or totals["unclear"] else 0


if __name__ == "__main__":
    sys.exit(main())
