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


def test_a_kafka_source_is_refused_by_name_before_spark(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders_k.contract.yaml").write_text(KAFKA)
    code, err = _run(capsys, "orders_k", "--contracts", str(tmp_path), "--pipeline", "orders_k=json:loads")
    assert code == 2 and "source 'orders' (kind kafka)" in err, err


def test_a_bad_delay_before_spark(capsys, tmp_path, monkeypatch, no_spark):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(ROWS)
    code, err = _run(capsys, "page_windows.contract.yaml", "--pipeline", "page_windows=json:loads", "--delay", "ten")
    assert code == 2 and "--delay 'ten'" in err, err
