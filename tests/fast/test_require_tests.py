"""tools/require_tests.py, the plugin every stage of `./dev test` and `.ci/run` runs under: a stage that
passed no test fails with pytest's "no tests ran" exit code, and one that passed a test does not."""
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def stage(pytester, monkeypatch):
    # `tools.require_tests` found as `python -m pytest` finds it in the checkout
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    pytester.makepyfile(test_stage="""
        import pytest

        def test_skipped():
            pytest.skip("not here")

        def test_passes():
            pass
    """)
    return lambda *args: pytester.runpytest_subprocess("-p", "tools.require_tests", "-p", "no:cacheprovider", *args)


def test_a_stage_that_passed_a_test_passes(stage):
    result = stage()
    assert result.ret == 0
    result.assert_outcomes(passed=1, skipped=1)


@pytest.mark.parametrize("args", [["-k", "skipped"], ["-k", "nothing_has_this_name"]], ids=["all-skipped", "none-selected"])
def test_a_stage_that_passed_no_test_fails_with_exit_5_saying_so(stage, args):
    result = stage(*args)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    if args[1] == "skipped":  # pytest itself says nothing when everything was skipped: the plugin does
        result.stdout.fnmatch_lines(["require_tests: this stage passed no test*"])


def test_the_plugin_is_not_needed_for_the_control(pytester):
    """Without the plugin, a stage whose tests were all skipped passes: what the plugin is for."""
    pytester.makepyfile(test_stage="import pytest\n\ndef test_skipped():\n    pytest.skip('not here')\n")
    assert pytester.runpytest_subprocess("-p", "no:cacheprovider").ret == 0
