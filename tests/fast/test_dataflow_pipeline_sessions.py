"""The bundled session_lateness_count pipeline's session function (`eventtime.pipelines.dataflow._Sessions`,
the Python that runs inside applyInPandasWithState) agrees with the dataflow profile's model
(`eventtime.semantics.triggers`, sessions that merge) on generated streams, with early_count and
accumulating or discarding panes, driven as Spark drives it: per micro-batch each key with rows is
called with the batch's watermark (the previous batch's), a key without rows only when the watermark is
strictly above its event-time timeout, and the watermark moves at the end of the batch (the model's
periodic generator). Spark runs the bundled scenarios (tests/spark/test_suite.py); this covers the
streams no scenario writes out. Controls: the pipeline's deliberate mistakes of tests/spark/wrong.py,
replayed on the same function, disagree."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime.pipelines.dataflow import _Sessions
from eventtime.semantics.dataflow import DataflowQuery
from eventtime.semantics.triggers import TriggeredWindows

S = 1_000_000  # µs
BOUND_MS = 1_000
GAP = 5 * S

_LONG = os.environ.get("EVENTTIME_MODEL_EXAMPLES")
FAST = settings(max_examples=int(_LONG or 200), deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.too_slow])

_batches = st.lists(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 60)), min_size=1, max_size=6), max_size=10)
_trigger = st.fixed_dictionaries({"early_count": st.sampled_from([0, 1, 2, 3]), "discarding": st.booleans(),
                                  "lateness_ms": st.sampled_from([0, 3_000, 20_000])})


def _on_spark(batches, sessions: _Sessions, bound_ms: int = BOUND_MS) -> list[list[tuple]]:
    """The firings of each data batch and the no-data batch after it, as the pipeline's function makes
    them; the state goes through JSON between batches, as GroupState keeps it."""
    state: dict[str, tuple[str, int]] = {}
    watermark = 0  # GroupState.getCurrentWatermarkMs before any watermark

    def run_batch(rows: dict[str, list[int]], wm: int) -> list[tuple]:
        out = []
        for key in sorted(set(rows) | {k for k, (_, timeout) in state.items() if timeout < wm}):
            open_ = json.loads(state[key][0]) if key in state else []
            fired = sessions.timers(open_, wm)
            if key in rows:
                fired += sessions.arrivals(open_, [{"ts_us": rows[key]}], wm)
            out += [(key, *f) for f in fired]
            if open_:
                timeout = sessions.next_timeout(open_)
                assert timeout >= wm, "GroupState refuses a timeout below the watermark"
                state[key] = (json.dumps(open_), timeout)
            else:
                state.pop(key, None)
        return out

    per_batch = []
    for batch in batches:
        rows: dict[str, list[int]] = {}
        for key, ts in batch:
            rows.setdefault(key, []).append(ts * S)
        out = run_batch(rows, watermark)
        after = max([watermark] + [ts * 1_000 - bound_ms - 1 for _, ts in batch])
        if after > watermark:  # the no-data batch a watermark advance runs
            watermark = after
            out += run_batch({}, watermark)
        per_batch.append(sorted(out))
    return per_batch


def _model(batches, *, early_count: int, discarding: bool, lateness_ms: int, bound_ms: int = BOUND_MS,
           gap_us: int = GAP) -> list[list[tuple]]:
    windows = TriggeredWindows(gap_us=gap_us, lateness_ms=lateness_ms, early_count=early_count,
                               accumulation="discarding" if discarding else "accumulating")
    q = DataflowQuery(("events",), bound_ms=bound_ms, length_us=0, lateness_ms=lateness_ms, clock_start_ms=0,
                      trigger_ms=None, windows=windows)
    q.start()
    per_batch = []
    for batch in batches:
        q.add("events", [{"key": key, "ts": ts * S} for key, ts in batch])
        obs = q.process()
        per_batch.append(sorted(row for b in obs for row in b.rows))
    return per_batch


def _sessions(trigger: dict, cls: type = _Sessions, gap_us: int = GAP) -> _Sessions:
    return cls(gap_us, trigger["lateness_ms"], early_count=trigger["early_count"], discarding=trigger["discarding"])


@FAST
@given(_batches, _trigger)
def test_the_pipelines_session_function_fires_as_the_model_does(batches, trigger):
    assert _on_spark(batches, _sessions(trigger)) == _model(batches, **trigger)


def test_a_bridging_element_merges_two_fired_sessions_judged_on_the_merged_session():
    """session-late-element-bridges-two-sessions' and session-late-merge-judged-on-the-merged-session's
    core, by hand: the element's own window is past the allowed lateness, the session it bridges into is not."""
    s = _Sessions(10 * S, 15_000)
    open_: list[list] = []
    assert s.arrivals(open_, [{"ts_us": [20 * S]}], 0) == []
    assert s.timers(open_, 39_999) == [(20 * S, 30 * S, 1, "on_time", 29_999_000)]
    # [12, 22) alone: 21.999 + 15 <= 39.999, the side output; merged [12, 30): 29.999 + 15 > 39.999
    assert s.arrivals(open_, [{"ts_us": [12 * S]}], 39_999) == [(12 * S, 30 * S, 2, "late", 29_999_000)]
    assert s.arrivals(open_, [{"ts_us": [1 * S]}], 39_999) == [(1 * S, 11 * S, 1, "dropped", 1 * S)]
    assert open_ == [[12 * S, 30 * S, 2, 0, True]]
    assert s.next_timeout(open_) == 44_999 - 1  # the cleanup at end - 1 ms + allowed lateness
    assert s.timers(open_, 44_999) == [] and open_ == []


