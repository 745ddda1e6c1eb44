"""A user's module that raises while it is imported (a SyntaxError, a module-level `os.environ[...]`, an
unknown feature in `@implementation(requires=...)`, a module it imports that is missing) is said at the
user's file:line with the user's own frames, never the kit's, in both faces: `eventtime run` (the console
script, before any Spark starts; exit 1, a module that is not there at all exit 2) and pytest in a user's
project (a failed item)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eventtime.errors import EventtimeError, ImplementationError, PipelineError, PipelineImportError
from eventtime.exitcodes import ExitCode
from eventtime.userpipeline import resolve_pipeline

pytest_plugins = ["pytester"]

CONTRACT = textwrap.dedent("""\
    contract: page_clicks
    description: Who clicked which page.
    sources: {clicks: {columns: "page string, ts timestamp", event_time: ts}}
    output: {columns: "page string, ts timestamp"}
    """)

SCENARIO = textwrap.dedent("""\
    scenario: NAME
    description: one click, out as it came
    contract: page_clicks
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {rows: [[home, "00:00:01"]]}
    """)

# module -> (its text, the line that raises, what the message says of it)
MODULES = {
    "syntax_job": ("def transform(clicks):\n    return (clicks\n", 2, "raised SyntaxError: '(' was never closed"),
    "env_job": ("import os\n\nBROKER = os.environ['KAFKA_BROKER']\n\n\ndef transform(clicks):\n    return clicks\n",
                3, "raised KeyError: 'KAFKA_BROKER' (the module reads environment variable KAFKA_BROKER when it is "
                   "imported"),
    "feature_job": ("from eventtime import implementation\n\n\n@implementation(requires=['transform_with_stat'])\n"
                    "def transform(clicks):\n    return clicks\n", 4,
                    "raised ImplementationError: @implementation(requires=...): unknown Spark feature "
                    "'transform_with_stat'; did you mean 'transform_with_state'?"),
    "dependency_job": ("import kafka_helpers_not_installed\n\n\ndef transform(clicks):\n    return clicks\n", 1,
                       "raised ModuleNotFoundError: No module named 'kafka_helpers_not_installed'"),
}

# what the kit's own frames would show: its files, Python's import machinery
KIT_FRAMES = ("userpipeline.py", "execute.py", "pytest_plugin.py", "importlib", "<frozen", "Traceback")


def _project(root: Path) -> None:
    (root / "page_clicks.contract.yaml").write_text(CONTRACT)
    for module, (text, _, _) in MODULES.items():
        (root / f"{module}.py").write_text(text)
        (root / module).mkdir()
        (root / module / "one.scenario.yaml").write_text(SCENARIO.replace("NAME", f"one-{module}"))
    bindings = ", ".join(f'"page_clicks[{m}] = {m}:transform"' for m in MODULES)
    (root / "pyproject.toml").write_text(f'[tool.pytest.ini_options]\npythonpath = ["."]\n'
                                         f"eventtime_pipelines = [{bindings}]\n")


def _eventtime(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BROKER"}
    return subprocess.run([str(Path(sys.executable).with_name("eventtime")), *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module", list(MODULES))
def test_the_console_script_says_where_the_users_module_raised_without_the_kits_frames(tmp_path, module):
    _project(tmp_path)
    done = _eventtime(tmp_path, "run", f"{module}/one.scenario.yaml", "--pipeline", f"page_clicks={module}:transform")
    _, line, said = MODULES[module]
    assert done.returncode == ExitCode.FAILED, done.stdout + done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"eventtime: error: {module}.py:{line}: importing module {module!r} "
                            f"(pipeline '{module}:transform') {said}"), done.stderr
    assert f'{module}.py", line {line}' in done.stderr, done.stderr  # the user's own line, shown
    assert not any(frame in done.stderr for frame in KIT_FRAMES), done.stderr
    assert done.stdout == "", done.stdout  # nothing ran: no Spark, no verdicts


def test_control_a_module_that_is_not_there_is_still_a_usage_error(tmp_path):
    _project(tmp_path)
    done = _eventtime(tmp_path, "run", "env_job/one.scenario.yaml", "--pipeline", "page_clicks=no_such_job:transform")
    assert done.returncode == ExitCode.USAGE_ERROR, done.stderr
    assert "cannot import module 'no_such_job'" in done.stderr and "importing module" not in done.stderr


def test_the_project_bindings_of_every_broken_module_are_said_each_at_its_line(tmp_path):
    _project(tmp_path)
    done = _eventtime(tmp_path, "run")  # the pyproject's bindings, as pytest reads them
    assert done.returncode == ExitCode.FAILED, done.stderr
    for module, (_, line, said) in MODULES.items():
        assert f"eventtime: error: {module}.py:{line}: importing module {module!r} (pipeline '{module}:transform') " \
               f"{said}" in done.stderr, done.stderr
    assert not any(frame in done.stderr for frame in KIT_FRAMES), done.stderr


def test_the_errors_derive_from_the_kits_root_and_keep_the_users_exception(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("KAFKA_BROKER", raising=False)
    with pytest.raises(PipelineImportError) as caught:
        resolve_pipeline("env_job:transform")
    assert isinstance(caught.value, (PipelineError, EventtimeError)) and isinstance(caught.value.original, KeyError)
    assert caught.value.place == f"{tmp_path / 'env_job.py'}:3"  # outside the current folder: as Python names it
    assert issubclass(ImplementationError, (EventtimeError, ValueError))
    # control: with the variable set, the same module imports
    monkeypatch.setenv("KAFKA_BROKER", "localhost:9092")
    assert resolve_pipeline("env_job:transform").__name__ == "transform"


def test_pytest_fails_each_item_at_the_users_line_without_the_kits_frames(pytester, monkeypatch):
    _project(pytester.path)
    monkeypatch.delenv("KAFKA_BROKER", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    for module, (_, line, said) in MODULES.items():
        assert (f"{module}/one.scenario.yaml: the pipeline bound to contract 'page_clicks' does not import: "
                f"{module}.py:{line}: importing module {module!r} (pipeline '{module}:transform') {said}") in out, out
    assert f"{len(MODULES)} failed" in out.splitlines()[-1], out
    assert not any(frame in out for frame in KIT_FRAMES), out
