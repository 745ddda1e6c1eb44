"""Triggers, panes and merging sessions under the dataflow profile (issue 48, item 4): the window operator's
rules one by one (`eventtime.semantics.triggers`), the trigger parameters and the model-only session
contract in scenario files (file:line validation, check-model, expect --write), the bundled scenarios,
and Hypothesis properties of the model: a late firing never precedes the on-time one, discarding panes
sum to the accumulating pane, every element is counted once or goes to the side output, sessions of a
key never overlap."""
from __future__ import annotations

import dataclasses
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime.cli import main
from eventtime.contractfile import ContractInvalid, contract_from_mapping
from eventtime.loader import load_scenario, load_scenario_text
from eventtime.problems import ScenarioInvalid
from eventtime.registry import CONTRACTS, ContractLookup
from eventtime.semantics import check_scenario
from eventtime.semantics.dataflow import WATERMARK, DataflowQuery
from eventtime.semantics.triggers import DISCARDING, DROPPED, EARLY, LATE, ON_TIME, TriggeredWindows
from eventtime.spec import model_only

S = 1_000_000  # µs
MS = 1_000


def _kinds(firings):
    return [(f.count, f.kind) for f in firings]


# -- the operator, rule by rule -----------------------------------------------------------------------------

def test_an_element_count_early_trigger_fires_each_full_pane_then_on_time_then_late_per_element():
    w = TriggeredWindows(length_us=10 * S, lateness_ms=5_000, early_count=2)
    out = []
    for ts in (1, 2, 3):
        out += w.on_element("a", ts * S, watermark_ms=0)
    out += w.on_watermark(9_999)
    out += w.on_element("a", 4 * S, watermark_ms=9_999) + w.on_element("a", 5 * S, watermark_ms=9_999)
    assert _kinds(out) == [(2, EARLY), (3, ON_TIME), (4, LATE), (5, LATE)]
    assert {f.result_ts_us for f in out} == {9_999 * MS}  # end - 1 ms, however often it fires


def test_discarding_panes_count_the_elements_since_the_previous_firing_and_on_time_fires_even_empty():
    w = TriggeredWindows(length_us=10 * S, lateness_ms=5_000, early_count=2, accumulation=DISCARDING)
    out = []
    for ts in (1, 2):
        out += w.on_element("a", ts * S, watermark_ms=0)
    out += w.on_watermark(9_999)
    out += w.on_element("a", 4 * S, watermark_ms=9_999)
    assert _kinds(out) == [(2, EARLY), (0, ON_TIME), (1, LATE)]


def test_a_processing_time_early_trigger_fires_delay_after_the_panes_first_element():
    w = TriggeredWindows(length_us=10 * S, lateness_ms=0, early_delay_ms=30_000)
    w.on_element("a", 1 * S, watermark_ms=0, now_ms=1_000)
    w.on_element("a", 2 * S, watermark_ms=0, now_ms=20_000)  # same pane: the timer stays at 31 000
    assert w.on_processing_time(30_999) == []
    assert _kinds(w.on_processing_time(31_000)) == [(2, EARLY)]
    assert w.on_processing_time(90_000) == []  # no element since: no pane, no timer
    assert _kinds(w.on_watermark(9_999)) == [(2, ON_TIME)]


def test_a_processing_time_late_trigger_waits_and_a_pending_late_pane_fires_at_expiry():
    w = TriggeredWindows(length_us=10 * S, lateness_ms=60_000, late_delay_ms=10_000)
    w.on_element("a", 1 * S, watermark_ms=0)
    assert _kinds(w.on_watermark(9_999)) == [(1, ON_TIME)]
    assert w.on_element("a", 2 * S, watermark_ms=9_999, now_ms=0) == []
    assert _kinds(w.on_processing_time(10_000)) == [(2, LATE)]
    w.on_element("a", 3 * S, watermark_ms=9_999, now_ms=20_000)
    assert _kinds(w.on_watermark(69_999)) == [(3, LATE)]  # expiry: the pending pane, then purged
    assert w.windows == {} and w.on_processing_time(40_000) == []


def test_allowed_lateness_is_judged_on_the_window_as_flink_does_at_its_boundary():
    w = TriggeredWindows(length_us=10 * S, lateness_ms=2_000)
    w.on_element("a", 1 * S, watermark_ms=0)
    assert _kinds(w.on_element("a", 2 * S, watermark_ms=11_998)) == [(2, LATE)]  # 9 999 + 2 000 > 11 998
    [side] = w.on_element("a", 3 * S, watermark_ms=11_999)  # 9 999 + 2 000 <= 11 999: isWindowLate
    assert (side.kind, side.count, side.result_ts_us) == (DROPPED, 1, 3 * S) and w.side_output == 1


