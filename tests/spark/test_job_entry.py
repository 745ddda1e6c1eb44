"""Entry points as jobs ship them (`eventtime.jobs`, `harness.jobsession`, docs/jobs.md "Entry points").

A `main()` with no parameters makes its own session through a helper module and gets the kit's: its
builder settings are applied (a runtime setting of its own) or noted at their lines (the application's,
and those the kit sets); its `spark.stop()` and `SparkContext.stop()` are recorded, not done, and the next
scenario runs in the same session. `sys.exit(0)` at the end is a normal end, another code the job's error
at its line. A script runs as `__main__` with the scenario's `job: {args, env}`, bound by its path or as
`module:__main__`; `sys.argv` and `os.environ` are restored after.
"""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from eventtime import run_scenario
from eventtime.harness.jobio import shown_file
from eventtime.textreport import describe_failure

from tests.spark import jobs_as_shipped as shipped
from tests.spark import jobs_under_test as jobs
from tests.spark import shipped_script, shipped_utils
from tests.spark import test_jobs
from tests.spark.test_jobs import ONE_BATCH

pytestmark = pytest.mark.spark

scenario_of = test_jobs.scenario_of  # the fixture writing test_jobs' contract beside each scenario

FLAT = str(Path(shipped_script.__file__).with_name("shipped_flat.py"))  # never imported: it would start a query

MAIN = textwrap.dedent("""\
    scenario: job-makes-its-own-session
    description: main() makes its own session, skips the page its setting names, stops everything at its end.
    contract: page_counts
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1]]}
      - restart
      - add: {clicks: [{page: home, ts: "00:00:40"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 2]]}
    """)

SCRIPT = textwrap.dedent("""\
    scenario: script-job
    description: The script runs as __main__ with the arguments and environment the scenario gives.
    contract: page_counts
    job: {args: [--input, /data/clicks], env: {SKIP_PAGE: cart}}
    steps:
      - add: {clicks: [{page: home, ts: "00:00:10"}, {page: cart, ts: "00:00:30"}]}
      - process
      - expect: {written: out, rows: [[home, "00:00:00", 1]]}
    """)


def _line(module, marker: str) -> str:
    """`file:line` of the line of `module` marked `# <- marker`."""
    text = Path(module.__file__).read_text()
    assert f"# <- {marker}\n" in text, f"no line marked {marker} in {module.__file__}"
    return f"{shown_file(module.__file__)}:{text[:text.index(f'# <- {marker}' + chr(10))].count(chr(10)) + 1}"


def _text(result) -> str:
    return "\n".join([result.reason or ""] + [s.message or "" for s in result.steps])


def _noted(result, module, marker: str, words: str) -> bool:
    return any(_line(module, marker) in note and words in note for note in result.notes)


def test_a_main_without_parameters_runs_on_the_kits_session_and_leaves_it_running(spark, scenario_of):
    result = run_scenario(scenario_of(MAIN), shipped.main, session=spark)
    assert result.status == "passed", describe_failure(result)
    for module, marker, words in [
        (shipped_utils, "app name", "builder setting spark.app.name='page-counts' is the application's"),
        (shipped_utils, "master", "spark.master='yarn' is the application's"),
        (shipped_utils, "packages", "spark.jars.packages="),
        (shipped_utils, "hive", "spark.sql.catalogImplementation='hive'"),
        (shipped_utils, "partitions", "spark.sql.shuffle.partitions='8' is not applied: the kit's runs set "
                                      "spark.sql.shuffle.partitions='1'"),
        (shipped, "conf set", "spark.conf.set('spark.sql.shuffle.partitions', '4') is not applied"),
        (shipped, "context stop", "SparkContext.stop() ends the job's Spark application in production"),
        (shipped, "stop", "spark.stop() ends the job's session in production; under test it is recorded"),
    ]:
        assert _noted(result, module, marker, words), (marker, result.notes)
    # applied, so not noted: the job's own setting (the rows show it skipped 'cart'), and a value the kit has
    assert not [n for n in result.notes if shipped_utils.SKIP in n or "timeZone" in n], result.notes
    # the job's stops were not done, and its settings went with its scenario
    assert spark.sparkContext._jsc is not None
    assert spark.conf.get(shipped_utils.SKIP, None) is None
    assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
    after = run_scenario(scenario_of(ONE_BATCH), jobs.build, session=spark)
    assert after.status == "passed", describe_failure(after)


