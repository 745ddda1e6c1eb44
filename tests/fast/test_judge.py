"""The judge: row multisets with float tolerance, and each `expect` check against fake observations."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from eventtime.coltypes import parse_type
from eventtime.judge import Observed, format_value, judge, match_rows
from eventtime.loader import load_scenario_text
from eventtime.spec import BatchCheck, EventTimeCheck, ExpectStep, FailureCheck, OperatorCheck, RowsCheck, Where

S = 1_000_000
T0 = 1_704_067_200 * S  # 2024-01-01T00:00:00Z, the scenario's date, in microseconds
T0_MS = T0 // 1000
W = Where("s.yaml", 20, 5)
ROW_W = Where("s.yaml", 21, 7)
STRING, DOUBLE = parse_type("string"), parse_type("double")


def ts(seconds: float) -> int:
    """A timestamp value (µs) on the scenario's date."""
    return T0 + int(seconds * S)


def ms(seconds: float) -> int:
    """The same instant in epoch milliseconds, as the harness reports watermarks."""
    return T0_MS + int(seconds * 1000)


@dataclass
class FakeBatch:
    """Just the attributes of the harness's BatchObservation that the judge reads."""

    batch_id: int
    rows: list = field(default_factory=list)
    watermark_before_ms: int | None = 0
    watermark_after_ms: int | None = 0
    dropped: int = 0
    state_rows: int = 0
    input_rows: int = 1
    event_time: dict = field(default_factory=dict)
    operators: list = field(default_factory=list)

    @property
    def has_data(self) -> bool:
        return self.input_rows > 0


@dataclass
class FakeFailure:
    text: str
    error_classes: list = field(default_factory=list)
    exception_names: list = field(default_factory=list)

    def __str__(self) -> str:
        return self.text


@pytest.fixture(scope="module")
def scenario(base_scenario):
    return load_scenario_text(base_scenario, "s.yaml")


def observed(since_expect, history=None, mode="append", failure=None) -> Observed:
    history = list(since_expect) if history is None else history
    return Observed(since_expect, history, mode, ["key", "window_start", "window_end", "count"], failure=failure)


def win(key, start, end, count):
    return (key, ts(start), ts(end), count)


# -- match_rows ----------------------------------------------------------------------------------

def test_match_rows_is_a_multiset_comparison():
    a, b = ("a", 1), ("b", 2)
    assert match_rows([a, b], [b, a]) == ([], [])
    assert match_rows([a, a, b], [a, b]) == ([a], [])
    assert match_rows([a, b], [a, a, b]) == ([], [a])
    assert match_rows([a], [b]) == ([a], [b])
    assert match_rows([], []) == ([], [])
    assert match_rows([], [a]) == ([], [a])


def test_match_rows_ordered_compares_position_by_position():
    a, b = ("a", 1), ("b", 2)
    assert match_rows([a, b], [a, b], ordered=True) == ([], [])
    assert match_rows([a, b], [b, a], ordered=True) == ([a, b], [b, a])
    assert match_rows([a], [a, a], ordered=True) == ([a], [a, a])
    assert match_rows([(0.1 + 0.2,)], [(0.3,)], ordered=True) == ([], [])


def test_match_rows_with_float_tolerance():
    assert match_rows([("a", 0.3)], [("a", 0.1 + 0.2)]) == ([], [])
    assert match_rows([("a", 1e20)], [("a", 1e20 + 1e10)]) == ([], [])  # relative
    assert match_rows([("a", 0.0)], [("a", 1e-13)]) == ([], [])  # absolute near zero
    assert match_rows([("a", 1.0)], [("a", 1.0001)]) == ([("a", 1.0)], [("a", 1.0001)])
    assert match_rows([("a", 0.0)], [("a", 1e-6)]) == ([("a", 0.0)], [("a", 1e-6)])
    assert match_rows([("a", 2)], [("a", 2.0)]) == ([], [])
    assert match_rows([("a", 1.5), ("a", 1.5)], [("a", 1.5)]) == ([("a", 1.5)], [])


