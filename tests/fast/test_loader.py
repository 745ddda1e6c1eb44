"""The loader: a valid file becomes a `Scenario`; a bad one yields every problem at its file:line:column."""
from __future__ import annotations

import datetime as dt
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime import spec as m
from eventtime.loader import (
    ALLOWED_CONF,
    Problem,
    ScenarioInvalid,
    did_you_mean,
    find_scenario_files,
    load_scenario,
    load_scenario_text,
    schema,
    validate_file,
)
from eventtime.timeparse import parse_time

FAST = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

S = 1_000_000
JAN1_2024 = 1_704_067_200 * S


def edit(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, f"{old!r} is not in the text"
    return text.replace(old, new, 1)


def problems(text: str) -> list[Problem]:
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(text, "s.yaml")
    assert info.value.problems, "ScenarioInvalid without problems"
    return info.value.problems


def only_problem(text: str) -> Problem:
    found = problems(text)
    assert len(found) == 1, "\n".join(map(str, found))
    return found[0]


# -- a valid file --------------------------------------------------------------------------------

def test_base_scenario_loads_into_the_model(base_scenario):
    sc = load_scenario_text(base_scenario, "s.yaml")
    assert sc.name == "demo"
    assert sc.description == "A demo."
    assert sc.path == "s.yaml"
    assert sc.contract.name == "tumbling_count"
    assert sc.params["window"].total_us == 10 * S
    assert sc.params.watermark_delay.interval == "5 seconds"
    assert sc.params.output_mode == "append"  # default filled in
    assert set(sc.sources) == {"events"}
    src = sc.sources["events"]
    assert src.column_names == ("key", "ts") and src.event_time == "ts"
    assert src.where == m.Where("s.yaml", 9, 5)
    assert [s.kind for s in sc.steps] == ["add", "process", "expect"]
    assert [s.index for s in sc.steps] == [1, 2, 3]
    assert [(s.where.line, s.where.column) for s in sc.steps] == [(12, 5), (15, 5), (16, 5)]
    add, _, expect = sc.steps
    assert add.rows == {"events": (("a", JAN1_2024 + 3 * S),)}
    assert isinstance(expect, m.ExpectStep)
    assert expect.watermark_us == 0  # 'initial'
    assert expect.watermark_where == m.Where("s.yaml", 18, 18)
    assert [(c.scope, c.rows) for c in expect.rows] == [("rows", ())]
    assert sc.date == dt.date(2024, 1, 1) and sc.timezone == "UTC"
    assert sc.clock_start_us == JAN1_2024 and sc.trigger is None
    assert sc.conf == {} and sc.requires_spark is None and sc.requires_features == ()
    assert sc.lines[0] == "scenario: demo" and len(sc.lines) == 18


def test_unquoted_times_stay_times_not_base_60_integers(base_scenario):
    text = edit(edit(base_scenario, '"00:00:03"', "00:00:03"), '"initial"', "00:00:02")
    sc = load_scenario_text(text)
    assert sc.steps[0].rows["events"] == (("a", JAN1_2024 + 3 * S),)
    assert sc.steps[2].watermark_us == JAN1_2024 + 2 * S


def test_dict_rows_and_every_column_type(base_scenario):
    text = edit(base_scenario, "{key: string, ts: timestamp}",
                "{key: string, ts: timestamp, n: int, l: long, x: double, b: boolean}")
    text = edit(text, '[a, "00:00:03"]',
                '{key: a, ts: "00:00:03", n: -2147483648, l: 9223372036854775807, x: 2, b: false}\n'
                '        - [b, "2024-01-01T00:00:04+01:00", 2147483647, -9223372036854775808, .5, true]\n'
                '        - [~, ~, ~, ~, ~, ~]')
    rows = load_scenario_text(text).steps[0].rows["events"]
    assert rows[0] == ("a", JAN1_2024 + 3 * S, -2 ** 31, 2 ** 63 - 1, 2.0, False)
    assert isinstance(rows[0][4], float)
    assert rows[1] == ("b", JAN1_2024 - 3600 * S + 4 * S, 2 ** 31 - 1, -2 ** 63, 0.5, True)
    assert rows[2] == (None,) * 6


def test_date_timezone_clock_conf_and_requires(base_scenario):
    text = edit(base_scenario, "contract: tumbling_count\n", textwrap.dedent("""\
        contract: tumbling_count
        tags: [watermark, late-data]
        date: 2024-06-01
        timezone: Europe/Paris
        clock: {start: "10:00:00", trigger: 1s}
        conf:
          spark.sql.streaming.noDataMicroBatches.enabled: false
          spark.sql.session.timeZone: UTC
        requires:
          spark: ">=3.5"
          features: [multiple_stateful_operators]
        """))
    sc = load_scenario_text(text)
    assert sc.tags == ("watermark", "late-data")
    assert sc.date == dt.date(2024, 6, 1) and sc.timezone == "Europe/Paris"
    assert sc.clock_start_us == parse_time("2024-06-01T08:00:00Z")  # Paris is UTC+2 in June
    assert sc.trigger is not None and sc.trigger.total_us == S
    assert sc.conf == {"spark.sql.streaming.noDataMicroBatches.enabled": "false",
                       "spark.sql.session.timeZone": "UTC"}
    assert sc.requires_spark == ">=3.5"
    assert sc.requires_features == ("multiple_stateful_operators",)
    # time-only literals in rows fall on `date`, in `timezone`
    assert sc.steps[0].rows["events"][0][1] == parse_time("2024-05-31T22:00:03Z")


def test_query_conf_adds_conf_backed_parameters():
    text = textwrap.dedent("""\
        scenario: u
        description: d
        contract: union_tumbling_count
        params: {window: 10s, left_delay: 5s, right_delay: 1s, policy: max}
        conf: {spark.sql.streaming.noDataMicroBatches.enabled: true}
        sources:
          left: {columns: {key: string, ts: timestamp}, event_time: ts}
          right: {columns: {key: string, ts: timestamp}, event_time: ts}
        steps:
          - add: {left: [[a, '00:00:01']], right: [{key: b, ts: '00:00:02'}]}
          - process
        """)
    sc = load_scenario_text(text)
    assert sc.query_conf() == {"spark.sql.streaming.noDataMicroBatches.enabled": "true",
                               "spark.sql.streaming.multipleWatermarkPolicy": "max"}
    assert sc.steps[0].rows == {"left": (("a", JAN1_2024 + S),), "right": (("b", JAN1_2024 + 2 * S),)}


def test_processing_time_contract_without_event_time_and_advance_with_trigger():
    text = textwrap.dedent("""\
        scenario: p
        description: d
        contract: processing_time_stamp
        clock: {start: '10:00:00', trigger: 1s}
        sources:
          events: {columns: {key: string, ts: timestamp}}
        steps:
          - add: {events: [[a, '00:00:01']]}
          - advance: 1s
          - expect:
              rows: [[a, '00:00:01', '10:00:01']]
              batches: [{data: true, watermark_before: initial, watermark_after: '00:00:00', dropped: 0}]
              event_time: {min: '00:00:01', max: '00:00:01'}
        """)
    sc = load_scenario_text(text)
    advance, expect = sc.steps[1], sc.steps[2]
    assert isinstance(advance, m.AdvanceStep) and advance.by.total_us == S
    assert expect.rows[0].rows == (("a", JAN1_2024 + S, JAN1_2024 + 36001 * S),)
    assert expect.batches[0].data is True
    assert expect.batches[0].watermark_before_us == 0
    assert expect.batches[0].watermark_after_us == JAN1_2024
    assert expect.batches[0].dropped == 0
    assert expect.event_time.min_us == JAN1_2024 + S and expect.event_time.avg_us is None


def test_stop_start_restart_with_conf(base_scenario):
    text = edit(base_scenario, "  - process\n",
                "  - process\n"
                "  - stop\n"
                "  - start:\n"
                "      conf:\n"
                "        spark.sql.streaming.multipleWatermarkPolicy: max\n"
                "  - restart\n"
                "  - process\n")
    sc = load_scenario_text(text)
    kinds = [s.kind for s in sc.steps]
    assert kinds == ["add", "process", "stop", "start", "restart", "process", "expect"]
    start = sc.steps[3]
    assert start.conf == {"spark.sql.streaming.multipleWatermarkPolicy": "max"} and not start.restart
    assert sc.steps[4].restart
    assert not any(getattr(s, "new_session", False) for s in sc.steps)


def test_restart_and_start_in_a_new_session(base_scenario):
    text = edit(base_scenario, "  - process\n",
                "  - process\n  - restart: {session: new}\n  - stop\n  - start: {session: new, conf: {}}\n"
                "  - restart: {session: same}\n  - process\n")
    sc = load_scenario_text(text)
    assert [(s.kind, s.new_session) for s in sc.steps if isinstance(s, m.StartStep)] == [
        ("restart", True), ("start", True), ("restart", False)]


def test_step_text_shows_the_lines_of_a_step(base_scenario):
    sc = load_scenario_text(base_scenario)
    assert sc.step_text(sc.steps[0]) == [(12, "  - add:"), (13, "      events:"), (14, '        - [a, "00:00:03"]')]
    assert sc.step_text(sc.steps[2])[-1] == (18, '      watermark: "initial"')


# -- one problem, at its place -------------------------------------------------------------------

# from the source's columns to its first row, to change both in one edit
_ROW_TAIL = """ts: timestamp}
    event_time: ts
steps:
  - add:
      events:
        - [a, "00:00:03"]"""

CASES = [
    # id, old, new, line, column, phrase
    ("unknown step kind", "  - process\n", "  - proces\n", 15, 5,
     "unknown step kind 'proces'; did you mean 'process'?"),
    ("unknown step kind as key", "  - process\n", "  - procss: null\n", 15, 5,
     "unknown step kind 'procss'; did you mean 'process'?"),
    ("unknown step kind without suggestion", "  - process\n", "  - jump\n", 15, 5,
     "unknown step kind 'jump' (steps: add, process, update, advance, stop, start, restart, run, expect, generate, static, watermark, idle, active)"),
    ("step with two kinds", "  - process\n", "  - process: null\n    stop: null\n", 15, 5,
     "a step has exactly one kind, found 2 keys (process, stop)"),
    ("step with no kind", "  - process\n", "  - process\n  - {}\n", 16, 5, "a step has exactly one kind, found 0 keys"),
    ("step that is a number", "  - process\n", "  - 5\n", 15, 5,
     "a step is a step name or a one-key mapping, not an integer"),
    ("bare add", "  - process\n", "  - process\n  - add\n", 16, 5, "step 'add' needs a value, e.g. `- add: ...`"),
    ("bare expect", "  - process\n", "  - process\n  - expect\n", 16, 5, "step 'expect' needs a value"),
    ("bare advance", "  - process\n", "  - process\n  - advance\n", 16, 5, "step 'advance' needs a value"),
    ("process with a value", "  - process\n", "  - process: 3\n", 15, 14, "`process` takes no value"),
    ("bad time literal in a row", '"00:00:03"', '"00:00:3x"', 14, 15, "cannot read timestamp '00:00:3x'"),
    ("impossible time in a row", '"00:00:03"', '"25:00:00"', 14, 15, "hour must be in 0..23"),
    ("unknown source in add", "      events:\n        - [a", "      event:\n        - [a", 13, 7,
     "unknown source 'event'; did you mean 'events'? (sources: events)"),
    ("row with too few values", '[a, "00:00:03"]', "[a]", 14, 11,
     "row has 1 value but source 'events' has 2 columns (key, ts)"),
    ("row with too many values", '[a, "00:00:03"]', '[a, "00:00:03", 1]', 14, 11,
     "row has 3 values but source 'events' has 2 columns"),
    ("number in a string column", '[a, "00:00:03"]', '[1, "00:00:03"]', 14, 12,
     "column 'key' is string: expected text, got an integer 1 (quote it)"),
    ("float in a string column", '[a, "00:00:03"]', '[1.5, "00:00:03"]', 14, 12,
     "column 'key' is string: expected text, got a number 1.5"),
    ("boolean in a string column", '[a, "00:00:03"]', '[true, "00:00:03"]', 14, 12,
     "column 'key' is string: expected text, got a boolean True"),
    ("number in a timestamp column", '[a, "00:00:03"]', "[a, 3]", 14, 15, "expected a timestamp"),
    ("dict row missing a column", '[a, "00:00:03"]', "{key: a}", 14, 11,
     "row does not give column ts of source 'events'"),
    ("misspelled top-level key", "description: A demo.\n", "description: A demo.\nsteeps: []\n", 3, 1,
     "unknown key 'steeps'; did you mean 'steps'?"),
    ("unknown top-level key", "contract:", "bogus: 1\ncontract:", 3, 1,
     "unknown key 'bogus' (known: scenario, description, tags, contract, params, requires, date, timezone,"),
    ("misspelled expect key", "no_output: true", "no_ouput: true", 17, 7,
     "unknown key 'no_ouput'; did you mean 'no_output'?"),
    ("misspelled clock key", "contract:", "clock: {triger: 1s}\ncontract:", 3, 9,
     "unknown key 'triger'; did you mean 'trigger'?"),
    ("misspelled batch key", "no_output: true", "batches: [{watermark_afer: '00:00:00'}]", 17, 18,
     "unknown key 'watermark_afer'; did you mean 'watermark_after'?"),
    ("missing description", "description: A demo.\n", "", 1, 1, "missing required key 'description'"),
    ("no step runs a batch", "  - process\n", "", 12, 3, "no step ever runs a micro-batch: add a `- process` step"),
    ("advance without a trigger", "  - process\n", "  - advance: 5s\n", 12, 3,
     "(`advance` runs batches only with `clock: {trigger: ...}`)"),
    ("start while running", "  - process\n", "  - process\n  - start\n", 16, 5,
     "the query is already running here; use `restart`"),
    ("stop while stopped", "  - process\n", "  - process\n  - stop\n  - stop\n", 17, 5,
     "the query is already stopped here (add `- start` before)"),
    ("restart while stopped", "  - process\n", "  - process\n  - stop\n  - restart\n", 17, 5,
     "the query is stopped here; use `start`"),
    ("stop with a value", "  - process\n", "  - process\n  - stop: now\n", 16, 11, "`stop` takes no value"),
    ("conf key not allow-listed", "sources:", "conf:\n  spark.executor.memory: 4g\nsources:", 8, 3,
     "Spark setting 'spark.executor.memory' cannot be set by a scenario"),
    ("conf key misspelled", "sources:", "conf:\n  spark.sql.streaming.multipleWatermarkPolicyy: max\nsources:", 8, 3,
     "did you mean 'spark.sql.streaming.multipleWatermarkPolicy'?"),
    ("conf value not allowed", "sources:", "conf:\n  spark.sql.streaming.multipleWatermarkPolicy: avg\nsources:", 8, 48,
     "spark.sql.streaming.multipleWatermarkPolicy must be one of min, max, not 'avg'"),
    ("conf boolean not allowed", "sources:",
     "conf:\n  spark.sql.streaming.multipleWatermarkPolicy: true\nsources:", 8, 48, "not 'true'"),
    ("conf time zone unknown", "sources:", "conf:\n  spark.sql.session.timeZone: Mars/X\nsources:", 8, 31,
     "unknown time zone 'Mars/X'"),
    ("conf in start not allow-listed", "  - process\n",
     "  - process\n  - restart:\n      conf: {spark.foo: x}\n", 17, 14, "Spark setting 'spark.foo' cannot be set"),
    ("restart in an unknown session", "  - process\n", "  - process\n  - restart: {session: old}\n", 16, 24,
     "'old' is not allowed here (one of: same, new)"),
    ("start with an unknown key", "  - process\n", "  - process\n  - restart: {config: {}}\n", 16, 15,
     "unknown key 'config'; did you mean 'conf'?"),
    ("unknown contract", "contract: tumbling_count", "contract: tumbling_cnt", 3, 11,
     "unknown contract 'tumbling_cnt'; did you mean 'tumbling_count'?"),
    ("contract not text", "contract: tumbling_count", "contract: [tumbling_count]", 3, 11,
     "'contract' must be text or a mapping, not a list"),
    ("missing parameter", "  window: 10 seconds\n", "", 5, 3,
     "contract 'tumbling_count' needs parameter 'window' (window length)"),
    ("bad duration unit", "10 seconds", "10 parsecs", 5, 11, "unknown unit 'parsecs' in duration '10 parsecs'"),
    ("duration without unit", "10 seconds", "10", 5, 11, "expected a duration with a unit"),
    ("bad choice parameter", "  window: 10 seconds\n", "  window: 10 seconds\n  output_mode: apend\n", 6, 16,
     "parameter 'output_mode' must be one of append, update, complete, not 'apend'; did you mean 'append'?"),
    ("expectation of a column the contract lacks", "      no_output: true\n",
     "      rows:\n        - {key: a, window_start: '00:00:00', window_end: '00:00:10', count: 1, total: 2}\n",
     18, 80, "the output of contract 'tumbling_count' has no column 'total' (columns: key, window_start, window_end, count)"),
    ("expected row of the wrong width", "      no_output: true\n",
     "      rows:\n        - [a, '00:00:00', '00:00:10']\n", 18, 11,
     "row has 3 values but the output of contract 'tumbling_count' has 4 columns"),
    ("expected count not a number", "      no_output: true\n",
     "      rows:\n        - [a, '00:00:00', '00:00:10', two]\n", 18, 39,
     "column 'count' is long: expected a whole number, got text 'two'"),
    ("expected output row bad time", "      no_output: true\n",
     "      output:\n        - [a, '0:0', '00:00:10', 1]\n", 18, 15, "cannot read timestamp '0:0'"),
    ("event_time not a column", "event_time: ts", "event_time: tz", 10, 17,
     "event_time 'tz' is not a column of source 'events'"),
    ("event_time column not a timestamp", "    event_time: ts", "    event_time: key", 10, 17,
     "event_time column 'key' must be a timestamp, not string"),
    ("column type unknown", _ROW_TAIL, _ROW_TAIL.replace("timestamp}", "timestamp, n: uuid}").replace('"]', '", x]'),
     9, 46, "column 'n': unknown type 'uuid' (types: array<T>, bigint, binary, boolean, byte, date, decimal(p,s)"),
    ("column type misspelled", _ROW_TAIL,
     _ROW_TAIL.replace("timestamp}", "timestamp, n: boolen}").replace('"]', '", x]'), 9, 46,
     "column 'n': unknown type 'boolen'; did you mean 'boolean'?"),
    ("contract column missing", "{key: string, ts: timestamp}", "{k: string, ts: timestamp}", 9, 14,
     "source 'events' needs column 'key' (string) for contract 'tumbling_count'"),
    ("scenario name with capitals", "scenario: demo", "scenario: Demo", 1, 11,
     "scenario name 'Demo' must be lower case letters, digits, '-', '_' or '.'"),
    ("scenario name a number", "scenario: demo", "scenario: 5", 1, 11, "'scenario' must be text, not an integer"),
    ("empty description", "description: A demo.", "description: ''", 2, 14, "'description' must not be empty"),
    ("tag given twice", "contract:", "tags: [a, a]\ncontract:", 3, 7, "'tags' lists an item twice"),
    ("advance of zero", "  - process\n", "  - process\n  - advance: 0s\n", 16, 14, "the duration must be longer than zero"),
    ("advance a number", "  - process\n", "  - process\n  - advance: 5\n", 16, 14, "'advance' must be text, not an integer"),
    ("advance bad duration", "  - process\n", "  - process\n  - advance: 5 sec 1 s\n", 16, 14, "given twice"),
    ("watermark not a time", '"initial"', '"soon"', 18, 18, "cannot read timestamp 'soon'"),
    ("watermark a number", '"initial"', "5", 18, 18, "'watermark' has the wrong form: expected a time literal, "
     "'initial' for Spark's starting value, or a range {at_least: T, at_most: T}"),
    ("no_output false", "no_output: true", "no_output: false", 17, 18, "'no_output' can only be true"),
    ("no_output and rows", "no_output: true", "no_output: true\n      rows: []", 17, 7,
     "`no_output` and `rows` say the same thing twice; keep one"),
    ("expect empty", "      no_output: true\n      watermark: \"initial\"\n", "      {}\n", 17, 7,
     "an `expect` without checks: a check left empty is for a snapshot to fill"),
    ("dropped negative", "no_output: true", "dropped: -1", 17, 16, "'dropped' must be at least 0"),
    ("state_rows not an integer", "no_output: true", "state_rows: 1.5", 17, 19,
     "'state_rows' must be an integer, not a number"),
    ("batches of the wrong form", "no_output: true", "batches: many", 17, 16,
     "'batches' has the wrong form: expected how many micro-batches ran"),
    ("batches count negative", "no_output: true", "batches: -1", 17, 16, "'batches' must be at least 0"),
    ("batch data not boolean", "no_output: true", "batches: [{data: 1}]", 17, 24, "'data' must be true or false"),
    ("batch watermark bad", "no_output: true", "batches:\n        - {watermark_after: 'x'}", 18, 29,
     "cannot read timestamp 'x'"),
    ("event_time statistic bad", "no_output: true", "event_time: {min: 'y'}", 17, 25, "cannot read timestamp 'y'"),
    ("event_time unknown statistic", "no_output: true", "event_time: {median: '00:00:01'}", 17, 20,
     "unknown key 'median'"),
    ("failure stands alone", "      no_output: true\n      watermark: \"initial\"\n",
     "      failure: {message: boom}\n      dropped: 1\n", 18, 7,
     "an expected failure stands alone"),
    ("failure empty", "      no_output: true\n      watermark: \"initial\"\n", "      failure: {}\n", 17, 16,
     "'failure' must not be empty"),
    ("bad date", "contract:", "date: 2024-13-01\ncontract:", 3, 7, "invalid date '2024-13-01': month must be in 1..12"),
    ("date of the wrong form", "contract:", "date: 01/02/2024\ncontract:", 3, 7, "expected a date such as '2024-01-01'"),
    ("unknown time zone", "contract:", "timezone: Mars/Olympus\ncontract:", 3, 11, "unknown time zone 'Mars/Olympus'"),
    ("unknown Spark feature", "contract:", "requires:\n  features: [transform_with_stat]\ncontract:", 4, 14,
     "unknown Spark feature 'transform_with_stat'; did you mean 'transform_with_state'?"),
    ("bad version specifier", "contract:", "requires:\n  spark: three\ncontract:", 4, 10,
     "'three' is not a version specifier"),
    ("unknown requires key", "contract:", "requires:\n  java: '17'\ncontract:", 4, 3, "unknown key 'java'"),
    ("trigger of zero", "contract:", "clock: {trigger: 0s}\ncontract:", 3, 18, "the duration must be longer than zero"),
    ("clock start not a time", "contract:", "clock: {start: later}\ncontract:", 3, 16, "cannot read timestamp 'later'"),
    ("clock start before 1970", "contract:", "clock: {start: '1969-12-31T23:00:00Z'}\ncontract:", 3, 16,
     "the processing-time clock cannot start before 1970-01-01"),
    ("clock unknown key", "contract:", "clock: {tick: 1s}\ncontract:", 3, 9, "unknown key 'tick'"),
    ("operator entry with an unknown key", '      watermark: "initial"', '      operators: [{nme: dedupe}]', 18, 20,
     "unknown key 'nme'"),
    ("event_time neither none nor statistics", '      watermark: "initial"', '      event_time: nothing', 18, 19,
     "event_time"),
    ("batch_watermark not a time", '      watermark: "initial"', '      batch_watermark: soon', 18, 24,
     "cannot read timestamp 'soon'"),
    ("tag with capitals", "contract:", "tags: [late-data, Bad]\ncontract:", 3, 19, "tag 'Bad' must be lower case letters, digits, '-' or '_'"),
]


@pytest.mark.parametrize("old, new, line, column, phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_problem_at_its_place(base_scenario, old, new, line, column, phrase):
    problem = only_problem(edit(base_scenario, old, new))
    assert (problem.line, problem.column) == (line, column), str(problem)
    assert phrase in problem.message, str(problem)
    assert problem.file == "s.yaml"
    assert str(problem) == f"s.yaml:{line}:{column}: {problem.message}"


@pytest.mark.parametrize("column_type, value, ok", [
    ("int", "2147483647", True), ("int", "-2147483648", True),
    ("int", "2147483648", False), ("int", "-2147483649", False),
    ("long", "9223372036854775807", True), ("long", "9223372036854775808", False),
    ("long", "1.5", False), ("long", "true", False), ("long", '"5"', False),
    ("double", "5", True), ("double", ".nan", True), ("double", "yes", False), ("double", "false", False),
    ("boolean", "true", True), ("boolean", "yes", False), ("boolean", "1", False),
])
def test_values_must_fit_the_column_type(base_scenario, column_type, value, ok):
    text = edit(base_scenario, "ts: timestamp}", f"ts: timestamp, n: {column_type}}}")
    text = edit(text, '[a, "00:00:03"]', f'[a, "00:00:03", {value}]')
    if ok:
        load_scenario_text(text)
        return
    problem = only_problem(text)
    assert (problem.line, problem.column) == (14, 27)
    assert f"column 'n' is {column_type}" in problem.message


@pytest.mark.parametrize("steps, column, phrase", [
    ("[]", 8, "'steps' must not be empty"),
    ("process", 8, "'steps' must be a list, not text"),
    ("{process: null}", 8, "'steps' must be a list, not a mapping"),
])
def test_steps_of_the_wrong_form(base_scenario, steps, column, phrase):
    problem = only_problem(base_scenario.split("steps:")[0] + f"steps: {steps}\n")
    assert (problem.line, problem.column, problem.message) == (11, column, phrase)


def test_a_source_without_event_time_takes_the_contracts(base_scenario):
    """The contract names each source's event-time column; a scenario need not repeat it."""
    sc = load_scenario_text(edit(base_scenario, "    event_time: ts\n", ""), "s.yaml")
    assert sc.sources["events"].event_time == "ts"


def test_missing_steps_and_sources(base_scenario):
    head = base_scenario.split("sources:")[0]
    found = problems(head)
    # sources may be left out (the contract's are taken); steps may not
    assert [str(p) for p in found] == ["s.yaml:1:1: missing required key 'steps'"]


def first_problems(text: str, n: int) -> list[str]:
    return [str(p) for p in problems(text)[:n]]


def test_problems_that_follow_from_a_first_one(base_scenario):
    """Where one mistake causes more reports, the first report names the mistake at its place."""
    assert first_problems(edit(base_scenario, "sources:\n  events:", "sources: {}\nold:\n  events:"), 1) == [
        "s.yaml:7:10: 'sources' must not be empty"]
    assert first_problems(edit(base_scenario, "    columns: {key: string, ts: timestamp}\n", ""), 1) == [
        "s.yaml:9:5: source 'events' needs `columns:` (a DDL list or a mapping of name to type), or a `kind:` "
        "(kafka, text)"]
    found = [str(p) for p in problems(edit(base_scenario, "    event_time: ts", "    event_tme: ts"))]
    assert "s.yaml:10:5: unknown key 'event_tme'; did you mean 'event_time'?" in found
    found = [str(p) for p in problems(edit(base_scenario, "10 seconds", "{n: 10}"))]
    assert found[0] == ("s.yaml:5:11: 'window' must be text or an integer or a number or true or false, "
                        "not a mapping")
    found = [str(p) for p in problems(edit(base_scenario, "sources:", "conf:\n  spark.sql.session.timeZone: [UTC]\n"
                                                                      "sources:"))]
    assert found[0] == ("s.yaml:8:31: 'spark.sql.session.timeZone' must be text or an integer or a number or "
                        "true or false, not a list")


def test_every_problem_is_reported_sorted(base_scenario):
    text = edit(base_scenario, "contract: tumbling_count", "contract: tumbling_count\nbogus: 1")
    text = edit(text, "10 seconds", "10 parsecs")
    text = edit(text, "  - process\n", "  - proces\n")
    found = problems(text)
    assert [(p.line, p.column) for p in found] == [(4, 1), (6, 11), (16, 5)]
    assert [p.line for p in found] == sorted(p.line for p in found)
    assert "unknown key 'bogus'" in found[0].message
    assert "unknown unit 'parsecs'" in found[1].message
    assert "unknown step kind 'proces'" in found[2].message


def test_misspelled_parameter_also_reports_the_missing_one(base_scenario):
    found = problems(edit(base_scenario, "  window: 10 seconds", "  windw: 10 seconds"))
    assert {(p.line, p.column) for p in found} == {(5, 3)}
    messages = " | ".join(p.message for p in found)
    assert "contract 'tumbling_count' has no parameter 'windw'; did you mean 'window'?" in messages
    assert "needs parameter 'window'" in messages


def test_unknown_column_in_a_dict_row(base_scenario):
    found = problems(edit(base_scenario, '[a, "00:00:03"]', '{key: a, tss: "00:00:03"}'))
    assert [(p.line, p.column) for p in found] == [(14, 11), (14, 20)]
    assert "row does not give column ts" in found[0].message
    assert "source 'events' has no column 'tss'; did you mean 'ts'? (columns: key, ts)" in found[1].message


def test_undeclared_contract_source(base_scenario):
    found = problems(edit(base_scenario, "  events:\n    columns", "  other:\n    columns"))
    messages = [str(p) for p in found]
    assert "s.yaml:8:3: contract 'tumbling_count' reads no source 'other' (it reads: events)" in messages
    assert ("s.yaml:8:3: contract 'tumbling_count' reads source 'events'; declare it (or leave `sources:` out to "
            "take the contract's)") in messages
    assert any(m_.startswith("s.yaml:13:7: unknown source 'events'") for m_ in messages)


def test_not_a_mapping():
    problem = only_problem("- a\n- b\n")
    assert (problem.line, problem.column) == (1, 1)
    assert "a scenario file is a YAML mapping" in problem.message and "not a list" in problem.message
    assert "not text" in only_problem("just words\n").message


def test_yaml_problems_become_scenario_problems(base_scenario):
    problem = only_problem(edit(base_scenario, "contract: tumbling_count\n",
                                "contract: tumbling_count\ncontract: tumbling_count\n"))
    assert (problem.line, problem.column) == (4, 1)
    assert "key 'contract' appears twice" in problem.message
    problem = only_problem(edit(base_scenario, "  - process\n", "  - process: [\n"))
    assert problem.line == 16 and problem.message.startswith("YAML syntax error:")
    problem = only_problem(edit(base_scenario, "A demo.", "!!python/name:os.system x"))
    assert (problem.line, problem.column) == (2, 14) and "is not allowed" in problem.message


def test_scenario_invalid_lists_problems_in_its_text(base_scenario):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(edit(base_scenario, "  - process\n", "  - proces\n"), "x/y.scenario.yaml")
    assert str(info.value).startswith("x/y.scenario.yaml:15:5: unknown step kind 'proces'")


def test_did_you_mean():
    assert did_you_mean("proces", ["process", "stop"]) == "; did you mean 'process'?"
    assert did_you_mean("zzz", ["process", "stop"]) == ""
    assert did_you_mean(5, ["5s"]) == "; did you mean '5s'?"


def test_schema_is_the_bundled_json_schema():
    sc = schema()
    assert sc["$id"] == "urn:eventtime:scenario:1"
    assert set(sc["required"]) == {"scenario", "description", "contract", "steps"}
    assert "spark.sql.session.timeZone" in ALLOWED_CONF


# -- bugs ----------------------------------------------------------------------------------------

def test_clock_can_start_at_the_epoch(base_scenario):
    sc = load_scenario_text(edit(base_scenario, "contract:", "clock: {start: '1970-01-01T00:00:00Z'}\ncontract:"))
    assert sc.clock_start_us == 0


def test_clock_start_at_the_epoch_in_a_zone_east_of_utc_is_valid(base_scenario):
    text = edit(base_scenario, "contract:", "date: 1970-01-01\ntimezone: Europe/Paris\n"
                                            "clock: {start: '1970-01-01T00:00:00Z'}\ncontract:")
    text = edit(text, '"00:00:03"', '"1970-01-01T00:00:03Z"')
    assert load_scenario_text(text).clock_start_us == 0


def test_clock_start_just_after_the_epoch_is_kept(base_scenario):
    sc = load_scenario_text(edit(base_scenario, "contract:", "clock: {start: '1970-01-01T00:00:00.001Z'}\ncontract:"))
    assert sc.clock_start_us == 1000


def test_tag_pattern_message_says_lower_case(base_scenario):
    problem = only_problem(edit(base_scenario, "contract:", "tags: [Bad]\ncontract:"))
    assert "lower case" in problem.message


def test_leading_zero_number_in_a_long_column(base_scenario):
    text = edit(base_scenario, "ts: timestamp}", "ts: timestamp, n: long}")
    text = edit(text, '[a, "00:00:03"]', '[a, "00:00:03", 017]')
    load_scenario_text(text)


# -- files ---------------------------------------------------------------------------------------

def test_unknown_column_type_is_not_called_string(base_scenario):
    text = edit(base_scenario, _ROW_TAIL,
                _ROW_TAIL.replace("timestamp}", "timestamp, n: uuid}").replace('"]', '", 1.5]'))
    found = problems(text)
    assert not any("is string" in p.message for p in found), "\n".join(map(str, found))


def test_load_and_validate_a_file(write_scenario, base_scenario):
    path = write_scenario("a/ok.scenario.yaml", base_scenario)
    assert validate_file(path) == []
    assert validate_file(str(path)) == []
    sc = load_scenario(path, display_path="shown.yaml")
    assert sc.path == "shown.yaml" and sc.where == m.Where("shown.yaml", 1, 1)


def test_validate_a_bad_file_names_it(write_scenario, base_scenario):
    path = write_scenario("bad.scenario.yaml", edit(base_scenario, "  - process\n", "  - proces\n"))
    found = validate_file(path)
    assert [(p.file, p.line, p.column) for p in found] == [(str(path), 15, 5)]


def test_missing_file(tmp_path):
    found = validate_file(tmp_path / "nope.scenario.yaml")
    assert len(found) == 1
    assert (found[0].line, found[0].column) == (1, 1)
    assert found[0].message == "cannot read file: No such file or directory"


def test_a_directory_is_not_a_file(tmp_path):
    found = validate_file(tmp_path)
    assert len(found) == 1 and found[0].message.startswith("cannot read file:")


def test_not_utf8_is_reported_at_its_line(write_scenario):
    path = write_scenario("latin1.scenario.yaml", b"scenario: x\ndescription: caf\xe9\n")
    found = validate_file(path)
    assert [(p.line, p.column, p.message) for p in found] == [(2, 1, "the file is not UTF-8 text")]


def test_find_scenario_files(tmp_path, write_scenario, base_scenario):
    a = write_scenario("d/b.scenario.yaml", base_scenario)
    b = write_scenario("d/sub/a.scenario.yml", base_scenario)
    write_scenario("d/notes.yaml", "x: 1\n")
    write_scenario("d/README.md", "hi\n")
    other = write_scenario("other.yaml", "x: 1\n")
    files, missing = find_scenario_files([tmp_path / "d", other, tmp_path / "gone", str(tmp_path / "gone2")])
    assert files == [a, b, other]  # files of a folder sorted; an explicit file kept whatever its name
    assert missing == [str(tmp_path / "gone"), str(tmp_path / "gone2")]
    assert find_scenario_files([]) == ([], [])


# -- robustness ----------------------------------------------------------------------------------

_TOKENS = st.sampled_from([
    "", " ", "\n", ":", "- ", "[", "]", "{", "}", "'", "x", "5", "0s", "-1", "null", "true", "initial", "1.5",
    "[]", "{}", "process", "stop", "start", "restart", "advance: 1s", "expect: {rows: [[a]]}", "rows:",
    "batches:", "- {}", "event_time: {min: x}", "failure: {}", "00:00:01", "1970-01-01", "2024-02-30", "add:",
    "events:", "ts", "key", "window_start", "conf: {a: b}", "clock: {start: x}", "~", "99999999999999999999",
    "!!str", ".nan", "ordered: true", "data: 1", "watermark_after: 5"])


@FAST
@given(edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 8), _TOKENS), min_size=1, max_size=4))
def test_mangled_scenarios_only_raise_scenario_invalid(base_scenario, edits):
    text = base_scenario
    for pos, cut, token in edits:
        pos = min(pos, len(text))
        text = text[:pos] + token + text[pos + cut:]
    try:
        load_scenario_text(text, "s.yaml")
    except ScenarioInvalid as exc:
        assert exc.problems
        lines = text.count("\n") + 2
        for p in exc.problems:
            assert 1 <= p.line <= lines and p.column >= 1 and p.message


