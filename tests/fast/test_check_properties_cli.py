"""`eventtime check-properties`: what it refuses before Spark starts (exit 2, the reason named), in process."""
from __future__ import annotations

import textwrap

import pytest

from eventtime.cli import main

ROWS = textwrap.dedent("""\
    contract: page_windows
    description: clicks -> clicks per page
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
    output:
      columns: "page string, clicks bigint"
    """)
KAFKA = textwrap.dedent("""\
    contract: orders_k
    description: kafka
    sources:
      orders: {kind: kafka, topic: orders}
    output:
      columns: "n bigint"
    """)


@pytest.fixture
def no_spark(monkeypatch):
    """Fails the test if the command would start Spark."""
    from eventtime.commands import spark

    def refuse(args):
        raise AssertionError("Spark was started")
    monkeypatch.setattr(spark, "open_session", refuse)


def _run(capsys, *argv) -> tuple[int, str]:
    code = main(["check-properties", *argv])
    return code, capsys.readouterr().err


def test_an_unknown_contract(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, "nope")
    assert code == 2 and "unknown contract 'nope'" in err, err


def test_a_contract_bound_to_nothing(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(ROWS)
    code, err = _run(capsys, "page_windows.contract.yaml")
    assert code == 2 and "page_windows" in err, err


def test_a_kafka_source_without_a_payload_is_refused_by_name_before_spark(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders_k.contract.yaml").write_text(KAFKA)
    code, err = _run(capsys, "orders_k", "--contracts", str(tmp_path), "--pipeline", "orders_k=json:loads")
    assert code == 2 and "kafka source 'orders' declares no payload: give it `value: {columns: " in err, err


def test_a_bad_delay_before_spark(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(ROWS)
    code, err = _run(capsys, "page_windows.contract.yaml", "--pipeline", "page_windows=json:loads", "--delay", "ten")
    assert code == 2 and "--delay 'ten'" in err, err


SPLIT = textwrap.dedent("""\
    contract: orders_split
    description: orders -> clean and quarantine folders
    sources:
      orders:
        columns: "id string, amount int, ts timestamp"
        event_time: ts
    params:
      clean: {kind: path, conf: t.clean}
      quarantine: {kind: path, conf: t.quarantine}
    output:
      columns: "id string, amount int, ts timestamp"
    invariants:
      routed_once: {conserve: {from: orders, into: [clean, quarantine]}}
      one_side: {disjoint: {key: [id], outputs: [clean, quarantine]}}
    """)


@pytest.fixture
def checked(monkeypatch):
    """Records the properties the command would check, with a stand-in session and check (no Spark)."""
    from eventtime import properties
    from eventtime.commands import spark

    seen: list[list[str]] = []

    def check(contract, target, *, properties, **kwargs):
        seen.append(list(properties))
        return properties_module.CheckReport(contract.name, [properties_module.PropertyReport(p, held_on=1)
                                                             for p in properties])
    properties_module = properties
    monkeypatch.setattr(spark, "open_session", lambda args: (object(), 0))
    monkeypatch.setattr(properties, "check_properties", check)
    return seen


def test_one_invariant_is_picked_by_name(capsys, tmp_path, monkeypatch, checked):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders_split.contract.yaml").write_text(SPLIT)
    code, err = _run(capsys, "orders_split.contract.yaml", "--pipeline", "orders_split=json:loads",
                     "--property", "invariant:one_side", "--property", "no-query-dies")
    assert code == 0, err
    assert checked == [["invariant:one_side", "no-query-dies"]]


def test_invariants_stands_for_each_of_them(capsys, tmp_path, monkeypatch, checked):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders_split.contract.yaml").write_text(SPLIT)
    code, err = _run(capsys, "orders_split.contract.yaml", "--pipeline", "orders_split=json:loads",
                     "--property", "invariants")
    assert code == 0 and checked == [["invariant:routed_once", "invariant:one_side"]], err


def test_an_unknown_invariant_names_the_known_ones_before_spark(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders_split.contract.yaml").write_text(SPLIT)
    code, err = _run(capsys, "orders_split.contract.yaml", "--pipeline", "orders_split=json:loads",
                     "--property", "invariant:routed_twice")
    assert code == 2 and "unknown invariant 'routed_twice'" in err, err
    assert "the invariants known: routed_once, one_side" in err, err


def test_an_invariant_of_a_contract_without_any(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(ROWS)
    code, err = _run(capsys, "page_windows.contract.yaml", "--pipeline", "page_windows=json:loads",
                     "--property", "invariant:x")
    assert code == 2 and "unknown invariant 'x'" in err and "no invariant is declared" in err, err


def test_an_unknown_property_lists_the_known_ones_before_spark(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders_split.contract.yaml").write_text(SPLIT)
    code, err = _run(capsys, "orders_split.contract.yaml", "--pipeline", "orders_split=json:loads",
                     "--property", "exactly-once")
    assert code == 2 and "unknown property exactly-once" in err and "invariant:routed_once" in err, err


def test_the_same_rule_in_code():
    from eventtime.contractfile import load_contract_file
    from eventtime.properties import wanted_properties

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "orders_split.contract.yaml").write_text(SPLIT)
        contract = load_contract_file(Path(d) / "orders_split.contract.yaml")
    assert wanted_properties(["invariant:one_side"], contract) == ["invariant:one_side"]
    assert wanted_properties(["invariant:mine"], contract, ["mine"]) == ["invariant:mine"]
    with pytest.raises(ValueError, match="the invariants known: routed_once, one_side"):
        wanted_properties(["invariant:mine"], contract)
