"""`pytest --eventtime-teeth`: each passing scenario item's checks judged again with mutated expectations
(`eventtime.teeth`, the rule `eventtime run --teeth` applies); imported only by pytest.

An item whose run passed but holds a vacuous or weak check fails, its report naming each such check at
its file:line. Each item's figures travel in its report (`user_properties`), so under pytest-xdist the
controller prints one line per scenario run and the totals at the end of the session, as `run --teeth`
prints them.
"""
from __future__ import annotations

import json
from typing import Any

from .teeth import Teeth, examine, report_lines, totals_line

__all__ = ["add_pytest_option", "register_pytest", "bite", "TeethMissing"]

_KEY = "eventtime_teeth"  # an item's teeth, as `Teeth.to_dict()` plus its printed lines, in its user_properties


class TeethMissing(Exception):
    """A passing run with a vacuous or weak check: its report lines."""


def add_pytest_option(group: Any) -> None:
    group.addoption("--eventtime-teeth", action="store_true", default=False,
                    help="also ask whether each check of a passing scenario could have failed: its expectations "
                         "mutated and judged again on what the run observed; a vacuous or weak check fails the "
                         "item (docs/teeth.md)")


def bite(item: Any, result: Any) -> None:
    """Examine the passing `result` of a scenario item; record its figures; raise TeethMissing when a
    check is vacuous or weak."""
    teeth: Teeth = examine(result)
    lines = report_lines(teeth, result.scenario.lines)
    item.user_properties.append((_KEY, json.dumps({**teeth.to_dict(), "lines": lines})))
    if teeth.toothless:
        n = len(teeth.vacuous) + len(teeth.weak)
        raise TeethMissing("\n".join([f"the scenario passed, but {n} of its checks {'is' if n == 1 else 'are'} "
                                       "vacuous or weak (--eventtime-teeth, docs/teeth.md):", *lines]))


class _TeethSummary:
    """On the controller (or the only process): the items' teeth, printed after the run."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call":
            return
        for key, value in getattr(report, "user_properties", ()):
            if key == _KEY:
                self.records.append(json.loads(value))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.section("eventtime teeth")
        for record in self.records:
            terminalreporter.write_line(record["lines"][0])
        terminalreporter.write_line(totals_line(self.records))


def register_pytest(config: Any) -> None:
    if not hasattr(config, "workerinput"):  # an xdist worker's reports reach the controller
        config.pluginmanager.register(_TeethSummary(), "eventtime-teeth")
