"""The rule every face applies (`projectconfig.nothing_judged`): a contract and implementation whose every
scenario was not applicable had nothing judged, unless the user allowed it. The faces on Spark:
tests/spark/test_nothing_judged.py."""
from __future__ import annotations

import pytest

from eventtime.projectconfig import SettingsError, allowed_not_applicable, nothing_judged

RECORDS = [  # (contract, implementation, scenario, file, judged, why not)
    ("tumbling_count", "jobs:updates", "a", "tests/a.scenario.yaml", False, "the implementation supports update"),
    ("tumbling_count", "jobs:updates", "b", "tests/b.scenario.yaml", False, "needs Spark >=99, this is 4.3.0"),
    ("tumbling_count", "jobs:count", "a", "tests/a.scenario.yaml", True, None),
    ("tumbling_count", "jobs:count", "b", "tests/b.scenario.yaml", False, "needs Spark >=99, this is 4.3.0"),
    ("dedup", "jobs:dedup", "c", "tests/c.scenario.yaml", True, None),
]


def test_a_pipeline_whose_every_scenario_was_not_applicable_had_nothing_judged():
    (group,) = nothing_judged(RECORDS)
    assert (group.contract, group.implementation) == ("tumbling_count", "jobs:updates")
    said = group.message("--allow-not-applicable")
    assert said.startswith("contract 'tumbling_count' [jobs:updates]: nothing judged: all 2 of its scenarios were "
                           "not applicable"), said
    assert "  a (tests/a.scenario.yaml): the implementation supports update" in said
    assert "  b (tests/b.scenario.yaml): needs Spark >=99, this is 4.3.0" in said
    assert "say so: --allow-not-applicable tumbling_count" in said


def test_control_one_judged_scenario_is_enough_and_an_allowed_contract_is_not_said():
    judged = [(c, i, s, f, True if s == "b" and i == "jobs:updates" else j, w) for c, i, s, f, j, w in RECORDS]
    assert nothing_judged(judged) == []
    assert nothing_judged(RECORDS, allowed={"tumbling_count"}) == []
    assert nothing_judged(RECORDS, allowed={"*"}) == []
    assert len(nothing_judged(RECORDS, allowed={"dedup"})) == 1  # another contract's allowance is not this one's


def test_the_allowed_contracts_are_names_from_the_command_line_and_the_ini_key():
    assert allowed_not_applicable(["a, b", "c  d", "*"], "--allow-not-applicable") == {"a", "b", "c", "d", "*"}
    with pytest.raises(SettingsError, match=r"--allow-not-applicable: 'tumbling-count' is not a contract's name"):
        allowed_not_applicable(["tumbling-count"], "--allow-not-applicable")
