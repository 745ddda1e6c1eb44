"""Why an expected window row is missing (`eventtime.explain`), pinned on the model's observations for
a tumbling window, a session window and a window after a join, and the input rows listed as at or
behind the watermark (a tumbling window with its `dropped` check, a session, a join);
tests/spark/test_explain.py checks that Spark's observations give the same words. The controls: the
input the explanation names does close the window (and, across the bundled suite's window and
session scenarios, the model confirms it: that row closes it, 1 ms earlier does not), rows moved past
the watermark are not listed, and an update-mode failure carries no explanation."""
from __future__ import annotations

from functools import partial

import pytest

from eventtime.loader import load_scenario_text
from eventtime.semantics import check_scenario

TUMBLING = """\
scenario: why-tumbling
description: A window expected before the watermark passes its end.
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:07"]]}
  - process
  - add: {events: [[a, "00:00:12"]]}
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 2]]
"""

SESSION = """\
scenario: why-session
description: A session expected before the watermark passes its end.
contract: session_count
params: {gap: 5s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:01"], [a, "00:00:03"]]}
  - process
  - add: {events: [[b, "00:00:10"]]}
  - process
  - expect:
      rows: [[a, "00:00:01", "00:00:08", 2]]
"""

JOIN = """\
scenario: why-join
description: A window after a join expected when the global watermark passed its end.
contract: join_then_count
params: {left_delay: 5s, right_delay: 5s, bound: 5s, window: 10s}
steps:
  - add:
      left: [[a, "00:00:02"], [a, "00:00:08"]]
      right: [[a, "00:00:04"], [a, "00:00:09"]]
  - process
  - add:
      left: [[l, "00:00:16"]]
      right: [[r, "00:00:16"]]
  - process
  - expect:
      rows: [[a, "00:00:00", "00:00:10", 2]]
"""

# Rows that came at or behind the watermark: which input rows, and the missing window each falls in
TUMBLING_LATE = """\
scenario: why-tumbling-late
description: A window row expected although its row came after the watermark passed the window's end.
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:12"]]}
  - process
  - add: {events: [[a, "00:00:26"]]}
  - process
  - expect:
      rows: [[a, "00:00:10", "00:00:20", 1]]
  - add: {events: [[b, "00:00:15"], [a, "00:00:21"]]}
  - process
  - expect:
      rows: [[b, "00:00:10", "00:00:20", 1]]
      dropped: 0
"""

SESSION_LATE = """\
scenario: why-session-late
description: A session expected although its row's own session had ended at the watermark.
contract: session_count
params: {gap: 5s, watermark_delay: 5s}
steps:
  - add: {events: [[a, "00:00:10"], [a, "00:00:12"]]}
  - process
  - add: {events: [[b, "00:00:30"]]}
  - process
  - expect:
      rows: [[a, "00:00:10", "00:00:17", 2]]
  - add: {events: [[a, "00:00:18"]]}
  - process
  - expect:
      rows: [[a, "00:00:18", "00:00:23", 1]]
"""

JOIN_LATE = """\
scenario: why-join-late
description: Join rows expected although one right row came at the watermark.
contract: interval_join
params: {left_delay: 5s, right_delay: 5s, bound: 5s}
steps:
  - add:
      left: [[a, "00:00:20"]]
      right: [[z, "00:00:20"]]
  - process
  - add:
      right: [[a, "00:00:14"], [a, "00:00:16"]]
  - process
  - expect:
      rows: [[a, "00:00:20", "00:00:14"], [a, "00:00:20", "00:00:16"]]
"""

LATE_HEAD = "input rows at or behind the watermark their batch judged lateness by (the one the batch before it ran with):"
LATE_RULE = ("(a join, a deduplication or a state function drops such a row; an aggregate by window or session only "
             "where the row's window or session had ended by then; what this pipeline does is its own logic)")
LATE_TIMELINE = [
    "watermark timeline:",
    "  batch 0: ran with initial (1970-01-01T00:00:00Z), left 00:00:07 (1 row(s), max event time 00:00:12)",
    "  batch 1: ran with 00:00:07, left 00:00:07 (no data)",
    "  batch 2: ran with 00:00:07, left 00:00:21 (1 row(s), max event time 00:00:26)",
    "  batch 3: ran with 00:00:21, left 00:00:21 (no data)",
    "  batch 4: ran with 00:00:21, left 00:00:21 (2 row(s), max event time 00:00:21)"]