@FAST
@given(rows=st.lists(st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
                               st.integers(min_value=0, max_value=86400 * 10 ** 6 - 1)), min_size=1, max_size=5))
def test_generated_rows_load_exactly(base_scenario, rows):
    from eventtime.timeparse import format_time

    def quoted(text: str) -> str:  # a YAML double-quoted scalar; \U escapes for all but plain ASCII
        return '"' + "".join(c if " " <= c <= "~" and c not in '"\\' else f"\\U{ord(c):08x}" for c in text) + '"'

    day = dt.date(2024, 1, 1)
    lines = "".join(f"        - [{quoted(key)}, {format_time(JAN1_2024 + off, date=day)}]\n" for key, off in rows)
    text = edit(base_scenario, '        - [a, "00:00:03"]\n', lines)
    sc = load_scenario_text(text)
    assert sc.steps[0].rows["events"] == tuple((key, JAN1_2024 + off) for key, off in rows)


def test_checks_of_what_the_operators_did(base_scenario):
    text = edit(base_scenario, '      watermark: "initial"', """      watermark: "initial"
      updated: 2
      batch_watermark: initial
      event_time: none
      operators:
        - {name: stateStoreSave, state_rows: 1, updated: 2, dropped: 0}
        - {dropped: 1}
  - process
  - expect:
      event_time: {max: "00:00:03", watermark: initial}
      batches: [{updated: 0}]""")
    sc = load_scenario_text(text, "s.yaml")
    first, second = [s for s in sc.steps if s.kind == "expect"]
    assert (first.updated, first.batch_watermark_us, first.event_time.none) == (2, 0, True)
    assert first.batch_watermark_where.line == 20
    assert [(o.position, o.name, o.state_rows, o.updated, o.dropped, o.where.line) for o in first.operators] == [
        (0, "stateStoreSave", 1, 2, 0, 23), (1, None, None, None, 1, 24)]
    assert second.event_time.watermark_us == 0 and not second.event_time.none
    assert second.batches[0].updated == 0


def test_each_key_of_an_expect_is_placed_at_its_line(base_scenario):
    text = base_scenario.rstrip("\n") + "\n      dropped: 0\n      state_rows: 1\n"
    expect = load_scenario_text(text, "s.yaml").steps[-1]
    assert isinstance(expect, m.ExpectStep)
    assert (expect.at("dropped").line, expect.at("state_rows").line) == (19, 20)
    assert expect.at("batches") == expect.where  # not written: the step's own place