def test_match_rows_nan_and_null():
    nan = float("nan")
    missing, unexpected = match_rows([("a", nan)], [("a", nan)])
    assert (missing, unexpected) == ([], [])
    missing, unexpected = match_rows([("a", nan)], [("a", 1.0)])
    assert len(missing) == 1 and math.isnan(missing[0][1]) and unexpected == [("a", 1.0)]
    assert match_rows([("a", None)], [("a", 1.5)]) == ([("a", None)], [("a", 1.5)])
    assert match_rows([("a", 1.5)], [("a", None)]) == ([("a", 1.5)], [("a", None)])
    assert match_rows([(None, 1.5)], [(None, 1.5)]) == ([], [])
    assert match_rows([("a", None)], [("a", None)]) == ([], [])


def test_match_rows_rows_of_different_width_do_not_match():
    assert match_rows([("a", 1.0)], [("a", 1.0, 2)]) == ([("a", 1.0)], [("a", 1.0, 2)])


def test_match_rows_text_against_a_float_is_a_mismatch_not_a_crash():
    assert match_rows([("a", 1)], [(1.5, 1)]) == ([("a", 1)], [(1.5, 1)])


def test_match_rows_finds_a_tolerant_matching_when_one_exists():
    # x is close to both a and b; y only to a. x-b, y-a is a perfect matching (the first close row, a,
    # for x would leave y without one)
    a, b = 1.0, 1.0 + 1.8e-9
    x, y = 1.0 + 0.9e-9, 1.0 - 0.9e-9
    assert math.isclose(x, a, rel_tol=1e-9) and math.isclose(x, b, rel_tol=1e-9)
    assert math.isclose(y, a, rel_tol=1e-9) and not math.isclose(y, b, rel_tol=1e-9)
    assert match_rows([(x,), (y,)], [(a,), (b,)]) == ([], [])
    assert match_rows([("k", x), ("k", y)], [("k", a), ("k", b)], types=[STRING, DOUBLE]) == ([], [])
    # control: a second row close only to a has no partner of its own, so one row is missing
    y2 = 1.0 - 0.8e-9
    assert not math.isclose(y2, b, rel_tol=1e-9)
    missing, unexpected = match_rows([(y,), (y2,)], [(a,), (b,)])
    assert len(missing) == 1 and unexpected == [(b,)]
    # and another key never pairs off, however close the number
    missing, unexpected = match_rows([("k", x), ("j", y)], [("k", a), ("k", b)], types=[STRING, DOUBLE])
    assert missing == [("j", y)] and len(unexpected) == 1 and unexpected[0][0] == "k"


def test_match_rows_matching_needs_augmenting_paths_through_matched_rows():
    # a chain: e_i is close to a_i and a_{i+1}; the last expected row only to a_0. Every first-close
    # choice (e_i - a_i) leaves the last one out; the one-to-one matching shifts the whole chain.
    step = 0.9e-9
    actual = [(1.0 + 2 * i * step,) for i in range(6)]
    expected = [(1.0 + (2 * i + 1) * step,) for i in range(5)] + [(1.0 - step,)]
    assert match_rows(expected, actual) == ([], [])
    assert match_rows(expected[:-1] + [(1.0 - 3 * step,)], actual) == ([(1.0 - 3 * step,)], [actual[-1]])


def test_match_rows_tolerant_matching_of_many_rows_compares_few_pairs(monkeypatch):
    """Counted, not timed: each expected row is compared with the rows of its key within the tolerance's
    reach, never with every row (pairwise it would be 4e8 comparisons per call)."""
    n = 20_000
    actual = [(f"k{i % 50}", i * 0.5) for i in range(n)]
    expected = [(f"k{i % 50}", i * 0.5 * (1 + 5e-10)) for i in range(n)]
    compared = []
    equal = type(DOUBLE).equal
    monkeypatch.setattr(type(DOUBLE), "equal", lambda self, *a: compared.append(1) or equal(self, *a))
    assert match_rows(expected, actual, types=[STRING, DOUBLE]) == ([], [])
    missing, unexpected = match_rows(expected[1:] + [("k0", -1.0)], actual, types=[STRING, DOUBLE])
    assert missing == [("k0", -1.0)] and unexpected == [actual[0]]
    assert 0 < len(compared) < 20 * n, len(compared)  # measured: 79,998 (2 per expected row per call)


