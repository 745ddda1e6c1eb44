"""examples/spark_tests: the shapes of Spark's own streaming tests, certified the way a user does.

The folder is a user's project: contract files, a module of plain `transform`-style functions, scenario
files and a pytest config with one binding line per contract. One child `pytest` runs it there as its
user would (the plugin, the ini bindings, `--eventtime-report-json`); every scenario passes, or is *not
applicable* with the reason when this Spark lacks a feature it requires. Then each scenario is run
against a wrong variant of its pipeline (a wrong delay, window or event-time derivation, dedup on all
columns, no watermark on one side, ...), which it must fail, naming what is wrong.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from eventtime import load_scenario, run_scenario
from eventtime.harness.compat import compat_for
from eventtime.registry import ContractLookup
from eventtime.textreport import describe_failure

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "examples" / "spark_tests"
RUN_TIMEOUT = 900  # seconds: one JVM start and ten scenarios, on a shared machine

SCENARIOS = sorted(p.name.removesuffix(".scenario.yaml") for p in (PROJECT / "scenarios").glob("*.scenario.yaml"))


@pytest.fixture(scope="module")
def features(spark):
    return compat_for(spark).features


@pytest.fixture(scope="module")
def scenarios():
    lookup = ContractLookup([PROJECT / "contracts"])
    return {name: load_scenario(PROJECT / "scenarios" / f"{name}.scenario.yaml", contracts=lookup)
            for name in SCENARIOS}


@pytest.fixture(scope="module")
def shapes():
    """The user's pipelines module, imported from the project folder (as its pytest `pythonpath` does)."""
    sys.path.insert(0, str(PROJECT))
    try:
        from spark_shapes import pipelines
    finally:
        sys.path.remove(str(PROJECT))
    return pipelines


def _missing(scenario, features) -> list[str]:
    return [f for f in dict.fromkeys(scenario.requires_features + scenario.contract.requires) if f not in features]


def test_the_family_passes_under_pytest_in_its_own_folder(tmp_path, scenarios, features):
    results = tmp_path / "results.json"
    # a contract none of whose scenarios this line can run (a newer Spark's operator) is said to be expected,
    # as a user says it; else the run fails for having judged nothing of it
    by_contract: dict[str, list[bool]] = {}
    for scenario in scenarios.values():
        by_contract.setdefault(scenario.contract.name, []).append(bool(_missing(scenario, features)))
    allow = [w for c, missing in sorted(by_contract.items()) if all(missing)
             for w in ("--eventtime-allow-not-applicable", c)]
    # the user's environment: none of this test process's pytest or path settings
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON") and not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the project folder
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
                               "--eventtime-report-json", str(results), *allow],
                              cwd=PROJECT, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the child pytest in {PROJECT.name} did not finish within {RUN_TIMEOUT} s:\n{exc.stdout}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    by_name = {r["scenario"]: r for r in json.loads(results.read_text())["results"]}
    assert sorted(by_name) == SCENARIOS, out
    assert len(SCENARIOS) >= 10
    for name, scenario in scenarios.items():
        result, missing = by_name[name], _missing(scenario, features)
        assert result["implementation"].startswith("spark_shapes.pipelines:"), result
        if missing:  # reported as not applicable, with the reason, never silently skipped
            assert result["status"] == "not_applicable", result
            assert f"needs Spark feature(s) {', '.join(missing)}" in result["reason"], result
        else:
            assert result["status"] == "passed", (name, out)


# A wrong variant of each scenario's pipeline, and text its failure must contain (what is wrong).
def _wrong_delay(p):
    return lambda input_data, window, watermark_delay: p.windowed_count(input_data, window, "5 seconds")


def _wrong_window(p):
    return lambda input_data, window, watermark_delay: p.windowed_count(input_data, "10 seconds", watermark_delay)


def _millis_not_seconds(p):
    """The event time derived as timestamp_millis(value): every row lands in the window at 0."""
    def transform(input_data, window, watermark_delay):
        return (input_data.withColumn("eventTime", F.expr("timestamp_millis(value)"))
                .withWatermark("eventTime", watermark_delay)
                .groupBy(F.window("eventTime", window).alias("window")).agg(F.count("*").alias("count"))
                .select(F.col("window.start").cast("long").alias("start"), "count"))
    return transform


def _set_not_list(p):
    """collect_set: the duplicate 11 is lost from `values`."""
    def transform(input_data, window, watermark_delay):
        good = p.window_summary(input_data, window, watermark_delay)
        return good.withColumn("values", F.array_distinct("values"))
    return transform


