"""The whole suite without and with extra SQL settings for its queries: the same verdicts and the same
observations at every batch, and the wall time of each, measured one after the other in one run.

`eventtime certify --jobs J --json` (what `./dev certify` runs) twice, each a fresh process: first as it
is (or with `--baseline-env KEY=VALUE` in its environment), then with `--spark-conf KEY=VALUE` for every
setting given. The harness's own settings for tiny batches (`harness/tuning.py`) are checked with
`--baseline-env EVENTTIME_SPARK_TUNING=off` and no `--conf`: Spark's defaults first, then the harness's. Then every scenario x implementation is
compared: verdict, and per step every batch's rows, watermarks, dropped rows and state rows
(`cluster_vs_local.compare`). A setting the harness adopts must give no difference.

    python benchmarks/conf_suite.py --conf spark.sql.codegen.wholeStage=false [--jobs 3] [PATH...]
    python benchmarks/conf_suite.py --baseline-env EVENTTIME_SPARK_TUNING=off
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_vs_local import compare  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EVENTTIME = str(Path(sys.executable).parent / "eventtime")


def certify(label: str, out: Path, jobs: int, paths: list[str], extra: list[str],
            env: dict[str, str] | None = None) -> tuple[Path, float]:
    results = out / f"{label}.json"
    cmd = [EVENTTIME, "run" if paths else "certify", *paths, *extra, "--jobs", str(jobs), "--json", str(results), "-q"]
    print(f"== {label}: {' '.join(cmd[1:])}  (load average {os.getloadavg()[0]:.1f})", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, **(env or {})})
    wall = time.monotonic() - t0
    lines = proc.stdout.splitlines()
    print(f"   {lines[-1] if lines else '(no output)'}  [{wall:.0f} s wall, exit {proc.returncode}, "
          f"load average {os.getloadavg()[0]:.1f}]", flush=True)
    if not results.exists() or proc.returncode not in (0, 1):
        raise SystemExit(f"conf_suite: the {label} run wrote no results:\n" + proc.stderr[-3000:])
    if json.loads(results.read_text()).get("incomplete"):
        raise SystemExit(f"conf_suite: the {label} run is incomplete:\n" + proc.stderr[-3000:])
    return results, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="scenario files or folders (default: the whole bundled suite)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--baseline-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment of the base run only (e.g. EVENTTIME_SPARK_TUNING=off)")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--out", default="reports/conf-suite")
    parser.add_argument("--base", help="results of a base run made before (then its wall time is not known)")
    args = parser.parse_args()
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    if not args.conf and not args.baseline_env:
        parser.error("give --conf KEY=VALUE (a setting to try) or --baseline-env KEY=VALUE (what the base run lacks)")
    extra = [a for kv in args.conf for a in ("--spark-conf", kv)]
    base_env = dict(kv.split("=", 1) for kv in args.baseline_env)
    off, off_wall = ((Path(args.base), float("nan")) if args.base
                     else certify("base", out, args.jobs, args.paths, [], base_env))
    on, on_wall = certify("conf", out, args.jobs, args.paths, extra)
    print(f"\nwall time: base{''.join(' ' + kv for kv in args.baseline_env)} {off_wall:.0f} s, "
          f"with {' '.join(args.conf) or 'the defaults'} {on_wall:.0f} s, "
          f"ratio {on_wall / off_wall:.3f}")
    return compare(off, on)


if __name__ == "__main__":
    sys.exit(main())
