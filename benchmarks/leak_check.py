"""No leaks: many scenarios back to back in one process, passing, failing and erroring ones mixed.

After every scenario it counts the active streaming queries (in every session the harness used), the
JVM's live threads and open file descriptors (sockets included; read from /proc, so Linux only), the
Python threads and the entries in the temporary directory; at the end it
prints the counts at the start, after warm-up, the maximum and at the end, and checks:
no active query ever outlives its scenario, JVM threads grow by at most --thread-bound after
warm-up (Python threads and JVM file descriptors too), no temporary entry made after warm-up is left behind, and the session stays usable (every scenario meant to
pass passes, also right after a failed or broken one).

    python benchmarks/leak_check.py [--scenarios 500] [--thread-bound 10]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime.loader import load_scenario, load_scenario_text  # noqa: E402
from eventtime.runner import run_scenario  # noqa: E402
from eventtime.harness import get_session, other_session  # noqa: E402
from eventtime.scenarios import SUITE_DIR  # noqa: E402

HEAD = """\
scenario: leak-check
description: a small tumbling count for the leak check
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
sources:
  events: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:16"]]}
  - process
"""
PASS = HEAD + '  - expect: {rows: [[a, "00:00:00", "00:00:10", 1]], watermark: "00:00:11"}\n'
FAIL = HEAD + '  - expect: {rows: [[a, "00:00:00", "00:00:10", 7]], watermark: "00:00:12"}\n'
NEW_SESSION = PASS + '  - restart: {session: new}\n  - add: {events: [[a, "00:00:31"]]}\n  - process\n' \
    '  - expect: {rows: [[a, "00:00:10", "00:00:20", 1]], watermark: "00:00:26"}\n'

# (label, scenario, pipeline, timeout, expected verdict); one cycle of 10, repeated
SUITE = ["tumbling/append-late-row-dropped", "dedup/dedup-state-expiry", "union/min-policy-different-delays",
         "restart/restart-keeps-window-exactly-once"]


def cycle() -> list[tuple[str, object, str | None, float, str]]:
    small = load_scenario_text(PASS, "leak-pass.scenario.yaml")
    wrong = load_scenario_text(FAIL, "leak-fail.scenario.yaml")
    moved = load_scenario_text(NEW_SESSION, "leak-new-session.scenario.yaml")
    suite = [load_scenario(SUITE_DIR / f"{name}.scenario.yaml") for name in SUITE]
    return [
        ("pass", small, None, 60, "passed"),
        ("fail: wrong expectation", wrong, None, 60, "failed"),
        ("pass", suite[0], None, 60, "passed"),
        ("error: pipeline raises at definition", small, "tests.spark.pipelines:raises_at_definition", 60, "error"),
        ("pass", suite[1], None, 60, "passed"),
        ("error: query fails in a batch", small, "tests.spark.pipelines:fails_in_batch", 60, "error"),
        ("pass: restart in a new session", moved, None, 60, "passed"),
        ("error: unknown pipeline", small, "tests.spark.pipelines:nope", 60, "error"),
        ("pass", suite[2], None, 60, "passed"),
        ("pass", suite[3], None, 60, "passed"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, default=500)
    ap.add_argument("--thread-bound", type=int, default=10, help="allowed JVM thread growth after warm-up")
    ap.add_argument("--never-finishes-every", type=int, default=100,
                    help="every N-th scenario is a batch that never finishes (bound 10 s); 0: none")
    args = ap.parse_args()
    # A private temporary directory for everything this process and its JVM create (the runner's
    # checkpoints, Spark's local dirs, java.io.tmpdir), so other processes on the machine do not count.
    tmp = Path(tempfile.mkdtemp(prefix="eventtime-leak-check-"))
    tempfile.tempdir = str(tmp)
    os.environ["TMPDIR"] = str(tmp)
    from eventtime.harness import TEST_CONF

    spark = get_session(conf={
        "spark.local.dir": str(tmp),
        "spark.driver.extraJavaOptions": f"{TEST_CONF['spark.driver.extraJavaOptions']} -Djava.io.tmpdir={tmp}"})
    if os.path.realpath(str(spark.sparkContext._jvm.java.lang.System.getProperty("java.io.tmpdir"))) != os.path.realpath(tmp):
        print("note: the JVM was already running with another java.io.tmpdir; only this process's files are counted")
    spare = other_session(spark)
    jvm = spark.sparkContext._jvm
    mx = jvm.java.lang.management.ManagementFactory.getThreadMXBean()
    jvm_fd_dir = Path(f"/proc/{jvm.java.lang.ProcessHandle.current().pid()}/fd")

    def sample() -> dict[str, int]:
        return {"queries": len(spark.streams.active) + len(spare.streams.active),
                "jvm_threads": int(mx.getThreadCount()),
                "jvm_fds": len(os.listdir(jvm_fd_dir)) if jvm_fd_dir.is_dir() else -1,
                "py_threads": threading.active_count(), "tmp_entries": len(os.listdir(tmp))}

    plan = cycle()
    tmp_before = set(os.listdir(tmp))
    per_run_left = 0  # the runner's own per-scenario directories found after a scenario
    start = sample()
    warm: dict[str, int] = {}
    peak = dict(start)
    verdicts: dict[str, int] = {}
    wrong_verdicts: list[str] = []
    query_left: list[str] = []
    t0 = time.monotonic()
    for i in range(args.scenarios):
        if args.never_finishes_every and i % args.never_finishes_every == args.never_finishes_every - 1:
            label, scenario, pipeline, timeout, want = (
                "error: batch never finishes", plan[0][1], "tests.spark.pipelines:never_finishes", 10, "error")
        else:
            label, scenario, pipeline, timeout, want = plan[i % len(plan)]
        result = run_scenario(scenario, pipeline, session=spark, timeout=timeout)  # type: ignore[arg-type]
        verdicts[result.status] = verdicts.get(result.status, 0) + 1
        if result.status != want:
            wrong_verdicts.append(f"#{i} {label}: {result.status} ({result.reason})")
        now = sample()
        if now["queries"]:
            query_left.append(f"#{i} {label}: {now['queries']} active")
        per_run_left += sum(1 for name in os.listdir(tmp) if name.startswith("eventtime-"))
        peak = {k: max(peak[k], v) for k, v in now.items()}
        if i == min(19, args.scenarios - 1):
            warm = now  # thread pools filled, one-time files made (native libraries, a session's artifact dir)
            tmp_before = set(os.listdir(tmp))
        if (i + 1) % 50 == 0:
            print(f"{i + 1} scenarios, {time.monotonic() - t0:.0f}s: {now}", flush=True)
    end = sample()
    left = sorted(set(os.listdir(tmp)) - tmp_before)
    growth = end["jvm_threads"] - warm["jvm_threads"]
    py_growth = end["py_threads"] - warm["py_threads"]
    fd_growth = end["jvm_fds"] - warm["jvm_fds"]
    print(f"Spark {spark.version}: {args.scenarios} scenarios in {time.monotonic() - t0:.0f}s; verdicts {verdicts}")
    for key in start:
        print(f"  {key:12} start {start[key]:5}  after warm-up {warm[key]:5}  max {peak[key]:5}  end {end[key]:5}")
    print(f"  active queries after a scenario: {len(query_left)} times; JVM thread growth after warm-up: "
          f"{growth} (bound {args.thread_bound}); Python thread growth after warm-up: {py_growth}; "
          f"JVM file descriptor growth after warm-up: {fd_growth}; "
          f"temporary entries made after warm-up and left: {len(left)} {left[:5]}; per-scenario directories "
          f"found after a scenario: {per_run_left}")
    print(f"  verdicts other than intended: {len(wrong_verdicts)}")
    for line in (wrong_verdicts + query_left)[:20]:
        print("   ", line)
    spark.stop()
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    ok = (not query_left and growth <= args.thread_bound and py_growth <= args.thread_bound
          and fd_growth <= args.thread_bound and not left
          and not per_run_left and not wrong_verdicts)
    print(f"  temporary directory after warm-up: {sorted(tmp_before)}")
    print("OK" if ok else "LEAK OR UNUSABLE SESSION")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
