"""The HTML conformance report: one self-contained file rendered from Jinja2 templates (autoescaped)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import jinja2

from ..concepts import CONCEPTS
from ..results import ERROR, FAILING
from .changes import Change
from .differences import AVAILABILITY, Difference
from .merge import Cell, VersionColumn, Matrix, Row
from .timeline import Timeline, build_timeline
from .values import failure_lines, step_summary

__all__ = ["render_html", "environment"]


@dataclass
class Picture:
    column: VersionColumn
    cell: Cell
    timeline: Timeline | None
    failures: list[str]  # the failed expectations of this cell, as text


@dataclass
class RowView:
    row: Row
    cells: list[Cell | None]  # in column order
    failing: bool
    differs: bool
    steps: list[tuple[int, Any, str, str]]  # (index, line, kind, summary)
    pictures: list[Picture]


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("eventtime.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


def _cell_failures(row: Row, cell: Cell) -> list[str]:
    lines = []
    if cell.status == ERROR and cell.reason:
        lines.append(cell.reason)
    for step in cell.steps:
        if step.get("status") not in FAILING:
            continue
        lines.append(f"step {step.get('index')} ({step.get('kind')}) at {step.get('where')}: {step.get('status')}"
                     + (f": {step['message']}" if step.get("message") else ""))
        for f in step.get("failures") or []:
            lines += ["  " + line for line in failure_lines(f, row.definition)]
    return lines


def _pictures(row: Row, columns: Sequence[VersionColumn], differs: bool) -> list[Picture]:
    """Timelines for failing cells and, when versions differ, for every applicable cell; otherwise one
    passing cell (the newest Spark version's)."""
    present = [c for c in columns if c.key in row.cells and row.cells[c.key].applicable]
    chosen = [c for c in present if differs or row.cells[c.key].failed]
    if not chosen and present:
        chosen = [present[-1]]
    return [Picture(c, row.cells[c.key], build_timeline(row, row.cells[c.key], c.key),
                    _cell_failures(row, row.cells[c.key])) for c in chosen]


def _metadata(matrix: Matrix) -> list[dict[str, str]]:
    def text(v: Any) -> str:
        if v is None or v == "":
            return "-"
        return ", ".join(map(str, v)) if isinstance(v, list) else str(v)

    out = []
    for f in matrix.files:
        counts: dict[str, int] = {}
        for r in f.results:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        verdicts: dict[str, int] = {}
        for p in f.properties:  # a check-properties file: its properties' verdicts
            verdicts[p["verdict"]] = verdicts.get(p["verdict"], 0) + 1
        out.append({"file": f.path, "format": str(f.format_version), "tool": text(f.run.get("tool")),
                    "spark": f.spark_version, "pyspark": text(f.run.get("pyspark_version")),
                    "java": text(f.run.get("java_version")), "python": text(f.run.get("python_version")),
                    "master": text(f.run.get("master")), "started": text(f.run.get("started_at")),
                    "seconds": text(f.run.get("seconds")), "project": text(f.run.get("project_version")),
                    "results": "; ".join(filter(None, [
                        ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items())),
                        ("properties: " + ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in sorted(verdicts.items())))
                        if verdicts else ""]))})
    return out


def render_html(matrix: Matrix, differences: Sequence[Difference], *, title: str, generated_at: str,
                changes: Sequence[Change] | None = None) -> str:
    """The whole report as one HTML document (inline CSS, script and SVG; nothing fetched at view time)."""
    differing = {d.row.key for d in differences if d.kind != AVAILABILITY}
    views = []
    for row in matrix.rows:
        defs = (row.definition or {}).get("steps") or []
        steps = [(d.get("index"), d.get("line"), d.get("kind"), step_summary(d, row.definition or {})) for d in defs]
        views.append(RowView(row, [row.cells.get(c.key) for c in matrix.columns],
                             any(c.failed for c in row.cells.values()), row.key in differing, steps,
                             _pictures(row, matrix.columns, row.key in differing)))
    groups: dict[str, list[RowView]] = {}
    for v in views:
        groups.setdefault(v.row.contract, []).append(v)
    tags = matrix.tags
    concepts = [(t, CONCEPTS[t][0], CONCEPTS[t][1]) for t in tags if t in CONCEPTS]
    counts = {c.key: matrix.counts(c.key) for c in matrix.columns}
    data = {"columns": [c.key for c in matrix.columns], "rows": len(views),
            "cells": sum(len(v.row.cells) for v in views)}
    return environment().get_template("report.html.j2").render(
        title=title, generated_at=generated_at, matrix=matrix, columns=matrix.columns, groups=groups,
        contracts=matrix.contracts, tags=tags, concepts=concepts, known_concepts=set(CONCEPTS),
        counts=counts, certification=matrix.certification(),
        differences=[d for d in differences if d.kind != AVAILABILITY],
        availability=[d for d in differences if d.kind == AVAILABILITY],
        changes=changes, metadata=_metadata(matrix), data=data, warnings=matrix.warnings)
