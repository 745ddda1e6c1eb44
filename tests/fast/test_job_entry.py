"""Entry points as jobs ship them, without Spark: which functions are jobs, the message of a signature
that fits nothing, a scenario's `job: {args, env}`, script bindings, and the process settings a job
runs with (restored after). The Spark side is tests/spark/test_job_entry.py."""
from __future__ import annotations

import os
import sys
import textwrap

import pytest
import yaml

from eventtime.contractfile import contract_from_mapping
from eventtime.harness.jobio import shown_file
from eventtime.harness.jobsession import process_settings
from eventtime.jobs import JobEntry, ScriptJob, SubstitutionError, _enter, job_entry
from eventtime.loader import ScenarioInvalid, load_scenario_text
from eventtime.projectconfig import is_target
from eventtime.userpipeline import PipelineError, resolve_pipeline
from eventtime.userpipeline import SignatureError, is_job, pipeline_caller

CONTRACT = contract_from_mapping(yaml.safe_load(textwrap.dedent("""\
    contract: page_counts
    description: clicks per page
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts}
    params:
      window: {kind: duration, default: 1 minute}
    output: {columns: "page string, clicks bigint"}
    """)))


def _with_job(base: str, job: str) -> str:
    return base.replace("steps:\n", job + "\nsteps:\n", 1)


def main_spark(spark): ...
def main_none(): ...
def main_argv(argv=None): ...
def main_optional_spark(spark=None): ...
def transform(clicks): ...
def transform_optional(clicks=None): ...
def takes_kwargs(**kwargs): ...
def takes_window(window=None): ...
def two_unknown(a, b): ...


@pytest.mark.parametrize("fn, job", [
    (main_spark, True), (main_none, True), (main_argv, True), (main_optional_spark, True),
    (ScriptJob("jobs/x.py", path="/nowhere/jobs/x.py"), True),
    (transform, False), (transform_optional, False), (takes_kwargs, False), (takes_window, False),
    (two_unknown, False),
])
def test_a_function_that_asks_for_nothing_the_contract_supplies_is_a_job(fn, job):
    assert is_job(fn, CONTRACT) is job


def test_a_job_is_called_with_the_session_only_when_it_asks_for_it():
    assert job_entry(main_spark).spark_parameter == "first"
    assert job_entry(main_optional_spark).spark_parameter == "first"
    assert job_entry(main_none).spark_parameter is None
    assert job_entry(lambda argv=None, spark=None: None).spark_parameter == "keyword"


def test_a_signature_that_fits_nothing_lists_every_shape_beside_its_own_and_its_line():
    with pytest.raises(SignatureError) as info:
        pipeline_caller(two_unknown, CONTRACT)
    text = str(info.value)
    line = two_unknown.__code__.co_firstlineno
    assert f"two_unknown(a, b) ({shown_file(__file__)}:{line})" in text, text
    for shape in ("fn(df)", "fn(sources, params)", "build(spark) or main(spark)", "main() with no parameters",
                  "a script run as __main__", "package.module:__main__",
                  "parameters named after what the contract supplies (source clicks, parameter window, parameter output_mode)"):
        assert shape in text, (shape, text)


def test_a_scenario_gives_a_jobs_arguments_and_environment(base_scenario):
    sc = load_scenario_text(_with_job(base_scenario, "job: {args: [--env, test, 3], env: {APP_ENV: test, RETRIES: 2}}"))
    assert sc.job_args == ("--env", "test", "3")
    assert sc.job_env == {"APP_ENV": "test", "RETRIES": "2"}
    assert load_scenario_text(base_scenario).job_args == ()  # control: none given, none set


@pytest.mark.parametrize("job, line, words", [
    ("job: {args: --env test}", 11, "'args' must be a list, not text"),
    ("job: {env: {PATH: /tmp}}", 11, "PATH sets how processes start"),
    ("job: {env: {LD_PRELOAD: x.so}}", 11, "LD_PRELOAD sets how processes start"),
    ("job:\n  argz: [a]", 12, "unknown key 'argz'; did you mean 'args'?"),
    ("job: {env: {1A: x}}", 11, "'1A' is not a valid name here"),
])
def test_a_bad_job_key_is_an_error_at_its_line(base_scenario, job, line, words):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(_with_job(base_scenario, job), "s.yaml")
    assert [(p.line, words in p.message) for p in info.value.problems] == [(line, True)], info.value.problems