def test_maximum_matching_is_as_large_as_brute_force_finds():
    import itertools
    import random

    from eventtime.rowmatch import maximum_matching

    rng = random.Random(7)
    for _ in range(300):
        n, m = rng.randint(0, 5), rng.randint(0, 5)
        adjacency = [[j for j in range(m) if rng.random() < 0.4] for _ in range(n)]
        best = max((k for k in range(min(n, m), -1, -1)
                    for lefts in itertools.combinations(range(n), k)
                    for rights in itertools.permutations(range(m), k)
                    if all(r in adjacency[left] for left, r in zip(lefts, rights))), default=0)
        start = {0: adjacency[0][0]} if n and adjacency[0] else {}
        found = maximum_matching(n, adjacency, start)
        assert len(found) == best and len(set(found.values())) == len(found)
        assert all(r in adjacency[left] for left, r in found.items())


# -- format_value --------------------------------------------------------------------------------

def test_format_value(scenario):
    assert format_value(None, "string") == "null"
    assert format_value("a", "string") == "'a'"
    assert format_value(3, "long") == "3"
    assert format_value(ts(3), "timestamp", scenario) == "00:00:03"
    assert format_value(ts(3), "timestamp") == "2024-01-01T00:00:03Z"
    assert format_value(ts(86400), "timestamp", scenario) == "2024-01-02T00:00:00Z"


# -- Observed ------------------------------------------------------------------------------------

def test_observed_scopes_and_watermark():
    b1 = FakeBatch(1, rows=[("x",)], watermark_after_ms=ms(2))
    b0 = FakeBatch(0, rows=[("w",)], watermark_after_ms=ms(1))
    obs = observed([b1], history=[b1, b0])
    assert [b.batch_id for b in obs.history] == [0, 1]  # sorted by batch id
    assert obs.rows("rows") == [("x",)]
    assert obs.rows("output") == [("w",), ("x",)]
    assert obs.rows("last_batch") == [("x",)]
    assert obs.watermark_ms == ms(2)
    complete = observed([b1], history=[b1, b0], mode="complete")
    assert complete.rows("output") == [("x",)]  # the latest result table only
    empty = observed([], history=[])
    assert empty.watermark_ms == 0 and empty.rows("last_batch") == [] and empty.rows("output") == []
    assert observed([], history=[FakeBatch(0, watermark_after_ms=None)]).watermark_ms == 0


# -- judge ---------------------------------------------------------------------------------------

def expect(**kw) -> ExpectStep:
    return ExpectStep(W, **kw)


def rows_check(scope, *rows) -> RowsCheck:
    return RowsCheck(scope, tuple(rows), ROW_W)


def test_all_checks_pass(scenario):
    b = FakeBatch(3, rows=[win("a", 0, 10, 2)], watermark_before_ms=ms(2), watermark_after_ms=ms(11), dropped=1,
                  state_rows=1, event_time={"min": ms(4), "max": ms(16), "avg": ms(10)})
    step = expect(rows=(rows_check("rows", win("a", 0, 10, 2)),), watermark_us=ts(11), dropped=1, state_rows=1,
                  batch_count=1,
                  batches=(BatchCheck(ROW_W, data=True, rows=(win("a", 0, 10, 2),), watermark_before_us=ts(2),
                                      watermark_after_us=ts(11), dropped=1, state_rows=1),),
                  event_time=EventTimeCheck(ROW_W, min_us=ts(4), max_us=ts(16), avg_us=ts(10)))
    assert judge(step, observed([b]), scenario) == []


