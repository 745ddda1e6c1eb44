"""The whole suite with the driver JVM's class-data archive off and on: the same verdicts and the same
observations at every batch, and the wall time of each, measured one after the other in one run.

`eventtime certify --jobs J --json` (what `./dev certify` runs) twice, each a fresh process with a cache
folder of this script's own: first with `EVENTTIME_JVM_ARCHIVE=off`, then on an archive recorded
beforehand by one short run (not timed with the suite). Then every scenario x implementation is
compared: verdict, and per step every batch's rows, watermarks, dropped rows and state rows
(`cluster_vs_local.compare`). Target: no difference.

    python benchmarks/archive_suite.py [--jobs 3] [--out reports/archive-suite] [PATH...]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_vs_local import compare  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EVENTTIME = str(Path(sys.executable).parent / "eventtime")


def certify(label: str, env: dict[str, str], out: Path, jobs: int, paths: list[str]) -> tuple[Path, float]:
    results = out / f"{label}.json"
    cmd = [EVENTTIME, "run" if paths else "certify", *paths, "--jobs", str(jobs), "--json", str(results), "-q"]
    print(f"== {label}: {' '.join(cmd[1:])}  (load average {os.getloadavg()[0]:.1f})", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    lines = proc.stdout.splitlines()
    print(f"   {lines[-1] if lines else '(no output)'}  [{wall:.0f} s wall, exit {proc.returncode}, "
          f"load average {os.getloadavg()[0]:.1f}]", flush=True)
    if not results.exists():
        raise SystemExit(f"archive_suite: the {label} run wrote no results:\n" + proc.stderr[-3000:])
    return results, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="scenario files or folders (default: the whole bundled suite)")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--out", default="reports/archive-suite")
    args = parser.parse_args()
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="eventtime-archive-") as cache:
        base = dict(os.environ, EVENTTIME_CACHE_DIR=cache)
        off, off_wall = certify("off", dict(base, EVENTTIME_JVM_ARCHIVE="off"), out, args.jobs, args.paths)
        print("== recording the archive (one scenario)", flush=True)
        subprocess.run([EVENTTIME, "run", "scenarios/tumbling/append-late-row-dropped.scenario.yaml", "--pipeline",
                        "eventtime.pipelines.reference:tumbling_count", "-q"], cwd=ROOT, env=base,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        deadline = time.monotonic() + 900
        while not any("Written dynamic archive" in log.read_text(errors="replace")
                      for log in Path(cache).glob("jvm/*.part.log")):
            if time.monotonic() > deadline:
                raise SystemExit("archive_suite: the recording JVM wrote no archive within 900 s")
            time.sleep(0.5)  # the recording JVM goes on writing after its run has ended
        on, on_wall = certify("archive", base, out, args.jobs, args.paths)
        if not list(Path(cache).glob("jvm/*.jsa.complete")):
            raise SystemExit("archive_suite: the archive run did not put the archive in place")
    print(f"\nwall time: off {off_wall:.0f} s, archive {on_wall:.0f} s, ratio {on_wall / off_wall:.3f}")
    return compare(off, on)


if __name__ == "__main__":
    sys.exit(main())