def test_sessions_merge_what_overlaps_or_touches_and_a_late_element_can_bridge_two_fired_sessions():
    w = TriggeredWindows(gap_us=10 * S, lateness_ms=60_000)
    w.on_element("a", 1 * S, watermark_ms=0)
    w.on_element("a", 11 * S, watermark_ms=0)  # [11, 21) touches [1, 11): Flink's TimeWindow.intersects
    w.on_element("a", 30 * S, watermark_ms=0)
    fired = [(f.start_us // S, f.end_us // S, f.count) for f in w.on_watermark(39_999)]
    assert fired == [(1, 21, 2), (30, 40, 1)]
    [bridge] = w.on_element("a", 20 * S, watermark_ms=39_999)  # [20, 30) touches both fired sessions
    assert (bridge.start_us // S, bridge.end_us // S, bridge.count, bridge.kind) == (1, 40, 4, LATE)
    assert len(w.windows["a"]) == 1


def test_a_merge_that_moves_a_fired_sessions_end_past_the_watermark_fires_on_time_again_later():
    w = TriggeredWindows(gap_us=10 * S, lateness_ms=60_000)
    w.on_element("a", 1 * S, watermark_ms=0)
    assert _kinds(w.on_watermark(10_999)) == [(1, ON_TIME)]
    assert w.on_element("a", 8 * S, watermark_ms=10_999) == []  # [1, 18): its end is ahead again
    [again] = w.on_watermark(17_999)
    assert (again.end_us // S, again.count, again.kind) == (18, 2, ON_TIME)  # EventTimeTrigger.onMerge


# -- scenario files: validation at file:line, model only, check-model and expect --write -------------------

HEAD = """\
scenario: s
description: seed 000.
contract: {contract}
profile: {profile}
params: {{{params}}}
sources:
  events:
    columns: {{key: string, ts: timestamp}}
    event_time: ts
steps:
"""
TUMBLING = "window: 10s, bound: 0s, allowed_lateness: 5s"


def _text(steps: str, *, params: str = TUMBLING + ", early_count: 2", profile: str = "dataflow",
          contract: str = "lateness_count") -> str:
    return HEAD.format(contract=contract, profile=profile, params=params) + steps


# A contract declared model only, as a user's contract file declares one its Spark implementations cannot
# have: the bundled sessions contract before its pipeline was bundled (the bundled suite has none left).
MODEL_ONLY = ContractLookup(extra=[dataclasses.replace(
    CONTRACTS["session_lateness_count"], name="session_model_only", bundled=False, reference="", alternatives=(),
    model_only="no Spark implementation is bundled: the sessions merge in the model alone")])


def _problems(text: str) -> list[str]:
    try:
        load_scenario_text(text, "s.yaml", contracts=MODEL_ONLY)
    except ScenarioInvalid as exc:
        return [str(p) for p in exc.problems]
    return []


@pytest.mark.parametrize("text, expected", [
    (_text("  - process\n", profile="spark"),
     "s.yaml:5:56: parameter 'early_count' is a trigger setting, which only the dataflow profile's model takes "
     "(add `profile: dataflow`): a Spark aggregation fires a window once"),
    (_text("  - process\n", params=TUMBLING + ", late_delay: 10s", profile="spark"), "s.yaml:5:56: parameter 'late_delay'"),
    (_text("  - process\n", params=TUMBLING + ", accumulation: retracting"),
     "s.yaml:5:70: parameter 'accumulation' must be one of accumulating, discarding, not 'retracting'"),
    (_text("  - process\n", params=TUMBLING + ", early_count: many"), "s.yaml:5:69: parameter 'early_count' expected a whole number"),
    (_text("  - process\n", params="gap: 10s, bound: 0s, allowed_lateness: 5s", profile="spark",
           contract="session_model_only"),
     "s.yaml:3:11: contract 'session_model_only' is model only (no Spark implementation is bundled"),
    (_text("  - process\n", params="window: 10s, bound: 0s, allowed_lateness: 5s", contract="session_lateness_count"),
     "s.yaml:5:10: contract 'session_lateness_count' has no parameter 'window'"),
])
def test_misuse_is_a_file_line_error(text, expected):
    found = _problems(text)
    assert any(p.startswith(expected) for p in found), found


def test_the_trigger_parameters_spark_implements_are_spark_runs_and_the_others_are_model_only_in_words():
    plain = load_scenario_text(_text("  - process\n", params=TUMBLING), "s.yaml")
    assert model_only(plain) is None  # the bundled implementation's own trigger: Spark runs it
    early = load_scenario_text(_text("  - process\n"), "s.yaml")
    discarding = load_scenario_text(_text("  - process\n", params=TUMBLING + ", early_count: 3, accumulation: discarding"),
                                    "s.yaml")
    assert model_only(early) is None and model_only(discarding) is None  # the bundled pipeline has them
    for name in ("early_delay", "late_delay"):
        timed = load_scenario_text(_text("  - process\n", params=TUMBLING + f", early_count: 2, {name}: 10s"), "s.yaml")
        assert model_only(timed).startswith(f"model only: parameter {name!r} ("), name
        assert "one kind of GroupState timeout" in model_only(timed), name  # the reason, said plainly
    timed = load_scenario_text(_text("  - process\n", params=TUMBLING + ", late_delay: 10s"), "s.yaml")
    session = load_scenario_text(_text("  - process\n", params="gap: 10s, bound: 0s, allowed_lateness: 5s",
                                       contract="session_model_only"), "s.yaml", contracts=MODEL_ONLY)
    assert model_only(session).startswith("model only: contract 'session_model_only': no Spark implementation")
    sessions = load_scenario_text(_text("  - process\n", params="gap: 10s, bound: 0s, allowed_lateness: 5s, "
                                        "early_count: 2, accumulation: discarding", contract="session_lateness_count"),
                                  "s.yaml")
    assert model_only(sessions) is None  # the bundled sessions pipeline has early_count and discarding panes
    timed_sessions = load_scenario_text(_text("  - process\n", params="gap: 10s, bound: 0s, allowed_lateness: 5s, "
                                              "early_delay: 10s", contract="session_lateness_count"), "s.yaml")
    assert "one kind of GroupState timeout" in model_only(timed_sessions)
    from eventtime.runner import applicability

    assert applicability(early, "4.0.0", frozenset({"apply_in_pandas_with_state"})) is None
    assert applicability(timed, "4.0.0", frozenset({"apply_in_pandas_with_state"})).startswith("model only")
    # the spark profile cannot state a trigger (the loader refuses it); its model of the bundled pipeline,
    # run on a dataflow scenario's events, has what the pipeline has and says so of the rest, never ignoring it
    assert check_scenario(early, "spark").status != "not_applicable"
    spark = check_scenario(timed, "spark")
    assert spark.status == "not_applicable" and "parameter 'late_delay'" in spark.reason, spark.reason
    assert check_scenario(plain, "spark").status != "not_applicable"
    assert check_scenario(session, "spark").status == "not_applicable"  # a user's contract: no model of it
    assert check_scenario(sessions, "spark").status != "not_applicable"
    spark = check_scenario(timed_sessions, "spark")
    assert spark.status == "not_applicable" and "parameter 'early_delay'" in spark.reason, spark.reason


def test_a_contract_declares_trigger_parameters_and_model_only_and_misuse_is_said_at_its_line():
    base = {"contract": "c", "description": "d", "sources": {"events": {"columns": {"ts": "timestamp"}}},
            "output": {"columns": {"n": "long"}}}
    c = contract_from_mapping({**base, "model_only": "no Spark pipeline yet",
                               "params": {"early": {"kind": "int", "default": 0, "profile": "dataflow"},
                                          "timed": {"kind": "int", "default": 0, "profile": "dataflow",
                                                    "model_only": "no timers"}}})
    assert c.model_only == "no Spark pipeline yet" and c.param("early").profile == "dataflow"
    assert c.param("early").model_only is None and c.param("timed").model_only == "no timers"
    with pytest.raises(ContractInvalid) as exc:
        contract_from_mapping({**base, "model_only": "",
                               "params": {"early": {"kind": "int", "default": 0, "profile": "spark"},
                                          "blank": {"kind": "int", "default": 0, "profile": "dataflow", "model_only": " "},
                                          "plain": {"kind": "int", "default": 0, "model_only": "why"}}})
    text = " ".join(str(p) for p in exc.value.problems)
    assert "a parameter's `profile` is `dataflow`" in text and "`model_only` says in words why" in text
    assert "a parameter's `model_only` says in words why" in text
    assert "`model_only` is for a parameter with `profile: dataflow`" in text


SCENARIO = _text("""\
  - add: {events: [[a, "00:00:03"], [a, "00:00:04"], [a, "00:00:05"]]}
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 2, early, "00:00:09.999"]]
  - add: {events: [[a, "00:00:12"]]}
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 3, on_time, "00:00:09.999"]]
""")


def test_check_model_and_expect_write_understand_the_trigger_parameters(tmp_path, capsys):
    assert check_scenario(load_scenario_text(SCENARIO, "s.yaml")).status == "passed"
    wrong = SCENARIO.replace("2, early", "3, early")  # a control: the check can fail, at its line
    result = check_scenario(load_scenario_text(wrong, "s.yaml"))
    [failure] = [f for s in result.steps for f in s.failures]
    assert result.status == "failed" and failure.where.line == 14
    path = tmp_path / "s.scenario.yaml"
    path.write_text(wrong.replace("3, on_time", "1, on_time"), encoding="utf-8")
    assert main(["check-model", str(path)]) == 1
    assert main(["expect", "--write", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert '2, early, "00:00:09.999"' in text and '3, on_time, "00:00:09.999"' in text
    capsys.readouterr()
    assert main(["check-model", str(path)]) == 0


NEW = ("early-count-firings-accumulating", "early-count-firings-discarding", "early-processing-time-firing-discarding",
       "late-firings-processing-time-delay", "session-windows-merge", "session-late-element-bridges-two-sessions",
       "session-late-merge-judged-on-merged-session", "session-early-count-batch-boundary",
       "session-early-count-punctuated-watermark")
ON_SPARK = ("early-count-firings-accumulating", "early-count-firings-discarding", "session-windows-merge",
            "session-late-element-bridges-two-sessions", "session-late-merge-judged-on-merged-session",
            "session-early-count-batch-boundary")  # the bundled pipelines run them


@pytest.mark.parametrize("name", NEW)
def test_the_bundled_trigger_scenarios_cite_seed_and_section_pass_and_can_fail(name):
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "scenarios", "dataflow")
    sc = load_scenario(os.path.join(folder, f"{name}.scenario.yaml"))
    words = " ".join(sc.description.split())
    assert "seed 000 (" in words, name  # seed and section
    assert check_scenario(sc).status == "passed", name
    # says whether Spark runs it, and so does the applicability rule
    assert ("Model only" in words) == (model_only(sc) is not None) == (name not in ON_SPARK), name
    # a control per file: the first firing's count one more fails
    lines = list(sc.lines)
    i = next(i for i, line in enumerate(lines) if re.search(r'", \d+, (early|on_time|late)', line))
    lines[i] = re.sub(r'", (\d+), (early|on_time|late)', lambda m: f'", {int(m[1]) + 1}, {m[2]}', lines[i], count=1)
    assert check_scenario(load_scenario_text("\n".join(lines), name)).status == "failed", name


# -- properties (Hypothesis) ----------------------------------------------------------------------------------

_LONG = os.environ.get("EVENTTIME_MODEL_EXAMPLES")
FAST = settings(max_examples=int(_LONG or 150), deadline=None, derandomize=not _LONG, database=None,
                suppress_health_check=[HealthCheck.too_slow])

_op = st.one_of(
    st.tuples(st.just("row"), st.sampled_from("ab"), st.integers(0, 60)),
    st.tuples(st.just(WATERMARK), st.just(""), st.integers(0, 70_000)),
    st.tuples(st.just("process"), st.just(""), st.just(0)),
    st.tuples(st.just("advance"), st.just(""), st.integers(1, 20_000)),
)
_trigger = st.fixed_dictionaries({
    "early_count": st.sampled_from([0, 0, 1, 2, 3]), "early_delay_ms": st.sampled_from([0, 0, 5_000]),
    "late_delay_ms": st.sampled_from([0, 0, 7_000]), "lateness_ms": st.sampled_from([0, 3_000, 20_000])})


def _run(ops, *, sessions: bool = False, accumulation: str = "accumulating", end: bool = False, each=None,
         **trigger):
    """Run `ops` on a query (bounded out-of-orderness 1 s plus the watermarks given): the firings in output
    order, each with the watermark the operator had when it went out, and the query. `each(query)` is
    called after every step."""
    windows = TriggeredWindows(length_us=None if sessions else 10 * S, gap_us=5 * S if sessions else None,
                               accumulation=accumulation, **trigger)
    q = DataflowQuery(("events",), bound_ms=1_000, length_us=10 * S, lateness_ms=trigger["lateness_ms"],
                      clock_start_ms=0, trigger_ms=None, windows=windows)
    q.start()
    batches = []
    for kind, key, value in ops:
        if kind == "row":
            q.add("events", [{"key": key, "ts": value * S}])
        elif kind == WATERMARK:
            q.signal(["events"], WATERMARK, value)
        elif kind == "process":
            batches += q.process()
        else:
            batches += q.advance(value)
        if each is not None:
            each(q)
    batches += q.process()
    if end:  # everything fires and expires: a watermark past every window's end + allowed lateness
        q.signal(["events"], WATERMARK, 10 ** 9)
        batches += q.process() + q.advance(10 ** 6)
    firings = []  # (firing, the operator's watermark before it, the first one forwarded after it in its batch)
    for b in batches:
        before = b.watermark_before_ms
        for i, (kind, item) in enumerate(b.emitted):
            if kind == WATERMARK:
                before = item
            else:
                after = next((w for k, w in b.emitted[i:] if k == WATERMARK), None)
                firings.append((item, (before, after)))
    return firings, q


@FAST
@given(st.lists(_op, max_size=40), _trigger, st.booleans())
def test_a_late_firing_never_precedes_the_on_time_one_and_early_never_follows_it(ops, trigger, sessions):
    firings, q = _run(ops, sessions=sessions, **trigger)
    seen: dict[tuple, list[str]] = {}
    for (key, start, end, _count, kind, result_ts), watermarks in firings:
        if kind == DROPPED:
            continue
        assert result_ts == end - 1_000  # every firing at end - 1 ms
        kinds = seen.setdefault((key, start, end), [])
        assert not (kind == EARLY and (ON_TIME in kinds or LATE in kinds))
        assert not (kind == ON_TIME and (ON_TIME in kinds or LATE in kinds))  # once, and before any late one
        max_ts = end // 1_000 - 1
        before, after = watermarks
        if kind == EARLY:
            assert before < max_ts
        elif kind == ON_TIME:  # timers fire before the watermark that reached them is forwarded
            assert before < max_ts and after is not None and after >= max_ts
        else:  # late: the watermark had reached the window's end - 1 ms already
            assert before >= max_ts
        kinds.append(kind)


@FAST
@given(st.lists(_op, max_size=40), _trigger)
def test_discarding_panes_sum_to_the_accumulating_pane(ops, trigger):
    acc, _ = _run(ops, accumulation="accumulating", **trigger)
    dis, _ = _run(ops, accumulation="discarding", **trigger)
    assert [(f[:3], f[4]) for f, _ in acc] == [(f[:3], f[4]) for f, _ in dis]  # the same firings
    sums: dict[tuple, int] = {}
    for (a, _), (d, _) in zip(acc, dis):
        if a[4] == DROPPED:
            continue
        sums[a[:3]] = sums.get(a[:3], 0) + d[3]
        assert a[3] == sums[a[:3]]


@FAST
@given(st.lists(_op, max_size=40), _trigger)
def test_every_element_is_counted_by_its_windows_last_firing_or_goes_to_the_side_output(ops, trigger):
    firings, q = _run(ops, end=True, **trigger)
    last: dict[tuple, int] = {}
    dropped = 0
    for f, _ in firings:
        if f[4] == DROPPED:
            dropped += 1
        else:
            last[f[:3]] = f[3]
    assert sum(last.values()) + dropped == sum(1 for kind, _, _ in ops if kind == "row")
    assert q.windows.windows == {}  # all expired


@FAST
@given(st.lists(_op, max_size=40), _trigger)
def test_the_sessions_of_a_key_never_overlap_or_touch(ops, trigger):
    def disjoint(q) -> None:
        for sessions in q.windows.windows.values():
            spans = sorted((w.start_us, w.end_us) for w in sessions)
            assert all(a_end < b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), spans

    _run(ops, sessions=True, each=disjoint, **trigger)


def test_running_a_model_only_contracts_scenario_says_so_instead_of_asking_for_a_binding():
    from eventtime.projectconfig import unbound_message

    session = load_scenario_text(_text("  - process\n", params="gap: 10s, bound: 0s, allowed_lateness: 5s",
                                       contract="session_model_only"), "s.yaml", contracts=MODEL_ONLY)
    message = unbound_message(session.contract, "s.yaml")
    assert message.startswith("s.yaml: contract 'session_model_only' is model only (no Spark implementation")
    assert "`eventtime check-model s.yaml` does" in message and "bind" not in message
    spark_run = load_scenario_text(_text("  - process\n", params=TUMBLING), "s.yaml")  # a control: it can be bound
    assert "no pipeline is bound to contract 'lateness_count'" in unbound_message(spark_run.contract, "s.yaml")
    from eventtime.registry import CONTRACTS
    from eventtime.strategies import GENERATED_CONTRACTS, not_generated

    # check-properties and the generated scenarios: a model-only contract has no Spark run to generate for
    assert not_generated(session.contract).startswith("contract session_model_only is model only")
    assert not_generated(CONTRACTS["lateness_count"]) is None and not_generated(CONTRACTS["session_lateness_count"]) is None
    assert {"lateness_count", "session_lateness_count"} <= set(GENERATED_CONTRACTS)
