"""Messages that misled users, each quoted as it now reads: the batches a failing expect of one query of
a job looked at, timestamps in failure tables under `columns:`, a watermark before the scenario's date
in the scenario's own form, empty checks pointing at the snapshot, a misspelt binding on the command
line, the Spark settings option of pytest (issue 45, *Messages that mislead*)."""
from __future__ import annotations

import textwrap

import pytest

from eventtime.harness.observations import BatchObservation
from eventtime.judge import Observed, judge
from eventtime.loader import ScenarioInvalid, load_scenario, load_scenario_text
from eventtime.results import FAILED, PASSED, ScenarioResult, StepResult
from eventtime.textreport import describe_failure
from eventtime.timeparse import parse_time

T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z, the scenarios' date
US = 1000


def _s(seconds: float) -> int:
    return T0_MS + int(seconds * 1000)


TUMBLING = textwrap.dedent("""\
    scenario: s
    description: d
    contract: tumbling_count
    params: {window: 10 seconds, watermark_delay: 5 seconds, output_mode: append}
    sources:
      events: {columns: {key: string, ts: timestamp}, event_time: ts}
    steps:
      - add: {events: [[a, "00:00:03"]]}
      - process
      - expect: {rows: [[a, "00:00:00", "00:00:10", 1]]}
    """)


def _result(sc, steps):
    return ScenarioResult(sc, "jobs:main", FAILED, steps=steps)


# -- a watermark before the scenario's date, beside its times ----------------------------------------
def test_a_watermark_before_the_date_is_shown_as_the_time_before_its_midnight():
    import datetime as dt

    from eventtime.timeparse import format_relative

    day = dt.date(2024, 1, 1)
    assert format_relative(_s(-2) * US, date=day) == "-00:00:02"
    assert format_relative(_s(-0.5) * US, date=day) == "-00:00:00.500"
    assert format_relative(_s(3) * US, date=day) == "00:00:03"
    assert format_relative(_s(-2 * 86400) * US, date=day) == "2023-12-30T00:00:00Z"  # a day or more: the instant
    assert parse_time("-00:00:02", date=day) == _s(-2) * US  # what is shown can be written back
    assert parse_time("-00:00:00.500", date=day) == _s(-0.5) * US


def test_an_explanation_shows_the_watermark_and_the_event_times_in_one_form():
    sc = load_scenario_text(TUMBLING, "s.yaml")
    batches = [BatchObservation(0, 1, None, 0, _s(-2), event_time={"max": _s(3)}),
               BatchObservation(1, 0, None, _s(-2), _s(-2))]
    (failure,) = judge(sc.steps[-1], Observed(batches, batches, "append", sc.contract.output_names), sc)
    assert ("a row ending at 00:00:10 is written by the first batch that runs with a watermark at or after it; the "
            "watermark is -00:00:02. With the delay this query showed (batch 0: max event time 00:00:03 - watermark "
            "-00:00:02 = 5 s), an input row at or after 00:00:15 moves it there") in failure.explanation, \
        failure.explanation
    assert "2023-12-31" not in failure.explanation
    text = describe_failure(_result(sc, [StepResult(0, "start", sc.where), StepResult(1, "add", sc.steps[0].where),
                                         StepResult(2, "process", sc.steps[1].where, batches=batches),
                                         StepResult(3, "expect", sc.steps[2].where, FAILED, failures=[failure],
                                                    watermark_ms=_s(-2))]))
    assert "batch 0 (data, 1 in, 0 out, watermark initial -> -00:00:02" in text, text
    assert "    watermark now: -00:00:02" in text, text


# -- timestamps in failure tables under `columns:` -----------------------------------------------------
def test_a_failure_table_of_some_columns_shows_their_timestamps_as_times():
    sc = load_scenario_text(TUMBLING.replace("{rows: [[a, \"00:00:00\", \"00:00:10\", 1]]}",
                                             "{columns: [window_end, key], rows: [[\"00:00:10\", a]]}"), "s.yaml")
    batch = BatchObservation(0, 1, None, 0, _s(-2), rows=[("b", _s(0) * US, _s(10) * US, 1)])
    (failure,) = judge(sc.steps[-1], Observed([batch], [batch], "append", sc.contract.output_names), sc)
    text = describe_failure(_result(sc, [StepResult(0, "start", sc.where, batches=[batch]),
                                         StepResult(3, "expect", sc.steps[2].where, FAILED, failures=[failure])]))
    assert "      window_end | key\n        00:00:10   | 'a'" in text, text  # missing
    assert "        00:00:10   | 'b'" in text, text  # unexpected
    assert "1704067210000000" not in text, text


# -- a job of several queries: the batches the failing expect's query ran ------------------------------
JOB_CONTRACT = textwrap.dedent("""\
    contract: two_layers
    description: clicks -> raw records and a count per page.
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts, from: {format: json, path: /data/clicks}}
    queries:
      raw: {columns: "page string, ts timestamp"}
      counts: {columns: "page string, clicks bigint"}
    """)

