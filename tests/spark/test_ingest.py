"""The harness's bulk ingest on Spark: rows arrive intact, and partitioned adds land in the partition asked for."""
from __future__ import annotations

import tempfile
import uuid

import pytest

pytestmark = pytest.mark.spark

BASE_US = 1_704_067_200_000_000


def _read_all(spark, source, select: str) -> list[tuple]:
    """Run one query over everything added so far; the rows of `select` (SQL expressions over the source)."""
    name = f"ingest_{uuid.uuid4().hex[:8]}"
    query = (source.dataframe().selectExpr(*select.split(";")).writeStream.format("memory").queryName(name)
             .option("checkpointLocation", tempfile.mkdtemp(prefix="ingest-")).start())
    try:
        query.processAllAvailable()
        return [tuple(r) for r in spark.table(name).collect()]
    finally:
        query.stop()


def test_rows_arrive_intact_every_type(spark):
    from eventtime.harness.stream import MemorySource

    columns = [("s", "string"), ("i", "int"), ("l", "long"), ("d", "double"), ("b", "boolean"), ("ts", "timestamp")]
    source = MemorySource(spark, "events", columns)
    rows = [("a", 1, 2 ** 40, 1.5, True, BASE_US + 1), (None, None, None, None, None, None),
            ("é", -(2 ** 31), -(2 ** 63), -0.0, False, BASE_US + 3_000_007)]
    source.add(rows)
    got = _read_all(spark, source, "s;i;l;d;b;unix_micros(ts) AS ts")
    assert sorted(got, key=repr) == sorted(rows, key=repr)


def test_each_partition_of_an_add_is_one_input_partition(spark):
    from eventtime.harness.stream import MemorySource

    source = MemorySource(spark, "events", [("key", "string"), ("ts", "timestamp")])
    parts = [[("p0a", BASE_US), ("p0b", BASE_US + 1)], [], [("p2", BASE_US + 2)], [("p3", BASE_US + 3)]]
    source.add_partitions(parts)
    got = dict(_read_all(spark, source, "key;spark_partition_id() AS p"))
    assert got == {"p0a": 0, "p0b": 0, "p2": 2, "p3": 3}
