"""`eventtime watch` without Spark: what a change makes it run again (the Spark run: tests/spark/test_watch.py)."""
from __future__ import annotations

import os
import sys
import textwrap

from eventtime.results import PASSED, ScenarioResult
from eventtime.watch import Watcher, _user_modules

CONTRACT = textwrap.dedent("""\
    contract: echo
    description: clicks -> clicks.
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts}
    output: {columns: "page string, ts timestamp"}
    """)

SCENARIO = textwrap.dedent("""\
    scenario: NAME
    description: One click, written as it came.
    contract: echo
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {rows: [[home, "00:00:01"]]}
    """)


def _touch(path, text):
    path.write_text(text)
    stamp = path.stat().st_mtime_ns + 1_000_000_000  # a later save, whatever the clock's resolution
    os.utime(path, ns=(stamp, stamp))


def _settled(w):
    """One poll that sees the change, one that sees it again: then it runs."""
    assert w.one_round() is False
    return w.one_round()


def _watcher(tmp_path, pipeline=None):
    ran: list[str] = []

    def run(scenario, target):
        ran.append(scenario.name)
        return ScenarioResult(scenario, str(target), PASSED)

    said: list[str] = []
    return Watcher([str(tmp_path)], pipeline=pipeline, contract_dirs=[], run=run, say=said.append,
                   root=tmp_path), ran, said


def test_a_changed_scenario_runs_again_alone_and_a_changed_contract_runs_them_all(tmp_path):
    (tmp_path / "echo.contract.yaml").write_text(CONTRACT)
    (tmp_path / "a.scenario.yaml").write_text(SCENARIO.replace("NAME", "a"))
    (tmp_path / "b.scenario.yaml").write_text(SCENARIO.replace("NAME", "b"))
    w, ran, said = _watcher(tmp_path, pipeline="jobs:echo")
    sys.modules.pop("jobs", None)
    (tmp_path / "jobs.py").write_text("def echo(clicks):\n    return clicks\n")
    sys.path.insert(0, str(tmp_path))
    try:
        w.first_round()
        assert sorted(ran) == ["a", "b"] and said[-1].startswith("2 passed")
        ran.clear()
        assert w.one_round() is False and w.one_round() is False and ran == []  # nothing changed: nothing runs
        _touch(tmp_path / "b.scenario.yaml", SCENARIO.replace("NAME", "b"))
        assert _settled(w) and ran == ["b"]
        ran.clear()
        _touch(tmp_path / "echo.contract.yaml", CONTRACT + "title: Echo\n")
        assert _settled(w) and sorted(ran) == ["a", "b"]
        ran.clear()
        (tmp_path / "c.scenario.yaml").write_text(SCENARIO.replace("NAME", "c"))  # a new file runs
        assert _settled(w) and ran == ["c"]
        ran.clear()
        _touch(tmp_path / "jobs.py", "def echo(clicks):\n    return clicks.select('page', 'ts')\n")
        assert _settled(w) and sorted(ran) == ["a", "b", "c"]
        assert "select" in open(sys.modules["jobs"].__file__).read() and w.fn.__module__ == "jobs"
        ran.clear()
        _touch(tmp_path / "jobs.py", "def echo(clicks):\n    raise_here(\n")  # a broken module: said, nothing runs
        assert _settled(w) and ran == [] and "reloading jobs:echo raised SyntaxError" in said[-2]
        assert said[-1].startswith("jobs:echo does not import (see above)")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("jobs", None)


def test_only_the_users_own_modules_are_reloaded(tmp_path):
    """A module imported from the project counts; one from a virtual environment inside it does not."""
    installed = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    installed.mkdir(parents=True)
    (installed / "theirs_mod.py").write_text("X = 1\n")
    (tmp_path / "mine_mod.py").write_text("X = 2\n")
    sys.path[:0] = [str(tmp_path), str(installed)]
    try:
        import mine_mod  # noqa: F401
        import theirs_mod  # noqa: F401

        assert [m.__name__ for m in _user_modules(tmp_path)] == ["mine_mod"]
    finally:
        sys.path[:] = [p for p in sys.path if p not in (str(tmp_path), str(installed))]
        sys.modules.pop("mine_mod", None)
        sys.modules.pop("theirs_mod", None)


def test_a_pipeline_that_does_not_import_is_said_and_nothing_runs_until_it_does(tmp_path):
    (tmp_path / "echo.contract.yaml").write_text(CONTRACT)
    (tmp_path / "a.scenario.yaml").write_text(SCENARIO.replace("NAME", "a"))
    w, ran, said = _watcher(tmp_path, pipeline="jobs_missing_here:echo")
    w.first_round()
    assert ran == [] and "cannot import module 'jobs_missing_here'" in said[0]
    assert said[-1].startswith("jobs_missing_here:echo does not import (see above)") and "watching" in said[-1]