def test_rows_mismatch(scenario):
    got = [win("a", 0, 10, 2), win("b", 0, 10, 1)]
    step = expect(rows=(rows_check("rows", win("a", 0, 10, 2), win("a", 10, 20, 1)),))
    [f] = judge(step, observed([FakeBatch(0, rows=got)]), scenario)
    assert f.check == "rows" and f.where == ROW_W
    assert f.message == "rows since the previous expect: 1 missing, 1 unexpected"
    assert f.missing == [win("a", 10, 20, 1)] and f.unexpected == [win("b", 0, 10, 1)]
    assert f.columns == ("key", "window_start", "window_end", "count")
    assert f.expected == [list(win("a", 0, 10, 2)), list(win("a", 10, 20, 1))]
    assert f.actual == [list(r) for r in got]


def test_no_output_is_an_empty_rows_check(scenario):
    step = expect(rows=(rows_check("rows"),))
    assert judge(step, observed([FakeBatch(0)]), scenario) == []
    [f] = judge(step, observed([FakeBatch(0, rows=[win("a", 0, 10, 1)])]), scenario)
    assert f.message == "rows since the previous expect: 0 missing, 1 unexpected"


def test_rows_are_those_of_the_window_not_the_history(scenario):
    old, new = FakeBatch(0, rows=[win("a", 0, 10, 1)]), FakeBatch(1, rows=[win("b", 0, 10, 1)])
    obs = observed([new], history=[old, new])
    assert judge(expect(rows=(rows_check("rows", win("b", 0, 10, 1)),)), obs, scenario) == []
    assert judge(expect(rows=(rows_check("output", win("a", 0, 10, 1), win("b", 0, 10, 1)),)), obs, scenario) == []
    assert judge(expect(rows=(rows_check("last_batch", win("b", 0, 10, 1)),)), obs, scenario) == []
    [f] = judge(expect(rows=(rows_check("output", win("b", 0, 10, 1)),)), obs, scenario)
    assert f.check == "output" and f.message == "the whole output: 0 missing, 1 unexpected"
    [f] = judge(expect(rows=(rows_check("last_batch", win("a", 0, 10, 1)),)), obs, scenario)
    assert f.check == "last_batch" and f.message == "the last batch's rows: 1 missing, 1 unexpected"


def test_ordered_rows(scenario):
    got = [win("b", 0, 10, 1), win("a", 0, 10, 1)]
    rows = (rows_check("rows", win("a", 0, 10, 1), win("b", 0, 10, 1)),)
    assert judge(expect(rows=rows), observed([FakeBatch(0, rows=got)]), scenario) == []
    [f] = judge(expect(rows=rows, ordered=True), observed([FakeBatch(0, rows=got)]), scenario)
    assert f.message == "rows since the previous expect (in order): 2 missing, 2 unexpected"


def test_watermark(scenario):
    obs = observed([FakeBatch(0, watermark_after_ms=ms(2))])
    assert judge(expect(watermark_us=ts(2)), obs, scenario) == []
    wm_where = Where("s.yaml", 22, 18)
    [f] = judge(expect(watermark_us=ts(11), watermark_where=wm_where), obs, scenario)
    assert f.check == "watermark" and f.where == wm_where
    assert f.message == "watermark is 00:00:02, expected 00:00:11"
    assert (f.expected, f.actual) == (ms(11), ms(2))
    [f] = judge(expect(watermark_us=ts(2)), observed([]), scenario)
    assert f.message == "watermark is initial (1970-01-01T00:00:00Z), expected 00:00:02"
    assert f.where == W  # no watermark_where: the step's place
    assert judge(expect(watermark_us=0), observed([]), scenario) == []
    [f] = judge(expect(watermark_us=0), obs, scenario)
    assert f.message == "watermark is 00:00:02, expected initial (1970-01-01T00:00:00Z)"


def test_watermark_is_the_last_batch_of_the_history(scenario):
    last = FakeBatch(5, watermark_after_ms=ms(7))
    obs = observed([], history=[FakeBatch(4, watermark_after_ms=ms(3)), last])
    assert judge(expect(watermark_us=ts(7)), obs, scenario) == []


