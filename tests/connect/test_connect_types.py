"""Spark's types over Spark Connect: what tests/spark/test_user_types.py checks on the classic harness.

Every type a scenario or contract can write (decimal, date, binary, timestamp_ntz, arrays, maps,
structs, nested, nulls at any depth) goes through the staged source and comes back from the
foreachBatch output unchanged; a user's contract with such columns passes, and a wrong decimal fails.
"""
from __future__ import annotations

import datetime as dt
import decimal

import pytest

from eventtime import run_scenario
from eventtime.textreport import describe_failure
from tests.user_project import user_scenario
from tests.spark.test_user_types import CONTRACT, EVERY_TYPE, SCENARIO, transform, wrong_decimal

pytestmark = [pytest.mark.connect, pytest.mark.spark]

TIMEOUT = 180  # a cold server's first batch took 20-50 s on two shared cores


def test_every_type_round_trips_over_connect_with_nulls_at_every_depth(remote_spark):
    """Rows in, rows out, unchanged (an output column named twice is read by position)."""
    from eventtime.harness.connect import ConnectSource, ConnectStaging, ConnectStreamRun

    staging = ConnectStaging(remote_spark)
    source = ConnectSource(staging, "every", EVERY_TYPE)
    run = ConnectStreamRun(remote_spark, lambda: (source.dataframe().selectExpr("*", "ts AS ts"), "append"),
                           staging, timeout=TIMEOUT)
    full = ("home", 1_000_000, decimal.Decimal("12.10"), dt.date(2024, 2, 29), b"\x00\xff", ("a", None),
            (("x", 1), ("y", None)), (2_000_000, 7, (3_000_000,)), 4_000_000, 1.5, -3, 300, True,
            (5_000_000, None), (("k", ((6_000_000,), (None,))),))
    empty = ("n",) + (None,) * (len(EVERY_TYPE) - 1)
    partial = ("p", None, None, None, b"", (), (), (None, None, (None,)), None, None, None, None, False, (), ())
    try:
        run.start()
        source.add([full, empty, partial])
        rows = sorted(r for b in run.process() for r in b.rows)
    finally:
        run.close()
    assert [name for name, _ in run.output_columns] == [n for n, _ in EVERY_TYPE] + ["ts"]
    assert rows == sorted([full + (full[1],), empty + (None,), partial + (None,)])


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return user_scenario(tmp_path_factory.mktemp("shop"), contract=("shop_clicks.contract.yaml", CONTRACT),
                         scenario=("typed.scenario.yaml", SCENARIO))


def test_a_users_typed_contract_passes_over_connect_and_a_wrong_decimal_fails(scenario, remote_spark):
    result = run_scenario(scenario, transform, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", describe_failure(result)
    wrong = run_scenario(scenario, wrong_decimal, session=remote_spark, timeout=TIMEOUT)
    assert wrong.status == "failed", describe_failure(wrong)
    text = describe_failure(wrong)
    assert "1 missing, 1 unexpected" in text and "12.16" in text and "12.15" in text
