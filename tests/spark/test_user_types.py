"""A user's own contract on Spark: Spark's types end to end, the user's signatures, strict output.

The contract (a file beside the scenario, as in a user's repository) has decimal, array, struct and
map columns and a derived output; the right pipeline passes, and each wrong one (a wrong decimal, a
missing column, an extra column, a column of another type) fails with a message naming the column.
"""
from __future__ import annotations

import re
import textwrap

import pytest
from pyspark.sql import functions as F

from eventtime import run_scenario
from eventtime.harness.cluster import child_environment
from eventtime.textreport import describe_failure
from tests.user_project import user_scenario

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: shop_clicks
    description: clicks with a JSON-ish payload -> clicks, revenue and tags per page and 5-minute window.
    sources:
      clicks:
        columns: "page string, ts timestamp, revenue decimal(12,2), tags array<string>, ua struct<name: string, v: int>"
        event_time: ts
    params:
      window: {kind: duration, doc: window length}
      watermark_delay: {kind: duration, default: 0 seconds}
    output:
      columns: "page string, window struct<start: timestamp, end: timestamp>, clicks bigint,
                revenue decimal(22,2), tags array<string>, agents map<string, bigint>"
      modes: [append]
      key: [page, window]
    """)

SCENARIO = textwrap.dedent("""\
    scenario: shop-clicks-typed
    description: Revenue sums exactly as decimal(22,2); tags and agents are nested values; append mode.
    contract: shop_clicks
    params: {window: 5 minutes}
    steps:
      - add:
          clicks:
            - {page: home, ts: "00:01:00", revenue: 12.10, tags: [b, a], ua: {name: ff, v: 1}}
            - {page: home, ts: "00:02:00", revenue: "0.05", tags: [a], ua: [ff, 2]}
            - {page: cart, ts: "00:03:00", revenue: null, tags: [], ua: null}
      - process
      - expect: {no_output: true}
      - add:
          clicks: [[home, "00:06:00", 1.00, [c], {name: ie, v: 9}]]
      - process
      - expect:
          rows:
            - page: home
              window: {start: "00:00:00", end: "00:05:00"}
              clicks: 2
              revenue: 12.15
              tags: [a, b]
              agents: {ff: 2}
            - [cart, {start: "00:00:00", end: "00:05:00"}, 1, null, [], {}]
    """)


def transform(clicks, window, watermark_delay):
    """The user's own signature: parameters named after the contract's source and parameters."""
    w = F.window("ts", window)
    counted = (clicks.withWatermark("ts", watermark_delay).groupBy("page", w.alias("window"))
               .agg(F.count(F.lit(1)).alias("clicks"), F.sum("revenue").alias("revenue"),
                    F.array_sort(F.array_distinct(F.flatten(F.collect_list("tags")))).alias("tags"),
                    F.collect_list("ua.name").alias("names")))
    agents = F.map_from_entries(F.transform(
        F.array_distinct("names"),
        lambda n: F.struct(n, F.size(F.filter("names", lambda m: m == n)).cast("bigint"))))
    return counted.select("page", "window", "clicks", "revenue", "tags", agents.alias("agents"))


def wrong_decimal(clicks, window, watermark_delay):
    return transform(clicks, window, watermark_delay).withColumn("revenue", F.col("revenue") + F.lit(0.01).cast("decimal(3,2)")).select(
        "page", "window", "clicks", F.col("revenue").cast("decimal(22,2)").alias("revenue"), "tags", "agents")


def missing_column(df):
    """The one-source form: `fn(df)`; the window and delay are its own."""
    return transform(df, "5 minutes", "0 seconds").drop("agents")


def extra_column(clicks, window, watermark_delay):
    return transform(clicks, window, watermark_delay).withColumn("debug", F.lit(1))


def wrong_type(clicks, window, watermark_delay):
    return transform(clicks, window, watermark_delay).withColumn("clicks", F.col("clicks").cast("double"))


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return user_scenario(tmp_path_factory.mktemp("shop"), contract=("shop_clicks.contract.yaml", CONTRACT),
                         scenario=("typed.scenario.yaml", SCENARIO))


def test_the_users_pipeline_passes_with_every_type(scenario, spark):
    result = run_scenario(scenario, transform, session=spark)
    assert result.status == "passed", describe_failure(result)


def test_a_wrong_decimal_fails_on_the_rows(scenario, spark):
    result = run_scenario(scenario, wrong_decimal, session=spark)
    assert result.status == "failed", describe_failure(result)
    text = describe_failure(result)
    assert "1 missing, 1 unexpected" in text and "12.16" in text and "12.15" in text


@pytest.mark.parametrize("pipeline, message", [
    (missing_column, "column 'agents' (map<string,long>) is missing"),
    (extra_column, "column 'debug' (int) is not in the contract's output"),
    (wrong_type, "column 'clicks' is double, the contract says long"),
])
def test_a_wrong_output_schema_fails_naming_the_column(scenario, spark, pipeline, message):
    result = run_scenario(scenario, pipeline, session=spark)
    assert result.status == "failed", describe_failure(result)
    assert message in describe_failure(result)


EVERY_TYPE = [("page", "string"), ("ts", "timestamp"), ("amount", "decimal(12,2)"), ("day", "date"),
              ("raw", "binary"), ("tags", "array<string>"), ("counts", "map<string,bigint>"),
              ("ua", "struct<start:timestamp,n:int,inner:struct<x:timestamp_ntz>>"), ("local", "timestamp_ntz"),
              ("ratio", "float"), ("tiny", "tinyint"), ("small", "smallint"), ("flag", "boolean"),
              ("times", "array<timestamp>"), ("nested", "map<string,array<struct<t:timestamp>>>")]


def test_every_type_round_trips_through_the_harness_with_nulls_at_every_depth(spark, tmp_path):
    """Rows in, rows out, unchanged: timestamps as epoch microseconds at any depth, an output column
    name twice (read by position), nulls as values, elements, fields and map values."""
    import datetime as dt
    import decimal

    from eventtime.harness import MemorySource, StreamRun

    source = MemorySource(spark, "every", EVERY_TYPE)
    run = StreamRun(spark, lambda: (source.dataframe().selectExpr("*", "ts AS ts"), "append"),
                    checkpoint=str(tmp_path / "checkpoint"), clock_start_ms=0)
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


def test_a_udf_in_the_users_own_package_imports_on_the_python_workers(tmp_path):
    """A job whose UDF lives in the user's package, found through pytest's `pythonpath` (not installed):
    the Python workers get the driver's import path, so the UDF runs (it failed with
    ModuleNotFoundError before). The control: the same run with the UDF raising fails, naming it."""
    import subprocess
    import sys

    (tmp_path / "src" / "plant").mkdir(parents=True)
    (tmp_path / "src" / "plant" / "__init__.py").write_text("")
    (tmp_path / "src" / "plant" / "sensors.py").write_text(textwrap.dedent("""\
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType

        BROKEN = False


        def site_of(device_id):
            if BROKEN:
                raise RuntimeError("unknown device prefix in " + device_id)
            return device_id.split("-")[0]


        def transform(readings, window):
            site = F.udf(site_of, StringType())
            return (readings.withWatermark("ts", "0 seconds").groupBy(site("device").alias("site"),
                                                                      F.window("ts", window).alias("w"))
                    .count().select("site", F.col("w.start").alias("window_start"), "count"))
        """))
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.pytest.ini_options]
        pythonpath = ["src"]
        eventtime_pipelines = ["site_counts = plant.sensors:transform"]
        """))
    (tmp_path / "site_counts.contract.yaml").write_text(textwrap.dedent("""\
        contract: site_counts
        description: readings -> count per site (a UDF of the device id) and window.
        sources:
          readings: {columns: "device string, ts timestamp", event_time: ts}
        params:
          window: {kind: duration, default: 10 seconds}
        output: {columns: "site string, window_start timestamp, count bigint"}
        """))
    (tmp_path / "one.scenario.yaml").write_text(textwrap.dedent("""\
        scenario: site-count
        description: Two readings of one site in a window, counted once the watermark passes.
        contract: site_counts
        steps:
          - add: {readings: [[a-1, "00:00:01"], [a-2, "00:00:02"]]}
          - add: {readings: [[b-1, "00:00:30"]]}
          - process
          - expect:
              output: [[a, "00:00:00", 2]]
        """))
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "one.scenario.yaml"]
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=child_environment())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    (tmp_path / "src" / "plant" / "sensors.py").write_text(
        (tmp_path / "src" / "plant" / "sensors.py").read_text().replace("BROKEN = False", "BROKEN = True"))
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=child_environment())
    # the first batch reads a-1, a-2 and b-1; whichever row's task raises first names the error
    assert done.returncode == 1 and re.search(r"unknown device prefix in [ab]-[12]", done.stdout), done.stdout[-3000:]
    assert "ModuleNotFoundError" not in done.stdout


def test_a_module_level_udf_works_under_the_pytest_plugin(tmp_path):
    """PySpark 4 creates a `@F.udf` against the active session when the module is imported: the
    plugin starts its session before importing the bound pipeline's module."""
    import subprocess
    import sys

    (tmp_path / "udfjob.py").write_text(textwrap.dedent("""\
        from pyspark.sql import functions as F


        @F.udf("string")
        def upper(s):
            return s.upper()


        def transform(readings):
            return readings.select(upper("device").alias("device"), "ts")
        """))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\npythonpath = ["."]\neventtime_pipelines = ["shout = udfjob:transform"]\n')
    (tmp_path / "shout.contract.yaml").write_text(
        "contract: shout\ndescription: device ids upper-cased.\nsources:\n"
        "  readings: {columns: \"device string, ts timestamp\"}\noutput: {columns: \"device string, ts timestamp\"}\n")
    (tmp_path / "one.scenario.yaml").write_text(
        "scenario: shout\ndescription: upper-cased.\ncontract: shout\nsteps:\n"
        "  - add: {readings: [[a-1, \"00:00:01\"]]}\n  - process\n  - expect: {rows: [[A-1, \"00:00:01\"]]}\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path,
                          env=child_environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
