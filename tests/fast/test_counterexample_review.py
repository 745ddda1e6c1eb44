"""Three findings of a stranger's trial of `eventtime check-properties` (issue 46), each fixed: a counterexample is
not collected where the check wrote it until it is reviewed and moved (said, never silently); a `disjoint` invariant
with fewer than two outputs is an error at its line; the check names the user's files as `eventtime run` does,
relative to the working directory. No Spark."""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from eventtime import properties as props
from eventtime.cli import main
from eventtime.contractfile import ContractInvalid, load_contract_file
from eventtime.counterexamples import MARKER

pytest_plugins = ["pytester"]

SCENARIO = textwrap.dedent("""\
    scenario: mine
    description: A user's own scenario (Spark guide, Handling Late Data and Watermarking).
    contract: tumbling_count
    params: {window: 10s, watermark_delay: 5s}
    steps:
      - add: {events: [[a, "00:00:03"]]}
      - process
      - expect: {no_output: true}
    """)
SHRUNK = "bounded-state-tumbling-count.scenario.yaml"
BIND = ("--eventtime-pipeline", "tumbling_count=jobs:count")


def _written(root: Path) -> Path:
    """A counterexample as `check-properties` writes it, beside a reviewed scenario under tests/."""
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "mine.scenario.yaml").write_text(SCENARIO)
    shrunk = props.Counterexample("bounded-state", "tumbling_count", SCENARIO.replace("mine", "shrunk"), ["why"])
    return shrunk.write(root / "counterexamples")


# -- 1. a counterexample is not a test where it was written -----------------------------------------------
def test_pytest_leaves_out_a_counterexample_where_check_properties_wrote_it_and_says_so(pytester):
    """Before: `pytest` after a check collected the unreviewed file (2 tests, the shrunk one red)."""
    path = _written(pytester.path)
    assert path.parent.joinpath(MARKER).read_text().splitlines()[-1] == SHRUNK  # the check marks its folder
    result = pytester.runpytest("--collect-only", "-q", *BIND)
    result.stdout.fnmatch_lines(["tests/mine.scenario.yaml::mine[[]jobs:count[]]",
                                 "eventtime: 1 counterexample file(s) written by `eventtime check-properties` left out, "
                                 f"not reviewed yet, in counterexamples (listed in its {MARKER}): to make one a test, "
                                 "review it and move it under your scenario folder; to run one as it is, name it on "
                                 "the command line", "1 test collected*"])
    assert "shrunk" not in result.stdout.str()


def test_a_counterexample_named_on_the_command_line_runs(pytester):
    _written(pytester.path)
    result = pytester.runpytest("--collect-only", "-q", *BIND, f"counterexamples/{SHRUNK}")
    result.stdout.fnmatch_lines([f"counterexamples/{SHRUNK}::shrunk[[]jobs:count[]]", "1 test collected*"])
    assert "left out" not in result.stdout.str()


def test_a_counterexample_moved_under_the_scenario_folder_is_a_scenario_like_any_other(pytester):
    path = _written(pytester.path)
    shutil.move(path, pytester.path / "tests" / "rerun-once.scenario.yaml")  # reviewed, moved, renamed
    result = pytester.runpytest("--collect-only", "-q", *BIND)
    result.stdout.fnmatch_lines(["*mine*", "tests/rerun-once.scenario.yaml::shrunk[[]jobs:count[]]", "2 tests collected*"])
    assert "left out" not in result.stdout.str()


def test_control_a_scenario_beside_the_counterexamples_that_the_check_did_not_write_is_collected(pytester):
    path = _written(pytester.path)
    (path.parent / "mine-too.scenario.yaml").write_text(SCENARIO.replace("mine", "mine_too"))
    result = pytester.runpytest("--collect-only", "-q", *BIND)
    result.stdout.fnmatch_lines(["*mine_too*", "*1 counterexample file(s)*left out*", "2 tests collected*"])