def _dedup_all_columns(p):
    return lambda df: df.dropDuplicates()


def _dedup_wrong_delay(p):
    return lambda input_data, watermark_delay: p.dedup_with_watermark(input_data, "5 seconds")


def _dedup_forever(p):
    """dropDuplicates on _1 (and the event time, for eviction) instead of within the watermark."""
    def transform(input_data, watermark_delay):
        return (p.with_event_time(input_data, "_2", watermark_delay).dropDuplicates(["_1"]).select("_1", "_2"))
    return transform


def _no_watermark_on_right(p):
    def transform(left, right, left_delay, right_delay, bound):
        left_side = (left.toDF("leftKey", "time")
                     .select("leftKey", F.timestamp_seconds("time").alias("leftTime"))
                     .withWatermark("leftTime", left_delay))
        right_side = right.toDF("rightKey", "time").select("rightKey", F.timestamp_seconds("time").alias("rightTime"))
        condition = F.expr(f"leftKey = rightKey AND leftTime BETWEEN rightTime - INTERVAL {bound} "
                           f"AND rightTime + INTERVAL {bound}")
        return (left_side.join(right_side, condition)
                .select("leftKey", F.col("leftTime").cast("int").alias("leftTime"),
                        F.col("rightTime").cast("int").alias("rightTime")))
    return transform


def _dedup_then_wrong_window(p):
    return lambda input_data, window, watermark_delay: p.dedup_then_count(input_data, "10 seconds", watermark_delay)


def _join_wrong_window(p):
    return (lambda left, right, window, left_delay, right_delay:
            p.window_join(left, right, "5 seconds", left_delay, right_delay))


def _inner_not_outer(p):
    """An inner join: the left row that never matches is never written."""
    def transform(left, right, left_delay, right_delay, bound):
        def side(df, delay):
            return (df.select(F.col("_1").alias("key"), F.timestamp_seconds("_2").alias("eventTime"))
                    .withWatermark("eventTime", delay))
        left_side, right_side = side(left, left_delay), side(right, right_delay)
        condition = ((left_side["key"] == right_side["key"])
                     & (right_side["eventTime"] >= left_side["eventTime"])
                     & (right_side["eventTime"] <= left_side["eventTime"] + F.expr(f"INTERVAL {bound}")))
        return (left_side.join(right_side, condition, "inner")
                .select(left_side["key"], left_side["eventTime"], right_side["eventTime"]))
    return transform


def _windows_wrong_delay(p):
    return (lambda input_data, window, outer_window, watermark_delay:
            p.window_of_windows(input_data, window, outer_window, "5 seconds"))


WRONG = {
    "watermark-append-mode": (_wrong_delay, ["watermark is 00:00:10, expected 00:00:05"]),
    "watermark-update-mode": (_wrong_window, ["rows since the previous expect: 2 missing, 1 unexpected"]),
    "watermark-recovery": (_millis_not_seconds, ["watermark is initial (1970-01-01T00:00:00Z), expected 00:00:15"]),
    "window-struct-array-nested": (_set_not_list, ["| [10, 11, 12, 14] |"]),
    "dedup-some-columns": (_dedup_all_columns, ["0 missing, 1 unexpected", "3 row(s) in state, expected 2"]),
    "dedup-with-watermark": (_dedup_wrong_delay, ["watermark is 00:00:10, expected 00:00:05"]),
    "dedup-within-watermark-tuples": (_dedup_forever, ["2 row(s) in state, expected 0"]),
    "join-time-range-with-watermark": (_no_watermark_on_right, [
        "6 row(s) in state, expected 2", "0 row(s) dropped as late since the previous expect, expected 1"]),
    "dedup-then-window-count": (_dedup_then_wrong_window, ["1 missing, 0 unexpected"]),
    "join-on-window-with-watermark": (_join_wrong_window, ["1 missing, 1 unexpected"]),
    "left-outer-join-both-event-times": (_inner_not_outer, ["1 missing, 0 unexpected"]),
    "window-of-windows": (_windows_wrong_delay, ["watermark is 00:00:16, expected 00:00:21"]),
}


def test_every_scenario_has_a_wrong_variant():
    assert sorted(WRONG) == SCENARIOS


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_variant_fails_naming_what_is_wrong(name, scenarios, shapes, features, spark):
    scenario = scenarios[name]
    make, texts = WRONG[name]
    result = run_scenario(scenario, make(shapes), session=spark)
    if _missing(scenario, features):
        assert result.status == "not_applicable", describe_failure(result)
        return
    text = describe_failure(result)
    assert result.status == "failed", text
    for expected in texts:
        assert expected in text, text
