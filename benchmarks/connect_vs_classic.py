"""Runs scenarios on the classic harness and over Spark Connect and prints, per scenario x implementation, where they differ.

    python benchmarks/connect_vs_classic.py                      # the bundled suite, one folder at a time
    python benchmarks/connect_vs_classic.py scenarios/union scenarios/restart
    python benchmarks/connect_vs_classic.py --remote sc://HOST:PORT   # an existing server (default: start one)
    python benchmarks/connect_vs_classic.py --compare OUT            # only compare the results files in OUT

Each folder (or file) given is a chunk, run twice, one side after the other, each as one `eventtime run
--json` in a child process: classic (local[2], MemoryStream, manual clock) and over Spark Connect
(`--remote`, a server started by `eventtime connect-server` semantics unless --remote is given). Results
stay in --out as <label>.classic.json / <label>.connect.json (and <label>.meta.json: load average, wall
time), so a partial run can still be compared; each chunk prints its row as it ends.

A pair (scenario x implementation) that ended in an *error* on either side (never a failed verdict: an
error is the run's, e.g. "Python worker failed to connect back" from a loaded server) is re-run once,
both sides, its scenario file alone, over a fresh server (the same one when --remote is given):
<label>.rerun.classic.json / .rerun.connect.json. The re-run's results replace the first run's for those
pairs only, and the comparison says how many pairs were re-run and what they gave.

Differences come in three kinds: a scenario that needs the clock is *expected* to be not applicable
over Connect (listed with its reason, not counted); a different verdict otherwise (the target is none);
the same verdict with different observations (rows, watermarks, dropped rows, state rows of a batch).
It also prints the median time of a `process` step on each side, measured in the same run.
Exit 1 when a verdict differs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from cluster_vs_local import observation_differences  # noqa: E402

from eventtime.resultsfile import read_results  # noqa: E402

CLOCK_REASON = "needs the manual processing-time clock"
SIDES = ("classic", "connect")
Pair = tuple[Any, Any]


def expected_not_applicable(classic: dict, connect: dict) -> bool:
    """Whether the Connect side is not applicable, where the classic one is not, for a reason of Connect's:
    the clock, a step or a feature Spark Connect does not offer (every such reason names Spark Connect)."""
    return (connect["status"] == "not_applicable" != classic["status"]
            and any(marker in str(connect.get("reason")) for marker in (CLOCK_REASON, "Spark Connect")))


def run_side(label: str, side: str, paths: list[str], out: Path, remote: str | None, timeout: float) -> dict:
    """One `eventtime run --json` of `paths` on one side; returns its wall time and load averages."""
    results = out / f"{label}.{side}.json"
    cmd = [sys.executable, "-m", "eventtime.cli", "run", *paths, "--json", str(results), "--timeout", str(timeout),
           "-q"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("SPARK_REMOTE", None)
    if side == "connect":
        cmd += ["--remote", str(remote)]
    results.unlink(missing_ok=True)
    load_start, t0 = os.getloadavg()[0], time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wall, load_end = time.monotonic() - t0, os.getloadavg()[0]
    lines = proc.stdout.splitlines()
    print(f"   {side:8} {label}: {lines[-1] if lines else '(no output)'}  [{wall:.0f} s wall, load average "
          f"{load_start:.1f} -> {load_end:.1f}]", flush=True)
    if not results.exists():
        print(f"   {side:8} {label}: no results file (exit {proc.returncode}):\n      "
              + "\n      ".join(lines[-15:]), flush=True)
    return {"seconds": round(wall, 1), "load": [round(load_start, 2), round(load_end, 2)]}


def _label(path: str) -> str:
    return Path(path).name.replace(".scenario.yaml", "")


def _process_seconds(records: Iterable[dict[str, Any]]) -> list[float]:
    return [float(s["seconds"]) for r in records for s in r.get("steps") or []
            if s.get("kind") == "process" and s.get("status") == "passed" and s.get("seconds") is not None]


def _records(path: Path) -> dict[Pair, dict]:
    if not path.exists():
        return {}
    return {(r.get("scenario"), r.get("implementation")): r for r in read_results(path).results}


def _labels(out: Path) -> list[str]:
    return sorted({f.name[:-len(".classic.json")] for f in out.glob("*.classic.json")
                   if not f.name.endswith(".rerun.classic.json")})


def errored_pairs(out: Path, label: str) -> tuple[set[Pair], set[str]]:
    """The pairs of a chunk's first run that ended in an error on either side, and their scenario files."""
    classic, connect = (_records(out / f"{label}.{side}.json") for side in SIDES)
    pairs = {k for k in set(classic) | set(connect)
             if "error" in (classic.get(k, {}).get("status"), connect.get(k, {}).get("status"))}
    files = {str((classic.get(k) or connect.get(k) or {}).get("file")) for k in pairs}
    return pairs, {f for f in files if f and f != "None"}


