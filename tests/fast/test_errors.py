"""One error base: every error the kit raises for a person to read derives from EventtimeError and is
listed by eventtime.errors; a contract file's problems are not a scenario's (both are a FileInvalid)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import eventtime
from eventtime import errors
from eventtime.errors import EventtimeError

ROOT = Path(__file__).resolve().parents[2]


def _error_classes(sources: dict[str, str]) -> set[str]:
    """The public classes of `sources` (file -> text) that derive, by name, from EventtimeError."""
    bases: dict[str, set[str]] = {}
    for text in sources.values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    found = {"EventtimeError"}
    while True:
        more = {name for name, of in bases.items() if of & found} - found
        if not more:
            return {name for name in found if not name.startswith("_")} - {"EventtimeError"}
        found |= more


def _kit_sources() -> dict[str, str]:
    return {str(p): p.read_text("utf-8") for folder in ("conformance", "harness") for p in (ROOT / folder).rglob("*.py")}


def test_every_error_deriving_from_the_base_is_listed_and_is_one():
    derived = _error_classes(_kit_sources())
    assert derived == set(errors.__all__) - {"EventtimeError"}
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), EventtimeError), name
    assert eventtime.EventtimeError is EventtimeError and eventtime.FileInvalid is errors.FileInvalid


def test_control_a_new_error_of_the_base_is_found():
    text = "class Mine(SettingsError):\n    pass\nclass Other(ValueError):\n    pass\n"
    assert _error_classes({"x.py": text, **_kit_sources()}) - set(errors.__all__) == {"Mine"}


def test_user_facing_errors_keep_their_builtin_kinds():
    """`except ValueError` / `except TypeError` written against them before still catch them."""
    for name, kind in [("SettingsError", ValueError), ("MasterURLError", ValueError), ("TimeFormatError", ValueError),
                       ("SignatureError", TypeError), ("ClusterError", RuntimeError), ("PathOutside", ValueError)]:
        assert issubclass(getattr(errors, name), kind), name


def test_a_contract_file_with_problems_is_no_invalid_scenario(tmp_path):
    from eventtime import ContractInvalid, ScenarioInvalid, load_contract_file, load_scenario

    bad = tmp_path / "broken.contract.yaml"
    bad.write_text("contract: broken\nsources: 3\n")
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(bad)
    assert not isinstance(info.value, ScenarioInvalid)
    assert isinstance(info.value, errors.FileInvalid) and isinstance(info.value, EventtimeError)
    assert str(info.value).startswith(f"{bad}:")
    # a scenario of that contract is invalid, its problems naming the contract file's lines
    sc = tmp_path / "s.scenario.yaml"
    sc.write_text("name: s\ncontract: broken\nsteps:\n  - add: {events: []}\n")
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(sc)
    assert "broken.contract.yaml" in str(info.value)

