"""A run across a change without Spark: the outcome from the steps (`upgrade.upgrade_verdict`), the
restart step, the options, and a git ref's version of a module loaded beside the current one
(`previous.GitCheckout`). On Spark: tests/spark/test_upgrade.py."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from eventtime import spec as m
from eventtime.projectconfig import SettingsError
from eventtime.results import ERROR, FAILED, PASSED, SKIPPED, FailureInfo, ScenarioResult, StepResult, conclude
from eventtime.userpipeline import PipelineError
from eventtime.previous import GitCheckout, Previous, parse_previous
from eventtime.upgrade import CANNOT_RESTART, DIFFERS, PREVIOUS_DIFFERS, RESTARTS, restart_step, upgrade_verdict

def _step(step: m.Step, index: int) -> m.Step:
    object.__setattr__(step, "_index", index)  # as the loader numbers the steps
    return step


RESTART = _step(m.StartStep(where=m.Where("s.scenario.yaml", 9, 5), restart=True), 3)


def _run(*steps: tuple[str, str, int], failure: FailureInfo | None = None, consumed: bool = False) -> ScenarioResult:
    """A result of steps (kind, status, batches run), the implicit start first, concluded as the runner does."""
    result = ScenarioResult(None, "new:fn", PASSED, steps=[  # type: ignore[arg-type]
        StepResult(i, kind, None, status=status, message=f"m{i}" if status != PASSED else None,
                   batches=[object()] * batches)  # type: ignore[list-item]
        for i, (kind, status, batches) in enumerate(steps)])
    conclude(result, failure.step if failure is not None and consumed else None)
    upgrade_verdict(result, "old:fn", RESTART, failure, consumed)
    return result


OK = ("process", PASSED, 1)


def test_all_steps_passing_restarts():
    r = _run(("start", PASSED, 0), OK, ("expect", PASSED, 0), ("restart", PASSED, 0), OK, ("expect", PASSED, 0))
    assert (r.status, r.upgrade["outcome"]) == (PASSED, RESTARTS)


def test_a_failed_expect_after_the_restart_differs():
    r = _run(("start", PASSED, 0), OK, ("expect", PASSED, 0), ("restart", PASSED, 0), OK, ("expect", FAILED, 0))
    assert (r.status, r.upgrade["outcome"]) == (FAILED, DIFFERS)
    assert r.reason.endswith("differ from the scenario after the restart: step 5 (expect)")


def test_a_failed_expect_before_the_restart_is_the_scenario_not_describing_the_previous_version():
    r = _run(("start", PASSED, 0), OK, ("expect", FAILED, 0), ("restart", PASSED, 0), OK, ("expect", FAILED, 0))
    assert (r.status, r.upgrade["outcome"]) == (FAILED, PREVIOUS_DIFFERS)
    assert r.reason.startswith("the scenario does not describe the previous version (old:fn): step 2 (expect) failed")


def _schema_error(step: int) -> FailureInfo:
    text = ("[STREAM_FAILED] Query [id = 1] terminated with exception: [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] x\n"
            "=== Streaming Query ===\nLogical Plan:\n\n[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema "
            "does not match.\nExisting key_schema=A and new key_schema=B.\n\tat org.apache.spark.X")
    return FailureInfo("failed", ["STREAM_FAILED", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"], [], text, step)


def test_a_query_failing_in_the_first_batch_after_the_restart_cannot_restart():
    r = _run(("start", PASSED, 0), OK, ("expect", PASSED, 0), ("restart", PASSED, 0), ("add", PASSED, 0),
             ("process", ERROR, 0), ("expect", SKIPPED, 0), failure=_schema_error(5))
    assert (r.status, r.upgrade["outcome"]) == (ERROR, CANNOT_RESTART)
    assert r.upgrade["error_class"] == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"  # not the wrapper's
    assert r.upgrade["message"] == ("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match.\n"
                                    "Existing key_schema=A and new key_schema=B.")
    assert "in the first batch after it (step 5)" in r.reason


def test_without_an_error_class_the_innermost_exception_names_the_refusal():
    text = ("[STREAM_FAILED] Query [id = 1] terminated with exception: Job aborted: org.apache.spark.X.StateSchemaNotCompatible:"
            " Provided schema doesn't match\n- Existing key schema: A\n=== Streaming Query ===\nplan")
    failure = FailureInfo("failed", ["STREAM_FAILED"], ["org.apache.spark.sql.streaming.StreamingQueryException",
                                                         "org.apache.spark.X.StateSchemaNotCompatible"], text, 4)
    r = _run(("start", PASSED, 0), OK, ("expect", PASSED, 0), ("restart", PASSED, 0), ("process", ERROR, 0),
             failure=failure)
    assert (r.upgrade["outcome"], r.upgrade["error_class"]) == (CANNOT_RESTART, None)  # never the wrapper's
    assert r.upgrade["exception"] == "org.apache.spark.X.StateSchemaNotCompatible"
    assert r.upgrade["message"] == ("org.apache.spark.X.StateSchemaNotCompatible: Provided schema doesn't match\n"
                                    "- Existing key schema: A")
    assert "in the first batch after it (step 4)" in r.reason


def test_control_a_failure_after_a_batch_ran_on_the_new_code_is_a_difference_not_a_refused_restart():
    r = _run(("start", PASSED, 0), OK, ("expect", PASSED, 0), ("restart", PASSED, 0), OK,
             ("process", ERROR, 0), failure=_schema_error(5))
    assert (r.status, r.upgrade["outcome"]) == (ERROR, DIFFERS)


def test_control_an_expected_failure_after_the_restart_restarts():
    r = _run(("start", PASSED, 0), OK, ("restart", PASSED, 0), ("restart", ERROR, 0), ("expect", PASSED, 0),
             failure=_schema_error(3), consumed=True)
    assert (r.status, r.upgrade["outcome"]) == (PASSED, RESTARTS)


def test_the_restart_step_is_the_first_start_of_the_whole_query():
    steps = (_step(m.StopStep(where=None), 1), _step(m.StartStep(where=None, query="q1"), 2),  # type: ignore[arg-type]
             _step(m.StartStep(where=None), 3), RESTART)  # type: ignore[arg-type]
    scenario = m.Scenario.__new__(m.Scenario)
    object.__setattr__(scenario, "steps", steps)
    assert restart_step(scenario).index == 3
    object.__setattr__(scenario, "steps", steps[:2])
    assert restart_step(scenario) is None


def test_previous_bindings_are_per_contract():
    assert parse_previous(["c=a.b:f", "d=x:g"], "--previous") == {"c": "a.b:f", "d": "x:g"}
    with pytest.raises(SettingsError, match="--previous: 'c=nope' is not CONTRACT=MODULE:FUNCTION"):
        parse_previous(["c=nope"], "--previous")
    with pytest.raises(SettingsError, match="contract 'c' is given two previous versions"):
        parse_previous(["c=a:f", "c=a:g"], "--previous")
    with pytest.raises(SettingsError, match="per contract, not per folder"):
        parse_previous(["c[sub]=a:f"], "--previous")


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository with a package whose committed `version()` says "old", changed to "new" in the
    working tree, on the import path as the current code."""
    (tmp_path / "upg_pkg").mkdir()
    (tmp_path / "upg_pkg" / "__init__.py").write_text("")
    (tmp_path / "upg_pkg" / "helper.py").write_text("WORD = 'old'\n")
    (tmp_path / "upg_pkg" / "job.py").write_text("from upg_pkg.helper import WORD\n\ndef version(sources, params):\n"
                                                 "    return WORD\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "old")
    (tmp_path / "upg_pkg" / "helper.py").write_text("WORD = 'new'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("upg_pkg")]:
        del sys.modules[name]


def test_a_ref_loads_its_own_version_of_the_package_beside_the_current_one(repo):
    from eventtime.userpipeline import resolve_pipeline

    checkout = GitCheckout("HEAD", str(repo))
    try:
        current = resolve_pipeline("upg_pkg.job:version")
        old = checkout.load("upg_pkg.job:version")
        assert (old(None, None), current(None, None)) == ("old", "new")  # the control: the current one
        assert sys.modules["upg_pkg.helper"].WORD == "new"  # the current code is what stays imported
        assert resolve_pipeline("upg_pkg.job:version") is current
    finally:
        checkout.remove()
    assert not checkout.folder.exists()
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
    assert len(listed.strip().splitlines()) == 1  # git's record of the checkout is gone too


def test_a_ref_that_is_not_there_or_code_outside_the_repository_is_said(repo):
    with pytest.raises(PipelineError, match="--previous-ref nope: no commit 'nope' in the git repository"):
        GitCheckout("nope", str(repo))
    checkout = GitCheckout("HEAD", str(repo))
    try:
        with pytest.raises(PipelineError, match="outside the git repository"):
            checkout.load("eventtime.pipelines.reference:tumbling_count")
        with pytest.raises(PipelineError, match="bind it by its path"):
            checkout.load("upg_pkg.job:__main__")
    finally:
        checkout.remove()


def test_outside_a_git_repository_the_ref_is_refused(tmp_path):
    with pytest.raises(PipelineError, match="is not in a git repository"):
        GitCheckout("HEAD", str(tmp_path))


def test_a_previous_version_by_ref_is_the_same_binding_named_at_the_ref(repo):
    previous = Previous(ref="HEAD", root=str(repo))
    try:
        fn, name = previous.of(None, "upg_pkg.job:version")  # type: ignore[arg-type]
        assert (fn(None, None), name) == ("old", "upg_pkg.job:version@HEAD")
        with pytest.raises(PipelineError, match="a callable bound in code"):
            previous.of(None, len)  # type: ignore[arg-type]
    finally:
        previous.close()


def test_the_command_refuses_a_bad_previous_before_spark_starts(tmp_path):
    cmd = [sys.executable, "-c", "from eventtime.cli import main; raise SystemExit(main())", "run",
           "--pipeline", "tumbling_count=eventtime.pipelines.reference:tumbling_count"]
    done = subprocess.run(cmd + ["--previous", "tumbling_count"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 2
    assert "--previous: 'tumbling_count' is not CONTRACT=MODULE:FUNCTION" in done.stderr
    done = subprocess.run(cmd + ["--previous-ref", "HEAD"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert "is not in a git repository" in textwrap.dedent(done.stderr)


def test_a_run_loads_the_refs_versions_before_any_scenario_and_says_a_broken_one_per_scenario(repo):
    from eventtime.commands.crossings import across

    previous = Previous(ref="HEAD", root=str(repo))
    seen = []
    try:
        previous.load(["upg_pkg.job:version", "upg_pkg.gone:f"])
        assert set(previous._loaded) == {"upg_pkg.job:version", "upg_pkg.gone:f"}  # before any scenario ran
        run = across(previous, lambda sc, impl, **kw: seen.append((impl, kw["crossing"].previous(None, None),
                                                                   kw["crossing"].name)))
        scenario = type("S", (), {"name": "s", "path": "s.scenario.yaml"})()
        run(scenario, "upg_pkg.job:version", rerun=None)
        assert seen == [("upg_pkg.job:version", "old", "upg_pkg.job:version@HEAD")]
        with pytest.raises(PipelineError, match="cannot import module 'upg_pkg.gone'"):  # each face words it
            previous.run(scenario, "upg_pkg.gone:f", lambda sc, impl, **kw: seen.append(impl), rerun=None)
        result = run(scenario, "upg_pkg.gone:f", rerun=None)  # a module the ref does not have: the CLI's error
        assert (result.status, seen[1:]) == (ERROR, [])
        assert "cannot import module 'upg_pkg.gone'" in result.reason
    finally:
        previous.close()


def test_a_declarative_pipeline_at_a_ref_is_its_folder_in_the_refs_checkout(repo):
    """`--previous-ref` with a pipeline bound by its folder or spec: the same folder as the ref has it (its
    definitions are read from there when the updates before the restart register them)."""
    from eventtime.userpipeline import DeclarativePipeline

    (repo / "pipes").mkdir()
    (repo / "pipes" / "spark-pipeline.yml").write_text("name: p\nstorage: s\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "pipeline")
    (repo / "fresh").mkdir()
    (repo / "fresh" / "spark-pipeline.yml").write_text("name: f\nstorage: s\n")  # not at the ref
    checkout = GitCheckout("HEAD", str(repo))
    try:
        for bound in ("pipes/", "pipes/spark-pipeline.yml"):
            old = checkout.load(bound)
            assert isinstance(old, DeclarativePipeline)
            assert old.spec == str(checkout.tree / "pipes" / "spark-pipeline.yml")
        with pytest.raises(PipelineError, match="fresh/ does not exist at HEAD"):
            checkout.load("fresh/")
    finally:
        checkout.remove()
