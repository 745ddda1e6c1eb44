"""One default bound on each wait for Spark (`eventtime.harness.waits.DEFAULT_TIMEOUT`): no default of
the kit writes its value again (a parameter's default, a `timeout or N`, an option's default or help),
so changing it in one place changes every face, call and help text alike."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from eventtime.harness.waits import DEFAULT_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
_SAID = re.compile(rf"\b(default|else)\b\W*{int(DEFAULT_TIMEOUT)}\b")


def _is_value(node: ast.AST) -> bool:
    """A literal of the default's value: 60, 60.0 or "60"."""
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return False
    if isinstance(node.value, (int, float)):
        return node.value == DEFAULT_TIMEOUT
    return isinstance(node.value, str) and node.value.strip() in (f"{DEFAULT_TIMEOUT:g}", str(DEFAULT_TIMEOUT))


def written_again(text: str) -> list[str]:
    """The places in a module's `text` that write the default timeout's value as a literal."""
    tree, found = ast.parse(text), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults),
                     *((k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)]
            found += [f"line {d.lineno}: parameter {arg.arg}'s default" for arg, d in pairs
                      if "timeout" in arg.arg.lower() and _is_value(d)]
        elif isinstance(node, (ast.BoolOp, ast.Compare, ast.IfExp, ast.Call)):
            if isinstance(node, ast.Call):  # an option's default: addoption/addini/add_argument(..., default=60)
                operands = [k.value for k in node.keywords if k.arg == "default"]
            elif isinstance(node, ast.BoolOp):
                operands = list(node.values)
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            else:
                operands = [node.body, node.orelse]
            values = [o for o in operands if _is_value(o)]
            segment = (ast.get_source_segment(text, node) or "").lower() if values else ""
            if "timeout" in segment:  # the value as a bound on a wait, not any 60 (a minute's seconds)
                found += [f"line {o.lineno}: {segment.splitlines()[0][:80]}" for o in values]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SAID.search(node.value):
            found.append(f"line {node.lineno}: text {node.value!r}")
    return sorted(found, key=lambda f: int(f.split(":")[0].split()[1]))


def _modules():
    for package in ("conformance", "harness"):
        yield from sorted((ROOT / package).rglob("*.py"))


def test_the_default_timeout_is_defined_once():
    defined = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in _modules()
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(getattr(node, "value", None), ast.Constant)
               and any(isinstance(t, ast.Name) and t.id == "DEFAULT_TIMEOUT"
                       for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    assert defined == ["harness/waits.py:10"], defined


def test_no_default_of_the_kit_writes_the_timeouts_value_again():
    again = {str(path.relative_to(ROOT)): found for path in _modules()
             if (found := written_again(path.read_text(encoding="utf-8")))}
    assert again == {}, again


def test_control_each_way_of_writing_the_value_again_is_found():
    # the forms the default was written in before it was one constant
    text = ("def run(spark, *, timeout: float = 60.0, retries=60):\n"
            "    limit = float(kwargs.get('timeout') or 60.0)\n"
            "    if args.timeout is not None and args.timeout != 60.0:\n"
            "        pass\n"
            "    parser.addini('eventtime_timeout', default='60', help='bound on each wait')\n"
            "    parser.addoption('--timeout', help='bound on each wait for Spark (default 60)')\n"
            "    spark_parent('seconds (default: the ini key eventtime_timeout, else 60)')\n"
            "    child.wait(timeout=60)  # a process's end: a bound of its own, not the default\n"
            "    cluster(timeout=120.0)\n")
    found = written_again(text)
    assert [f.split(":")[0] for f in found] == ["line 1", "line 2", "line 3", "line 5", "line 6", "line 7"], found