def test_watch_takes_a_previous_binding_only_and_refuses_a_bad_one_before_spark_starts():
    import subprocess

    from eventtime.scenarios import SUITE_DIR

    restart = str(SUITE_DIR / "restart" / "restart-keeps-window-exactly-once.scenario.yaml")

    def watch(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "eventtime.cli", "watch", restart, *args], capture_output=True,
                              text=True, timeout=120)

    done = watch("--previous", "tumbling_count")
    assert done.returncode == 2 and "'tumbling_count' is not CONTRACT=MODULE:FUNCTION" in done.stderr, done.stderr
    # a git ref's or another environment's version would not follow the edits watch re-runs
    for option in ("--previous-ref", "--previous-python"):
        done = watch(option, "x")
        assert done.returncode == 2 and f"unrecognized arguments: {option}" in done.stderr, done.stderr
    # the control: the option is there
    help_text = subprocess.run([sys.executable, "-m", "eventtime.cli", "watch", "--help"], capture_output=True,
                               text=True, timeout=120).stdout
    assert "--previous CONTRACT=MODULE:FUNCTION" in help_text


def test_a_module_bound_per_contract_is_watched_though_it_is_imported_only_by_the_run(tmp_path):
    """A binding (`eventtime_pipelines`, `--pipeline CONTRACT=module:function`) is imported when its
    scenario runs, after the first look at the files: an edit to it must still run every scenario again."""
    (tmp_path / "echo.contract.yaml").write_text(CONTRACT)
    (tmp_path / "a.scenario.yaml").write_text(SCENARIO.replace("NAME", "a"))
    ran: list[str] = []

    def run(scenario, target):  # as run_scenario does: the binding imported by its name, when it runs
        from eventtime.userpipeline import resolve_pipeline

        ran.append(resolve_pipeline(target)(None))
        return ScenarioResult(scenario, str(target), PASSED)

    w = Watcher([str(tmp_path)], pipeline=None, contract_dirs=[], run=run, say=lambda _: None, root=tmp_path,
                targets=lambda scenario, path: ["bound_jobs:echo"])
    sys.modules.pop("bound_jobs", None)
    (tmp_path / "bound_jobs.py").write_text("def echo(clicks):\n    return 'first'\n")
    sys.path.insert(0, str(tmp_path))
    try:
        w.first_round()
        assert ran == ["first"]
        assert w.one_round() is False and w.one_round() is False  # nothing changed: nothing runs
        _touch(tmp_path / "bound_jobs.py", "def echo(clicks):\n    return 'edited'\n")
        assert _settled(w) and ran == ["first", "edited"]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("bound_jobs", None)


def test_a_contract_with_nothing_judged_is_said_after_each_round_unless_allowed(tmp_path):
    """watch keeps the latest result of each file: one edited scenario runs alone, and the rule is over all."""
    from eventtime.results import NOT_APPLICABLE

    (tmp_path / "echo.contract.yaml").write_text(CONTRACT)
    (tmp_path / "a.scenario.yaml").write_text(SCENARIO.replace("NAME", "a"))
    (tmp_path / "b.scenario.yaml").write_text(SCENARIO.replace("NAME", "b"))
    judged = {"a": False, "b": False}

    def run(scenario, target):
        result = ScenarioResult(scenario, "jobs:echo", PASSED if judged[scenario.name] else NOT_APPLICABLE)
        result.reason = None if judged[scenario.name] else "needs Spark >=99, this is 4.3.0"
        return result

    said: list[str] = []
    w = Watcher([str(tmp_path)], pipeline=None, contract_dirs=[], run=run, say=said.append, root=tmp_path,
                targets=lambda scenario, path: ["jobs:echo"])
    w.first_round()
    assert said[-1].startswith("0 passed, 0 failed, 0 errors, 2 not applicable, 0 invalid files, 1 with nothing judged")
    assert said[-2].startswith("ERROR contract 'echo' [jobs:echo]: nothing judged: all 2 of its scenarios")
    judged["b"] = True  # b now applies: run alone, it makes the contract judged
    _touch(tmp_path / "b.scenario.yaml", SCENARIO.replace("NAME", "b"))
    assert _settled(w) and said[-1].startswith("1 passed, 0 failed, 0 errors, 0 not applicable, 0 invalid files in")
    # control: allowed, the same first round says no error
    said.clear()
    judged["b"] = False
    Watcher([str(tmp_path)], pipeline=None, contract_dirs=[], run=run, say=said.append, root=tmp_path,
            targets=lambda scenario, path: ["jobs:echo"], allowed=frozenset({"echo"})).first_round()
    assert not any("nothing judged" in line for line in said), said
