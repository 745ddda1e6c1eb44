"""What a scenario prints (a job's own `print`s, 870 lines a scenario in a trial) is kept with its verdict,
as pytest captures a test's output: `eventtime run` shows it under a failing scenario only, the verdict
lines stay readable, and `--show-output` prints it as it comes. Spark is replaced by a runner that
prints as a job does, from its own thread and from another (a foreachBatch function runs in py4j's)."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from eventtime import cli, parallel
from eventtime import runner as runner_module
from eventtime.commands import spark as spark_command
from eventtime.exitcodes import ExitCode
from eventtime.results import FAILED, PASSED, ScenarioResult

from tests.fast.test_cli_project import _project

LINES = 870


def _job_prints(name: str) -> None:
    for i in range(LINES):
        print(f"{name}: row {i} written")
    side = threading.Thread(target=lambda: print(f"{name}: from the batch function's thread"))
    side.start()
    side.join()


@pytest.fixture
def printing_runs(monkeypatch):
    """`eventtime run` on a stand-in session whose every scenario prints as a job does; late-click fails."""
    def run_pairs(pairs, runner=None, **kwargs):
        for p in pairs:
            yield (runner or runner_module.run_scenario)(p.scenario, str(p.implementation), rerun=p.rerun)

    def run_scenario(scenario, implementation, **kwargs):
        _job_prints(scenario.name)
        status = FAILED if scenario.name == "late-click" else PASSED
        return ScenarioResult(scenario, implementation, status, rerun=kwargs.get("rerun"),
                              reason="the rows differ" if status == FAILED else None)

    monkeypatch.setattr(parallel, "run_pairs", run_pairs)
    monkeypatch.setattr(runner_module, "run_scenario", run_scenario)
    session = SimpleNamespace(version="4.3.0", sparkContext=SimpleNamespace(master="local[2]"), _jsparkSession=None)
    monkeypatch.setattr(spark_command, "open_session", lambda args: (session, ExitCode.OK))


@pytest.fixture
def in_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    _project(tmp_path, ["page_clicks = shop_jobs:transform"])
    yield tmp_path
    __import__("sys").modules.pop("shop_jobs", None)


def test_a_scenarios_output_is_shown_under_its_failure_only_and_the_verdicts_stay_readable(in_project, printing_runs,
                                                                                          capsys):
    assert cli.main(["run", "tests/scenarios"]) == ExitCode.FAILED
    out = capsys.readouterr().out
    lines = out.splitlines()
    # the verdict lines come first, one after the other, with nothing printed between them
    assert sorted(line.split("  [")[0] for line in lines[:2]) == ["FAIL  late-click", "PASS  eu-click"], lines[:3]
    assert "eu-click: row" not in out  # a passing scenario's output is not shown
    assert f"  what it printed ({LINES + 1} lines of stdout; --show-output prints it as it comes):" in out, out[-2000:]
    assert "  | late-click: row 869 written" in out and "  | late-click: from the batch function's thread" in out
    assert out.index("FAIL late-click (") < out.index("  | late-click: row 0 written")  # under its failure
    assert len(lines) < LINES + 40 and lines[-1].startswith("1 passed, 1 failed"), lines[-3:]


def test_control_show_output_prints_it_as_it_comes(in_project, printing_runs, capsys):
    assert cli.main(["run", "tests/scenarios", "--show-output"]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert out.startswith("late-click: row 0 written\n"), out[:200]  # before its verdict line
    assert out.count(" written\n") == 2 * LINES and "what it printed" not in out
