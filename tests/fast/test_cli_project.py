"""`eventtime run` reads the project's settings as the pytest plugin does (eventtime.projectconfig), binds
`--pipeline CONTRACT=MODULE:FUNCTION`, refuses a scenario nobody's pipeline would test, exits 5 when
nothing ran, and prints re-run commands that run that one scenario when pasted. Spark is replaced by
a recorder of the pairs the command would run (the Spark runs: tests/consumer, tests/connect)."""
from __future__ import annotations

import shlex
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from eventtime import cli, parallel
from eventtime.commands import spark as spark_command
from eventtime.commands.files import read_project
from eventtime.loader import load_scenario
from eventtime.projectconfig import SettingsError, find_ini
from eventtime.results import PASSED, ScenarioResult
from eventtime.scenarios import SUITE_DIR
from eventtime.exitcodes import ExitCode

CONTRACT = textwrap.dedent("""\
    contract: page_clicks
    description: Who clicked which page.
    sources: {clicks: {columns: "page string, user string, ts timestamp", event_time: ts}}
    output: {columns: "page string, user string, ts timestamp"}
    """)

SCENARIO = textwrap.dedent("""\
    scenario: NAME
    description: A click nobody expects out before the watermark moves.
    contract: CONTRACT
    PARAMS
    sources: {clicks: {columns: {page: string, user: string, ts: timestamp}, event_time: ts}}
    steps:
      - add: {clicks: [[home, ann, "00:00:01"]]}
      - process
      - expect: {no_output: true}
    """)

JOBS = "def transform(clicks):\n    return clicks\n\ndef other(clicks):\n    return clicks\n"


def _scenario(name: str, contract: str = "page_clicks") -> str:
    params = "params: {window: 10s, watermark_delay: 5s}" if contract == "tumbling_count" else ""
    text = SCENARIO.replace("NAME", name).replace("CONTRACT", contract).replace("PARAMS", params)
    if contract == "tumbling_count":
        text = (text.replace("clicks", "events").replace("page", "key").replace(", user: string", "")
                .replace("home, ann,", "home,"))
    return text


def _project(root: Path, pipelines: list[str] | None) -> Path:
    """A user's project: contracts/, tests/scenarios/{clicks,eu}/, shop_jobs.py, and pyproject.toml
    binding its contract for pytest when `pipelines` is given."""
    (root / "contracts").mkdir()
    (root / "contracts" / "page_clicks.contract.yaml").write_text(CONTRACT)
    for folder, name in (("clicks", "late-click"), ("eu", "eu-click")):
        (root / "tests" / "scenarios" / folder).mkdir(parents=True)
        (root / "tests" / "scenarios" / folder / f"{name}.scenario.yaml").write_text(_scenario(name))
    (root / "shop_jobs.py").write_text(JOBS)
    ini = '[project]\nname = "shop"\n\n[tool.pytest.ini_options]\neventtime_contracts = ["contracts"]\n'
    if pipelines is not None:
        ini += "eventtime_pipelines = [\n" + "".join(f'    "{p}",\n' for p in pipelines) + "]\n"
    (root / "pyproject.toml").write_text(ini)
    return root


@pytest.fixture
def ran(monkeypatch):
    """The (scenario, implementation, re-run command) of every pair a command ran, on a stand-in session."""
    pairs_seen: list[tuple[str, str, str]] = []

    def run_pairs(pairs, **kwargs):
        for p in pairs:
            pairs_seen.append((p.scenario.name, str(p.implementation), p.rerun))
            yield ScenarioResult(p.scenario, str(p.implementation), PASSED, rerun=p.rerun)

    monkeypatch.setattr(parallel, "run_pairs", run_pairs)
    session = SimpleNamespace(version="4.3.0", sparkContext=SimpleNamespace(master="local[2]"), _jsparkSession=None)
    monkeypatch.setattr(spark_command, "open_session", lambda args: (session, ExitCode.OK))
    return pairs_seen


@pytest.fixture
def in_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # read_project adds to it
    yield tmp_path
    __import__("sys").modules.pop("shop_jobs", None)