JOB_SCENARIO = textwrap.dedent("""\
    scenario: two-layers
    description: each query checked after the other's expect
    contract: two_layers
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {query: raw, rows: [[home, "00:00:01"]]}
      - expect: {query: counts, rows: [[home, 2]]}
    """)


def test_a_failing_expect_of_one_query_shows_its_batches_after_another_querys_expect(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "two_layers.contract.yaml").write_text(JOB_CONTRACT)
    (tmp_path / "s.scenario.yaml").write_text(JOB_SCENARIO)
    sc = load_scenario(str(tmp_path / "s.scenario.yaml"))
    raw = BatchObservation(0, 1, None, 0, _s(1), rows=[("home", _s(1) * US)], query="raw")
    counts = BatchObservation(0, 1, None, 0, 0, rows=[("home", 1)], query="counts")
    steps = [StepResult(0, "start", sc.where), StepResult(1, "add", sc.steps[0].where),
             StepResult(2, "process", sc.steps[1].where, batches=[raw, counts]),
             StepResult(3, "expect", sc.steps[2].where, PASSED),
             StepResult(4, "expect", sc.steps[3].where, FAILED)]
    text = describe_failure(_result(sc, steps))
    assert "no micro-batch ran" not in text, text
    assert ("    batches since the previous expect (query 'counts'):\n"
            "      batch 0 (data, 1 in, 1 out, watermark initial -> initial, dropped 0, state 0)") in text, text
    # an expect of counts before it: nothing since, said of that query
    steps.insert(4, StepResult(4, "expect", sc.steps[3].where, PASSED))
    text = describe_failure(_result(sc, steps))
    assert "    no micro-batch ran since the previous expect of query 'counts'" in text, text


# -- an empty check points at the snapshot -----------------------------------------------------------
@pytest.mark.parametrize("expect, place", [
    ("{rows: [[a, \"00:00:00\", \"00:00:10\", 1]]}", None),
    ("\n      rows:\n      watermark:", ":11:"),
    ("{}", ":10:"),
])
def test_an_empty_check_says_how_a_snapshot_fills_it(expect, place):
    text = TUMBLING.replace("{rows: [[a, \"00:00:00\", \"00:00:10\", 1]]}", expect)
    if place is None:
        load_scenario_text(text, "s.yaml")
        return
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(text, "s.yaml")
    problems = [str(p) for p in info.value.problems]
    assert any(place in p and "a check left empty is for a snapshot to fill with what Spark does: run `eventtime run "
               "PATH --snapshot create` (pytest: `--eventtime-snapshot=create`)" in p for p in problems), problems


# -- a misspelt binding on the command line, as pytest says it ---------------------------------------
def test_the_command_line_says_did_you_mean_for_a_misspelt_binding(tmp_path, monkeypatch, capsys):
    from eventtime.commands.files import read_project

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\neventtime_pipelines = [\n'
                                             '  "page_count = jobs:count",\n]\n')
    (tmp_path / "page_counts.contract.yaml").write_text(JOB_CONTRACT.replace("two_layers", "page_counts"))
    assert read_project([str(tmp_path)], [], [], None) is None
    err = capsys.readouterr().err
    assert "unknown contract 'page_count'; did you mean 'page_counts'?" in err, err
    assert "pyproject.toml" in err, err
    (tmp_path / "pyproject.toml").write_text("")
    assert read_project([str(tmp_path)], ["tumbling_cont=jobs:count"], [], None) is None
    err = capsys.readouterr().err
    assert "eventtime: error: --pipeline: unknown contract 'tumbling_cont'; did you mean 'tumbling_count'?" in err, err
    assert read_project([str(tmp_path)], ["page_counts=jobs:count", "tumbling_count=jobs:t"], [], None) is not None
    # a contract beside (or above) the scenarios run, outside the working directory's project, is known
    elsewhere = tmp_path.parent / (tmp_path.name + "-elsewhere")
    (elsewhere / "scenarios").mkdir(parents=True)
    (elsewhere / "orders.contract.yaml").write_text("contract: orders\n")
    assert read_project([str(elsewhere / "scenarios")], ["orders=jobs:o"], [], None) is not None
    assert read_project([str(elsewhere / "scenarios")], ["order=jobs:o"], [], None) is None
    assert "unknown contract 'order'; did you mean 'orders'?" in capsys.readouterr().err


def test_spark_settings_take_one_rule_on_both_faces():
    from eventtime.commands.options import conf_pairs
    from eventtime.projectconfig import SettingsError, spark_conf_pairs

    assert spark_conf_pairs(["spark.sql.ansi.enabled=false", " a = b "], "--x") == {
        "spark.sql.ansi.enabled": "false", "a": "b"}
    with pytest.raises(SettingsError, match="--eventtime-spark-conf takes KEY=VALUE"):
        spark_conf_pairs(["spark.sql.ansi.enabled"], "--eventtime-spark-conf")
    with pytest.raises(SystemExit, match="eventtime: error: --spark-conf takes KEY=VALUE"):
        conf_pairs(["nokey"])
