"""A verdict's status is written once (eventtime.results: PASSED, FAILED, ERROR, NOT_APPLICABLE, FAILING):
no module compares a status with the word written out."""
from __future__ import annotations

import ast
from pathlib import Path

from eventtime.results import FAILING, STATUSES

ROOT = Path(__file__).resolve().parents[2]
WORDS = set(STATUSES)  # ("skipped" is also JUnit's word for a test not run: report/junit.py counts it)


def _status_literals(text: str) -> list[str]:
    """Each comparison, membership test or subscript with a status word written out."""
    found = []
    for node in ast.walk(ast.parse(text)):
        parts: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            parts = [node.slice]
        elif isinstance(node, ast.Dict):
            parts = [k for k in node.keys if k is not None]
        for part in parts:
            items = part.elts if isinstance(part, (ast.Tuple, ast.List, ast.Set)) else [part]
            if any(isinstance(i, ast.Constant) and i.value in WORDS for i in items):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_status_is_written_out_outside_results():
    found = {str(p.relative_to(ROOT)): _status_literals(p.read_text("utf-8"))
             for folder in ("conformance", "harness") for p in sorted((ROOT / folder).rglob("*.py"))
             if p.name != "results.py"}
    assert {k: v for k, v in found.items() if v} == {}
    assert FAILING == ("failed", "error")


def test_control_a_status_written_out_is_found():
    text = 'if r.status in ("failed", "error"):\n    n["passed"] += 1\nok = r.status == PASSED\n'
    assert _status_literals(text) == ['line 1: r.status in (\'failed\', \'error\')', "line 2: n['passed']"]
