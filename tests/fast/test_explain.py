"""Why an expected window row is missing (`eventtime.explain`), pinned on the model's observations for
a tumbling window, a session window and a window after a join; tests/spark/test_explain.py checks
that Spark's observations give the same words. The controls: the input the explanation names does
close the window, and an update-mode failure carries no explanation."""
from __future__ import annotations

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
        "  batch 0: ran with initial (1970-01-01T00:00:00Z), left 2023-12-31T23:59:58Z (2 row(s), max event time "
        "00:00:03)",
        "  batch 1: ran with 2023-12-31T23:59:58Z, left 2023-12-31T23:59:58Z (no data)",
        "  batch 2: ran with 2023-12-31T23:59:58Z, left 00:00:05 (1 row(s), max event time 00:00:10)",
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
}


def explanations(result):
    return [f.explanation for s in result.steps for f in s.failures]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_missing_window_row_says_why_in_event_time_terms(name):
    text, lines, _ = CASES[name]
    result = check_scenario(load_scenario_text(text, f"{name}.scenario.yaml"))
    assert result.status == "failed"
    assert explanations(result) == ["\n".join(lines)]


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