def test_dropped_counts_the_window(scenario):
    since_expect = [FakeBatch(1, dropped=1), FakeBatch(2, dropped=2)]
    obs = observed(since_expect, history=[FakeBatch(0, dropped=5)] + since_expect)
    assert judge(expect(dropped=3), obs, scenario) == []
    [f] = judge(expect(dropped=0), obs, scenario)
    assert f.check == "dropped" and (f.expected, f.actual) == (0, 3)
    assert f.message == "3 row(s) dropped as late since the previous expect, expected 0"


def test_state_rows_of_the_last_batch(scenario):
    obs = observed([FakeBatch(1, state_rows=2)], history=[FakeBatch(0, state_rows=9), FakeBatch(1, state_rows=2)])
    assert judge(expect(state_rows=2), obs, scenario) == []
    [f] = judge(expect(state_rows=9), obs, scenario)
    assert f.check == "state_rows" and f.message == "2 row(s) in state, expected 9"
    [f] = judge(expect(state_rows=1), observed([]), scenario)
    assert f.actual == 0


def test_batch_count(scenario):
    obs = observed([FakeBatch(0), FakeBatch(1)])
    assert judge(expect(batch_count=2), obs, scenario) == []
    [f] = judge(expect(batch_count=1), obs, scenario)
    assert f.check == "batches" and (f.expected, f.actual) == (1, 2)
    assert f.message == "2 micro-batch(es) ran since the previous expect, expected 1"
    assert judge(expect(batch_count=0), observed([]), scenario) == []


def test_batches_list_of_the_wrong_length_is_one_failure(scenario):
    step = expect(batches=(BatchCheck(ROW_W, data=True), BatchCheck(ROW_W, data=False)))
    [f] = judge(step, observed([FakeBatch(0, input_rows=0)]), scenario)
    assert f.check == "batches" and (f.expected, f.actual) == (2, 1)


def test_each_batch_is_checked(scenario):
    got = FakeBatch(7, rows=[win("a", 0, 10, 1)], watermark_before_ms=None, watermark_after_ms=ms(11),
                    dropped=1, state_rows=2, input_rows=0)
    want = BatchCheck(Where("s.yaml", 30, 11), data=True, rows=(win("a", 0, 10, 2),), watermark_before_us=ts(1),
                      watermark_after_us=ts(12), dropped=0, state_rows=3)
    failures = judge(expect(batches=(want,)), observed([got]), scenario)
    messages = [f.message for f in failures]
    label = "batch 7 (#1 since the previous expect)"
    assert messages == [
        f"{label} was a no-data batch, expected a data batch",
        f"{label}: watermark_before is -, expected 00:00:01",
        f"{label}: watermark_after is 00:00:11, expected 00:00:12",
        f"{label}: dropped is 1, expected 0",
        f"{label}: state_rows is 2, expected 3",
        f"{label}: rows: 1 missing, 1 unexpected",
    ]
    assert all(f.check == "batches" and f.where == want.where for f in failures)


def test_batch_watermark_initial_matches_a_missing_watermark(scenario):
    got = FakeBatch(0, watermark_before_ms=None, watermark_after_ms=0)
    want = BatchCheck(ROW_W, watermark_before_us=0, watermark_after_us=0)
    assert judge(expect(batches=(want,)), observed([got]), scenario) == []


def test_batches_are_matched_in_order(scenario):
    got = [FakeBatch(0, input_rows=1), FakeBatch(1, input_rows=0)]
    good = (BatchCheck(ROW_W, data=True), BatchCheck(ROW_W, data=False))
    assert judge(expect(batches=good), observed(got), scenario) == []
    failures = judge(expect(batches=good[::-1]), observed(got), scenario)
    assert [f.message for f in failures] == [
        "batch 0 (#1 since the previous expect) was a data batch, expected a no-data batch",
        "batch 1 (#2 since the previous expect) was a no-data batch, expected a data batch"]


