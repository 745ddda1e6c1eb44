"""Where the driver JVM maps its class-data archive: where it was written vs a random address.

JDK 17 maps a class-data archive at a random address by default (`-XX:ArchiveRelocationMode=1`) and
then rewrites every pointer in it; the harness asks for the address the archive was written for
(`ArchiveRelocationMode=0`, `eventtime.harness.jvmarchive.ArchivePlan.in_place`). This times PySpark's
gateway launch (spark-submit's scripts, the launcher JVM, the driver JVM up to its py4j server: what
`SparkContext` waits for first) with the harness's settings and the installed Spark's archive, the
two mappings alternated within each round, each a fresh JVM. `-Xshare:on` makes a JVM that cannot
map the archive fail instead of going on without it, so both modes are known to have mapped it.

Three figures per launch: the gateway launch as PySpark's caller sees it (PySpark polls for the JVM's
answer every 0.1 s, so it moves in steps of 0.1 s), and two from the JVM's own log
(`-Xlog:startuptime,class+load`): its "Create VM" phase, where a relocation happens, and its uptime when
it loads py4j's server class (what relocating up front and mapping lazily cost by then).

The archive is the one `eventtime run` uses (`EVENTTIME_CACHE_DIR` or the per-user cache): run a
scenario once first if there is none yet.

    python benchmarks/archive_mapping.py [--rounds 10]
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from pyspark import SparkConf
from pyspark.java_gateway import launch_gateway

from eventtime.harness import jvmarchive
from eventtime.harness.session import TEST_CONF

MODES = ("relocated", "in place")


def launch(options: str, log: str) -> tuple[float, float, float]:
    """(gateway launch, the JVM's Create VM phase, its uptime at py4j's server class), in seconds."""
    conf = SparkConf(loadDefaults=False).setMaster("local[2]").setAppName("archive-mapping")
    for key, value in TEST_CONF.items():
        conf.set(key, value)
    conf.set("spark.driver.extraJavaOptions", f"{TEST_CONF['spark.driver.extraJavaOptions']} {options} "
                                              f"-Xlog:startuptime,class+load=info:file={log}:uptime")
    start = time.monotonic()
    gateway = launch_gateway(conf, popen_kwargs={"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL})
    took = time.monotonic() - start
    proc = gateway.proc
    gateway.shutdown()
    proc.stdin.close()  # PySpark's JVM exits when its stdin closes
    proc.wait(timeout=120)
    text = open(log, encoding="utf-8", errors="replace").read()
    create = re.search(r"Create VM, ([\d.]+) secs", text)
    server = re.search(r"\[([\d.]+)s\] py4j\.GatewayServer ", text)
    if not create or not server:
        raise SystemExit(f"the JVM's log {log} has no Create VM or py4j.GatewayServer line")
    return took, float(create.group(1)), float(server.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    plan = jvmarchive.plan_archive(dict(TEST_CONF))
    if plan.action != "use" or not plan.in_place:
        print(f"no archive to map (plan: {plan.action}, in place: {plan.in_place}): run `eventtime run` on a "
              f"scenario once, wait for its JVM to write the archive, and run this again", file=sys.stderr)
        return 2
    mapped = plan.options + " -Xshare:on"
    options = {"relocated": mapped.replace("-XX:ArchiveRelocationMode=0", "-XX:ArchiveRelocationMode=1"),
               "in place": mapped}
    print(f"archive {plan.path} ({plan.path.stat().st_size / 2**20:.0f} MiB)")
    folder = tempfile.mkdtemp(prefix="archive-mapping-")
    logs = (os.path.join(folder, f"jvm-{n}.log") for n in itertools.count())
    launch(options["in place"], next(logs))  # untimed: the files read once into the page cache
    times: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in (MODES if r % 2 == 0 else tuple(reversed(MODES))):
            times[mode].append(launch(options[mode], next(logs)))
            took, create, server = times[mode][-1]
            print(f"round {r + 1} {mode:9} gateway {took:6.3f} s  Create VM {create:6.3f} s  "
                  f"py4j server at {server:6.3f} s", flush=True)
    print()
    medians = {m: [statistics.median(t[i] for t in times[m]) for i in range(3)] for m in MODES}
    for mode in MODES:
        took, create, server = medians[mode]
        print(f"{mode:9} medians: gateway {took:6.3f} s  Create VM {create:6.3f} s  py4j server at {server:6.3f} s"
              f"  (n={args.rounds})")
    for i, what in enumerate(("gateway launch", "Create VM", "py4j server at")):
        before, after = medians["relocated"][i], medians["in place"][i]
        print(f"{what:15} in place / relocated {after / before:.3f} ({(before - after) * 1000:+.0f} ms saved)")
    print(f"load average {os.getloadavg()[0]:.1f}; the JVMs' logs in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