class _NeverBridges(_Sessions):  # tests/spark/wrong.py: session_lateness_never_bridges
    def merged(self, open_, us):
        session, into = super().merged(open_, us)
        if len(into) < 2:
            return session, into
        first = min(into)
        return [min(first[0], us), max(first[1], us + self.gap_us), *first[2:]], [first]


class _JudgedPerElement(_Sessions):  # tests/spark/wrong.py: session_lateness_judged_per_element
    def arrivals(self, open_, frames, watermark):
        out: list[tuple] = []
        for frame in frames:
            for us in frame["ts_us"]:
                if self.max_ts_ms(int(us) + self.gap_us) + self.lateness_ms <= watermark:
                    out.append((int(us), int(us) + self.gap_us, 1, "dropped", int(us)))
                else:
                    out += super().arrivals(open_, [{"ts_us": [us]}], watermark)
        return out


class _LatePastLateness(_Sessions):  # tests/spark/wrong.py: session_lateness_late_at_the_boundary
    def __init__(self, gap_us, lateness_ms, **kw):
        super().__init__(gap_us, lateness_ms + 1, **kw)


# the events of scenarios/dataflow/session-late-element-bridges-two-sessions.scenario.yaml (gap 10 s,
# bound 0, 1 minute of lateness) and of session-late-merge-judged-on-the-merged-session (15 s of lateness)
_BRIDGES = [[("a", 1), ("a", 18), ("b", 50)], [("a", 9)], [("b", 90)], [("a", 20)]]
_JUDGED = [[("a", 20), ("b", 40)], [("a", 12)], [("a", 1)], [("b", 60)]]


@pytest.mark.parametrize("wrong, batches, lateness_ms", [
    (_NeverBridges, _BRIDGES, 60_000), (_JudgedPerElement, _JUDGED, 15_000), (_LatePastLateness, _BRIDGES, 60_000)])
def test_controls_the_deliberate_mistakes_disagree(wrong, batches, lateness_ms):
    trigger = {"early_count": 0, "discarding": False, "lateness_ms": lateness_ms}
    model = _model(batches, **trigger, bound_ms=0, gap_us=10 * S)  # bound 0, as the scenarios
    assert _on_spark(batches, _sessions(trigger, gap_us=10 * S), bound_ms=0) == model
    assert _on_spark(batches, _sessions(trigger, wrong, gap_us=10 * S), bound_ms=0) != model


@pytest.mark.parametrize("name", ["early_delay", "late_delay"])
def test_a_processing_time_trigger_is_refused_by_the_pipeline_never_ignored(name):
    from eventtime.pipelines.dataflow import session_lateness_count
    from eventtime.spec import Params
    from eventtime.timeparse import Duration

    params = Params({"bound": Duration(0), "allowed_lateness": Duration(0), "gap": Duration(10 * S), "early_count": 0,
                     "early_delay": Duration(0), "late_delay": Duration(0), "accumulation": "accumulating",
                     name: Duration(10 * S, text="10 seconds")})
    with pytest.raises(ValueError, match=f"no processing-time trigger: parameter '{name}' is 10 seconds"):
        session_lateness_count({}, params)  # refused before it reads a source
