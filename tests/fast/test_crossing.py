"""The seams of a run across a change without Spark (`eventtime.crossing`): what each crossing does with
its run folder, the command line's runner giving every scenario to the run's one `Crossings`, a new
version refusing a scenario with no restart; a step's outcome captured as a value before it is judged
(`sparksteps.StepOutcome`); and the command line's options read once, never written."""
import ast
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from eventtime import load_scenario
from eventtime.commands.crossings import across
from eventtime.commands.options import Options, but
from eventtime.crossing import NoCrossing, Straight
from eventtime.crossline import Keep
from eventtime.results import ERROR, NOT_APPLICABLE, PASSED, ScenarioResult
from eventtime.scenarios import SUITE_DIR
from eventtime.sparksteps import StepOutcome
from eventtime.upgrade import NewVersion
from eventtime.userpipeline import PipelineError

ROOT = Path(__file__).resolve().parents[2]
NO_RESTART = SUITE_DIR / "tumbling" / "complete-mode.scenario.yaml"


class _Build:
    def __init__(self):
        self.left: list[bool] = []

    def leave(self, drop=True):
        self.left.append(drop)


def test_a_straight_run_removes_its_folder_and_the_earlier_side_leaves_its_own_for_the_other():
    straight, build = Straight(), _Build()
    folder = straight.workdir()
    assert os.path.isdir(folder)
    straight.leave(build, folder)
    assert not os.path.exists(folder) and build.left == [True]
    kept = Keep(straight.workdir())  # the earlier side of a run across Spark lines: its folder is the other's
    assert kept.workdir() == kept.folder
    kept.leave(build, kept.folder)
    assert os.path.isdir(kept.folder) and build.left == [True, False]
    os.rmdir(kept.folder)


def test_only_a_run_that_goes_on_elsewhere_leaves_its_written_checks_unsettled():
    settled = []
    steps = SimpleNamespace(settle_written=lambda: settled.append(1))
    Straight().ended(steps)
    Keep("unused").ended(steps)
    assert settled == [1]


def test_a_new_version_refuses_a_scenario_without_a_restart_and_says_why():
    scenario = load_scenario(NO_RESTART)
    result = ScenarioResult(scenario, "m:current", PASSED)
    assert NewVersion("m:old").refuses(result, False, SimpleNamespace(features=frozenset(), connect=False))
    assert result.status == NOT_APPLICABLE
    assert result.reason.startswith("a run across a change has no `start` or `restart` step")
    assert NewVersion(len).name == "builtins:len"  # a callable is named as the runner names one


class _Recording:
    """A stand-in `Crossings`: records what each scenario was run with; a binding named 'gone' has no
    previous version to be had."""

    def __init__(self):
        self.seen: list[tuple] = []

    def load(self, targets):
        pass

    def run(self, scenario, target, run, **kwargs):
        if target == "gone":
            raise PipelineError("--previous-ref HEAD: cannot import module 'gone'")
        return run(scenario, target, crossing="the crossing", **kwargs)

    def close(self):
        pass


def test_the_command_line_gives_every_scenario_to_the_runs_one_crossings():
    crossings, seen = _Recording(), []
    run = across(crossings, lambda sc, target, **kw: seen.append((target, kw)) or "ran")
    assert run("sc", "m:f", rerun="eventtime run x") == "ran"
    assert seen == [("m:f", {"crossing": "the crossing", "rerun": "eventtime run x"})]
    scenario = SimpleNamespace(name="s", path="s.scenario.yaml")
    result = run(scenario, "gone", rerun="eventtime run s")  # said as that scenario's error, nothing run
    assert (result.status, result.reason, len(seen)) == (ERROR, "--previous-ref HEAD: cannot import module 'gone'", 1)
    # control: without a crossing, the scenario runs as it is, with what it was given
    assert across(NoCrossing(), lambda sc, target, **kw: (target, kw))("sc", "m:f", rerun="r") == ("m:f", {"rerun": "r"})


def test_a_steps_outcome_is_captured_as_a_value_and_only_an_interrupt_goes_through():
    spark = SimpleNamespace()  # no JVM behind it: no death to find
    assert StepOutcome.of(lambda: ["batch"], spark) == StepOutcome(["batch"])
    failed = StepOutcome.of(lambda: 1 / 0, spark)
    assert isinstance(failed.error, ZeroDivisionError) and failed.batches == [] and failed.death is None

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        StepOutcome.of(interrupted, spark)


def test_the_options_are_read_once_and_a_settled_value_is_a_new_one():
    options = Options.of(SimpleNamespace(timeout=None, paths=["a"]))  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="read once and not written \\(--timeout\\)"):
        options.timeout = 60
    settled = but(options, timeout=60.0)
    assert (settled.timeout, settled.paths, options.timeout) == (60.0, ["a"], None)
    assert isinstance(settled, Options)
    with pytest.raises(AttributeError):
        settled.paths = []


def _option_writes(text: str) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.Assign, ast.AugAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            for t in ([*target.elts] if isinstance(target, ast.Tuple) else [target])
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "args"]


def test_no_face_writes_the_options_it_was_given():
    assert _option_writes("args.timeout = 1\ncontract, under, args.pipeline = f()\nargs = but(args)\n") == [1, 2]
    writes = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((ROOT / "conformance").rglob("*.py"))
              for line in _option_writes(path.read_text("utf-8"))]
    assert writes == []


def _long_functions(text: str, limit: int = 60) -> list[str]:
    return [f"{node.name}:{node.lineno} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > limit]


def test_no_function_of_the_kit_is_over_sixty_lines():
    # a run assembled from parts named for what they hold: a function that grows past this is split
    assert _long_functions("def f():\n" + "    x = 1\n" * 60) == ["f:1 (61 lines)"]
    assert _long_functions("def f():\n" + "    x = 1\n" * 59) == []
    found = [f"{path.relative_to(ROOT)}: {fn}" for package in ("conformance", "harness")
             for path in sorted((ROOT / package).rglob("*.py")) for fn in _long_functions(path.read_text("utf-8"))]
    assert found == []
