"""The pytest plugin without Spark: options, ini keys, usage errors, collection (pytester)."""
from __future__ import annotations

import json
import textwrap

import pytest

pytest_plugins = ["pytester"]

SCENARIO = textwrap.dedent("""\
    scenario: mine
    description: A user's own scenario (Spark guide, Handling Late Data and Watermarking).
    contract: tumbling_count
    params: {window: 10s, watermark_delay: 5s}
    sources:
      events: {columns: {key: string, ts: timestamp}, event_time: ts}
    steps:
      - add: {events: [[a, "00:00:03"]]}
      - process
      - expect: {no_output: true}
    """)


def test_help_shows_one_group_and_imports_no_pyspark(pytester):
    pytester.makeconftest("""
        import sys
        def pytest_unconfigure(config):
            bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))
            open('imported.txt', 'w').write(' '.join(bad))
    """)
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*event-time scenarios on Spark*", "*--eventtime-pipeline=CONTRACT=MODULE:FUNCTION*",
                                 "*--eventtime-suite=CONTRACT*", "*--eventtime-report-json=PATH*",
                                 "*eventtime_pipelines (linelist)*"])
    assert (pytester.path / "imported.txt").read_text() == ""


def test_markers_are_registered(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.eventtime:*", "@pytest.mark.eventtime_suite:*"])


@pytest.mark.parametrize("args, message", [
    (["--eventtime-pipeline", "tumbling_count"], "*'tumbling_count' is not CONTRACT=MODULE:FUNCTION*"),
    (["--eventtime-pipeline", "tumbling_count=jobs.count"], "*is not CONTRACT=MODULE:FUNCTION*"),
    (["--eventtime-pipeline", "tumbling_cont=jobs:count"],
     "*unknown contract 'tumbling_cont'; did you mean 'tumbling_count'?*accepted: *tumbling_count*"),
    (["--eventtime-suite", "nope"], "*unknown contract 'nope'*"),
    (["--eventtime-timeout", "-3"], "*'-3' is not a positive number of seconds*"),
    (["--eventtime-previous-python", "nowhere/python"], "*--eventtime-previous-python nowhere/python: no such file*"),
    (["--eventtime-previous-python", "nowhere/python", "--eventtime-previous-ref", "HEAD"],
     "*--eventtime-previous-python and --eventtime-previous(-ref): give one*"),
])
def test_bad_values_are_usage_errors(pytester, args, message):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_bad_ini_binding_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\neventtime_pipelines =\n    tumbling_count = jobs:count\n    dedup jobs:dedup\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini eventtime_pipelines: 'dedup jobs:dedup' is not CONTRACT=MODULE:FUNCTION*"])


def test_bind_in_conftest_checks_the_contract(pytester):
    pytester.makeconftest("from eventtime.pytest_plugin import bind\nbind('tumbling_conut', 'jobs:count')\n")
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*unknown contract 'tumbling_conut'*"]) if result.stdout.str().strip() else \
        result.stderr.fnmatch_lines(["*unknown contract 'tumbling_conut'*"])


def test_scenario_files_are_collected_one_item_per_bound_pipeline(pytester):
    pytester.makefile(".scenario.yaml", mine=SCENARIO)
    result = pytester.runpytest("--collect-only", "-q", "--eventtime-pipeline", "tumbling_count=jobs:count")
    result.stdout.fnmatch_lines(["mine.scenario.yaml::mine[[]jobs:count[]]", "1 test collected*"])


def test_a_users_scenario_of_a_bundled_contract_unbound_is_an_error_not_the_kits_implementations(pytester):
    # before, the kit's own three implementations ran and passed: a green run that tested nobody's code
    pytester.makefile(".scenario.yaml", mine=SCENARIO)
    result = pytester.runpytest("-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["mine.scenario.yaml: no pipeline is bound to contract 'tumbling_count' (the kit's "
                                 "own implementations of the bundled contract 'tumbling_count' run only for the "
                                 "bundled suite*; bind one with a line 'tumbling_count = MODULE:FUNCTION' in the ini "
                                 "key eventtime_pipelines*--eventtime-pipeline tumbling_count=MODULE:FUNCTION*"])
    assert "reference:tumbling_count" not in result.stdout.str()


def test_control_a_file_of_the_bundled_suite_runs_the_kits_implementations(pytester):
    # asked for: the kit's own scenario file, named on the command line
    from eventtime.scenarios import SUITE_DIR

    result = pytester.runpytest("--collect-only", "-q", str(SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml"))
    result.stdout.fnmatch_lines(["*[[]reference:tumbling_count[]]", "*[[]sql:tumbling_count[]]",
                                 "*[[]stateful:tumbling_count[]]", "3 tests collected*"])


def test_ini_and_conftest_bindings_and_precedence(pytester):
    pytester.makefile(".scenario.yaml", mine=SCENARIO)
    pytester.makeconftest("from eventtime.pytest_plugin import bind\nbind('tumbling_count', 'from_conftest:fn')\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*mine[[]from_conftest:fn[]]"])
    # an ini line as well: one contract bound twice is a usage error naming both, since a silent
    # choice would run a pipeline the user did not mean
    pytester.makeini("[pytest]\neventtime_pipelines = tumbling_count = from_ini:fn\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*contract 'tumbling_count' is bound twice: from_ini:fn (tumbling_count = from_ini:fn) "
                                 "and from_conftest:fn (bind() at *conftest.py:2)*"])
    # the command line overrides both, for one run
    result = pytester.runpytest("--collect-only", "-q", "--eventtime-pipeline", "tumbling_count=from_cli:fn")
    result.stdout.fnmatch_lines(["*mine[[]from_cli:fn[]]"])


def test_hook_binding(pytester):
    pytester.makefile(".scenario.yaml", mine=SCENARIO)
    pytester.makeconftest("def pytest_eventtime_pipelines(config):\n    return {'tumbling_count': 'hooked:fn'}\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*mine[[]hooked:fn[]]"])


