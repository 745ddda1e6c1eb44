"""`expect: {state: ...}` without Spark: the loader reads it at its places, the judge compares a state
table by the types the reader gives, and the model gives the state of a window count, a session window,
each side of a join, a transformWithState variable and dropDuplicates: the bundled state scenarios agree
with it, and each with one key or value changed (CONTROLS, run on Spark by tests/spark/test_state.py)
fails."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from eventtime.loader import ScenarioInvalid, load_scenario_text
from eventtime.scenarios import SUITE_DIR
from eventtime.semantics import check_scenario
from eventtime.statecheck import judge_state

T0 = 1_704_067_200 * 1_000_000  # 2024-01-01T00:00:00Z in µs

DEDUP = """\
scenario: s
description: d
contract: dedup
params: {watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:10"], [b, "00:00:12"]]}
  - process
  - expect:
      state:
        rows:
          - {key.id: a, key.ts: "00:00:10"}
          - {key.id: b, key.ts: "00:00:12"}
"""


@dataclass
class Table:
    operator: str
    fields: dict
    rows: list


FIELDS = {"key.id": "string", "key.ts": "timestamp", "value.__dummy__": "void"}


def test_the_loader_reads_a_state_check_at_its_places():
    sc = load_scenario_text(DEDUP, "s.yaml")
    check = sc.steps[-1].state
    assert check.columns == ("key.id", "key.ts") and check.rows == (("a", "00:00:10"), ("b", "00:00:12"))
    assert [w.line for w in check.row_wheres] == [11, 12] and check.operator is None
    assert "state_reader" in sc.requires_features  # not applicable on a Spark without the reader


@pytest.mark.parametrize("old, new, line, phrase", [
    ("          - {key.id: b, key.ts: \"00:00:12\"}", "          - {key.id: b}", 12, "this one has no key.ts"),
    ("{key.id: a,", "{id: a,", 11, "a state field is a path into the state reader's `key` or `value` struct, such "
     "as key.id or value.count, not 'id'"),
    ("        rows:", "        side: middle\n        rows:", 10, "middle"),
])
def test_a_state_check_problem_is_at_its_line(old, new, line, phrase):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(DEDUP.replace(old, new), "s.yaml")
    assert any(p.line == line and phrase in p.message for p in info.value.problems), info.value.problems


def test_judge_state_reads_values_by_the_readers_types():
    check = load_scenario_text(DEDUP, "s.yaml").steps[-1].state
    sc = load_scenario_text(DEDUP, "s.yaml")
    right = Table("dedupe (operator 0)", FIELDS, [("b", T0 + 12_000_000), ("a", T0 + 10_000_000)])
    assert judge_state(check, right, sc) == []
    [f] = judge_state(check, Table("dedupe (operator 0)", FIELDS, [("a", T0 + 10_000_000)]), sc)  # control
    assert f.message == "the state of dedupe (operator 0): 1 missing, 0 unexpected"
    assert f.missing == [("b", T0 + 12_000_000)] and f.types == ("string", "timestamp")
    [f] = judge_state(check, "no state yet", sc)
    assert f.message == "cannot read the state: no state yet"
    failures = judge_state(check, Table("x", {**FIELDS, "key.ts": "bigint"}, []), sc)  # the text is not a number
    assert [f.where.line for f in failures] == [11, 12] and "state field 'key.ts' is long" in failures[0].message


def test_the_model_gives_dedup_state_and_says_what_it_does_not_cover():
    assert check_scenario(load_scenario_text(DEDUP, "s.yaml")).status == "passed"
    wrong = check_scenario(load_scenario_text(DEDUP.replace('{key.id: b, key.ts: "00:00:12"}',
                                                            '{key.id: c, key.ts: "00:00:12"}'), "s.yaml"))
    assert wrong.status == "failed"  # control: the model's state holds b, not c
    side = check_scenario(load_scenario_text(DEDUP.replace("        rows:", "        side: left\n        rows:"), "s.yaml"))
    assert side.status == "not_applicable" and "not of this operator or store" in side.reason


# The bundled state scenarios, each with one key or value changed: (file, old, new, what Spark says).
CONTROLS = {
    "window": ("tumbling/state-keeps-open-windows.scenario.yaml",
               '{key.key: b, key.window.start: "00:00:10", value.count: 2}',
               '{key.key: b, key.window.start: "00:00:10", value.count: 3}',
               "the state of stateStoreSave (operator 0): 1 missing, 1 unexpected"),
    "session": ("session/state-keeps-open-sessions.scenario.yaml",
                'key.sessionStartTime: "00:00:14"', 'key.sessionStartTime: "00:00:12"',
                "the state of sessionWindowStateStoreSaveExec (operator 0): 1 missing, 1 unexpected"),
    "join": ("join/state-per-side.scenario.yaml",
             "rows: [{key.field0: b}, {key.field0: d}]", "rows: [{key.field0: c}, {key.field0: d}]",
             "the state of symmetricHashJoin (operator 0, right side): 1 missing, 1 unexpected"),
    "transform_with_state": ("stateful/hold-timer-state-variable.scenario.yaml",
                             "[{key.key: a, value.n: 1}, {key.key: b, value.n: 2}]",
                             "[{key.key: a, value.n: 2}, {key.key: b, value.n: 2}]",
                             "(operator 0, variable 'group'): 1 missing, 1 unexpected"),
}


def control_text(name: str) -> tuple[str, str]:
    """The bundled scenario `name` of CONTROLS with its one change: (its path, the changed text)."""
    file, old, new, _ = CONTROLS[name]
    path = SUITE_DIR / file
    text = path.read_text()
    assert text.count(old) == 1, old
    return str(path), text.replace(old, new)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_a_bundled_state_scenario_with_one_value_changed_fails_on_the_model(name):
    path, text = control_text(name)
    assert check_scenario(load_scenario_text((SUITE_DIR / CONTROLS[name][0]).read_text(), path)).status == "passed"
    result = check_scenario(load_scenario_text(text, path))
    [failure] = [f for s in result.steps for f in s.failures]
    assert result.status == "failed" and failure.check == "state", result.reason
    assert failure.message.endswith(CONTROLS[name][3].split("(", 1)[1]), failure.message  # Spark names it its way
