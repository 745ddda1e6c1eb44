"""A run across Spark lines without Spark (`eventtime.crossline`): the other environment checked before
anything runs, the earlier side's process ending or not answering said and bounded, a scenario without
a restart or a callable binding refused, and this side's driver and handler before and after the
restart. On Spark: tests/spark/test_crossline.py."""
from __future__ import annotations

import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eventtime import spec as m
from eventtime.crossline import CrossLineError, EarlierSpark, _kit_version, _Replay, _Taken, crossings
from eventtime.loader import load_scenario
from eventtime.results import ERROR, FAILED, NOT_APPLICABLE, SKIPPED, StepResult
from eventtime.scenarios import SUITE_DIR

RESTARTING = SUITE_DIR / "restart" / "restart-keeps-window-exactly-once.scenario.yaml"


def _python(tmp_path: Path, probe: str, serve: str = "exit 3", name: str = "python") -> str:
    """A stand-in for another environment's python: `-c` (the probe) prints `probe`; `-m` runs `serve`."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "-c" ]; then echo '{probe}'; exit 0; fi
        {serve}
        """))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _whole(tmp_path: Path, serve: str = "exit 3") -> str:
    return _python(tmp_path, f'{{"python": "3.11.7", "pyspark": "3.5.3", "eventtime": "{_kit_version()}"}}', serve)


def test_a_whole_environment_is_taken_and_named_by_its_spark(tmp_path):
    earlier = EarlierSpark(_whole(tmp_path))  # the control of the refusals below
    assert (earlier.spark, earlier.label) == ("3.5.3", "Spark 3.5.3")


@pytest.mark.parametrize("probe, said", [
    ('{"python": "3.11", "no_pyspark": "ModuleNotFoundError: pyspark", "eventtime": "VERSION"}',
     "that environment has no pyspark (ModuleNotFoundError: pyspark); install the earlier Spark line there"),
    ('{"python": "3.11", "pyspark": "3.5.3", "no_eventtime": "ModuleNotFoundError: eventtime"}',
     "that environment has no eventtime (ModuleNotFoundError: eventtime); install the kit there too"),
    ('{"python": "3.11", "pyspark": "3.5.3", "eventtime": "0.0.1"}',
     "that environment has eventtime-conformance 0.0.1, this one VERSION"),
])
def test_an_environment_without_what_the_earlier_side_needs_is_refused_naming_it(tmp_path, probe, said):
    python = _python(tmp_path, probe.replace("VERSION", _kit_version()))
    with pytest.raises(CrossLineError) as caught:
        EarlierSpark(python)
    assert str(caught.value).startswith(f"--previous-python {python}: ")
    assert said.replace("VERSION", _kit_version()) in str(caught.value)


def test_a_missing_or_unrunnable_python_is_refused(tmp_path):
    with pytest.raises(CrossLineError, match="no such file"):
        EarlierSpark(str(tmp_path / "nowhere" / "python"))
    with pytest.raises(CrossLineError, match="not an executable file"):
        EarlierSpark(str(tmp_path))
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'Traceback: it broke' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(CrossLineError, match="is not a Python that runs \\(Traceback: it broke\\)"):
        EarlierSpark(str(broken))


def test_the_earlier_sides_process_ending_is_an_error_of_the_scenario_with_its_last_lines(tmp_path):
    earlier = EarlierSpark(_whole(tmp_path, serve="echo 'the JVM did not start' >&2; exit 3"))
    try:
        result = earlier.run(load_scenario(RESTARTING), "eventtime.pipelines.reference:tumbling_count", timeout=5)
    finally:
        earlier.close()
    assert result.status == ERROR
    assert "ended with exit code 3 while it ran the steps before the restart" in result.reason
    assert "the JVM did not start" in result.reason


def test_an_earlier_side_that_does_not_answer_is_stopped_within_its_bound(tmp_path):
    earlier = EarlierSpark(_whole(tmp_path, serve="exec sleep 600"), startup=1.0)
    began = time.monotonic()
    try:
        result = earlier.run(load_scenario(RESTARTING), "eventtime.pipelines.reference:tumbling_count", timeout=0.1)
    finally:
        earlier.close()
    assert time.monotonic() - began < 30
    assert result.status == ERROR
    assert "did not finish the steps before the restart within 1 s; it was stopped" in result.reason


def test_a_scenario_without_a_restart_or_a_callable_binding_never_reaches_the_earlier_side(tmp_path):
    earlier = EarlierSpark(_whole(tmp_path, serve="exit 3"))  # asked, it would say it ended
    once = load_scenario(SUITE_DIR / "tumbling" / "complete-mode.scenario.yaml")
    result = earlier.run(once, "eventtime.pipelines.reference:tumbling_count")
    assert (result.status, result.reason.startswith("not a run across Spark lines: the scenario has no `start`")) \
        == (NOT_APPLICABLE, True)
    result = earlier.run(load_scenario(RESTARTING), lambda frames, params: None)
    assert result.status == ERROR and "is a callable bound in code (bind MODULE:FUNCTION)" in result.reason
    # the control: the same scenario with a binding reaches it
    result = earlier.run(load_scenario(RESTARTING), "eventtime.pipelines.reference:tumbling_count", timeout=5)
    assert result.status == ERROR and "ended with exit code 3" in result.reason
    earlier.close()