CASES = {
    "tumbling": (TUMBLING, [
        "a row ending at 00:00:10 is written by the first batch that runs with a watermark at or after it; the "
        "watermark is 00:00:07. With the delay this query showed (batch 2: max event time 00:00:12 - watermark "
        "00:00:07 = 5 s), an input row at or after 00:00:15 moves it there, and the batch after the one that reads "
        "it writes the row (an operator before the window, such as a join, can hold the watermark back further)",
        "watermark timeline:",
        "  batch 0: ran with initial (1970-01-01T00:00:00Z), left 00:00:02 (2 row(s), max event time 00:00:07)",
        "  batch 1: ran with 00:00:02, left 00:00:02 (no data)",
        "  batch 2: ran with 00:00:02, left 00:00:07 (1 row(s), max event time 00:00:12)",
        "  batch 3: ran with 00:00:07, left 00:00:07 (no data)"], '[a, "00:00:15"]'),
    "session": (SESSION, [
        "a row ending at 00:00:08 is written by the first batch that runs with a watermark at or after it; the "
        "watermark is 00:00:05. With the delay this query showed (batch 2: max event time 00:00:10 - watermark "
        "00:00:05 = 5 s), an input row at or after 00:00:13 moves it there, and the batch after the one that reads "
        "it writes the row (an operator before the window, such as a join, can hold the watermark back further)",
        "watermark timeline:",
        "  batch 0: ran with initial (1970-01-01T00:00:00Z), left -00:00:02 (2 row(s), max event time 00:00:03)",
        "  batch 1: ran with -00:00:02, left -00:00:02 (no data)",  # before the date: in the scenario's form
        "  batch 2: ran with -00:00:02, left 00:00:05 (1 row(s), max event time 00:00:10)",
        "  batch 3: ran with 00:00:05, left 00:00:05 (no data)"], '[c, "00:00:13"]'),
    "join": (JOIN, [
        "a row ending at 00:00:10 is written by the first batch that runs with a watermark at or after it; a batch "
        "has run with a global watermark of 00:00:11, but the query chains 2 stateful operators (stateStoreSave, "
        "symmetricHashJoin, as its progress lists them): the window's operator closes a window by the watermark "
        "its input carries, which an operator before it holds back (a stream-stream join by its time bound), so "
        "the global watermark must pass the end by that much more; else its rows were dropped as late or counted "
        "in another window",
        "watermark timeline:",
        "  batch 0: ran with initial (1970-01-01T00:00:00Z), left 00:00:03 (4 row(s), max event time 00:00:08)",
        "  batch 1: ran with 00:00:03, left 00:00:03 (no data)",
        "  batch 2: ran with 00:00:03, left 00:00:11 (2 row(s), max event time 00:00:16)",
        "  batch 3: ran with 00:00:11, left 00:00:11 (no data)"], None),
    "tumbling_late": (TUMBLING_LATE, [
        "a row ending at 00:00:20 is written by the first batch that runs with a watermark at or after it; a batch "
        "has run with 00:00:21, so its window was closed and written without these values: its rows were dropped "
        "as late, arrived in another window, or the window holds other values",
        "1 row(s) were dropped as late (numRowsDroppedByWatermark; a window aggregate counts groups), by batch(es) 4",
        LATE_HEAD,
        "  events [b, 00:00:15]: batch 4, watermark 00:00:21; in the missing window [00:00:10, 00:00:20), which had "
        "ended by then: a window aggregate drops it from that window as late",
        "  events [a, 00:00:21]: batch 4, watermark 00:00:21",  # behind, but its window [20, 30) is open: counted
        LATE_RULE] + LATE_TIMELINE, None),
    "tumbling_late_dropped": (TUMBLING_LATE, [  # the `dropped` check of the same step
        LATE_HEAD, "  events [b, 00:00:15]: batch 4, watermark 00:00:21", "  events [a, 00:00:21]: batch 4, watermark 00:00:21",
        LATE_RULE] + LATE_TIMELINE, None),
    "session_late": (SESSION_LATE, [
        "a row ending at 00:00:23 is written by the first batch that runs with a watermark at or after it; a batch "
        "has run with 00:00:25, so its window was closed and written without these values: its rows were dropped "
        "as late, arrived in another window, or the window holds other values",
        "1 row(s) were dropped as late (numRowsDroppedByWatermark; a window aggregate counts groups), by batch(es) 4",
        LATE_HEAD,
        "  events [a, 00:00:18]: batch 4, watermark 00:00:25; in the missing session [00:00:18, 00:00:23)",
        LATE_RULE,
        "watermark timeline:",
        "  batch 0: ran with initial (1970-01-01T00:00:00Z), left 00:00:07 (2 row(s), max event time 00:00:12)",
        "  batch 1: ran with 00:00:07, left 00:00:07 (no data)",
        "  batch 2: ran with 00:00:07, left 00:00:25 (1 row(s), max event time 00:00:30)",
        "  batch 3: ran with 00:00:25, left 00:00:25 (no data)",
        "  batch 4: ran with 00:00:25, left 00:00:25 (1 row(s), max event time 00:00:18)"], None),
    "join_late": (JOIN_LATE, [
        LATE_HEAD,
        "  right [a, 00:00:14]: batch 2, watermark 00:00:15",  # 00:00:16 is not: it joined
        LATE_RULE,
        "watermark timeline:",
        "  batch 0: ran with initial (1970-01-01T00:00:00Z), left 00:00:15 (2 row(s), max event time 00:00:20)",
        "  batch 1: ran with 00:00:15, left 00:00:15 (no data)",
        "  batch 2: ran with 00:00:15, left 00:00:15 (2 row(s), max event time 00:00:16)"], None),
}


