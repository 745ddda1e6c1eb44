"""`eventtime expect --write` and the differential cases: the model's checks written into scenario text.

Pure Python. The writer edits only the values of expect steps (or appends checks at the step's
indentation); the result must load and agree with the model. Generated differential cases carry
an expect after every batch step, load back through the loader, and agree with the model.
"""
from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime.cli import main
from eventtime.differential import FAMILIES, Outcome, differential_case, strategy_for
from eventtime.loader import find_scenario_files, load_scenario, load_scenario_text
from eventtime.results import FAILED, ScenarioResult
from eventtime.semantics import check_scenario, simulate
from eventtime.semantics.fill import write_expectations
from eventtime.textreport import describe_failure
from eventtime.scenarios import SUITE_DIR

SUITE = sorted(find_scenario_files([SUITE_DIR])[0])
LATE = SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml"


def _subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(line in it for line in small)


@pytest.mark.parametrize("path", SUITE, ids=lambda p: p.name.removesuffix(".scenario.yaml"))
def test_write_on_a_bundled_scenario_only_adds_checks_and_agrees(path):
    old = path.read_text(encoding="utf-8")
    new = write_expectations(simulate(load_scenario(path)), old)
    assert _subsequence(old.splitlines(), new.splitlines())  # every line kept, comments included
    result = check_scenario(load_scenario_text(new, str(path)))
    assert result.status == "passed", describe_failure(result)


def test_write_replaces_wrong_values_in_place_and_keeps_comments(tmp_path, capsys):
    good = LATE.read_text(encoding="utf-8")
    wrong = (good.replace('watermark: "00:00:11"', 'watermark: "00:00:09"')
                 .replace('- [a, "00:00:00", "00:00:10", 2]   # the no-data', '- [a, "00:00:00", "00:00:10", 7]   # the no-data')
                 .replace("dropped: 1", "dropped: 5"))
    assert wrong.count("\n") == good.count("\n") and wrong != good
    path = tmp_path / "late.scenario.yaml"
    path.write_text(wrong, encoding="utf-8")
    assert main(["check-model", str(path)]) == 1
    assert main(["expect", "--write", str(path)]) == 0
    assert "expectations written from the model" in capsys.readouterr().out
    new = path.read_text(encoding="utf-8")
    assert 'watermark: "00:00:11"' in new and "dropped: 1" in new and "dropped: 5" not in new
    assert '# the no-data batch after 00:00:16 finalises [0, 10)' in new  # the comment after a replaced row
    assert '"00:00:10", 7]' not in new and '[a, "00:00:00", "00:00:10", 2]' in new
    assert _subsequence([line for line in good.splitlines() if "#" in line], new.splitlines())
    assert main(["check-model", str(path)]) == 0
    assert main(["expect", "--write", str(path)]) == 0  # a second write changes nothing
    assert "already agree" in capsys.readouterr().out and path.read_text(encoding="utf-8") == new


def test_write_turns_no_output_into_rows_and_fills_flow_mappings(tmp_path):
    text = """\
scenario: flow
description: Checks in flow mappings.
contract: tumbling_count
params: {window: 10 seconds, watermark_delay: 5 seconds}
sources:
  events: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:16"]]}   # two windows
  - process
  - expect: {no_output: true}        # wrong: [0, 10) is emitted
  - add: {events: [[a, "00:00:01"]]}
  - process
  - expect: {watermark: initial, batches: 5}
"""
    path = tmp_path / "flow.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["expect", "--write", str(path)]) == 0
    new = path.read_text(encoding="utf-8").splitlines()
    assert new[9] == ('  - expect: {rows: [[a, "00:00:00", "00:00:10", 1]], watermark: "00:00:11", dropped: 0, '
                      'state_rows: 1}        # wrong: [0, 10) is emitted')
    assert new[12] == '  - expect: {watermark: "00:00:11", batches: 1, rows: [], dropped: 1, state_rows: 1}'
    assert new[:9] == text.splitlines()[:9]


