"""How a job's entry point ends under the kit (docs/jobs.md, *How a job ends*): a monitoring loop on
its queries ends, their stand-ins answer what production code asks of them, a listener it adds is
gone with its scenario, and an entry point that never returns is stopped at its line within the run's
timeout, never a hang."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_of_queries as jobs
from tests.spark.test_jobs import _line, _text

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: click_copy
    description: clicks, kept as they are.
    sources:
      clicks: {columns: "page string, ts timestamp", event_time: ts, from: {format: json, path: /data/clicks}}
    output: {columns: "page string, ts timestamp"}
    """)

ONE = textwrap.dedent("""\
    scenario: one
    description: one click
    contract: click_copy
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}]}
      - process
      - expect: {rows: [[home, "00:00:10"]]}
    """)


def test_a_monitoring_loop_ends_and_the_stand_in_answers_as_a_query_before_its_first_batch(spark, contract_beside):
    jobs.SEEN.clear()
    result = run_scenario(contract_beside(CONTRACT)(ONE), jobs.monitored, session=spark)
    assert result.status == "passed", describe_failure(result)
    seen = dict(jobs.SEEN)
    assert {k: seen[k] for k in ("active", "status", "progress", "found", "listed", "ended", "after")} == {
        "active": True, "status": "Waiting for data to arrive", "progress": None, "found": True, "listed": 1,
        "ended": True, "after": 0}, seen
    started = list(seen.get("started", []))
    assert started, "the job's listener sees the kit's query start"
    # the listener was removed with its scenario: another scenario's query is not the job's to see
    again = run_scenario(contract_beside(CONTRACT)(ONE), _plain, session=spark)
    assert again.status == "passed", describe_failure(again)
    assert list(jobs.SEEN.get("started", [])) == started


def _plain(spark):
    return jobs._clicks(spark)


def test_an_entry_point_that_never_returns_is_stopped_at_its_line_within_the_timeout(spark, contract_beside):
    result = run_scenario(contract_beside(CONTRACT)(ONE), jobs.never_returns, session=spark, timeout=15)
    assert result.status == "error", describe_failure(result)
    text = _text(result)
    assert _line("waits forever", jobs) in text and "did not return within 15s" in text, text


def test_a_json_folder_is_read_back_in_the_contracts_types(spark, contract_beside):
    written = ONE.replace('  - expect: {rows: [[home, "00:00:10"]]}\n',
                          '  - expect: {written: out/clicks, rows: [[home, "00:00:10"]]}\n')  # json: as written
    assert written != ONE
    result = run_scenario(contract_beside(CONTRACT)(written), jobs.to_json_files, session=spark)
    assert result.status == "passed", describe_failure(result)
    # control: another time is another value
    control = run_scenario(contract_beside(CONTRACT)(written.replace('[[home, "00:00:10"]]}', '[[home, "00:00:11"]]}')),
                           jobs.to_json_files, session=spark)
    assert control.status == "failed", describe_failure(control)