def explanations(result):
    return [f.explanation for s in result.steps for f in s.failures]


def explanation(result, name: str) -> str:
    """The explanation CASES[name] pins: the failure's (the `dropped` check's for a *_dropped case)."""
    [text] = [f.explanation for s in result.steps for f in s.failures
              if (f.check == "dropped") == name.endswith("_dropped")]
    return text


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_missing_window_row_says_why_in_event_time_terms(name):
    text, lines, _ = CASES[name]
    result = check_scenario(load_scenario_text(text, f"{name}.scenario.yaml"))
    assert result.status == "failed"
    assert explanation(result, name) == "\n".join(lines)


@pytest.mark.parametrize("name", ["tumbling_late", "session_late", "join_late"])
def test_rows_listed_as_late_are_the_ones_that_were(name):
    """Control: the same scenario with the late rows' times moved past the watermark lists none of them
    (and the model then writes what was missing)."""
    text = CASES[name][0]
    on_time = (text.replace('[b, "00:00:15"], [a, "00:00:21"]', '[b, "00:00:22"]').replace('[[b, "00:00:10", "00:00:20", 1]]', '[[b, "00:00:20", "00:00:30", 9]]')
               .replace('[[a, "00:00:18"]]', '[[a, "00:00:26"]]').replace('[[a, "00:00:18", "00:00:23", 1]]', '[[a, "00:00:26", "00:00:31", 1]]')
               .replace('[a, "00:00:14"]', '[a, "00:00:17"]'))
    assert on_time != text
    result = check_scenario(load_scenario_text(on_time, f"{name}.scenario.yaml"))
    assert LATE_HEAD not in "".join(f.explanation for s in result.steps for f in s.failures)


@pytest.mark.parametrize("name", ["tumbling", "session"])
def test_the_input_the_explanation_names_closes_the_window(name):
    """Control: add the row it names, and the expected row is written (on the model, which agrees with
    Spark on the bundled suite)."""
    text, _, row = CASES[name]
    source = "events"
    closed = text.replace("  - expect:\n", f"  - add: {{{source}: [{row}]}}\n  - process\n  - expect:\n")
    assert check_scenario(load_scenario_text(closed, f"{name}.scenario.yaml")).status == "passed"
    # and a row 1 ms earlier does not close it
    early = closed.replace(row, row.replace('"]', '.000"]').replace(':15.000', ':14.999').replace(':13.000', ':12.999'))
    assert early != closed
    assert check_scenario(load_scenario_text(early, f"{name}.scenario.yaml")).status == "failed"


