"""`eventtime report`: merges results files into an HTML conformance report, a Markdown summary and JUnit XML."""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .changes import Change, compare
from .differences import Difference, find_differences
from .merge import Matrix, merge, read_all

__all__ = ["Report", "build_report", "DEFAULT_HTML", "DEFAULT_MARKDOWN", "DEFAULT_JUNIT", "DEFAULT_TITLE"]

DEFAULT_HTML, DEFAULT_MARKDOWN, DEFAULT_JUNIT = "reports/report.html", "reports/report.md", "reports/junit.xml"
DEFAULT_TITLE = "Event-time conformance report"


@dataclass
class Report:
    """The merged results, their differences across versions and (with a baseline) what changed."""

    matrix: Matrix
    differences: list[Difference]
    changes: list[Change] | None
    title: str

    def html(self, generated_at: str | None = None) -> str:
        from .html import render_html

        generated_at = generated_at or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace(
            "+00:00", "Z")
        return render_html(self.matrix, self.differences, title=self.title, generated_at=generated_at,
                           changes=self.changes)

    def markdown(self) -> str:
        from .markdown import render_markdown

        return render_markdown(self.matrix, self.differences, title=self.title, changes=self.changes)

    def junit(self) -> bytes:
        from .junit import render_junit

        return render_junit(self.matrix, title=self.title)


def build_report(paths: Sequence[str | Path], *, baseline: Sequence[str | Path] = (),
                 title: str = DEFAULT_TITLE) -> Report:
    """Read and merge `paths` (and `baseline`); ResultsFileError names a file that cannot be read."""
    matrix = merge(read_all(paths))
    changes = compare(merge(read_all(baseline)), matrix) if baseline else None
    return Report(matrix, find_differences(matrix), changes, title)


def write_report(report: Report, *, html: str | None, markdown: str | None, junit: str | None,
                 generated_at: str | None = None) -> list[Path]:
    """Write the outputs asked for; returns the paths written."""
    written = []
    for path, content in ((html, report.html(generated_at) if html else None),
                          (markdown, report.markdown() if markdown else None),
                          (junit, report.junit() if junit else None)):
        if path is None or content is None:
            continue
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            out.write_bytes(content)
        else:
            out.write_text(content, encoding="utf-8")
        written.append(out)
    return written
