"""`pytest --eventtime-snapshot=create|fix|all`: the snapshot of the scenario items a session ran
(`eventtime.snapshot` plans, reviews and writes; this is its pytest side, imported only by pytest).

Each item's run becomes an `Observation` in the process that ran it. Under pytest-xdist the items of
one file may run on different workers: each worker hands its observations to the controller when it
ends (xdist's `workeroutput`), and only the controller plans, shows the diffs and writes, once per
file, by the same review rules as `eventtime run --snapshot` (`--eventtime-snapshot-yes`, the prompt on
a terminal, never in CI).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .results import ScenarioResult
from .snapshot import MODES, OPTIONS, Observation, Review, observe, plan, settle, terminal_prompt

__all__ = ["SnapshotPlugin", "register_pytest", "add_pytest_options"]

_WORKER_KEY = "eventtime_snapshot"  # a pytest-xdist worker's observations, in its workeroutput


class SnapshotPlugin:
    """The pytest side. Each scenario item's run becomes an `Observation` where it ran; a pytest-xdist
    worker hands its observations to the controller when it ends (its `workeroutput`), so the items of
    one file may run on different workers. At the end of the session the controller (or the only
    process) plans each file from all its observations, shows the diffs once and writes each file once,
    as decided (`settle`); a snapshot not written fails the session (exit status 1)."""

    def __init__(self, config: Any, settings: Any):
        self.config, self.settings = config, settings  # the plugin's settings: the contracts it looks up
        self.mode = config.getoption("eventtime_snapshot")
        self.observations: list[Observation] = []
        self.ran: dict[str, int] = {}  # a file's node id -> how many of its items ran (the controller's count)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        yield  # the item's result is known now, whether it passed, failed or did not apply
        result = getattr(item, "result", None)
        if isinstance(result, ScenarioResult):
            obs = observe(Path(item.path), result.scenario.path, result, self.mode,
                          on_spark=self.config.getoption("eventtime_snapshot_on_spark"))
            obs.path = _file_id(item.nodeid) + "\0" + obs.path  # which items of the file it stands for
            self.observations.append(obs)

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Count the items of each file that ran (here or on a worker): one whose run ended without an
        observation (a worker that crashed, a setup that failed) keeps its file from being written."""
        if report.when == "call" or (report.when == "setup" and report.failed):
            key = _file_id(report.nodeid)
            self.ran[key] = self.ran.get(key, 0) + 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist, on the controller: a worker ended, with the observations it made."""
        sent = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if sent:
            self.observations += [Observation.from_dict(d) for d in json.loads(sent)]

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):  # a worker: the controller plans and writes
            self.config.workeroutput[_WORKER_KEY] = json.dumps([o.to_dict() for o in self.observations])
            return
        if not self.observations:
            return
        by_file: dict[str, list[Observation]] = {}
        for obs in self.observations:
            key, _, path = obs.path.partition("\0")
            by_file.setdefault(key, []).append(replace(obs, path=path))
        plans = [plan(Path(obs[0].path), obs[0].shown, obs, self.mode, contracts=self.settings.contracts,
                      unfinished=max(0, self.ran.get(key, 0) - len(obs)))
                 for key, obs in by_file.items()]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        write = reporter.write_line if reporter is not None else print
        if reporter is not None:
            reporter.section("eventtime snapshot")
        capture = self.config.pluginmanager.get_plugin("capturemanager")

        def ask(question: str) -> str:
            with capture.global_and_fixture_disabled():
                return input(question)
        prompt = ask if terminal_prompt() is not None and capture is not None else None
        outcomes = [o for obs in by_file.values() for o in obs]
        if not settle(Review(plans, self.mode, write), outcomes, self.config.getoption("eventtime_snapshot_yes"),
                      prompt, write):
            session.exitstatus = 1


def _file_id(nodeid: str) -> str:
    """The file part of a pytest node id (the same on the controller and on every xdist worker)."""
    return nodeid.split("::")[0]


def register_pytest(config: Any, settings: Any) -> None:
    """`--eventtime-snapshot`: the plugin that writes the snapshot at the end of the session (under
    pytest-xdist, on the controller, from what every worker observed)."""
    if not config.getoption("eventtime_snapshot"):
        raise pytest.UsageError("--eventtime-snapshot-yes and --eventtime-snapshot-on-spark go with "
                                "--eventtime-snapshot=create|fix|all")
    config.pluginmanager.register(SnapshotPlugin(config, settings), "eventtime-snapshot")


def add_pytest_options(group: Any) -> None:
    """The options pytest takes for a snapshot (their rules: `eventtime.snapshot.OPTIONS`)."""
    group.addoption("--eventtime-snapshot", choices=MODES, default=None, help=OPTIONS.mode)
    group.addoption("--eventtime-snapshot-yes", action="store_true", help=f"with --eventtime-snapshot: {OPTIONS.yes}")
    group.addoption("--eventtime-snapshot-on-spark", action="store_true",
                    help=f"with --eventtime-snapshot fix: {OPTIONS.on_spark}")