def test_a_script_is_bound_by_its_path_or_as_module_main(tmp_path, monkeypatch):
    script = tmp_path / "jobs" / "medallion.py"
    script.parent.mkdir()
    script.write_text("")
    monkeypatch.chdir(tmp_path)
    job = resolve_pipeline("jobs/medallion.py")
    assert isinstance(job, ScriptJob) and job.path == str(script)
    assert isinstance(resolve_pipeline("json.tool:__main__"), ScriptJob)
    with pytest.raises(PipelineError, match=r"script 'jobs/missing.py' does not exist"):
        resolve_pipeline("jobs/missing.py")
    with pytest.raises(PipelineError, match=r"cannot find module 'no_such_pkg' for script job"):
        resolve_pipeline("no_such_pkg:__main__")
    assert is_target("jobs/medallion.py") and is_target("shop.jobs.medallion:__main__")
    assert not is_target("jobs/medallion")  # control: neither a module:function nor a script


def test_process_settings_hold_only_while_the_job_runs(monkeypatch):
    monkeypatch.delenv("EVENTTIME_TEST_ENTRY", raising=False)
    argv, path = list(sys.argv), list(sys.path)
    seen = {}
    with pytest.raises(ValueError):
        with process_settings(["job.py", "--env", "test"], {"EVENTTIME_TEST_ENTRY": "yes"}, ["/jobs"]):
            seen.update(argv=list(sys.argv), env=os.environ.get("EVENTTIME_TEST_ENTRY"), path=sys.path[0])
            raise ValueError("the job's own error")
    assert seen == {"argv": ["job.py", "--env", "test"], "env": "yes", "path": "/jobs"}
    assert sys.argv == argv and sys.path == path and "EVENTTIME_TEST_ENTRY" not in os.environ


def _exits(code):
    def main():
        sys.exit(code)  # <- the job's exit
    return main


@pytest.mark.parametrize("code", [0, None])
def test_sys_exit_zero_or_without_a_code_is_a_normal_end(code):
    assert _enter(JobEntry(_exits(code), None), spark=None) is None


def test_another_exit_code_is_the_jobs_error_at_its_line():
    with pytest.raises(SubstitutionError) as info:
        _enter(JobEntry(_exits(4), None), spark=None)
    line = next(n for n, text in enumerate(open(__file__).read().splitlines(), 1) if "# <- the job's exit" in text)
    assert str(info.value).startswith(f"{shown_file(__file__)}:{line} (in main): the job ended with sys.exit(4)"), info.value


def test_jobs_built_at_once_in_two_threads_take_turns_with_the_process_settings():
    """Without turns, B would save A's argv and put it back after A restored the original: a leak."""
    import threading

    argv = list(sys.argv)
    b_entered = threading.Event()

    def job_b():
        with process_settings(["b.py"], {}):
            b_entered.set()

    with process_settings(["a.py"], {}):
        other = threading.Thread(target=job_b)
        other.start()
        # bounded: B must not get in while A is inside (it does at once without the lock)
        assert not b_entered.wait(timeout=1.0), "job B changed sys.argv while job A was running"
    other.join(timeout=30)
    assert not other.is_alive() and b_entered.is_set(), "job B never ran"
    assert sys.argv == argv


def test_a_file_below_the_working_directory_is_named_from_it(tmp_path, monkeypatch):
    (tmp_path / "jobs").mkdir()
    monkeypatch.chdir(tmp_path / "jobs")
    assert shown_file(str(tmp_path / "jobs" / "dedup.py")) == "dedup.py"
    assert shown_file(str(tmp_path / "other.py")) == str(tmp_path / "other.py")  # above it: as given
    assert shown_file("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>"
    assert shown_file("jobs/dedup.py") == "jobs/dedup.py"  # already relative: as given