def test_no_explanation_where_rows_are_written_before_their_window_closes():
    update = TUMBLING.replace("watermark_delay: 5s}", "watermark_delay: 5s, output_mode: update}").replace(
        '[[a, "00:00:00", "00:00:10", 2]]', '[[a, "00:00:00", "00:00:10", 9]]')
    result = check_scenario(load_scenario_text(update, "u.scenario.yaml"))
    assert result.status == "failed" and explanations(result) == [""]


# -- the model confirms the explanation across the bundled suite ----------------------------------------

SWEPT = ("tumbling_count", "tumbling_sum", "sliding_count", "session_count")  # one stateful operator, one input


def _closing_cases():
    """(scenario, expect index, a window row written only later, the batches up to the expect) for every
    bundled append-mode scenario of SWEPT whose query runs throughout (no stop, restart, run or clock step)."""
    from eventtime.loader import find_scenario_files, load_scenario
    from eventtime.scenarios import SUITE_DIR
    from eventtime.semantics import simulate
    from eventtime.spec import AddStep, ExpectStep, ProcessStep

    for path in find_scenario_files([SUITE_DIR])[0]:
        sc = load_scenario(path)
        if (sc.contract.name not in SWEPT or sc.profile != "spark" or sc.params.get("output_mode", "append") != "append"
                or any(not isinstance(s, (AddStep, ProcessStep, ExpectStep)) for s in sc.steps)
                or any(v == "false" for v in sc.query_conf().values())):
            continue
        sim = simulate(sc)
        source = next(iter(sc.sources.values()))
        key_at, ts_at = source.column_names.index("key"), source.column_names.index(source.event_time)
        added = [(s.index, r[key_at], r[ts_at]) for s in sc.steps if isinstance(s, AddStep) for r in s.rows[source.name]]
        for k, obs in enumerate(sim.steps):
            if not isinstance(obs.step, ExpectStep):
                continue
            so_far = [b for o in sim.steps[:k + 1] for b in o.batches]
            later = [r for o in sim.steps[k + 1:] for b in o.batches for r in b.rows]
            row = later[0] if later else None  # a window whose rows have all been read by the expect: when does it close?
            mine = [i for i, key, ts in added if row is not None and key == row[0] and row[1] <= ts < row[2]]
            if mine and max(mine) < obs.step.index:
                yield sc, obs.step, row, so_far
                break  # one case per scenario


def _closes(sc, expect, row, ts: int) -> bool:
    """Whether, on the model, a row of `row`'s key at `ts` added after `expect` (then a process) writes `row`'s window."""
    import dataclasses

    from eventtime.semantics import simulate
    from eventtime.spec import AddStep, ProcessStep

    source = next(iter(sc.sources.values()))
    values = {"key": row[0], source.event_time: ts, "amount": 1}
    add = AddStep(expect.where, rows={source.name: (tuple(values[c] for c in source.column_names),)})
    steps = [s for s in sc.steps if s.index <= expect.index] + [add, ProcessStep(expect.where)]
    for i, s in enumerate(steps[-2:]):
        object.__setattr__(s, "_index", expect.index + 1 + i)  # the loader's step number, not a field
    sim = simulate(dataclasses.replace(sc, steps=tuple(steps)))
    return any(r[0] == row[0] and r[2] == row[2] for b in sim.steps[-1].batches for r in b.rows)


def test_the_input_each_explanation_names_closes_its_window_on_the_model():
    """For a window row each bundled scenario writes only after one of its expects, all of its rows read
    by then: asked for at that expect, the explanation names an input row (`at or after X`); on the model,
    that row added with the row's key closes the window (the next process writes it), and the same row
    1 ms earlier does not."""
    import re

    from eventtime.explain import explain_missing
    from eventtime.judge import _fmt_wm
    from eventtime.timeparse import parse_time

    checked = 0
    for sc, expect, row, so_far in _closing_cases():
        names = [c.name for c in sc.contract.output]
        text = explain_missing([row], names, so_far, "append", partial(_fmt_wm, scenario=sc), 1)
        named = re.search(r"an input row at or after (\S+) moves it there", text)
        if named is None:
            continue
        at = parse_time(named.group(1), date=sc.date, zone=sc.timezone)
        assert _closes(sc, expect, row, at), (sc.path, expect.where, row, text)
        assert not _closes(sc, expect, row, at - 1000), (sc.path, expect.where, row, text)  # 1 ms earlier: open
        checked += 1
    assert checked >= 12, checked
