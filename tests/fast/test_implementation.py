"""`@implementation(...)`: what an implementation declares, and how runs and judging honour it."""
from __future__ import annotations

import pytest

from eventtime.userpipeline import ImplementationInfo, implementation, implementation_info
from eventtime.judge import Observed, judge
from eventtime.loader import load_scenario_text


def test_undecorated_function_declares_nothing():
    info = implementation_info(lambda s, p: None)
    assert info == ImplementationInfo()
    assert info.not_applicable({"output_mode": "complete"}, frozenset()) is None


def test_supports_makes_other_parameter_values_not_applicable():
    @implementation(supports={"output_mode": ["append", "update"]})
    def fn(sources, params):
        return None

    info = implementation_info(fn)
    assert info.not_applicable({"output_mode": "append"}, frozenset()) is None
    reason = info.not_applicable({"output_mode": "complete"}, frozenset())
    assert reason == "the implementation supports output_mode append, update, the scenario uses complete"


def test_requires_names_the_missing_feature():
    @implementation(requires=["transform_with_state"])
    def fn(sources, params):
        return None

    assert "transform_with_state" in implementation_info(fn).not_applicable({}, frozenset())
    assert implementation_info(fn).not_applicable({}, frozenset({"transform_with_state"})) is None


@pytest.mark.parametrize("kwargs, message", [
    ({"requires": ["time_travel"]}, "unknown Spark feature 'time_travel'"),
    ({"unjudged": ["rows"]}, "unjudged takes dropped, state_rows, not 'rows'"),
    ({"unjudged": ["state_rows"]}, "say in `note` why"),
])
def test_bad_declarations_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        implementation(**kwargs)


class _Batch:
    def __init__(self, state_rows, dropped=0):
        self.batch_id, self.rows, self.watermark_before_ms, self.watermark_after_ms = 0, [], 0, 0
        self.dropped, self.state_rows, self.input_rows, self.event_time = dropped, state_rows, 1, {}

    has_data = True


def test_unjudged_checks_are_not_looked_at_but_the_others_are(base_scenario):
    text = base_scenario.replace('      watermark: "initial"\n', '      watermark: "initial"\n      state_rows: 3\n'
                                 '      dropped: 1\n')
    sc = load_scenario_text(text, "s.yaml")
    step = sc.steps[-1]
    obs = Observed([_Batch(state_rows=1)], [_Batch(state_rows=1)], "append", ["key", "window_start", "window_end", "count"])
    assert {f.check for f in judge(step, obs, sc)} == {"state_rows", "dropped"}
    assert {f.check for f in judge(step, obs, sc, frozenset({"state_rows"}))} == {"dropped"}
