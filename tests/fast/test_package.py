"""The package a user installs: one import root, a light pytest entry module, arrows that point one way.

The repository's folders are installed under one root (pyproject.toml, package-dir): `conformance/` is
`eventtime`, `harness/` is `eventtime.harness`, `scenarios/` is `eventtime.scenarios`. These tests read
the source with `ast` and run fresh interpreters; none needs a JVM.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path


import eventtime

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"eventtime": ROOT / "conformance", "eventtime.harness": ROOT / "harness"}
TOP_LEVEL_NAMES = ("conformance", "harness", "scenarios")


def _modules() -> dict[str, Path]:
    """Every module of the package by its installed name."""
    out = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _imports(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for each import of the module, outside `if TYPE_CHECKING:` blocks.
    `from . import x` counts as importing the submodule x, not the package being executed."""
    tree = ast.parse(path.read_text("utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, f"{module}.{a.name}") for a in node.names] + [(node.lineno, module)]
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = {m for _, m in _imports(name, path) if m in modules and m != name}
        # `from .pkg import name` lists both pkg and pkg.name; a package importing itself is no edge
        graph[name] = {d for d in deps if not name.startswith(d + ".")}
    return graph


def test_no_module_imports_a_repository_folder_by_its_folder_name():
    """Inside the package, `conformance`, `harness` and `scenarios` are not import names: a user's repo
    may have its own `harness` module or `scenarios` package."""
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {module}"
                 for name, path in _modules().items() for line, module in _imports(name, path)
                 if module.split(".")[0] in TOP_LEVEL_NAMES]
    assert offenders == []


def test_no_module_names_a_repository_folder_as_a_package_in_a_string():
    """`resources.files("conformance")` or `import_module("harness...")` work in a checkout (its root is
    on sys.path) and fail in an installed wheel: package names in strings are the installed ones."""
    calls = ("files", "import_module", "PackageLoader", "find_spec")
    offenders = []
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in calls:
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Constant) and str(arg.value).split(".")[0] in TOP_LEVEL_NAMES:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert offenders == []


def test_the_harness_knows_nothing_of_the_conformance_kit():
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {module}"
                 for name, path in _modules().items() if name.startswith("eventtime.harness")
                 for line, module in _imports(name, path)
                 if module.startswith("eventtime") and not module.startswith("eventtime.harness")]
    assert offenders == []


# the modules of the harness the model may import: plain data, importing nothing (checked below): the
# observation vocabulary and the base of the errors a user reads
OBSERVATIONS = "eventtime.harness.observations"
ERRORS = "eventtime.harness.errors"
# modules outside semantics/ that the model imports, held to the same rule (the step interpreter)
MODEL_SHARED = ("eventtime.drive", "eventtime.scenariotext")


def _spark_imports_of_the_model() -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line} imports {module}"
            for name, path in _modules().items() if name.startswith("eventtime.semantics") or name in MODEL_SHARED
            for line, module in _imports(name, path)
            if module.split(".")[0] in ("pyspark", "py4j")
            or (module.startswith("eventtime.harness") and not module.startswith((OBSERVATIONS, ERRORS)))
            or module in ("eventtime.runner", "eventtime.builder")]


def test_the_model_knows_nothing_of_spark():
    assert _spark_imports_of_the_model() == []


def test_the_observation_vocabulary_and_the_error_base_import_nothing_of_the_package_or_spark():
    for plain in (OBSERVATIONS, ERRORS):
        imported = {m.split(".")[0] for _, m in _imports(plain, _modules()[plain])}
        assert imported <= {"__future__", "dataclasses", "typing"}, (plain, imported)


def test_importing_the_model_loads_no_driver_module():
    """What the static check promises, at run time: the model, checked against every expectation,
    loads no pyspark and none of the harness but its observation vocabulary."""
    code = ("import sys, eventtime.semantics, eventtime.semantics.fill\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j') or "
            "(m.startswith('eventtime.harness.') and m not in ('eventtime.harness.observations', "
            "'eventtime.harness.errors'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_model_check_sees_a_driver_import(monkeypatch):
    """Control for the check above: a model module importing the driver is reported."""
    real = _imports

    def with_driver(name: str, path: Path) -> list[tuple[int, str]]:
        found = real(name, path)
        return found + [(1, "eventtime.harness.stream")] if name == "eventtime.semantics.simulate" else found

    monkeypatch.setattr(sys.modules[__name__], "_imports", with_driver)
    assert _spark_imports_of_the_model() == ["conformance/semantics/simulate.py:1 imports eventtime.harness.stream"]


def test_the_import_graph_check_sees_a_cycle(tmp_path):
    """Control for the cycle check below: the same search finds a cycle that is there."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_public_names_all_resolve():
    for name in eventtime.__all__:
        assert getattr(eventtime, name) is not None, name


def test_the_harness_public_names_all_resolve_to_their_modules():
    """eventtime.harness resolves its names lazily (so the model can import its observations alone);
    each name is the object of the module its table says."""
    import importlib

    import eventtime.harness as harness

    for name in harness.__all__:
        module = importlib.import_module(f"eventtime.harness.{harness._EXPORTS[name]}")
        assert getattr(harness, name) is getattr(module, name), name


def test_the_pytest_entry_module_imports_nothing_heavy():
    """`pytest --help` in a repository where the kit is installed pays for no yaml, jsonschema, pyspark."""
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]["eventtime"]
    code = (f"import sys, {entry}\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('yaml', 'jsonschema', 'pyspark', 'py4j', 'jinja2', 'pandas', 'pyarrow') "
            "or m in ('eventtime.loader', 'eventtime.runner', 'eventtime.harness.stream'))\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_every_scenario_folder_is_a_listed_package():
    """setuptools ships (and warns about) data in folders missing from `packages`: list each."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"eventtime.scenarios" + "".join(f".{p}" for p in d.relative_to(ROOT / "scenarios").parts)
               for d in [ROOT / "scenarios", *(ROOT / "scenarios").rglob("*")] if d.is_dir()
               and d.name != "__pycache__"}
    assert folders - listed == set()
