"""The Markdown summary for a pull-request comment: counts, what changed, differences, failures."""
from __future__ import annotations

from typing import Sequence

from ..results import ERROR, FAILED, FAILING, NOT_APPLICABLE, PASSED
from .changes import Change
from .differences import AVAILABILITY, Difference
from .merge import Cell, Matrix, Row
from .values import failure_lines

__all__ = ["render_markdown"]

MAX_FAILURES = 30  # a comment has a size limit; the HTML report and JUnit XML have them all
MAX_LINES_PER_FAILURE = 12
MAX_DIFFERENCES = 40


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _failure_text(row: Row, cell: Cell) -> list[str]:
    text: list[str] = [cell.reason] if cell.status == ERROR and cell.reason else []
    for step in cell.steps:
        if step.get("status") in FAILING:
            text.append(f"step {step.get('index')} ({step.get('kind')}) at {step.get('where')}"
                        + (f": {step['message']}" if step.get("message") else ""))
            for f in step.get("failures") or []:
                text += ["  " + x for x in failure_lines(f, row.definition)]
    if cell.rerun:
        text.append(f"re-run: {cell.rerun}")
    return text


def render_markdown(matrix: Matrix, differences: Sequence[Difference], *, title: str,
                    changes: Sequence[Change] | None = None) -> str:
    lines = [f"## {title}", ""]
    if matrix.properties and not matrix.rows:  # check-properties files only: no scenario verdicts to count
        return "\n".join(lines + _properties(matrix)[1:]) + "\n"
    lines += _counts(matrix)
    lines += _what_changed(changes)
    lines += _differences(matrix, differences)
    lines += _failures(matrix)
    lines += _properties(matrix)
    return "\n".join(lines) + "\n"


def _properties(matrix: Matrix) -> list[str]:
    """check-properties' verdicts: a line each, and each broken property's reasons (its shrunk stream is in
    the HTML report and the file it was written to)."""
    if not matrix.properties:
        return []
    failing = sum(p.failed for p in matrix.properties)
    lines = ["", f"### Properties on generated streams ({len(matrix.properties)}, {failing} failing)", "",
             "| contract | implementation | Spark | property | verdict |", "|---|---|---|---|---|"]
    lines += [f"| {p.contract} | `{p.implementation}` | {_cell(p.spark_version)} | `{p.prop}` | {_cell(p.summary)} |"
              for p in matrix.properties]
    for p in [p for p in matrix.properties if p.record.get("counterexample")][:MAX_FAILURES]:
        why = list(p.record["counterexample"].get("why") or [])[:MAX_LINES_PER_FAILURE]
        written = p.record["counterexample"].get("written")
        lines += ["", f"<details><summary>BROKEN <b>{p.prop}</b> [{p.implementation}] on Spark {p.spark_version}"
                      "</summary>", "", "```"] + [w.replace("```", "'''") for w in why] + ["```"]
        lines += [f"written: `{written}`"] if written else []
        lines += ["", "</details>"]
    return lines


def _counts(matrix: Matrix) -> list[str]:
    """How many verdicts, whether a run ended early, counts per Spark version, certification per contract."""
    total = sum(len(r.cells) for r in matrix.rows)
    lines = [f"{total} verdicts ({len(matrix.rows)} scenario × implementation rows) from "
             f"{len(matrix.files)} results file{'s' if len(matrix.files) != 1 else ''}"
             + (f"; {len(matrix.properties)} properties checked on generated streams." if matrix.properties else ".")]
    for f in matrix.files:  # a run that ended early says so before any count is read as the whole run
        if f.incomplete:
            lines += ["", f"**Incomplete run** ({_cell(f.path)}): {_cell(f.incomplete.get('reason', ''))}; "
                          f"{len(f.incomplete.get('not_run') or [])} scenario × implementation pairs not run."]
    lines += ["", "| Spark | passed | failed | error | not applicable |", "|---|---:|---:|---:|---:|"]
    for c in matrix.columns:
        n = matrix.counts(c.key)
        lines.append(f"| {_cell(c.key)} | {n[PASSED]} | {n[FAILED]} | {n[ERROR]} | {n[NOT_APPLICABLE]} |")
    cert = matrix.certification()
    if cert:
        lines += ["", "| contract | implementation | " + " | ".join(_cell(c.key) for c in matrix.columns) + " |",
                  "|---|---|" + "---|" * len(matrix.columns)]
        for contract, impl, per in cert:
            lines.append(f"| {contract} | `{impl}` | " + " | ".join(per.get(c.key, "–") for c in matrix.columns) + " |")
    return lines