class Chunk:
    """The records of one chunk, the re-run's replacing the first run's for the pairs that ended in an error."""

    def __init__(self, out: Path, label: str):
        self.label = label
        first = {side: _records(out / f"{label}.{side}.json") for side in SIDES}
        again = {side: _records(out / f"{label}.rerun.{side}.json") for side in SIDES}
        self.errored, _ = errored_pairs(out, label)
        if not all((out / f"{label}.{side}.json").exists() for side in SIDES):
            self.errored |= set(again["classic"]) & set(again["connect"])  # a side wrote nothing: all re-run
        self.rerun = sorted((k for k in self.errored if all(k in again[side] for side in SIDES)), key=str)
        self.records = {side: {**first[side], **{k: again[side][k] for k in self.rerun}} for side in SIDES}
        meta = out / f"{label}.meta.json"
        self.meta = json.loads(meta.read_text()) if meta.exists() else {}


def compare(out: Path, labels: list[str] | None = None) -> int:
    chunks = [Chunk(out, label) for label in (labels or _labels(out))]
    classic: dict[Pair, dict] = {k: r for c in chunks for k, r in c.records["classic"].items()}
    connect: dict[Pair, dict] = {k: r for c in chunks for k, r in c.records["connect"].items()}
    both = sorted(set(classic) & set(connect), key=lambda k: (str(k[0]), str(k[1])))
    expected_na, verdicts, observed = [], [], []
    for k in both:
        a, b = classic[k], connect[k]
        label = f"{k[0]} [{k[1]}]"
        if expected_not_applicable(a, b):
            expected_na.append(f"{label}: {b.get('reason')}")
            continue
        if a["status"] != b["status"]:
            why = "; ".join(filter(None, [f"classic: {a.get('reason')}" if a.get("reason") else "",
                                          f"connect: {b.get('reason')}" if b.get("reason") else ""]))
            verdicts.append(f"{label}: classic {a['status']}, connect {b['status']}" + (f" ({why})" if why else ""))
            verdicts.extend(f"    {line}" for line in observation_differences(a, b)[:8])
            continue
        diffs = observation_differences(a, b)
        if diffs:
            observed.append(f"{label}: both {a['status']}, observed differently:")
            observed.extend(f"    {line}" for line in diffs[:8])
    print(f"\n{len(both)} scenario x implementation pairs run on both sides")
    rerun = [(c.label, k) for c in chunks for k in c.rerun]
    errored = sum(len(c.errored) for c in chunks)
    print(f"\nended in an error on a side and re-run once over a fresh server ({len(rerun)} of {errored}):")
    for chunk_label, k in rerun:
        a, b = classic[k], connect[k]
        gave = f"classic {a['status']}, connect {b['status']}"
        if a["status"] == b["status"] and not observation_differences(a, b):
            gave += ", the same observations"
        print(f"  {k[0]} [{k[1]}] ({chunk_label}): {gave}")
    if not rerun:
        print("  none")
    print(f"\nnot applicable over Connect only ({len(expected_na)}; expected: the clock, or a step or feature Spark "
          "Connect does not offer):")
    print("\n".join(f"  {v}" for v in expected_na) or "  none")
    print(f"\nverdicts that differ otherwise ({sum(1 for v in verdicts if not v.startswith('    '))}; target 0):")
    print("\n".join(f"  {v}" for v in verdicts) or "  none")
    print(f"\nsame verdict, different observations ({sum(1 for v in observed if not v.startswith('    '))}):")
    print("\n".join(f"  {v}" for v in observed) or "  none")
    same = sum(1 for k in both if classic[k]["status"] == connect[k]["status"])
    print(f"\n{same} of {len(both)} pairs have the same verdict")
    for side, records in (("classic", classic), ("connect", connect)):
        secs = _process_seconds(records[k] for k in both if connect[k]["status"] != "not_applicable")
        if secs:
            print(f"{side:8} process step: median {statistics.median(secs):.2f} s, mean {statistics.mean(secs):.2f} s "
                  f"over {len(secs)} steps")
    print("\nper chunk (| chunk | pairs | n/a over Connect only | verdicts that differ | observations that differ "
          "| re-run: pairs (gave) | process median (mean) classic / Connect, steps | load average | wall s |):")
    for c in chunks:
        print(chunk_row(c))
    return 1 if verdicts else 0