def test_event_time_statistics(scenario):
    check = EventTimeCheck(ROW_W, min_us=ts(3), max_us=ts(7))
    since_expect = [FakeBatch(0, event_time={"min": ms(1), "max": ms(1)}),
              FakeBatch(1, event_time={"min": ms(3), "max": ms(7), "avg": ms(5)}),
              FakeBatch(2, input_rows=0, event_time={})]
    assert judge(expect(event_time=check), observed(since_expect), scenario) == []  # the last batch with statistics
    [f] = judge(expect(event_time=EventTimeCheck(ROW_W, avg_us=ts(6))), observed(since_expect), scenario)
    assert f.check == "event_time" and f.where == ROW_W
    assert f.message == "event-time avg is 00:00:05, expected 00:00:06"
    [f] = judge(expect(event_time=EventTimeCheck(ROW_W, avg_us=ts(6))), observed(since_expect[:1]), scenario)
    assert f.message == "event-time avg is absent, expected 00:00:06"
    [f] = judge(expect(event_time=check), observed([FakeBatch(0)]), scenario)
    assert f.message == "no batch since the previous expect reported event-time statistics"
    # the model's observation of an avg that depends on the order Spark's tasks finish in
    ranged = [FakeBatch(0, event_time={"min": ms(3), "max": ms(7), "avg_range": (ms(4), ms(5))})]
    assert judge(expect(event_time=check), observed(ranged), scenario) == []
    [f] = judge(expect(event_time=EventTimeCheck(ROW_W, avg_us=ts(5))), observed(ranged), scenario)
    assert f.message == ("event-time avg depends on the order Spark's tasks finish in here "
                         "(00:00:04 to 00:00:05): leave it out of the expectation")


def test_several_failures_are_all_reported(scenario):
    obs = observed([FakeBatch(0, watermark_after_ms=ms(1), dropped=1, state_rows=1)])
    step = expect(rows=(rows_check("rows", win("a", 0, 10, 1)),), watermark_us=ts(2), dropped=0, state_rows=0,
                  batch_count=2)
    assert [f.check for f in judge(step, obs, scenario)] == ["rows", "watermark", "dropped", "state_rows", "batches"]


def test_a_failed_query_fails_every_other_expectation(scenario):
    failure = FakeFailure("StreamingQueryException: boom")
    [f] = judge(expect(watermark_us=ts(2), dropped=0), observed([FakeBatch(0)], failure=failure), scenario)
    assert f.check == "failure" and f.where == W
    assert f.message == "the query has failed: StreamingQueryException: boom"


def test_expected_failure(scenario):
    fw = Where("s.yaml", 40, 16)
    failure = FakeFailure("org.apache.spark.SparkException: [STREAM_FAILED] boom happened",
                          error_classes=["STREAM_FAILED"],
                          exception_names=["org.apache.spark.sql.streaming.StreamingQueryException",
                                           "java.lang.IllegalStateException"])
    obs = observed([], failure=failure)
    for want in (FailureCheck(fw, error_class="STREAM_FAILED"),
                 FailureCheck(fw, exception="IllegalStateException"),
                 FailureCheck(fw, exception="java.lang.IllegalStateException"),
                 FailureCheck(fw, message="boom happened"),
                 FailureCheck(fw, "STREAM_FAILED", "StreamingQueryException", "boom")):
        assert judge(expect(failure=want), obs, scenario) == [], want
    failures = judge(expect(failure=FailureCheck(fw, "OTHER", "lang.IllegalStateException", "bang")), obs, scenario)
    assert [f.message for f in failures] == [
        "the failure has error class(es) STREAM_FAILED, expected OTHER",
        "the failure's exceptions are org.apache.spark.sql.streaming.StreamingQueryException, "
        "java.lang.IllegalStateException, expected lang.IllegalStateException",
        "the failure message does not contain 'bang'"]
    assert all(f.check == "failure" and f.where == fw for f in failures)
    [f] = judge(expect(failure=FailureCheck(fw, error_class="X")), observed([], failure=FakeFailure("t")), scenario)
    assert f.message == "the failure has error class(es) none, expected X"