def test_run_with_no_options_binds_what_pyproject_binds_for_pytest(in_project, ran):
    _project(in_project, ["page_clicks = shop_jobs:transform"])
    assert cli.main(["run", "tests/scenarios"]) == ExitCode.OK
    assert sorted((name, impl) for name, impl, _ in ran) == [("eu-click", "shop_jobs:transform"),
                                                            ("late-click", "shop_jobs:transform")]


def test_the_measured_false_green_is_an_error_naming_the_contract_and_nothing_ran_exits_5(in_project, ran, capsys):
    # before: "0 passed, 0 failed, 0 errors, 0 not applicable, 0 invalid files" and exit 0
    _project(in_project, None)
    assert cli.main(["run", "tests/scenarios", "--contracts", "contracts"]) == ExitCode.NO_TESTS_RAN == 5
    err = capsys.readouterr().err
    assert "no pipeline is bound to contract 'page_clicks'; bind one with a line 'page_clicks = MODULE:FUNCTION' " \
           "in the ini key eventtime_pipelines" in err
    assert "--pipeline page_clicks=MODULE:FUNCTION" in err and "(and 1 more scenario file(s) of it)" in err
    assert "eventtime: error: nothing ran: 2 scenarios with no pipeline bound (see above)" in err
    assert ran == []  # no Spark session was asked for