def _what_changed(changes: Sequence[Change] | None) -> list[str]:
    """The verdicts that changed against the baseline, grouped: flipped, new, gone."""
    lines = ["", "### What changed", ""]
    if changes is None:
        lines.append("No baseline given (`--baseline OLD.json`): the counts above, the differences across "
                     "versions and the failures below are the news.")
    elif not changes:
        lines.append("No verdict changed against the baseline.")
    else:
        for kind, label in (("flipped", "Verdicts that changed"), ("added", "New"), ("removed", "Gone")):
            group = [ch for ch in changes if ch.kind == kind]
            if not group:
                continue
            lines.append(f"**{label}** ({len(group)}):")
            for ch in group:
                arrow = {"flipped": f"{ch.before} → {ch.after}", "added": f"{ch.after}",
                         "removed": f"was {ch.before}"}[kind]
                lines.append(f"- {ch.scenario} `[{ch.implementation}]` on Spark {ch.column}: {arrow}")
            lines.append("")
    return lines


def _differences(matrix: Matrix, differences: Sequence[Difference]) -> list[str]:
    """Behaviour differences across versions (at most MAX_DIFFERENCES), then feature availability."""
    behaviour = [d for d in differences if d.kind != AVAILABILITY]
    availability = [d for d in differences if d.kind == AVAILABILITY]
    lines = ["", "### Behaviour differences across versions", ""]
    if len(matrix.columns) < 2:
        lines.append("One Spark version only: nothing to compare.")
    elif not behaviour:
        lines.append("None: every scenario run on more than one version was observed identically on each.")
    for d in behaviour[:MAX_DIFFERENCES]:
        lines.append(f"- **{d.row.scenario}** `[{d.row.short_impl}]` ({d.kind})")
        lines += [f"  - {detail}" for detail in d.details[:MAX_LINES_PER_FAILURE]]
    if len(behaviour) > MAX_DIFFERENCES:
        lines.append(f"- ... and {len(behaviour) - MAX_DIFFERENCES} more (see the HTML report)")
    if availability:
        lines += ["", "Feature availability (applies on some versions only):", ""]
        lines += [f"- {d.row.scenario} `[{d.row.short_impl}]`: {'; '.join(d.details)}" for d in availability]
    return lines


def _failure_blocks(matrix: Matrix) -> list[tuple[Row, list[str], str, list[str]]]:
    """(row, columns, mark, failure text): one block per row and failure text, so the same failure
    on several versions is shown once."""
    blocks: list[tuple[Row, list[str], str, list[str]]] = []
    for row in matrix.rows:
        by_text: dict[tuple[str, ...], list[str]] = {}
        marks: dict[tuple[str, ...], str] = {}
        for col in matrix.columns:
            cell = row.cells.get(col.key)
            if cell is None or not cell.failed:
                continue
            text = tuple(_failure_text(row, cell))
            by_text.setdefault(text, []).append(col.key)
            marks[text] = cell.mark
        for key, cols in by_text.items():
            blocks.append((row, cols, marks[key], list(key)))
    return blocks


def _failures(matrix: Matrix) -> list[str]:
    """The failures, folded (at most MAX_FAILURES, each cut at MAX_LINES_PER_FAILURE lines)."""
    blocks = _failure_blocks(matrix)
    failing = sum(len(cols) for _, cols, _, _ in blocks)
    lines = ["", f"### Failures ({failing})", ""]
    if not blocks:
        lines.append("None.")
    for row, cols, mark, body in blocks[:MAX_FAILURES]:
        lines.append(f"<details><summary>{mark} <b>{row.scenario}</b> [{row.short_impl}] on Spark "
                     f"{', '.join(cols)}</summary>")
        if len(body) > MAX_LINES_PER_FAILURE:
            body = body[:MAX_LINES_PER_FAILURE] + [f"... ({len(body) - MAX_LINES_PER_FAILURE} more lines "
                                                   "in the HTML report)"]
        lines += ["", "```"] + [t.replace("```", "'''") for t in body] + ["```", "", "</details>"]
    if len(blocks) > MAX_FAILURES:
        lines.append(f"... and {len(blocks) - MAX_FAILURES} more (see the HTML report).")
    return lines