def test_expected_failure_that_did_not_happen(scenario):
    fw = Where("s.yaml", 40, 16)
    [f] = judge(expect(failure=FailureCheck(fw, message="boom")), observed([FakeBatch(0)]), scenario)
    assert f.check == "failure" and f.where == fw
    assert f.message == "expected the query to have failed, but it has not"


def test_judging_expect_steps_loaded_from_a_file(scenario):
    """The loader's ExpectStep (no_output + watermark 'initial') judged against fake batches."""
    step = scenario.steps[2]
    assert judge(step, observed([FakeBatch(0, watermark_after_ms=0)]), scenario) == []
    failures = judge(step, observed([FakeBatch(0, rows=[win("a", 0, 10, 1)], watermark_after_ms=ms(-2))]), scenario)
    assert [f.check for f in failures] == ["rows", "watermark"]
    assert failures[0].where.line == 17 and failures[1].where.line == 18
    assert failures[1].message == "watermark is -00:00:02, expected initial (1970-01-01T00:00:00Z)"


# -- what the stateful operators did (progress: stateOperators, batchWatermarkMs, eventTime) ----------

def op(name, total=0, updated=0, dropped=0) -> dict:
    return {"operatorName": name, "numRowsTotal": total, "numRowsUpdated": updated, "numRowsRemoved": 0,
            "numRowsDroppedByWatermark": dropped}


def test_updated_sums_operators_over_the_batches_since_the_previous_expect(scenario):
    since = [FakeBatch(1, operators=[op("stateStoreSave", updated=2), op("symmetricHashJoin", updated=3)]),
             FakeBatch(2, operators=[op("stateStoreSave", updated=1), op("symmetricHashJoin")])]
    earlier = FakeBatch(0, operators=[op("stateStoreSave", updated=7)])
    obs = observed(since, history=[earlier] + since)
    assert judge(expect(updated=6), obs, scenario) == []
    [f] = judge(expect(updated=13), obs, scenario)  # control: the earlier batch is not counted
    assert f.check == "updated" and f.message == "6 row(s) updated in state since the previous expect, expected 13"
    assert judge(expect(updated=0), observed([]), scenario) == []


def test_batch_watermark_is_what_the_last_batch_ran_with(scenario):
    history = [FakeBatch(0, watermark_before_ms=0, watermark_after_ms=ms(2)),
               FakeBatch(1, watermark_before_ms=ms(2), watermark_after_ms=ms(11))]
    obs = observed(history[1:], history=history)
    assert judge(expect(batch_watermark_us=ts(2)), obs, scenario) == []
    [f] = judge(expect(batch_watermark_us=ts(11)), obs, scenario)  # control: what it left is `watermark`
    assert f.check == "batch_watermark" and f.message == "the last batch (1) ran with watermark 00:00:02, expected 00:00:11"
    [f] = judge(expect(batch_watermark_us=0), observed([], history=[]), scenario)
    assert f.message == "no batch has run, expected the last one to have run with watermark initial (1970-01-01T00:00:00Z)"