def test_the_jobs_own_setting_decides_its_rows(spark, scenario_of):
    """Control: the same expectation fails when the row the job's setting skips is expected."""
    expecting_cart = MAIN.replace('rows: [[home, "00:00:00", 1]]', 'rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]')
    result = run_scenario(scenario_of(expecting_cart), shipped.main, session=spark)
    assert (result.status, "1 missing" in describe_failure(result)) == ("failed", True), describe_failure(result)


def test_sys_exit_zero_at_the_end_is_a_normal_end(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_BATCH), shipped.main_exits_zero, session=spark)
    assert result.status == "passed", describe_failure(result)


def test_a_main_with_only_optional_parameters_is_a_job(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_BATCH), shipped.main_no_spark, session=spark)
    assert result.status == "passed", describe_failure(result)


def test_a_nonzero_sys_exit_is_the_jobs_error_at_its_line(spark, scenario_of):
    result = run_scenario(scenario_of(ONE_BATCH), shipped.main_exits_three, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert _line(shipped, "exit") in text and "the job ended with sys.exit(3)" in text, text


@pytest.mark.parametrize("ref", [shipped_script.__file__, "tests.spark.shipped_script:__main__"],
                         ids=["by-path", "as-module"])
def test_a_script_runs_as_main_with_the_scenarios_arguments_and_environment(spark, scenario_of, ref):
    argv, env = list(sys.argv), dict(os.environ)
    result = run_scenario(scenario_of(SCRIPT), ref, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert sys.argv == argv and dict(os.environ) == env, "the job's arguments and environment stayed"


def test_the_scripts_arguments_decide_what_it_reads(spark, scenario_of):
    """Control: another `--input` is a reader no source stands in for."""
    result = run_scenario(scenario_of(SCRIPT.replace("/data/clicks]", "/data/other]")), shipped_script.__file__,
                          session=spark)
    assert result.status == "error"
    assert "path '/data/other'" in _text(result) and "matches no source" in _text(result), _text(result)


def test_a_script_whose_arguments_argparse_refuses_is_an_error_at_its_line(spark, scenario_of):
    result = run_scenario(scenario_of(SCRIPT.replace("args: [--input, /data/clicks], ", "")),
                          shipped_script.__file__, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert _line(shipped_script, "parse") in text, text
    assert "sys.exit(2)" in text and "the following arguments are required: --input" in text, text


def test_module_level_code_reading_sys_argv_runs_as_main(spark, scenario_of):
    result = run_scenario(scenario_of(SCRIPT.replace("--input, ", "").replace(", env: {SKIP_PAGE: cart}", "")
                                      .replace('rows: [[home, "00:00:00", 1]]',
                                               'rows: [[home, "00:00:00", 1], [cart, "00:00:00", 1]]')),
                          FLAT, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert any("spark.stop()" in n and f"{shown_file(FLAT)}:" in n for n in result.notes), result.notes


def test_a_jobs_stop_of_every_active_query_leaves_other_queries_running(spark, scenario_of):
    """`for q in spark.streams.active: q.stop()` in the job's `finally` sees its own queries only."""
    other = spark.readStream.format("rate").load().writeStream.format("noop").queryName("not_the_jobs").start()
    try:
        result = run_scenario(scenario_of(MAIN), shipped.main, session=spark)
        assert result.status == "passed", describe_failure(result)
        assert other.isActive, "the job stopped a query that is not its own"
    finally:
        other.stop()
    assert not other.isActive  # control: stopping it is seen


def test_job_arguments_for_a_pipeline_that_is_not_a_job_are_an_error(spark, scenario_of):
    result = run_scenario(scenario_of(SCRIPT), jobs._counts, session=spark)
    assert result.status == "error"
    assert "s.scenario.yaml:4" in result.reason and "is not a job" in result.reason, result.reason
