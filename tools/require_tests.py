"""A pytest plugin for the stages of `./dev test` and `.ci/run` (`-p tools.require_tests`): a stage that
ran no test fails.

pytest exits 5 when it collects nothing, but a stage whose every test was skipped or deselected exits 0:
a green stage that proved nothing. Here a run that passed no test ends with exit 5 and says so, so CI
fails naming the stage (`./dev` prints the stage with its exit code) instead of passing.
"""
from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controller counts every worker's
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter is not None else 0
    if exitstatus == pytest.ExitCode.OK and passed == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        if reporter is not None:
            reporter.write("\n")
            reporter.write_line("require_tests: this stage passed no test (every test skipped or deselected): "
                                "it proves nothing, so it fails (exit 5)", red=True)
