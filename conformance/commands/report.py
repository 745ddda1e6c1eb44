"""`eventtime report RESULTS.json...`: reads the results files, writes the reports asked for, says what it wrote."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..exitcodes import ExitCode

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    rp = sub.add_parser("report", help="merge results files into an HTML report, a Markdown summary and JUnit XML")
    rp.add_argument("results", nargs="+", metavar="RESULTS.json", help="results files (--json of run/certify)")
    rp.add_argument("--html", metavar="PATH", help="write the HTML conformance report here")
    rp.add_argument("--markdown", metavar="PATH", help="write the Markdown summary (for a pull-request comment)")
    rp.add_argument("--junit", metavar="PATH", help="write JUnit XML (for CI systems)")
    rp.add_argument("--baseline", nargs="+", action="extend", metavar="OLD.json", default=[],
                    help="results to compare against: the summary lists verdicts that changed")
    rp.add_argument("--title", default=None, help="report title")
    rp.add_argument("--upgrade", nargs=2, metavar=("FROM", "TO"), default=None,
                    help="what changes between two Spark versions of the results: verdicts and, per step, rows, "
                         "watermarks, dropped rows and state, and the outcomes of runs across them (results of "
                         "run --previous-python) (printed; --markdown writes it for a pull request)")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the reports were written (whatever the verdicts: JUnit carries those to CI), 2 when an
    input file cannot be read or an output cannot be written."""
    from ..report import DEFAULT_HTML, DEFAULT_JUNIT, DEFAULT_MARKDOWN, DEFAULT_TITLE, build_report, write_report
    from ..resultsfile import ResultsFileError

    html, markdown, junit = args.html, args.markdown, args.junit
    upgrading = getattr(args, "upgrade", None)
    if not (html or markdown or junit or upgrading):
        html, markdown, junit = DEFAULT_HTML, DEFAULT_MARKDOWN, DEFAULT_JUNIT
    results, across = list(args.results), []
    try:
        if upgrading:  # runs across Spark lines (--previous-python) are listed beside the differences, not merged
            from ..report.upgrade import is_across
            from ..resultsfile import read_results

            across = [f for f in map(read_results, results) if is_across(f)]
            results = [p for p in results if p not in {f.path for f in across}]
        report = build_report(results, baseline=args.baseline, title=args.title or DEFAULT_TITLE)
    except ResultsFileError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    for warning in report.matrix.warnings:
        print(f"eventtime: warning: {warning}", file=sys.stderr)
    if upgrading:  # the summary instead of the merged report's Markdown; HTML and JUnit when asked
        from ..report.upgrade import UpgradeError, upgrade, upgrade_markdown, upgrade_text

        try:
            summary = upgrade(report.matrix, upgrading[0], upgrading[1], across)
        except UpgradeError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return ExitCode.USAGE_ERROR
        print(upgrade_text(summary))
        if markdown:
            try:
                _write(markdown, upgrade_markdown(summary, args.title))
            except OSError as exc:
                print(f"eventtime: error: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
                return ExitCode.USAGE_ERROR
            print(f"wrote {markdown}")
            markdown = None
        if not (html or junit):
            return ExitCode.OK
    try:
        written = write_report(report, html=html, markdown=markdown, junit=junit)
    except OSError as exc:
        print(f"eventtime: error: cannot write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    _say_summary(report)
    for path in written:
        print(f"wrote {path}")
    return ExitCode.OK


def _say_summary(report: Any) -> None:
    """What the merged report holds, in a line (and a line for check-properties' verdicts)."""
    m = report.matrix
    if m.properties:
        print(f"{len(m.properties)} properties checked on generated streams, "
              f"{sum(p.failed for p in m.properties)} broken, not checked or judged on nothing")
        if not m.rows:  # check-properties files only
            return
    cells = sum(len(r.cells) for r in m.rows)
    failing = sum(1 for r in m.rows for c in r.cells.values() if c.failed)
    versions = ", ".join(c.key for c in m.columns) or "none"
    print(f"{len(m.files)} results file{'s' if len(m.files) != 1 else ''}: {len(m.rows)} scenario × implementation "
          f"rows on Spark {versions}; {cells} verdicts, {failing} failed or errored; "
          f"{sum(1 for d in report.differences if d.kind != 'feature availability')} behaviour differences "
          "across versions")


def _write(path: str, text: str) -> None:
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
