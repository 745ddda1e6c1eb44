"""Per-operator observations on Spark (issue 40, item 2): the bundled scenarios of scenarios/operators/
pass, and each with one number, name or time changed fails at that check, naming what Spark reported.

The mutations are the controls: a check that read nothing, or read the sums where it names an
operator, would pass them.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from eventtime import run_scenario
from eventtime.loader import load_scenario_text
from eventtime.textreport import describe_failure

pytestmark = pytest.mark.spark

FOLDER = Path(__file__).resolve().parents[2] / "scenarios" / "operators"

# (file, text in it, the text that replaces it, a fragment of the failure's message)
MUTATIONS = [
    ("join-then-count-per-operator", "{name: stateStoreSave, state_rows: 1, dropped: 0}",
     "{name: stateStoreSave, state_rows: 2, dropped: 0}", "operator 1 of 2 (stateStoreSave): 1 row(s) in state, expected 2"),
    ("join-then-count-per-operator", "{name: symmetricHashJoin, state_rows: 3, dropped: 1}",
     "{name: symmetricHashJoin, state_rows: 3, dropped: 0}",
     "operator 2 of 2 (symmetricHashJoin): 1 row(s) dropped as late since the previous expect, expected 0"),
    ("join-then-count-per-operator", "        - {name: stateStoreSave, state_rows: 1, dropped: 0}       # (a, [0 s, 10 s))\n"
     "        - {name: symmetricHashJoin, state_rows: 4, dropped: 0}",
     "        - {name: symmetricHashJoin, state_rows: 4, dropped: 0}\n"
     "        - {name: stateStoreSave, state_rows: 1, dropped: 0}",
     "operator 1 of 2 is stateStoreSave, expected symmetricHashJoin (in order: 1. stateStoreSave, 2. symmetricHashJoin)"),
    ("dedup-rows-updated", "      updated: 2                     # a once, b",
     "      updated: 3", "2 row(s) updated in state since the previous expect, expected 3"),
    ("dedup-rows-updated", "{data: false, updated: 0, state_rows: 1}", "{data: false, updated: 1, state_rows: 1}",
     "updated is 0, expected 1"),
    ("batch-watermark-ran-with", '      batch_watermark: "00:00:11"\n      event_time: {watermark: "00:00:11"}',
     '      batch_watermark: "00:00:25"\n      event_time: {watermark: "00:00:11"}',
     "ran with watermark 00:00:11, expected 00:00:25"),
    ("batch-watermark-ran-with", 'event_time: {max: "00:00:07", watermark: initial}',
     'event_time: {max: "00:00:07", watermark: "00:00:02"}', "carry watermark initial (1970-01-01T00:00:00Z), expected 00:00:02"),
    ("no-watermark-no-event-time-stats", "      event_time: none", '      event_time: {max: "01:00:05"}',
     "no batch since the previous expect reported event-time statistics"),
]


def _scenario(name: str, old: str | None = None, new: str | None = None):
    path = FOLDER / f"{name}.scenario.yaml"
    text = path.read_text()
    if old is not None:
        assert text.count(old) == 1, f"{old!r} is not once in {path}"
        text = text.replace(old, new or "")
    return load_scenario_text(text, str(path), file=path)


@pytest.mark.parametrize("name", sorted(p.name.split(".")[0] for p in FOLDER.glob("*.scenario.yaml")))
def test_the_bundled_operator_scenarios_pass(name, spark):
    result = run_scenario(_scenario(name), session=spark)
    assert result.status in ("passed", "not_applicable"), describe_failure(result)


@pytest.mark.parametrize("name, old, new, message", MUTATIONS, ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS)])
def test_a_changed_expectation_fails_naming_what_spark_reported(name, old, new, message, spark):
    result = run_scenario(_scenario(name, old, new), session=spark)
    if result.status == "not_applicable":
        pytest.skip(result.reason)
    assert result.status == "failed", describe_failure(result)
    messages = [f.message for s in result.steps for f in s.failures]
    assert any(message in m for m in messages), messages


def test_shuffle_partitions_reach_the_query_and_the_checkpoint_keeps_them(spark):
    """tumbling/shuffle-partitions-change-nothing: its checks pass with 4 shuffle partitions, and each
    batch's aggregation reports 4 (the restart asking for 2 included); the control, the same scenario
    without its conf, runs with the kit's 1."""
    from eventtime.scenarios import SUITE_DIR

    path = SUITE_DIR / "tumbling" / "shuffle-partitions-change-nothing.scenario.yaml"
    text = path.read_text()

    def partitions(scenario_text):
        result = run_scenario(load_scenario_text(scenario_text, str(path), file=path), session=spark)
        assert result.status == "passed", describe_failure(result)
        return {o.get("numShufflePartitions") for s in result.steps for b in s.batches for o in b.operators}
    assert partitions(text) == {4}
    without = text.replace("  spark.sql.shuffle.partitions: 4\n", "").replace(
        "        spark.sql.shuffle.partitions: 2             # the checkpoint's 4 win\n", "        {}\n")
    assert without != text
    assert partitions(without.replace("      conf:\n        {}\n", "      conf: {}\n")) == {1}