def test_operators_by_position_as_the_progress_lists_them(scenario):
    b0 = FakeBatch(0, operators=[op("stateStoreSave", 1, updated=1), op("symmetricHashJoin", 4, updated=4)])
    b1 = FakeBatch(1, operators=[op("stateStoreSave", 0), op("symmetricHashJoin", 3, updated=1, dropped=1)])
    obs = observed([b0, b1])

    def check(*entries):
        return expect(operators=tuple(OperatorCheck(ROW_W, i, **e) for i, e in enumerate(entries)))
    right = check({"name": "stateStoreSave", "state_rows": 0, "updated": 1, "dropped": 0},
                  {"name": "symmetricHashJoin", "state_rows": 3, "updated": 5, "dropped": 1})
    assert judge(right, obs, scenario) == []
    assert judge(check({}, {"state_rows": 3}), obs, scenario) == []
    [f] = judge(check({"state_rows": 1}, {}), obs, scenario)  # state after the LAST batch
    assert (f.check, f.part, f.message) == ("operators", "state_rows", "operator 1 of 2 (stateStoreSave): 0 row(s) in state, expected 1")
    [f] = judge(check({}, {"dropped": 0}), obs, scenario)
    assert f.message == "operator 2 of 2 (symmetricHashJoin): 1 row(s) dropped as late since the previous expect, expected 0"
    [f] = judge(check({}, {"updated": 4}), obs, scenario)
    assert f.message == "operator 2 of 2 (symmetricHashJoin): 5 row(s) updated in state since the previous expect, expected 4"
    [f] = judge(check({"name": "symmetricHashJoin"}, {}), obs, scenario)
    assert f.message == ("operator 1 of 2 is stateStoreSave, expected symmetricHashJoin "
                         "(in order: 1. stateStoreSave, 2. symmetricHashJoin)")
    [f] = judge(check({}), obs, scenario)
    assert f.message == "the query's progress lists 2 stateful operator(s) (1. stateStoreSave, 2. symmetricHashJoin), expected 1"
    # an implementation that declares state_rows unjudged (an operator of another shape) is not judged on them
    assert judge(check({}), obs, scenario, unjudged=frozenset({"state_rows"})) == []
    assert judge(expect(updated=99), obs, scenario, unjudged=frozenset({"state_rows"})) == []


def test_batches_updated(scenario):
    obs = observed([FakeBatch(0, operators=[op("dedupe", updated=2)]), FakeBatch(1, operators=[op("dedupe")])])
    assert judge(expect(batches=(BatchCheck(ROW_W, updated=2), BatchCheck(ROW_W, updated=0))), obs, scenario) == []
    [f] = judge(expect(batches=(BatchCheck(ROW_W, updated=2), BatchCheck(ROW_W, updated=1))), obs, scenario)
    assert f.part == "updated" and f.message == "batch 1 (#2 since the previous expect): updated is 0, expected 1"


def test_event_time_none_and_the_watermark_the_statistics_carry(scenario):
    with_stats = [FakeBatch(0, event_time={"min": ms(3), "max": ms(7), "watermark": 0}),
                  FakeBatch(1, input_rows=0)]
    none = expect(event_time=EventTimeCheck(ROW_W, none=True))
    assert judge(none, observed([FakeBatch(0), FakeBatch(1, input_rows=0)]), scenario) == []
    assert judge(none, observed([]), scenario) == []
    [f] = judge(none, observed(with_stats), scenario)  # control: a batch that reported statistics
    assert f.message == "batch 0 reported event-time statistics (max 00:00:07), expected none since the previous expect"
    assert judge(expect(event_time=EventTimeCheck(ROW_W, watermark_us=0)), observed(with_stats), scenario) == []
    [f] = judge(expect(event_time=EventTimeCheck(ROW_W, watermark_us=ts(2))), observed(with_stats), scenario)
    assert f.message == ("the event-time statistics of batch 0 carry watermark initial (1970-01-01T00:00:00Z), "
                         "expected 00:00:02")


def test_a_count_check_fails_at_its_own_keys_line(scenario):
    """`dropped`, `state_rows` and `batches` name the line their key is written on (the loader's `key_places`),
    as `watermark` does; the step's own place when the key's is not known."""
    places = tuple((key, Where("s.yaml", 30 + n, 7)) for n, key in enumerate(("dropped", "state_rows", "batches")))
    obs = observed([FakeBatch(0, dropped=1, state_rows=2)], history=[FakeBatch(0, dropped=1, state_rows=2)])
    failures = judge(expect(dropped=0, state_rows=0, batch_count=2, key_places=places), obs, scenario)
    assert sorted((f.check, f.where.line) for f in failures) == [("batches", 32), ("dropped", 30), ("state_rows", 31)]
    [f] = judge(expect(dropped=0), obs, scenario)
    assert f.where == W