def test_write_refuses_what_it_cannot_compute(tmp_path, capsys):
    path = tmp_path / "fails.scenario.yaml"
    shutil.copy(SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml", path)
    before = path.read_text(encoding="utf-8")
    path.write_text(before.replace("contract: tumbling_count", "contract: tumbling_count\nrequires: {spark: '>=3.5'}")
                    + "  - expect:\n      failure: {error_class: STREAM_FAILED}\n", encoding="utf-8")
    assert main(["expect", "--write", str(path)]) == 1
    assert "cannot compute" in capsys.readouterr().err


FAST = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(st.sampled_from(sorted(FAMILIES)).flatmap(strategy_for))
def test_differential_cases_load_and_agree_with_the_model(sc):
    case = differential_case(sc)
    again = load_scenario_text(case.text, "again.scenario.yaml")
    kinds = [s.kind for s in again.steps]
    for i, kind in enumerate(kinds):
        if kind in ("process", "advance", "start", "restart"):
            assert kinds[i + 1] == "expect"
    assert kinds[-1] == "expect"
    result = check_scenario(again)
    assert result.status == "passed", describe_failure(result)


@settings(FAST, max_examples=3)
@given(strategy_for("tumbling_count"))
def test_a_disagreement_is_written_as_a_file_that_loads(tmp_path_factory, sc):
    tmp_path = tmp_path_factory.mktemp("differential")
    case = differential_case(sc)
    outcome = Outcome(case, ScenarioResult(case.scenario, "reference", FAILED))
    path = outcome.write(tmp_path / "out")
    assert path.name == "differential-tumbling-count.scenario.yaml"
    text = path.read_text(encoding="utf-8")
    assert f"eventtime run {path}" in text and text.endswith(case.text)
    assert check_scenario(load_scenario(path)).status == "passed"


TIMEOUT_BELOW_WATERMARK = """\
scenario: timeout-below-watermark
description: A GroupState timeout set below the watermark fails the query.
contract: inactivity_timeout
params: {timeout: 2s, watermark_delay: 0s}
conf: {spark.sql.streaming.noDataMicroBatches.enabled: false}
sources:
  events: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [[a, "00:00:10"]]}
  - process
  - add: {events: [[b, "00:00:05"]]}
  - process
  - expect: {failure: {message: "cannot be earlier than the current watermark"}}
  - process
  - expect: {rows: [[b, "00:00:05", "00:00:05", 1]]}
"""


def test_the_model_predicts_a_timeout_below_the_watermark_failing_the_query():
    sim = simulate(load_scenario_text(TIMEOUT_BELOW_WATERMARK, "t.scenario.yaml"))
    assert sim.failure is not None and sim.failure.error_class == "INVALID_TIMEOUT_TIMESTAMP"
    assert sim.failure.index == 4 and "(1704067207000)" in sim.failure.message
    result = check_scenario(sim.scenario)
    assert result.status == "passed", describe_failure(result)
    assert [s.status for s in result.steps][-2:] == ["skipped", "skipped"]  # as the runner: nothing after it
    unasked = TIMEOUT_BELOW_WATERMARK.replace(
        '  - expect: {failure: {message: "cannot be earlier than the current watermark"}}\n', "")
    result = check_scenario(load_scenario_text(unasked, "t.scenario.yaml"))
    assert result.status == "error" and "INVALID_TIMEOUT_TIMESTAMP" in result.reason
    with_no_data = TIMEOUT_BELOW_WATERMARK.replace("enabled: false", "enabled: true")
    result = check_scenario(load_scenario_text(with_no_data, "t.scenario.yaml"))
    assert result.status == "not_applicable"  # no failure predicted: the late row is dropped instead


def test_write_under_the_dataflow_profile_adds_only_what_a_spark_run_shows(tmp_path, capsys):
    good = (SUITE_DIR / "dataflow" / "late-side-output-after-allowed-lateness.scenario.yaml").read_text(encoding="utf-8")
    path = tmp_path / "df.scenario.yaml"
    path.write_text(good.replace('2, late, "00:00:09.999"', '9, late, "00:00:09.999"'), encoding="utf-8")
    assert main(["expect", "--write", str(path)]) == 0
    assert "(dataflow profile), 3 line(s) changed or added" in capsys.readouterr().out
    new = path.read_text(encoding="utf-8")
    assert '2, late, "00:00:09.999"' in new and "dropped:" not in new and "state_rows:" not in new
    assert _subsequence(good.splitlines(), new.splitlines())
