"""One seam for classic vs Connect (harness/backend.py): what a query run and a source offer is a
Protocol that both implementations meet (mypy checks it in ./dev lint; this checks the names at run
time too), and the runner chooses the backend once, with no Connect branch but applicability."""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from eventtime.harness import backend
from eventtime.harness.connect import ConnectSource, ConnectStreamRun
from eventtime.harness.stream import MemorySource, StreamRun

ROOT = Path(__file__).resolve().parents[2]


def _missing(protocol: type, cls: type) -> list[str]:
    """The members of `protocol` that `cls` has neither as an attribute nor as a `self.NAME =` in __init__."""
    members = [n for n in dir(protocol) if not n.startswith("_")] + list(getattr(protocol, "__annotations__", {}))
    init = inspect.getsource(cls.__init__) if "__init__" in cls.__dict__ else ""
    return sorted({n for n in members if not hasattr(cls, n) and not re.search(rf"self\.{n}\b\s*(:[^=\n]*)?=", init)})


@pytest.mark.parametrize("protocol, cls", [(backend.QueryRun, StreamRun), (backend.QueryRun, ConnectStreamRun),
                                           (backend.Source, MemorySource), (backend.Source, ConnectSource)])
def test_both_implementations_meet_their_protocol(protocol, cls):
    assert _missing(protocol, cls) == []


def test_control_a_run_without_advance_is_found():
    class NoClock:
        def __init__(self):
            self.spark = self.checkpoint = self.history = self.runs = None

        running = output_columns = start = process = advance_stopped = move_to = stop = close = None

    assert _missing(backend.QueryRun, NoClock) == ["advance"]


def test_the_backend_is_chosen_by_the_session(monkeypatch):
    from eventtime.harness import compat

    for connect, kind in ((False, "_Classic"), (True, "_Connect")):
        monkeypatch.setattr(compat, "compat_for", lambda spark, c=connect: SimpleNamespace(connect=c))
        assert type(backend.backend_for(object())).__name__ == kind
    assert backend._Connect(object()).prepare() is None  # no callback server to mend over Connect


# the runner and the parts it assembles a run from
RUN_MODULES = ("runner.py", "binding.py", "querybuild.py", "jobbuild.py", "sparksteps.py", "stepfailures.py",
               "written.py")


def test_the_runner_asks_whether_it_is_on_connect_only_for_applicability_and_faults():
    """`compat.connect` in the runner's modules: what may run there (applicability) and whether the run's
    surroundings (a local checkpoint, py4j) can be classified; sources and runs come from the backend."""
    tree = ast.Module(body=[node for name in RUN_MODULES for node in ast.parse(
        (ROOT / "conformance" / name).read_text("utf-8")).body], type_ignores=[])
    uses = []
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]:
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and node.attr == "connect" and isinstance(fn, ast.FunctionDef):
                uses.append(fn.name)
    assert sorted(set(uses)) == ["_surroundings_failed", "prepare"]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    # (MemorySource stays for a job's topic reader: jobs run classic only, not over Connect)
    assert not names & {"ConnectSource", "ConnectStreamRun", "ConnectStaging", "StreamRun"}