def test_eventtime_run_of_a_folder_leaves_a_counterexample_out_by_the_same_rule(tmp_path, monkeypatch, capsys):
    from eventtime.commands.files import scenario_files

    path = _written(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert scenario_files(["."]) == [Path("tests/mine.scenario.yaml")]
    assert "1 counterexample file(s) written by `eventtime check-properties` left out, not reviewed yet, in " \
           "counterexamples" in capsys.readouterr().err
    assert scenario_files([f"counterexamples/{SHRUNK}"]) == [Path(f"counterexamples/{SHRUNK}")]  # named: it runs
    assert "left out" not in capsys.readouterr().err
    assert scenario_files(["counterexamples"]) is None  # nothing else there: said, and a usage error
    assert "left out" in capsys.readouterr().err
    path.parent.joinpath(MARKER).write_text("# reviewed\n")  # its line deleted from the marker: a scenario
    assert scenario_files(["counterexamples"]) == [Path(f"counterexamples/{SHRUNK}")]


# -- 2. `disjoint` needs two different outputs --------------------------------------------------------------
ONE_OUTPUT = textwrap.dedent("""\
    contract: orders
    description: orders -> one output
    sources:
      orders: {columns: "order_id string, ts timestamp", event_time: ts}
    output: {columns: "order_id string, ts timestamp"}
    invariants:
      one_side: {disjoint: {key: [order_id], outputs: OUTPUTS}}
    """)


@pytest.mark.parametrize("outputs, said", [
    # before: accepted, and judged as holding on every stream (a key cannot be in two of one output)
    ("[output, output]", "`disjoint` (a key never in two outputs) needs two outputs or more, and the contract has "
                         "one ('output'): declare another (a `kind: path` parameter, a query under `queries:`, or "
                         "`table:NAME` for a table the job writes); for a key never twice in one output, write a hook"),
    ("[output]", "needs two outputs or more, and the contract has one ('output')"),
])
def test_disjoint_on_a_contract_of_one_output_is_an_error_at_its_line(tmp_path, outputs, said):
    path = tmp_path / "orders.contract.yaml"
    path.write_text(ONE_OUTPUT.replace("OUTPUTS", outputs))
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    assert f"{path}:7:" in str(info.value) and said in str(info.value), str(info.value)


def test_an_output_named_twice_is_an_error_at_its_place(tmp_path):
    path = tmp_path / "orders.contract.yaml"
    two = ONE_OUTPUT.replace('output: {columns: "order_id string, ts timestamp"}',
                             'params: {clean: {kind: path}}\noutput: {columns: "order_id string, ts timestamp"}')
    path.write_text(two.replace("OUTPUTS", "[output, clean, output]"))  # before: accepted
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    assert f"{path}:8:67: `outputs` names output 'output' twice" in str(info.value), str(info.value)
    path.write_text(two.replace("OUTPUTS", "[clean, clean]"))
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    assert "needs two outputs or more, not one ('clean'; outputs: clean, output)" in str(info.value)
    path.write_text(two.replace("OUTPUTS", "[clean, output]"))  # the control
    assert load_contract_file(path).invariants[0].outputs == ("clean", "output")


def test_check_properties_by_name_says_the_contract_s_problem_at_its_line(tmp_path, monkeypatch, capsys):
    """Before: `unknown contract 'orders'; did you mean 'orders'? (...)` for a contract found but invalid."""
    (tmp_path / "orders.contract.yaml").write_text(ONE_OUTPUT.replace("OUTPUTS", "[output]"))
    monkeypatch.chdir(tmp_path)
    assert main(["check-properties", "orders", "--pipeline", "orders=jobs:main"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orders.contract.yaml:7:") and "needs two outputs or more" in err, err
    assert "unknown contract" not in err


def test_check_properties_says_a_contract_declared_twice_before_spark_starts(tmp_path, monkeypatch, capsys):
    """Before: by name, `unknown contract 'orders'; did you mean 'orders'? (...)`; by file, Spark started and each
    property ended `not checked: ScenarioInvalid ...` with exit 1, where the mistake is the user's (exit 2)."""
    valid = ONE_OUTPUT.split("invariants:")[0]
    for folder, text in (("contracts", valid), ("more", valid.replace("description: ", "description: Other "))):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "orders.contract.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    said = ("contract 'orders' is declared in more than one place: contracts/orders.contract.yaml; "
            "more/orders.contract.yaml")
    for given, first in (("orders", ""), ("more/orders.contract.yaml", "more/orders.contract.yaml: ")):
        assert main(["check-properties", given, "--contracts", "contracts", "--contracts", "more",
                     "--pipeline", "orders=jobs:main"]) == 2
        assert capsys.readouterr().err.strip() == f"eventtime: error: {first}{said}"
    # the control: the same file twice is one declaration, and the check goes on to its pipeline
    (tmp_path / "more" / "orders.contract.yaml").write_text(valid)
    assert main(["check-properties", "more/orders.contract.yaml", "--contracts", "contracts"]) == 2
    assert "no pipeline is bound" in capsys.readouterr().err


# -- 3. the user's files named as `eventtime run` names them ---------------------------------------------------
def test_check_properties_names_files_relative_to_the_working_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "contracts").mkdir()
    contract = tmp_path / "contracts" / "orders.contract.yaml"
    contract.write_text(ONE_OUTPUT.split("invariants:")[0])
    monkeypatch.chdir(tmp_path)
    # unbound: the contract's file, not a made-up absolute place (before: /.../check-properties: no pipeline ...)
    for given in (str(contract), "orders"):
        assert main(["check-properties", given, "--contracts", "contracts"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("eventtime: error: contracts/orders.contract.yaml: no pipeline is bound"), err
    # a mistake in a contract given by its absolute path (before: the absolute path, where `eventtime run` says
    # the relative one)
    contract.write_text(ONE_OUTPUT.replace("OUTPUTS", "[output]"))
    assert main(["check-properties", str(contract)]) == 2
    assert capsys.readouterr().err.startswith("contracts/orders.contract.yaml:7:")
    # the written counterexample and its reproduce line
    shrunk = props.Counterexample("bounded-state", "orders", "scenario: a\n", ["why"])
    report = props.PropertyReport("bounded-state", counterexample=shrunk,
                                  written=shrunk.write(tmp_path / "counterexamples"))
    assert report.written is not None and report.written.is_absolute()
    assert "; written: counterexamples/bounded-state-orders.scenario.yaml" in report.describe(), report.describe()
    from eventtime.commands.check_properties import _say_counterexamples

    import argparse

    args = argparse.Namespace(contracts=[], spark_conf=["spark.sql.ansi.enabled=true"], timeout=None)
    _say_counterexamples(props.CheckReport("orders", [report]), "orders", "jobs:main", args, contract)
    # the form `eventtime run` prints as its re-run line (before: `--pipeline orders=jobs:main`, and no
    # --spark-conf, so the file could run under other settings than the check's)
    assert capsys.readouterr().out.strip() == ("eventtime: reproduce: eventtime run counterexamples/bounded-state-"
                                               "orders.scenario.yaml --pipeline jobs:main --contracts contracts "
                                               "--spark-conf spark.sql.ansi.enabled=true")


def test_a_hook_that_raises_is_named_where_it_raised_relative_to_the_working_directory(tmp_path, monkeypatch):
    """Before: `... raised KeyError at /abs/.../shop_checks.py:3: ...`, where `eventtime run` names a user's module
    that raises relative to the working directory (userpipeline's rule, used for both now)."""
    from eventtime.contracts import InvariantSpec
    from eventtime.properties import Observations, hook_raised, judge_invariant

    (tmp_path / "shop_checks.py").write_text("def balanced(obs):\n    rows = obs.rows('output')\n"
                                             "    return rows[0]['missing']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import shop_checks

    contract_path = tmp_path / "orders.contract.yaml"
    contract_path.write_text(ONE_OUTPUT.split("invariants:")[0])
    spec = InvariantSpec("balanced", "hook", hook="shop_checks:balanced")
    obs = Observations({}, {"output": [{"order_id": "a", "ts": None}]}, {})
    with pytest.raises(KeyError) as info:
        judge_invariant(spec, obs, load_contract_file(contract_path), shop_checks.balanced)
    assert hook_raised(spec, info.value) == ("invariant 'balanced': its hook shop_checks:balanced raised KeyError at "
                                             "shop_checks.py:3: 'missing'")


def test_watch_does_not_run_a_counterexample_written_while_it_watches_and_says_so(tmp_path, monkeypatch):
    from eventtime.results import PASSED, ScenarioResult
    from eventtime.watch import Watcher

    contract = "contract: echo\ndescription: x\nsources:\n  clicks: {columns: \"page string, ts timestamp\", " \
               "event_time: ts}\noutput: {columns: \"page string, ts timestamp\"}\n"
    scenario = ("scenario: NAME\ndescription: one click\ncontract: echo\nsteps:\n  - add: {clicks: [[home, \"00:00:01\"]]}"
                "\n  - process\n")
    (tmp_path / "echo.contract.yaml").write_text(contract)
    (tmp_path / "a.scenario.yaml").write_text(scenario.replace("NAME", "a"))
    (tmp_path / "cejobs.py").write_text("def echo(clicks):\n    return clicks\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    ran: list[str] = []
    said: list[str] = []
    w = Watcher([str(tmp_path)], pipeline="cejobs:echo", contract_dirs=[str(tmp_path)], root=tmp_path, say=said.append,
                run=lambda sc, target: ran.append(sc.name) or ScenarioResult(sc, str(target), PASSED))
    w.first_round()
    assert ran == ["a"]
    props.Counterexample("bounded-state", "echo", scenario.replace("NAME", "shrunk"), ["why"]).write(
        tmp_path / "counterexamples")
    w.one_round()
    w.one_round()
    assert ran == ["a"], ran  # before: the unreviewed file ran
    assert sum("1 counterexample file(s)" in s and "in counterexamples" in s for s in said) == 1, said


def test_a_counterexample_keeps_its_whole_reason_wrapped_and_says_why_it_sets_a_drawn_conf():
    """Before: What broke was cut at 300 characters (a Spark message's advice lost mid-word) and the file's
    `spark.sql.streaming.noDataMicroBatches.enabled: false` stood with nothing saying where it came from."""
    from eventtime import properties as props

    reason = "the run ended in an error [X]: " + " ".join(f"word{i}" for i in range(80)) + " the end"
    header = props._header("no-query-dies", [reason], "Reproduce: eventtime run THIS_FILE.")
    said = [line.removeprefix("#   ") for line in header.splitlines() if line.startswith("#   ")]
    assert " ".join(said) == reason and all(len(line) <= 104 for line in header.splitlines())
    cut = props._header("no-query-dies", ["x" * 3 + " " + "y " * 1500], "n")
    assert "[cut here: eventtime run THIS_FILE prints the whole message]" in cut
    text = ("scenario: s\nconf:\n  spark.sql.streaming.noDataMicroBatches.enabled: false\nparams:\n"
            "  window: 5s\n")
    out = props._conf_explained(text)
    assert out.splitlines()[2].startswith("  spark.sql.streaming.noDataMicroBatches.enabled: false  # drawn off:")
    assert out.splitlines()[4] == "  window: 5s"  # a line of no drawn conf is left as it was
    assert props._conf_explained(out) == out  # said once
    import yaml

    assert yaml.safe_load(out)["conf"] == {"spark.sql.streaming.noDataMicroBatches.enabled": False}
