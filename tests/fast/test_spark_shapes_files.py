"""examples/spark_tests without Spark: its scenario files load against its own contract files, and its
pytest config binds every contract exactly once to a function its pipelines module defines.
(tests/spark/test_spark_shapes.py runs the family on Spark.)"""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from eventtime import ScenarioInvalid, load_contract_file, load_scenario
from eventtime.cli import main
from eventtime.registry import ContractLookup

PROJECT = Path(__file__).resolve().parents[2] / "examples" / "spark_tests"


def _bindings(pyproject: str) -> dict[str, list[str]]:
    lines = tomllib.loads(pyproject)["tool"]["pytest"]["ini_options"]["eventtime_pipelines"]
    out: dict[str, list[str]] = {}
    for line in lines:
        contract, _, target = (part.strip() for part in line.partition("="))
        out.setdefault(contract, []).append(target)
    return out


def _unbound(pyproject: str) -> list[str]:
    """Contracts of the folder with no binding line, or with more than one."""
    bindings = _bindings(pyproject)
    names = [load_contract_file(p).name for p in sorted((PROJECT / "contracts").glob("*.contract.yaml"))]
    return [n for n in names if len(bindings.get(n, [])) != 1]


def test_every_scenario_loads_against_the_folders_contracts_none_of_them_bundled():
    lookup = ContractLookup([PROJECT / "contracts"])
    files = sorted((PROJECT / "scenarios").glob("*.scenario.yaml"))
    scenarios = [load_scenario(f, contracts=lookup) for f in files]
    assert len(scenarios) >= 10
    assert all(not s.contract.bundled for s in scenarios)
    assert {s.contract.name for s in scenarios} == {
        load_contract_file(p).name for p in (PROJECT / "contracts").glob("*.contract.yaml")}


def test_without_the_contracts_folder_a_scenario_does_not_load():
    """The control: the contract comes from the folder, not from anywhere else."""
    try:
        load_scenario(PROJECT / "scenarios" / "window-of-windows.scenario.yaml")
    except ScenarioInvalid as exc:
        assert "window_of_windows" in str(exc)
    else:
        raise AssertionError("loaded without its contract file")


def test_every_contract_is_bound_once_to_a_function_of_the_pipelines_module():
    pyproject = (PROJECT / "pyproject.toml").read_text()
    assert _unbound(pyproject) == []
    module = ast.parse((PROJECT / "spark_shapes" / "pipelines.py").read_text())
    functions = {n.name for n in module.body if isinstance(n, ast.FunctionDef)}
    targets = [t for ts in _bindings(pyproject).values() for t in ts]
    assert all(t.startswith("spark_shapes.pipelines:") and t.partition(":")[2] in functions for t in targets)
    # the control: a config with one line dropped and one doubled names both contracts
    lines = pyproject.splitlines()
    dropped = next(i for i, line in enumerate(lines) if line.strip().startswith('"window_join ='))
    doubled = next(i for i, line in enumerate(lines) if line.strip().startswith('"windowed_count ='))
    mutated = lines[:dropped] + lines[dropped + 1:]
    mutated.insert(doubled, lines[doubled])
    assert sorted(_unbound("\n".join(mutated))) == ["window_join", "windowed_count"]


def test_eventtime_validate_accepts_the_folder(capsys):
    assert main(["validate", str(PROJECT / "scenarios"), "--contracts", str(PROJECT / "contracts")]) == 0
    count = len(list((PROJECT / "scenarios").glob("*.scenario.yaml")))
    out = capsys.readouterr()
    assert f"{count} valid, 0 invalid" in out.out + out.err


def test_an_expression_left_unnamed_as_in_sparks_tests_gets_the_alias_to_give_it():
    """Spark's suites cast the window's start without an alias (`.cast("long").as[Long]`), so Spark
    names the column by its text; the output check says which contract column it most likely is."""
    from eventtime.userpipeline import OutputMismatch, check_output

    contract = load_contract_file(PROJECT / "contracts" / "windowed_count.contract.yaml")
    assert check_output([("start", "bigint"), ("count", "bigint")], contract) == [0, 1]
    unnamed = [("CAST(window.start AS BIGINT)", "bigint"), ("count", "bigint")]
    try:
        check_output(unnamed, contract)
    except OutputMismatch as exc:
        message = str(exc)
    else:
        raise AssertionError("an unnamed column passed")
    assert ("column 'CAST(window.start AS BIGINT)' (bigint) is not in the contract's output; it is an "
            "expression Spark named by its text: name it with .alias('start')") in message
    assert "column 'start' (long) is missing" in message
    # two columns of its type are missing: no name guessed; a plain extra name gets no hint
    try:
        check_output([("CAST(window.start AS BIGINT)", "bigint"), ("count(1)", "bigint"), ("debug", "int")], contract)
    except OutputMismatch as exc:
        message = str(exc)
    assert "column 'count(1)' (bigint) is not in the contract's output; it is an expression Spark named by " \
           "its text: give it a contract column's name with .alias()" in message
    assert "column 'count' (long) is missing" in message
    assert "column 'debug' (int) is not in the contract's output (" in message
