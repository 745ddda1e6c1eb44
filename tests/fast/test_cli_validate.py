"""`eventtime validate`: one `file:line:column: message` line per problem; exit 0 valid, 1 invalid, 2 usage.

Also: every scenario of the bundled suite validates, and the fast modules never import pyspark.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eventtime.cli import main
from eventtime.exitcodes import ExitCode
from eventtime.loader import load_scenario, validate_file
from eventtime.scenarios import SUITE_DIR

PROBLEM_LINE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+): (?P<message>\S.*)$")


def test_exit_codes_are_0_1_2():
    assert (ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE_ERROR) == (0, 1, 2)


def test_valid_file(capsys, write_scenario, base_scenario):
    path = write_scenario("ok.scenario.yaml", base_scenario)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == "1 valid, 0 invalid (1 file)\n"
    assert err == ""


def test_invalid_file_prints_one_line_per_problem(capsys, write_scenario, base_scenario):
    text = base_scenario.replace("  - process\n", "  - proces\n").replace("10 seconds", "10 parsecs")
    path = write_scenario("bad.scenario.yaml", text)
    assert main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[-1] == "0 valid, 1 invalid (1 file)"
    problems = [PROBLEM_LINE.match(line) for line in lines[:-1]]
    assert all(problems), lines
    assert [(p["file"], int(p["line"]), int(p["column"])) for p in problems] == [(str(path), 5, 11), (str(path), 15, 5)]
    assert problems[0]["message"].startswith("unknown unit 'parsecs'")
    assert problems[1]["message"].startswith("unknown step kind 'proces'; did you mean 'process'?")
    assert err == ""


def test_directory_mixes_valid_and_invalid(capsys, write_scenario, base_scenario, tmp_path):
    write_scenario("suite/a/ok.scenario.yaml", base_scenario)
    write_scenario("suite/b/ok2.scenario.yml", base_scenario)
    bad = write_scenario("suite/b/bad.scenario.yaml", "scenario: x\n")
    write_scenario("suite/notes.yaml", "not: a scenario\n")  # not a scenario file name: skipped
    assert main(["validate", str(tmp_path / "suite")]) == 1
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[-1] == "2 valid, 1 invalid (3 files)"
    assert lines[:-1] == [f"{bad}:1:1: missing required key '{key}'"
                          for key in ("contract", "description", "steps")]


def test_several_paths(capsys, write_scenario, base_scenario):
    a = write_scenario("a.scenario.yaml", base_scenario)
    b = write_scenario("d/b.scenario.yaml", base_scenario)
    assert main(["validate", str(a), str(b.parent)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 valid, 0 invalid (2 files)"


def test_explicit_file_is_validated_whatever_its_name(capsys, write_scenario):
    path = write_scenario("notes.yaml", "- just\n- a list\n")
    assert main(["validate", str(path)]) == 1
    out, _ = capsys.readouterr()
    assert out.splitlines()[0] == (f"{path}:1:1: a scenario file is a YAML mapping (scenario:, description:, "
                                   "contract:, sources:, steps:), not a list")


def test_yaml_and_encoding_problems(capsys, write_scenario):
    dup = write_scenario("dup.scenario.yaml", "scenario: x\nscenario: y\n")
    latin = write_scenario("latin.scenario.yaml", b"scenario: x\ndescription: caf\xe9\n")
    assert main(["validate", str(dup), str(latin)]) == 1
    out, _ = capsys.readouterr()
    assert out.splitlines() == [f"{dup}:2:1: key 'scenario' appears twice in this mapping",
                                f"{latin}:2:1: the file is not UTF-8 text",
                                "0 valid, 2 invalid (2 files)"]


def test_missing_path_is_a_usage_error(capsys, tmp_path, write_scenario, base_scenario):
    ok = write_scenario("ok.scenario.yaml", base_scenario)
    gone = tmp_path / "gone.scenario.yaml"
    assert main(["validate", str(ok), str(gone)]) == 2
    out, err = capsys.readouterr()
    assert f"eventtime: error: no such file or directory: {gone}" in err
    assert out == ""  # nothing is validated


def test_no_scenario_files_is_a_usage_error(capsys, tmp_path, write_scenario):
    write_scenario("d/readme.yaml", "a: 1\n")
    assert main(["validate", str(tmp_path / "d")]) == 2
    out, err = capsys.readouterr()
    assert "no scenario files (*.scenario.yaml) under the given paths" in err
    assert out == ""
    (tmp_path / "empty").mkdir()
    assert main(["validate", str(tmp_path / "empty")]) == 2


@pytest.mark.parametrize("argv", [["validate"], [], ["frobnicate"], ["validate", "--bogus", "x"]])
def test_bad_command_line_exits_2(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


# -- the bundled suite ---------------------------------------------------------------------------

BUNDLED = sorted(SUITE_DIR.rglob("*.scenario.yaml"))


def test_the_suite_is_bundled():
    assert SUITE_DIR.is_dir()
    assert BUNDLED, f"no scenarios under {SUITE_DIR}"


@pytest.mark.parametrize("path", BUNDLED, ids=[p.relative_to(SUITE_DIR).as_posix() for p in BUNDLED])
def test_bundled_scenario_validates(path):
    assert [str(p) for p in validate_file(path)] == []


def test_bundled_scenario_names_are_unique():
    names = [load_scenario(p).name for p in BUNDLED]
    assert sorted(set(names)) == sorted(names), [n for n in names if names.count(n) > 1]


def test_validate_the_whole_suite(capsys):
    assert main(["validate", str(SUITE_DIR)]) == 0
    n = len(BUNDLED)
    assert capsys.readouterr().out == f"{n} valid, 0 invalid ({n} file{'s' if n != 1 else ''})\n"


# -- no JVM --------------------------------------------------------------------------------------

def test_validating_needs_no_pyspark(tmp_path):
    """The modules the fast tests use (and `eventtime validate`) import neither pyspark nor py4j."""
    script = (
        "import sys\n"
        "import eventtime.cli, eventtime.judge, eventtime.loader, eventtime.timeparse\n"
        "import eventtime.yamlsource, scenarios\n"
        "from eventtime.cli import main\n"
        f"code = main(['validate', {str(SUITE_DIR)!r}])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "print('CODE', code, 'IMPORTED', bad)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root)] + [p for p in sys.path if p]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "CODE 0 IMPORTED []"


# -- certify and list: argument errors never start Spark ------------------------------------------
def test_certify_unknown_contract_is_a_usage_error(capsys):
    assert main(["certify", "--contract", "tumbling_cout"]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "unknown contract 'tumbling_cout'; did you mean 'tumbling_count'?" in err


def test_certify_pipeline_needs_exactly_one_contract(capsys):
    assert main(["certify", "--pipeline", "my.mod:fn"]) == ExitCode.USAGE_ERROR
    assert "give exactly one --contract" in capsys.readouterr().err
    assert main(["certify", "--pipeline", "my.mod:fn", "--contract", "dedup", "--contract", "tumbling_count"]) == ExitCode.USAGE_ERROR


def test_certify_unresolvable_pipeline_is_a_usage_error(capsys):
    assert main(["certify", "--contract", "dedup", "--pipeline", "no_such_module_xyz:fn"]) == ExitCode.USAGE_ERROR
    assert "cannot import module 'no_such_module_xyz'" in capsys.readouterr().err


def test_list_shows_every_contract_and_concept(capsys):
    from eventtime.concepts import CONCEPTS
    from eventtime.registry import CONTRACTS

    assert main(["list"]) == ExitCode.OK
    out = capsys.readouterr().out
    for name in CONTRACTS:
        assert f"\n{name}: " in "\n" + out
    for tag in CONCEPTS:
        assert f"  {tag} " in out
