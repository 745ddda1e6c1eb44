"""The model's commands: `eventtime check-model [PATH...]` and `eventtime expect SCENARIO` (registered by the CLI)."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["add_parsers", "run", "expectations_yaml", "COMMANDS"]

COMMANDS = ("check-model", "expect")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_parsers(sub: Any) -> None:
    """Register `check-model` and `expect` on the CLI's subparsers."""
    from .simulate import PROFILES

    c = sub.add_parser("check-model", help="check the scenarios' expectations against the executable model "
                                           "of event-time semantics (no Spark needed)")
    c.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or directories (default: the bundled suite)")
    c.add_argument("--profile", choices=PROFILES, default="spark", help="the model's profile (default spark)")
    c.add_argument("-q", "--quiet", action="store_true", help="print disagreements and the totals only")

    e = sub.add_parser("expect", help="print what the model computes for each expect step of a scenario")
    e.add_argument("scenario", metavar="SCENARIO", help="a scenario file")
    e.add_argument("--profile", choices=PROFILES, default="spark", help="the model's profile (default spark)")


def run(args: argparse.Namespace) -> int:
    if args.command == "check-model":
        return _check_model(args.paths, args.profile, args.quiet)
    return _expect(args.scenario, args.profile)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _check_model(paths: Sequence[str], profile: str, quiet: bool) -> int:
    from ..loader import ScenarioInvalid, find_scenario_files, load_scenario
    from ..results import ERROR, FAILED, NOT_APPLICABLE, PASSED
    from ..textreport import describe_failure
    from .check import check_scenario

    if paths:
        files, missing = find_scenario_files(paths)
        for path in missing:
            print(f"eventtime: error: no such file or directory: {path}", file=sys.stderr)
        if missing:
            return EXIT_USAGE
    else:
        from scenarios import SUITE_DIR

        files, _ = find_scenario_files([SUITE_DIR])
    if not files:
        print("eventtime: error: no scenario files (*.scenario.yaml) under the given paths", file=sys.stderr)
        return EXIT_USAGE
    results, invalid = [], 0
    label = {PASSED: "agree", FAILED: "DISAGREE", NOT_APPLICABLE: "NOT COVERED", ERROR: "ERROR"}
    for f in files:
        try:
            sc = load_scenario(f, display_path=_display(f))
        except ScenarioInvalid as exc:
            invalid += 1
            print(exc, file=sys.stderr)
            continue
        r = check_scenario(sc, profile)
        results.append(r)
        if not quiet or r.status != PASSED:
            extra = f"  ({r.reason})" if r.reason else ""
            print(f"{label[r.status]:11}  {sc.name}  {sc.path}{extra}")
    bad = [r for r in results if r.status in (FAILED, ERROR)]
    for r in bad:
        print()
        print(describe_failure(r))
    count = {s: sum(r.status == s for r in results) for s in label}
    print()
    print(f"{len(results)} scenarios: {count[PASSED]} agree with the model ({profile} profile), "
          f"{count[FAILED]} disagree, {count[NOT_APPLICABLE]} not covered, {count[ERROR]} errors, "
          f"{invalid} invalid files")
    return EXIT_FAILED if bad or invalid else EXIT_OK


def _expect(path: str, profile: str) -> int:
    from ..loader import ScenarioInvalid, load_scenario
    from .simulate import ModelError, NotCovered, simulate

    if not Path(path).is_file():
        print(f"eventtime: error: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    try:
        sc = load_scenario(path, display_path=_display(Path(path)))
    except ScenarioInvalid as exc:
        print(exc, file=sys.stderr)
        return EXIT_FAILED
    try:
        sim = simulate(sc, profile)
    except (NotCovered, ModelError) as exc:
        print(f"eventtime: the model cannot compute {sc.path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(expectations_yaml(sim), end="")
    return EXIT_OK


# -- rendering the model's observations as scenario `expect` steps --------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "initial"}


def _scalar(value: Any, column_type: str | None, scenario: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if column_type == "timestamp" and isinstance(value, int):
        return _time(value, scenario)
    if isinstance(value, str):
        if _PLAIN.match(value) and value.lower() not in _RESERVED:
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value) if isinstance(value, float) else str(value)


def _time(micros: int, scenario: Any) -> str:
    from ..timeparse import format_time

    on_date = scenario.date if scenario.timezone in ("UTC", "Z", "") else None  # else exact, with Z
    return '"' + format_time(micros, date=on_date) + '"'


def _watermark(ms: int | None, scenario: Any) -> str:
    return "initial" if not ms else _time(ms * 1000, scenario)


def _rows(rows: Sequence[tuple], scenario: Any) -> str:
    types = [c.type for c in scenario.contract.output]
    return "[" + ", ".join("[" + ", ".join(_scalar(v, t, scenario) for v, t in zip(r, types)) + "]"
                           for r in rows) + "]"


def expectations_yaml(sim: Any) -> str:
    """Every `expect` step of the simulated scenario, filled with what the model observed there:
    rows (or the whole table in complete mode), watermark, dropped, state rows, event-time
    statistics and the batches, one YAML block per step, headed by its file:line."""
    sc = sim.scenario
    complete = sc.params.get("output_mode", "append") == "complete"
    out = [f"# {sc.path}: what the model ({sim.profile} profile) observes at each expect step", ""]
    for step, window, history in sim.observed_by_expects():
        lines = [f"# {sc.path}:{step.where.line}", "  - expect:"]
        if complete:
            lines.append(f"      output: {_rows(history[-1].rows if history else [], sc)}")
        else:
            lines.append(f"      rows: {_rows([r for b in window for r in b.rows], sc)}")
        wm = history[-1].watermark_after_ms if history else 0
        lines.append(f"      watermark: {_watermark(wm, sc)}")
        lines.append(f"      dropped: {sum(b.dropped for b in window)}")
        lines.append(f"      state_rows: {history[-1].state_rows if history else 0}")
        stats = next((b.event_time for b in reversed(window) if b.event_time), None)
        if stats:
            lines.append("      event_time: {" + ", ".join(f"{k}: {_time(stats[k] * 1000, sc)}"
                                                       for k in ("min", "max", "avg")) + "}")
        if not window:
            lines.append("      batches: 0")
        else:
            lines.append("      batches:")
            for b in window:
                lines.append(f"        - {{data: {'true' if b.has_data else 'false'}, "
                             f"watermark_before: {_watermark(b.watermark_before_ms, sc)}, "
                             f"watermark_after: {_watermark(b.watermark_after_ms, sc)}, "
                             f"dropped: {b.dropped}, state_rows: {b.state_rows}, rows: {_rows(b.rows, sc)}}}")
        out += lines + [""]
    return "\n".join(out)