class _Driver:
    """Records what reaches the real driver."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.run = self
        self.clock = 0

    def advance_stopped(self, ms):
        self.clock += ms

    def __getattr__(self, name):
        return lambda *a, **k: self.calls.append((name, *a)) or ["real"]


class _Steps:
    """The runner's handler, reduced to what `_Taken` uses."""

    def __init__(self):
        self.current = StepResult(0, "start", None)
        self.fatal = False
        self.judged: list[int] = []

    def skips(self, step):
        self.current = StepResult(step.index, step.kind, None)
        return False

    def run(self, step, action):
        return action()

    def expect(self, step, since):
        self.judged.append(step.index)
        return True


def _numbered(step, index):
    object.__setattr__(step, "_index", index)
    return step


def _replayed(restart: int, earlier: dict[int, StepResult]):
    driver, steps = _Driver(), _Steps()
    replay = _Replay(driver, {i: list(s.batches) for i, s in earlier.items()}, restart)
    return driver, steps, replay, _Taken(steps, earlier, replay)


def test_before_the_restart_inputs_reach_this_sides_sources_and_the_rest_is_the_earlier_sides():
    where = m.Where("s.scenario.yaml", 1, 1)
    earlier = {0: StepResult(0, "start", None), 2: StepResult(2, "process", None, batches=["b0", "b1"]),
               3: StepResult(3, "expect", None, status=FAILED, message="rows differ")}
    driver, steps, replay, taken = _replayed(4, earlier)
    assert taken.run(None, lambda: replay.start({})) == []
    add = _numbered(m.AddStep(where=where, rows={"events": [(1,)]}), 1)
    taken.skips(add)
    taken.run(add, lambda: replay.add("events", [(1,)], None) or [])
    process = _numbered(m.ProcessStep(where=where), 2)
    taken.skips(process)
    assert taken.run(process, replay.process) == ["b0", "b1"]
    assert replay.process() == []  # a step's batches once
    expect = _numbered(m.ExpectStep(where=where), 3)
    taken.skips(expect)
    assert taken.expect(expect, []) is True and steps.judged == []  # the earlier side judged it
    assert (steps.current.status, steps.current.message) == (FAILED, "rows differ")
    replay.advance(5000)
    assert driver.clock == 5000
    assert driver.calls == [("write_statics",), ("add", "events", [(1,)], None)]
    # from the restart on: the real driver, the handler's own judging
    restart = _numbered(m.StartStep(where=where, restart=True), 4)
    taken.skips(restart)
    assert taken.run(restart, lambda: replay.stop() or replay.start({})) == ["real"]
    assert driver.calls[-2:] == [("stop", None), ("start", {})]
    later = _numbered(m.ExpectStep(where=where), 5)
    taken.skips(later)
    assert taken.expect(later, []) is True and steps.judged == [5]


def test_an_error_on_the_earlier_side_ends_the_run_and_a_skipped_expect_is_not_judged():
    earlier = {0: StepResult(0, "start", None, status=ERROR, message="the query failed"),
               1: StepResult(1, "expect", None, status=SKIPPED)}
    _, steps, replay, taken = _replayed(2, earlier)
    taken.run(None, lambda: replay.start({}))
    assert steps.fatal and steps.current.status == ERROR
    expect = _numbered(m.ExpectStep(where=m.Where("s", 1, 1)), 1)
    taken.skips(expect)
    assert taken.expect(expect, []) is False  # its batches stay for the next expect, as in any run
    assert steps.current.status == SKIPPED


@pytest.mark.parametrize("command", [["run", str(RESTARTING)], ["certify", "--contract", "tumbling_count"]])
def test_the_command_refuses_a_missing_environment_before_spark_starts(tmp_path, command):
    done = subprocess.run([sys.executable, "-m", "eventtime.cli", *command, "--previous-python",
                           str(tmp_path / "python")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"eventtime: error: --previous-python {tmp_path / 'python'}: no such file" in done.stderr
    assert "SparkSession" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "eventtime.cli", *command, "--previous-python",
                           "p", "--previous-ref", "HEAD"], capture_output=True, text=True, timeout=120)
    assert "not allowed with argument" in done.stderr


def test_the_hand_over_can_be_at_any_start_restart_or_scheduled_run_and_only_there(tmp_path):
    scheduled = load_scenario(SUITE_DIR / "tumbling" / "available-now-runs.scenario.yaml")
    assert [(s.index, s.kind) for s in crossings(scheduled)] == [(2, "run"), (6, "run"), (8, "run"), (11, "run")]
    assert [s.index for s in crossings(load_scenario(RESTARTING))] == [4, 8]
    earlier = EarlierSpark(_whole(tmp_path, serve="exit 3"))
    result = earlier.run(load_scenario(RESTARTING), "eventtime.pipelines.reference:tumbling_count", at=5)
    assert result.status == ERROR
    assert result.reason == "step 5 is not a start, restart or scheduled run of the whole query (those are steps [4, 8])"
    # the control: step 8 is one, and the earlier side is asked for the steps before it
    result = earlier.run(load_scenario(RESTARTING), "eventtime.pipelines.reference:tumbling_count", at=8, timeout=5)
    assert result.status == ERROR and "ended with exit code 3" in result.reason
    assert result.upgrade["restart_step"] == 8
    earlier.close()
