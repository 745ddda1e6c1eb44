"""JUnit XML for CI systems: a testsuite per Spark version column, a testcase per scenario × implementation."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..results import ERROR, FAILED, FAILING, NOT_APPLICABLE
from .merge import Matrix
from .values import failure_lines

__all__ = ["render_junit"]


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """Characters XML 1.0 cannot hold (terminal escapes in an error message) become U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def _failure_text(row, cell) -> tuple[str, str]:
    """(first message, full text) of a failed or errored cell."""
    text: list[str] = []
    first = cell.reason if cell.status == ERROR and cell.reason else None
    if first:
        text.append(first)
    for step in cell.steps:
        if step.get("status") not in FAILING:
            continue
        head = (f"step {step.get('index')} ({step.get('kind')}) at {step.get('where')}: {step.get('status')}"
                + (f": {step['message']}" if step.get("message") else ""))
        text.append(head)
        for f in step.get("failures") or []:
            text += ["  " + x for x in failure_lines(f, row.definition)]
            first = first or f"{f.get('where')}: {f.get('message')}"
        first = first or head
    if cell.rerun:
        text.append(f"re-run: {cell.rerun}")
    return _xml(first or cell.status), _xml("\n".join(text))


def render_junit(matrix: Matrix, *, title: str) -> bytes:
    root = ET.Element("testsuites", name=title)
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    seconds_all = 0.0
    files = {f.path: f for f in matrix.files}
    for col in matrix.columns:
        suite = ET.SubElement(root, "testsuite", name=f"Spark {col.key}")
        props = ET.SubElement(suite, "properties")
        run = files[col.files[0]].run if col.files else {}
        ET.SubElement(props, "property", name="spark_version", value=col.spark_version)
        for key in ("pyspark_version", "java_version", "python_version", "master", "project_version"):
            value = run.get(key)
            if value:
                ET.SubElement(props, "property", name=key,
                              value=", ".join(map(str, value)) if isinstance(value, list) else str(value))
        for path in col.files:
            ET.SubElement(props, "property", name="results_file", value=path)
        counts = dict.fromkeys(totals, 0)
        seconds = 0.0
        for row in matrix.rows:
            cell = row.cells.get(col.key)
            if cell is None:
                continue
            t = float(cell.seconds or 0.0)
            seconds += t
            case = ET.SubElement(suite, "testcase", classname=f"eventtime.{row.contract}",
                                 name=f"{row.scenario} [{row.short_impl}]", time=f"{t:.3f}")
            if row.file:
                case.set("file", row.file)
            counts["tests"] += 1
            if cell.status == FAILED:
                counts["failures"] += 1
                message, text = _failure_text(row, cell)
                ET.SubElement(case, "failure", message=message, type="failed").text = text
            elif cell.status == ERROR:
                counts["errors"] += 1
                message, text = _failure_text(row, cell)
                ET.SubElement(case, "error", message=message, type="error").text = text
            elif cell.status == NOT_APPLICABLE:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_xml(f"not applicable: {cell.reason or ''}".strip(": ")))
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", f"{seconds:.3f}")
        started = run.get("started_at")
        if isinstance(started, str):
            suite.set("timestamp", started)
        seconds_all += seconds
    if matrix.properties:
        _properties_suite(root, matrix, totals)
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("time", f"{seconds_all:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _properties_suite(root: ET.Element, matrix: Matrix, totals: dict[str, int]) -> None:
    """check-properties' verdicts, a test case each: broken or judged on nothing a failure, not checked an
    error, does not apply skipped."""
    suite = ET.SubElement(root, "testsuite", name="Properties on generated streams")
    counts = dict.fromkeys(totals, 0)
    for p in matrix.properties:
        case = ET.SubElement(suite, "testcase", classname=f"eventtime.properties.{p.contract}",
                             name=f"{p.prop} [{p.implementation}] on Spark {p.spark_version}")
        counts["tests"] += 1
        ce = p.record.get("counterexample") or {}
        text = _xml("\n".join([*(ce.get("why") or []), *([ce["text"]] if ce.get("text") else [])]))
        if p.verdict in ("broken", "judged_nothing"):
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=_xml(p.summary), type=p.verdict).text = text
        elif p.verdict == "not_checked":
            counts["errors"] += 1
            ET.SubElement(case, "error", message=_xml(p.summary), type="not_checked")
        elif p.verdict == "does_not_apply":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=_xml(p.summary))
        ET.SubElement(case, "system-out").text = _xml(p.summary)  # the counts, a held property's too
    for k, v in counts.items():
        suite.set(k, str(v))
        totals[k] += v
