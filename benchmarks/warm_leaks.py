"""A warm Spark's daemon over many runs: does what a run leaves behind grow?

N consecutive small runs (default 200) attach to one daemon, each a new Python process as a test run
is: it runs a bundled scenario, a Python UDF (a worker pool of its own), makes a table, a database and
a global view (the daemon drops them between runs), and ends. Every `--every` runs the benchmark records
the daemon's JVM threads and open file descriptors (from /proc: Linux only), its heap in use after the
full garbage collection of its last reset (the daemon's own figure), its Python worker processes, and
the entries of the temporary folder and of the JVM's scratch folder. It prints the series and checks
that from the first record on nothing grows beyond a fixed bound: threads by `--thread-bound`, file
descriptors by `--fd-bound`, the heap by `--heap-bound-mb`, no Python worker or temporary entry left.

    python benchmarks/warm_leaks.py [--runs 200] [--every 20]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WAIT = 600.0

RUN = '''
import sys
from eventtime.harness.session import get_session
from eventtime.loader import load_scenario
from eventtime.runner import run_scenario
from pyspark.sql import functions as F

spark = get_session(warm=True)
result = run_scenario(load_scenario(sys.argv[1]), "eventtime.pipelines.reference:tumbling_count", session=spark)
assert result.status == "passed", result.status
plus = F.udf(lambda x: x + 1, "long")
assert [r[0] for r in spark.range(3).select(plus("id")).collect()] == [1, 2, 3]
spark.sql("CREATE TABLE t (a INT) USING parquet")
spark.sql("INSERT INTO t VALUES (1)")
spark.sql("CREATE DATABASE d")
spark.range(1).createOrReplaceGlobalTempView("g")
'''
SCENARIO = ROOT / "scenarios" / "tumbling" / "append-late-row-dropped.scenario.yaml"


def _ping(env: dict[str, str]) -> dict:
    sys.path.insert(0, str(ROOT))
    from eventtime.harness.warm import daemons

    (found,) = daemons(env)
    assert found.answer is not None, "the daemon does not answer"
    return found.answer


def _settled(env: dict[str, str], bound: float = 60.0) -> None:
    """Wait (bounded) until the daemon has reset after the run that just ended (it does once the run's
    connection closes, which is after the process's exit)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        answer = _ping(env)
        if not answer["clients"] and not answer["resetting"]:
            return
        time.sleep(0.2)  # polling the daemon's own report; decides no figure
    raise SystemExit(f"the daemon did not finish its reset within {bound:.0f} s")


def _count(path: str) -> int:
    try:
        return len(os.listdir(path))
    except OSError:
        return -1


def _workers(jvm_pid: int) -> int:
    found = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == jvm_pid and b"pyspark" in cmd:
            found += 1
    return found


def _record(env: dict[str, str], tmp: str, runs: int) -> dict:
    answer = _ping(env)
    jvm = int(answer["jvm_pid"])
    status = Path(f"/proc/{jvm}/status").read_text()
    threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
    scratch = [p for p in Path(tmp).glob("spark-*") if p.is_dir()]
    return {"runs": runs, "served": answer["served"], "jvm_threads": threads, "jvm_fds": _count(f"/proc/{jvm}/fd"),
            "heap_mb_after_gc": answer["heap_mb_after_gc"], "python_workers": _workers(jvm),
            "tmp_entries": _count(tmp), "scratch_entries": sum(_count(str(p)) for p in scratch),
            "retiring": answer["retiring"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--every", type=int, default=20)
    parser.add_argument("--thread-bound", type=int, default=10)
    parser.add_argument("--fd-bound", type=int, default=20)
    parser.add_argument("--heap-bound-mb", type=float, default=64.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eventtime-warm-leaks-") as folder:
        tmp = str(Path(folder) / "tmp")
        os.mkdir(tmp)
        env = {**os.environ, "EVENTTIME_CACHE_DIR": str(Path(folder) / "cache"), "TMPDIR": tmp,
               "EVENTTIME_DRIVER_LOG": str(Path(folder) / "driver.log"), "EVENTTIME_WARM_IDLE": "300"}
        env.pop("CI", None)
        script = Path(folder) / "run.py"
        script.write_text(RUN)
        records = []
        start = time.monotonic()
        try:
            for i in range(1, args.runs + 1):
                done = subprocess.run([sys.executable, str(script), str(SCENARIO)], env=env, cwd=folder,
                                      capture_output=True, text=True, timeout=WAIT)
                if done.returncode != 0:
                    raise SystemExit(f"run {i} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
                if i == 1 or i % args.every == 0:
                    _settled(env)
                    records.append(_record(env, tmp, i))
                    print(json.dumps(records[-1]), f"{time.monotonic() - start:.0f} s", flush=True)
        finally:
            subprocess.run([sys.executable, "-m", "eventtime.cli", "warm", "stop"], env=env, capture_output=True,
                           timeout=120)
    first, last = records[1] if len(records) > 1 else records[0], records[-1]
    peak = {k: max(r[k] for r in records[1:] or records) for k in ("jvm_threads", "jvm_fds", "heap_mb_after_gc",
                                                                    "python_workers", "tmp_entries")}
    checks = [
        ("JVM threads", peak["jvm_threads"] - first["jvm_threads"] <= args.thread_bound),
        ("JVM file descriptors", peak["jvm_fds"] - first["jvm_fds"] <= args.fd_bound),
        ("heap after GC", peak["heap_mb_after_gc"] - first["heap_mb_after_gc"] <= args.heap_bound_mb),
        ("Python workers left", last["python_workers"] == 0),
        ("temporary entries", peak["tmp_entries"] <= first["tmp_entries"]),
        ("one daemon for every run", last["served"] == args.runs),
    ]
    print(f"\nfrom run {first['runs']} to run {last['runs']}: threads {first['jvm_threads']} -> {last['jvm_threads']} "
          f"(peak {peak['jvm_threads']}), fds {first['jvm_fds']} -> {last['jvm_fds']} (peak {peak['jvm_fds']}), heap "
          f"after GC {first['heap_mb_after_gc']} -> {last['heap_mb_after_gc']} MB (peak {peak['heap_mb_after_gc']}), "
          f"temporary entries {first['tmp_entries']} -> {last['tmp_entries']}, Python workers left "
          f"{last['python_workers']}")
    for name, ok in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