def test_invalid_scenario_file_is_a_collection_error_with_its_place(pytester):
    pytester.makefile(".scenario.yaml", bad=SCENARIO.replace("10s", "10 parsecs"))
    result = pytester.runpytest("-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["bad.scenario.yaml:4:18: unknown unit 'parsecs'*"])


def test_bundled_suite_needs_a_binding(pytester):
    result = pytester.runpytest("--eventtime-suite", "dedup", "--collect-only")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--eventtime-suite dedup: no pipeline is bound to contract 'dedup'*"])


def test_bundled_suite_is_collected_against_the_bound_pipeline(pytester):
    from eventtime.loader import find_scenario_files, load_scenario
    from eventtime.scenarios import SUITE_DIR

    n = sum(load_scenario(p).contract.name == "tumbling_count" for p in find_scenario_files([SUITE_DIR])[0])
    result = pytester.runpytest("--collect-only", "-q", "--eventtime-suite", "tumbling_count",
                                "--eventtime-pipeline", "tumbling_count=jobs:count")
    result.stdout.fnmatch_lines([f"{n} tests collected*"])
    assert "[jobs:count]" in result.stdout.str()


def test_a_conftest_binding_ends_with_its_session(pytester):
    """Plugin state lives in the config's stash: a second in-process session, without the first one's
    conftest, sees none of its bindings (before, a module global carried them over)."""
    pytester.makefile(".scenario.yaml", mine=SCENARIO)
    conftest = pytester.makeconftest("from eventtime.pytest_plugin import bind\nbind('tumbling_count', 'from_conftest:fn')\n")
    pytester.runpytest("--collect-only", "-q").stdout.fnmatch_lines(["*mine[[]from_conftest:fn[]]"])
    conftest.unlink()
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*no pipeline is bound to contract 'tumbling_count'*"])
    assert "from_conftest" not in result.stdout.str()


def test_a_binding_in_a_conftest_below_the_root_is_seen(pytester):
    """bind() in a conftest pytest imports during collection (after configure) still binds."""
    sub = pytester.mkpydir("jobs_tests")
    (sub / "conftest.py").write_text("from eventtime.pytest_plugin import bind\nbind('tumbling_count', 'nested:fn')\n")
    (sub / "mine.scenario.yaml").write_text(SCENARIO)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*mine[[]nested:fn[]]"])


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_recorded_results_reach_the_json_file(pytester, xdist):
    """`eventtime_record` results are written to --eventtime-report-json by the controller, once each;
    without the option no file is written (the collector is registered only when asked for)."""
    pytester.makepyfile(test_rec="""
        import pytest
        from eventtime.loader import find_scenario_files, load_scenario
        from eventtime.scenarios import SUITE_DIR
        from eventtime.semantics import check_scenario

        FILES = sorted(find_scenario_files([SUITE_DIR])[0])[:3]

        @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
        def test_one(path, eventtime_record):
            eventtime_record(check_scenario(load_scenario(path)))
    """)
    out = pytester.path / "results.json"
    pytester.runpytest_subprocess("-p", "no:randomly", *xdist).assert_outcomes(passed=3)
    assert not out.exists()
    pytester.runpytest_subprocess("-p", "no:randomly", "--eventtime-report-json", str(out), *xdist
                                  ).assert_outcomes(passed=3)
    doc = json.loads(out.read_text())
    assert len(doc["results"]) == 3, doc.keys()


# -- a consumer repository's own contracts ---------------------------------------------------------
_USER_CONTRACT = """\
contract: page_clicks
description: clicks -> count per page.
sources:
  clicks: {columns: "page string, ts timestamp", event_time: ts}
output: {columns: "page string, n bigint"}
"""
_USER_SCENARIO = """\
scenario: one-click
description: a click.
contract: page_clicks
steps:
  - add: {clicks: [[home, "00:00:01"]]}
  - process
"""


def _consumer(pytester, ini: str) -> None:
    pytester.makefile(".toml", pyproject=f"[tool.pytest.ini_options]\n{ini}\n")
    pytester.mkdir("tests")
    (pytester.path / "tests" / "page_clicks.contract.yaml").write_text(_USER_CONTRACT)
    (pytester.path / "tests" / "one.scenario.yaml").write_text(_USER_SCENARIO)


def test_a_users_contract_is_bound_by_one_ini_line(pytester):
    _consumer(pytester, 'eventtime_pipelines = ["page_clicks = jobs:count"]')
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["tests/one.scenario.yaml::one-click[[]jobs:count[]]"])
    assert result.ret == 0