def chunk_row(c: Chunk) -> str:
    classic, connect = c.records["classic"], c.records["connect"]
    both = set(classic) & set(connect)
    na = sum(1 for k in both if expected_not_applicable(classic[k], connect[k]))
    differ = sum(1 for k in both if classic[k]["status"] != connect[k]["status"]) - na
    observed = sum(1 for k in both if classic[k]["status"] == connect[k]["status"]
                   and observation_differences(classic[k], connect[k]))
    gave: dict[str, int] = {}
    for k in c.rerun:
        key = classic[k]["status"] if classic[k]["status"] == connect[k]["status"] else \
            f"{classic[k]['status']}/{connect[k]['status']}"
        gave[key] = gave.get(key, 0) + 1
    secs = {side: _process_seconds(c.records[side][k] for k in both if connect[k]["status"] != "not_applicable")
            for side in SIDES}
    medians = " / ".join(f"{statistics.median(s):.2f} ({statistics.mean(s):.2f})" if s else "-"
                         for s in secs.values())
    loads = [x for run in c.meta.values() for x in run.get("load", [])]
    wall = sum(run.get("seconds", 0) for run in c.meta.values())
    return (f"| {c.label} | {len(both)} | {na} | {differ} | {observed} | {len(c.rerun)}"
            + (f" ({', '.join(f'{n} {s}' for s, n in sorted(gave.items()))})" if gave else "")
            + f" | {medians}, {len(secs['classic'])} / {len(secs['connect'])} steps"
            + (f" | {min(loads):.1f}-{max(loads):.1f}" if loads else " | -") + f" | {wall:.0f} |")


class Servers:
    """The Connect server the runs use: the one given (--remote), or one this script starts and can replace."""

    def __init__(self, remote: str | None):
        self.given = remote
        self.server: Any = None

    @property
    def url(self) -> str:
        if self.given:
            return self.given
        if self.server is None:
            self.fresh()
        return str(self.server.url)

    def fresh(self) -> None:
        if self.given:
            return
        from eventtime.harness.connect_server import ConnectServer

        self.close()
        self.server = ConnectServer(timeout=300)
        self.server.start()
        print(f"== Spark Connect server up: {self.server.url}", flush=True)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def run_chunk(path: str, out: Path, servers: Servers, timeout: float) -> None:
    label = _label(path)
    meta: dict[str, Any] = {}
    for side in SIDES:
        meta[side] = run_side(label, side, [path], out, servers.url if side == "connect" else None, timeout)
    for side in SIDES:
        (out / f"{label}.rerun.{side}.json").unlink(missing_ok=True)
    pairs, files = errored_pairs(out, label)
    if not all((out / f"{label}.{side}.json").exists() for side in SIDES):
        files = {path}  # a side wrote nothing (its process died): the whole chunk once more
    if pairs or files:
        print(f"   re-run: {len(pairs)} pair(s) ended in an error; {len(files)} scenario file(s) once more, both sides, "
              "over a fresh server", flush=True)
        servers.fresh()
        for side in SIDES:
            meta[f"rerun.{side}"] = run_side(f"{label}.rerun", side, sorted(files), out,
                                             servers.url if side == "connect" else None, timeout)
    (out / f"{label}.meta.json").write_text(json.dumps(meta, indent=1))
    print(chunk_row(Chunk(out, label)), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("paths", nargs="*", metavar="PATH", help="scenario folders or files (default: each folder of "
                                                             "the bundled suite)")
    ap.add_argument("--remote", default=None, help="an existing Spark Connect server (default: start one)")
    ap.add_argument("--timeout", type=float, default=180.0, help="bound on each wait for Spark, seconds")
    ap.add_argument("--out", default="reports/connect-vs-classic", help="where the results files go")
    ap.add_argument("--compare", metavar="OUT", help="compare the results files in OUT; run nothing")
    args = ap.parse_args()
    if args.compare:
        return compare(Path(args.compare))
    paths = args.paths or sorted(str(p) for p in (ROOT / "scenarios").iterdir() if p.is_dir()
                                 and any(p.glob("*.scenario.yaml")))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    servers = Servers(args.remote)
    try:
        for path in paths:
            run_chunk(path, out, servers, args.timeout)
    finally:
        servers.close()
    print(f"\nboth sides: {time.monotonic() - t0:.0f} s")
    return compare(out, [_label(p) for p in paths])


if __name__ == "__main__":
    sys.exit(main())
