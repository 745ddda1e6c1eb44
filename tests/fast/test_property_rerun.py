"""`exactly-once-rerun`'s two runs without Spark: the batch run again and the plain restart are each
followed by a `process`, so both timelines run the no-data batch before the next data batch (on a query
of several stateful operators Spark judges lateness by the previous batch's watermark)."""
from __future__ import annotations

import textwrap
from collections import Counter

from eventtime import properties as P
from eventtime.loader import load_scenario_text
from eventtime.registry import CONTRACTS

SCENARIO = textwrap.dedent("""\
    scenario: generated-1
    description: two data batches
    contract: chained_window_count
    params: {window: 5s, outer_window: 5s, watermark_delay: 0s}
    steps:
      - add: {events: [[a, "00:00:00"], [b, "00:00:00"]]}
      - process
      - add: {events: [[a, "00:00:01"], [a, "23:59:50"]]}
      - process
    """)


class _Same:
    """A run observation that is usable and equal to any other."""

    applicable, died, mismatch, stream = True, None, None, ()

    def differences(self, other: object) -> list[str]:
        return []


def _judged(point: int, kind: str) -> tuple[list[str], P.PropertyReport]:
    texts: list[str] = []
    report = P.PropertyReport("exactly-once-rerun")

    def run(text: str) -> _Same:
        texts.append(text)
        return _Same()

    judge = P._PropertyJudge(report, run, ["- process"], CONTRACTS["chained_window_count"], None,
                             (None, None, (), None))
    judge.judge_restart(load_scenario_text(SCENARIO, "s.scenario.yaml"), "", point, kind)
    return texts, report


def _steps(text: str) -> list[str]:
    """Every step but the adds, in order."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("- ")
            and not line.strip().startswith("- add")]


def test_the_batch_run_again_and_the_plain_restart_are_each_followed_by_a_process():
    for kind, restart in (("same", "- restart"), ("new", "- restart: {session: new}")):
        texts, report = _judged(2, kind)
        assert [_steps(t) for t in texts] == [
            ["- process", restart, "- process", "- process", "- process"],
            ["- process", "- restart: {rerun_last_batch: true}", "- process", "- process", "- process"]], texts
        assert report.held_on == 1 and report.not_judged == Counter()


def test_control_the_steps_read_back_see_where_the_restart_is():
    texts, _ = _judged(4, "same")
    assert _steps(texts[0]) == ["- process", "- process", "- restart", "- process", "- process"], texts