def test_a_scenario_whose_contract_is_unbound_is_an_error_not_a_silent_pass(pytester):
    _consumer(pytester, "")
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*no pipeline is bound to contract 'page_clicks'*eventtime_pipelines*"])
    assert result.ret != 0


def test_a_binding_naming_an_unknown_contract_is_a_usage_error(pytester):
    _consumer(pytester, 'eventtime_pipelines = ["page_click = jobs:count"]')
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stderr.fnmatch_lines(["*unknown contract 'page_click'; did you mean 'page_clicks'?*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_two_bindings_of_one_contract_are_a_usage_error_naming_both(pytester):
    _consumer(pytester, 'eventtime_pipelines = ["page_clicks = jobs:count", "page_clicks = jobs:other"]')
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stderr.fnmatch_lines(["*contract 'page_clicks' is bound twice*'page_clicks = jobs:count'*"
                                 "'page_clicks = jobs:other'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_an_ini_binding_and_a_conftest_binding_of_one_contract_are_a_usage_error(pytester):
    _consumer(pytester, 'eventtime_pipelines = ["page_clicks = jobs:count"]')
    pytester.makeconftest("from eventtime.pytest_plugin import bind\nbind('page_clicks', 'jobs:other')\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*contract 'page_clicks' is bound twice: jobs:count (page_clicks = jobs:count) "
                                 "and jobs:other (bind() at *conftest.py:2)*"])
    assert result.ret != 0


def test_one_repository_binds_pipelines_per_folder(pytester):
    """Two teams, two jobs of one shape: the binding of the nearest folder above a scenario wins."""
    _consumer(pytester, 'eventtime_pipelines = ["page_clicks = jobs:count", "page_clicks[tests/eu] = jobs:eu_count"]')
    (pytester.path / "tests" / "eu").mkdir()
    (pytester.path / "tests" / "eu" / "two.scenario.yaml").write_text(_USER_SCENARIO.replace("one-click", "two-click"))
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["tests/eu/two.scenario.yaml::two-click[[]jobs:eu_count[]]",
                                 "tests/one.scenario.yaml::one-click[[]jobs:count[]]"])
    assert result.ret == 0


def test_a_binding_whose_function_does_not_exist_fails_in_one_line_with_did_you_mean(pytester):
    _consumer(pytester, 'eventtime_pipelines = ["page_clicks = jobs:transfrom"]')
    pytester.makepyfile(jobs="def transform(clicks):\n    return clicks\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["*the pipeline bound to contract 'page_clicks' does not import: module 'jobs' has "
                                 "no 'transfrom'; did you mean 'transform'?*"])
    assert "pytest_plugin.py" not in result.stdout.str()  # no frames of the plugin
    assert result.ret == 1


_HOOK_CONFTEST = textwrap.dedent("""\
    from eventtime import contract_from_mapping
    from eventtime.pytest_plugin import bind

    CLICKS = contract_from_mapping({
        "contract": "hooked_clicks",
        "description": "clicks -> the clicks themselves.",
        "sources": {"clicks": {"columns": "page string, ts timestamp", "event_time": "ts"}},
        "output": {"columns": "page string, ts timestamp"},
    })


    def pytest_eventtime_contracts(config):
        return [CLICKS]

    BIND
    """)

_HOOK_SCENARIO = textwrap.dedent("""\
    scenario: hooked
    description: A contract declared in code, from a conftest hook.
    contract: hooked_clicks
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {rows: [[home, "00:00:01"]]}
    """)


def test_a_contract_from_the_hook_is_known_to_scenarios_bindings_and_bind(pytester):
    pytester.makefile(".scenario.yaml", hooked=_HOOK_SCENARIO)
    pytester.makeconftest(_HOOK_CONFTEST.replace("BIND", "bind('hooked_clicks', 'jobs:echo')"))
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["hooked.scenario.yaml::hooked[[]jobs:echo[]]"])
    assert result.ret == 0
    # control: without the hook the contract is unknown, to the binding and to the scenario
    pytester.makeconftest(_HOOK_CONFTEST.replace("BIND", "bind('hooked_clicks', 'jobs:echo')")
                          .replace("def pytest_eventtime_contracts", "def not_a_hook"))
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret != 0
    assert "unknown contract 'hooked_clicks'" in result.stdout.str() + result.stderr.str()


def test_a_hook_returning_something_else_than_contracts_is_a_usage_error(pytester):
    pytester.makeconftest("def pytest_eventtime_contracts(config):\n    return ['page_clicks']\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest_eventtime_contracts() returned str 'page_clicks'; it returns eventtime "
                                 "Contract objects*"])



def test_a_script_job_is_bound_by_its_path(pytester):
    """`CONTRACT = jobs/job.py` in the ini is a binding (resolved from the project's root when it runs),
    named in the item as written."""
    pytester.makefile(".scenario.yaml", mine=SCENARIO)
    pytester.makeini("[pytest]\neventtime_pipelines = tumbling_count = jobs/count.py\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*mine[[]jobs/count.py[]]"])
    pytester.makeini("[pytest]\neventtime_pipelines = tumbling_count = jobs/count\n")  # control: neither form
    result = pytester.runpytest("--collect-only", "-q")
    result.stderr.fnmatch_lines(["*'tumbling_count = jobs/count' is not CONTRACT=MODULE:FUNCTION*"])