def test_a_users_scenario_of_a_bundled_contract_runs_no_bundled_implementation_unasked(in_project, ran, capsys):
    _project(in_project, None)
    (in_project / "tests" / "scenarios" / "mine.scenario.yaml").write_text(_scenario("mine", "tumbling_count"))
    assert cli.main(["run", "tests/scenarios/mine.scenario.yaml"]) == ExitCode.NO_TESTS_RAN
    assert "the kit's own implementations of the bundled contract 'tumbling_count' run only for the bundled " \
           "suite" in capsys.readouterr().err
    assert ran == []
    # control: a scenario of the bundled suite runs the kit's implementations (asked for: the kit's own file)
    assert cli.main(["run", str(SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml")]) == ExitCode.OK
    assert [impl.rsplit(".", 1)[-1] for _, impl, _ in ran] == ["reference:tumbling_count", "sql:tumbling_count",
                                                               "stateful:tumbling_count"]


def test_some_scenarios_unbound_run_the_others_and_fail_the_run(in_project, ran, capsys):
    _project(in_project, ["page_clicks[tests/scenarios/eu] = shop_jobs:transform"])  # only the eu folder
    assert cli.main(["run", "tests/scenarios"]) == ExitCode.FAILED
    assert [name for name, _, _ in ran] == ["eu-click"]
    out, err = capsys.readouterr()
    assert "tests/scenarios/clicks/late-click.scenario.yaml: no pipeline is bound to contract 'page_clicks'" in err
    assert "1 passed, 0 failed, 0 errors, 0 not applicable, 0 invalid files, 1 unbound" in out


def test_command_line_bindings_override_the_file_nearest_folder_first(in_project, ran):
    _project(in_project, ["page_clicks = shop_jobs:transform"])
    assert cli.main(["run", "tests/scenarios", "--pipeline", "page_clicks[tests/scenarios/eu]=shop_jobs:other"]) == 0
    assert sorted((name, impl) for name, impl, _ in ran) == [("eu-click", "shop_jobs:other"),
                                                            ("late-click", "shop_jobs:transform")]
    ran.clear()
    assert cli.main(["run", "tests/scenarios", "--pipeline", "page_clicks=shop_jobs:other"]) == 0
    assert {impl for _, impl, _ in ran} == {"shop_jobs:other"}
    ran.clear()
    assert cli.main(["run", "tests/scenarios", "--pipeline", "shop_jobs:other"]) == 0  # every scenario
    assert {impl for _, impl, _ in ran} == {"shop_jobs:other"}


@pytest.mark.parametrize("args, message", [
    (["--pipeline", "page_clicks=shop.clicks"], "--pipeline: 'page_clicks=shop.clicks' is not CONTRACT=MODULE:FUNCTION"),
    (["--pipeline", "shop_jobs"], "--pipeline: 'shop_jobs' is neither MODULE:FUNCTION (every scenario) nor "
                                  "CONTRACT=MODULE:FUNCTION"),
    (["--pipeline", "a:b", "--pipeline", "c:d"], "--pipeline: 'a:b' and 'c:d' both for every scenario"),
    (["--pipeline", "page_clicks=shop_jobs:nope"], "module 'shop_jobs' has no 'nope'"),
    (["--timeout", "0"], "--timeout: 0.0 is not a positive number of seconds"),
])
def test_bad_pipelines_and_settings_are_usage_errors_before_spark(in_project, ran, capsys, args, message):
    _project(in_project, ["page_clicks = shop_jobs:transform"])
    assert cli.main(["run", "tests/scenarios", *args]) == ExitCode.USAGE_ERROR
    assert message in capsys.readouterr().err
    assert ran == []


def test_a_bad_binding_in_the_file_is_a_usage_error_naming_the_file(in_project, ran, capsys):
    _project(in_project, ["page_clicks shop_jobs:transform"])
    assert cli.main(["run", "tests/scenarios"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert f"{in_project / 'pyproject.toml'}: eventtime_pipelines: 'page_clicks shop_jobs:transform' is not " \
           "CONTRACT=MODULE:FUNCTION" in err


def test_the_file_is_found_as_pytest_finds_it_and_its_timeout_is_overridden(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\neventtime_timeout = 90\neventtime_pipelines =\n"
                                         "    page_clicks = shop_jobs:transform\n")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\neventtime_timeout = 5\n")
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "page_clicks.contract.yaml").write_text("contract: page_clicks\n")  # what the binding names
    ini = find_ini(tmp_path / "sub" / "deeper")
    assert ini is not None and ini.path.name == "pytest.ini"  # pytest.ini comes first in a folder
    assert ini.lines("eventtime_pipelines") == ["page_clicks = shop_jobs:transform"]
    project = read_project([str(tmp_path / "sub")], None, [], None)
    assert project.timeout == 90.0 and project.root == tmp_path
    assert read_project([str(tmp_path / "sub")], None, [], 7.0).timeout == 7.0  # the command line overrides
    (tmp_path / "pytest.ini").unlink()
    assert find_ini(tmp_path).path.name == "pyproject.toml"
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")  # no pytest table: not it
    assert find_ini(tmp_path / "sub") is None or find_ini(tmp_path / "sub").path.parent != tmp_path
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    with pytest.raises(SettingsError, match="pyproject.toml: cannot be read as TOML"):
        find_ini(tmp_path)


def test_a_contracts_declared_implementations_import_from_the_working_directory_as_pipeline_does(in_project, ran):
    # a contract of the user's own runs the implementations its file declares; they import from the
    # folder the command runs in, as --pipeline's module does (before: only from installed packages)
    _project(in_project, None)
    (in_project / "contracts" / "page_clicks.contract.yaml").write_text(
        CONTRACT + "implementations: [shop_jobs:transform]\n")
    assert cli.main(["run", "tests/scenarios"]) == ExitCode.OK
    assert {impl for _, impl, _ in ran} == {"shop_jobs:transform"}


def test_every_printed_rerun_command_runs_that_one_scenario_pasted(in_project, ran):
    _project(in_project, ["page_clicks = shop_jobs:transform"])
    (in_project / "more").mkdir()
    extra = in_project / "more" / "page_clicks.contract.yaml"  # given with --contracts: the re-run repeats it
    extra.write_text(CONTRACT.replace("page_clicks", "more_clicks"))
    (in_project / "tests" / "scenarios" / "clicks" / "more.scenario.yaml").write_text(_scenario("more", "more_clicks"))
    assert cli.main(["run", "tests/scenarios", "--contracts", "more", "--pipeline", "more_clicks=shop_jobs:other",
                     "--spark-conf", "spark.sql.shuffle.partitions=3"]) == ExitCode.OK
    printed = list(ran)
    assert len(printed) == 3
    for name, impl, rerun in printed:
        assert "--contracts more" in rerun and "--spark-conf spark.sql.shuffle.partitions=3" in rerun
        ran.clear()
        words = shlex.split(rerun)
        assert words[:2] == ["eventtime", "run"]
        assert cli.main(words[1:]) == ExitCode.OK, rerun
        assert [(n, i) for n, i, _ in ran] == [(name, impl)], rerun  # that scenario, that pipeline, alone


def test_control_a_rerun_without_its_contracts_folder_does_not_run(in_project, ran, capsys):
    # what the printed command was before (it dropped --contracts): pasted, the contract is unknown
    _project(in_project, None)
    (in_project / "more").mkdir()
    (in_project / "more" / "x.contract.yaml").write_text(CONTRACT.replace("page_clicks", "more_clicks"))
    (in_project / "m.scenario.yaml").write_text(_scenario("m", "more_clicks"))
    assert cli.main(["run", "m.scenario.yaml", "--pipeline", "shop_jobs:other"]) == ExitCode.FAILED
    assert "unknown contract 'more_clicks'" in capsys.readouterr().err and ran == []


def test_a_bundled_suite_file_reruns_from_anywhere(tmp_path, monkeypatch, ran):
    monkeypatch.chdir(tmp_path)  # not the checkout: the suite's `scenarios/...` name does not exist here
    path = SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml"
    assert cli.main(["run", str(path), "--pipeline", "eventtime.pipelines.sql:tumbling_count"]) == ExitCode.OK
    (_, _, rerun), = ran
    assert shlex.split(rerun)[2] == str(path.resolve())
    assert load_scenario(shlex.split(rerun)[2]).name == "tumbling-append-late-row-dropped"


def test_a_scenario_that_errors_before_its_first_step_says_so_in_words():
    from eventtime.results import ERROR
    from eventtime.textreport import summary_line

    scenario = load_scenario(SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml")
    line = summary_line(ScenarioResult(scenario, "jobs:count", ERROR, reason="cannot import module 'jobs'\nmore"))
    assert line.endswith("[jobs:count]  (stopped before its first step: cannot import module 'jobs')")
    assert "-1 steps" not in line
    long = summary_line(ScenarioResult(scenario, "jobs:count", ERROR, reason="x" * 300))
    assert long.endswith("x...)") and len(long) < 260
    # a dead driver's message is printed once, after the line (test_driver_death counts it)
    from eventtime.results import DRIVER_DIED

    died = ScenarioResult(scenario, "jobs:count", ERROR, reason="the Spark driver died: its JVM (pid 1) was killed")
    died.cause = DRIVER_DIED
    assert summary_line(died).endswith("(stopped before its first step: the Spark driver died (below))")
    # control: a scenario that ran its steps counts them
    from eventtime.results import StepResult

    ran = ScenarioResult(scenario, "jobs:count", PASSED, steps=[StepResult(index=i, kind="process", where=None) for i in range(3)])
    assert summary_line(ran).endswith("(2 steps, 0 batches, 0.0s)")


def test_a_checkouts_copy_of_the_bundled_suite_counts_as_the_suite_and_an_edited_copy_does_not(tmp_path):
    from eventtime.projectconfig import in_suite

    bundled = SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml"
    copy = tmp_path / "scenarios" / "tumbling" / bundled.name  # a checkout beside an installed wheel (tox)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(bundled.read_bytes())
    assert in_suite(bundled)
    assert not in_suite(copy)  # control: a folder named scenarios is not the kit's package by its name alone
    (tmp_path / "scenarios" / "__init__.py").write_text("")
    assert in_suite(copy)
    copy.write_bytes(bundled.read_bytes().replace(b"late", b"latte", 1))  # a user's edited copy
    assert not in_suite(copy)


def test_validate_reads_the_contract_folders_run_and_pytest_read(in_project, capsys):
    _project(in_project, None)
    assert cli.main(["validate", "tests/scenarios"]) == ExitCode.OK
    assert "2 valid, 0 invalid" in capsys.readouterr().out
    # control: without the file's eventtime_contracts the contract is unknown
    (in_project / "pyproject.toml").write_text('[project]\nname = "shop"\n')
    assert cli.main(["validate", "tests/scenarios"]) != ExitCode.OK
    assert "unknown contract 'page_clicks'" in capsys.readouterr().out
