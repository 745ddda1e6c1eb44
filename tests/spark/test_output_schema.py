"""`expect: {schema: DDL}` on Spark: the pipeline's own output schema (before the kit reorders it to
the contract's), names in order, types, and NOT NULL where asked.

The contract lets the output columns come in any order; the schema check does not. The right job
passes; a job whose `clicks` Spark plans as nullable and a job with its columns in another order
each fail, naming the difference.
"""
from __future__ import annotations

import textwrap

import pytest
from pyspark.sql import functions as F

from eventtime import run_scenario
from eventtime.textreport import describe_failure
from tests.user_project import user_scenario

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: page_revenue
    description: clicks -> revenue and clicks per page and 5-minute window.
    sources:
      clicks: {columns: "page string, ts timestamp, revenue decimal(12,2)", event_time: ts}
    output:
      columns: "page string, window struct<start: timestamp, end: timestamp>, revenue decimal(22,2), clicks bigint"
    """)

SCENARIO = textwrap.dedent("""\
    scenario: page-revenue-schema
    description: The job's output schema as Spark plans it; clicks is never null.
    contract: page_revenue
    steps:
      - add: {clicks: [[home, "00:01:00", "1.50"]]}
      - process
      - expect:
          no_output: true
          schema: "page string, window struct<start: timestamp, end: timestamp>, revenue decimal(22,2),
                   clicks bigint NOT NULL"
    """)


def _counted(clicks):
    return (clicks.withWatermark("ts", "0 seconds").groupBy("page", F.window("ts", "5 minutes").alias("window"))
            .agg(F.sum("revenue").alias("revenue"), F.count(F.lit(1)).alias("n")))


def revenue(clicks):
    return _counted(clicks).select("page", "window", "revenue", F.coalesce("n", F.lit(0)).alias("clicks"))


def nullable_clicks(clicks):
    """`when` without `otherwise` may give null, so Spark plans the column nullable: NOT NULL fails on it.
    (The aggregate's count itself is planned NOT NULL on 3.5.9 and nullable on 4.3.0: not a control.)"""
    return _counted(clicks).select("page", "window", "revenue", F.when(F.col("n") > 0, F.col("n")).alias("clicks"))


def reordered(clicks):
    """The contract accepts any order; the schema check names it."""
    return revenue(clicks).select("page", "window", "clicks", "revenue")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return user_scenario(tmp_path_factory.mktemp("shop"), contract=("page_revenue.contract.yaml", CONTRACT),
                         scenario=("schema.scenario.yaml", SCENARIO))


def test_the_jobs_schema_passes(scenario, spark):
    result = run_scenario(scenario, revenue, session=spark)
    assert result.status == "passed", describe_failure(result)


@pytest.mark.parametrize("pipeline, difference", [
    (nullable_clicks, "column 'clicks' is nullable, expected NOT NULL"),
    (reordered, "columns are in the order page, window, clicks, revenue, expected page, window, revenue, clicks"),
])
def test_a_schema_difference_fails_naming_it(scenario, spark, pipeline, difference):
    result = run_scenario(scenario, pipeline, session=spark)
    assert result.status == "failed", describe_failure(result)
    text = describe_failure(result)
    assert difference in text and "schema.scenario.yaml:9:" in text, text
