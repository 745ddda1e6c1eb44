"""The bundled lateness_count pipeline's window function (`eventtime.pipelines.dataflow._Windowing`, the
Python that runs inside applyInPandasWithState) agrees with the dataflow profile's model
(`eventtime.semantics.triggers`) on generated streams, with early_count and accumulating or discarding
panes, driven as Spark drives it: per micro-batch each key with rows is called with the batch's
watermark (the previous batch's), a key without rows only when the watermark is strictly above its
event-time timeout, and the watermark moves at the end of the batch. Spark runs the bundled scenarios
(tests/spark/test_suite.py); this covers the streams no scenario writes out. Controls: the pipeline's
deliberate mistakes of tests/spark/wrong.py, replayed on the same function, disagree."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime.pipelines.dataflow import _Windowing
from eventtime.semantics.dataflow import DataflowQuery
from eventtime.semantics.triggers import TriggeredWindows

S = 1_000_000  # µs
BOUND_MS = 1_000

_LONG = os.environ.get("EVENTTIME_MODEL_EXAMPLES")
FAST = settings(max_examples=int(_LONG or 200), deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.too_slow])

_batches = st.lists(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 60)), min_size=1, max_size=6), max_size=10)
_trigger = st.fixed_dictionaries({"early_count": st.sampled_from([0, 1, 2, 3]), "discarding": st.booleans(),
                                  "lateness_ms": st.sampled_from([0, 3_000, 20_000])})


def _on_spark(batches, windowing: _Windowing) -> list[list[tuple]]:
    """The firings of each data batch and the no-data batch after it, as the pipeline's function makes them."""
    state: dict[str, tuple[dict, int]] = {}
    watermark = 0  # GroupState.getCurrentWatermarkMs before any watermark

    def run_batch(rows: dict[str, list[int]], wm: int) -> list[tuple]:
        out = []
        for key in sorted(set(rows) | {k for k, (_, timeout) in state.items() if timeout < wm}):
            open_ = state[key][0] if key in state else {}
            fired = windowing.timers(open_, wm)
            if key in rows:
                fired += windowing.arrivals(open_, [{"ts_us": rows[key]}], wm)
            out += [(key, *f) for f in fired]
            if open_:
                state[key] = (open_, windowing.next_timeout(open_))
            else:
                state.pop(key, None)
        return out

    per_batch = []
    for batch in batches:
        rows: dict[str, list[int]] = {}
        for key, ts in batch:
            rows.setdefault(key, []).append(ts * S)
        out = run_batch(rows, watermark)
        after = max([watermark] + [ts * 1_000 - BOUND_MS - 1 for _, ts in batch])
        if after > watermark:  # the no-data batch a watermark advance runs
            watermark = after
            out += run_batch({}, watermark)
        per_batch.append(sorted(out))
    return per_batch


def _model(batches, *, early_count: int, discarding: bool, lateness_ms: int) -> list[list[tuple]]:
    windows = TriggeredWindows(length_us=10 * S, lateness_ms=lateness_ms, early_count=early_count,
                               accumulation="discarding" if discarding else "accumulating")
    q = DataflowQuery(("events",), bound_ms=BOUND_MS, length_us=10 * S, lateness_ms=lateness_ms, clock_start_ms=0,
                      trigger_ms=None, windows=windows)
    q.start()
    per_batch = []
    for batch in batches:
        q.add("events", [{"key": key, "ts": ts * S} for key, ts in batch])
        obs = q.process()
        per_batch.append(sorted((key, start, count, kind, result_ts)
                                for b in obs for key, start, _end, count, kind, result_ts in b.rows))
    return per_batch


@FAST
@given(_batches, _trigger)
def test_the_pipelines_window_function_fires_as_the_model_does(batches, trigger):
    windowing = _Windowing(10 * S, trigger["lateness_ms"], early_count=trigger["early_count"],
                           discarding=trigger["discarding"])
    assert _on_spark(batches, windowing) == _model(batches, **trigger)


class _PaneNeverRestarts(_Windowing):  # tests/spark/wrong.py: lateness_pane_never_restarts
    def fire(self, start, w, firing):
        pane = w[2]
        out = super().fire(start, w, firing)
        w[2] = pane
        return out


class _OnTimeSkipsEmptyPane(_Windowing):  # tests/spark/wrong.py: lateness_on_time_skips_empty_pane
    def timers(self, open_, watermark):
        return [f for f in super().timers(open_, watermark) if f[1] or f[2] != "on_time"]


# the first batches of scenarios/dataflow/early-count-batch-boundary-empty-pane.scenario.yaml
_SCENARIO = [[("a", 1), ("a", 2), ("a", 3), ("b", 4), ("a", 11)], [("a", 12)], [("b", 25)], [("a", 13)]]


@pytest.mark.parametrize("wrong, discarding", [
    (_PaneNeverRestarts, True), (_PaneNeverRestarts, False), (_OnTimeSkipsEmptyPane, True)])
def test_controls_the_deliberate_mistakes_disagree(wrong, discarding):
    trigger = {"early_count": 2, "discarding": discarding, "lateness_ms": 5_000}
    right = _Windowing(10 * S, 5_000, early_count=2, discarding=discarding)
    assert _on_spark(_SCENARIO, right) == _model(_SCENARIO, **trigger)
    assert _on_spark(_SCENARIO, wrong(10 * S, 5_000, early_count=2, discarding=discarding)) != _model(_SCENARIO, **trigger)
    # accumulation ignored (lateness_discarding_ignored)
    if discarding:
        assert _on_spark(_SCENARIO, _Windowing(10 * S, 5_000, early_count=2)) != _model(_SCENARIO, **trigger)


@pytest.mark.parametrize("name", ["early_delay", "late_delay"])
def test_a_processing_time_trigger_is_refused_by_the_pipeline_never_ignored(name):
    from eventtime.pipelines.dataflow import lateness_count
    from eventtime.spec import Params
    from eventtime.timeparse import Duration

    params = Params({"bound": Duration(0), "allowed_lateness": Duration(0), "window": Duration(10 * S), "early_count": 0,
                     "early_delay": Duration(0), "late_delay": Duration(0), "accumulation": "accumulating",
                     name: Duration(10 * S, text="10 seconds")})
    with pytest.raises(ValueError, match=f"no processing-time trigger: parameter '{name}' is 10 seconds"):
        lateness_count({}, params)  # refused before it reads a source
