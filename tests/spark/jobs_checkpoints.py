"""A job whose query has no checkpointLocation, for `test_job_checkpoints.py`, runnable by the kit and by a
plain Spark script alike (nothing here imports the kit): clicks per page, from JSON files, each batch's
rows kept in `SEEN` by its foreachBatch function."""
from __future__ import annotations

from typing import Any

CLICKS = "data/clicks"
SEEN: list[tuple[int, list[list[Any]]]] = []  # (batch id, the batch's rows, sorted), as the function saw them


def record(batch: Any, batch_id: int) -> None:
    SEEN.append((batch_id, sorted([list(r) for r in batch.collect()])))


def build(spark: Any) -> Any:
    """No checkpointLocation: Spark gives the query a new temporary checkpoint at every start."""
    return (spark.readStream.schema("page string, ts timestamp").json(CLICKS).groupBy("page").count()
            .writeStream.outputMode("update").foreachBatch(record))  # <- no checkpoint


def build_with_checkpoint(spark: Any) -> Any:
    return build(spark).option("checkpointLocation", "data/checkpoints/counts")


def read_kafka(spark: Any, starting: str | None) -> Any:
    reader = spark.readStream.format("kafka").option("subscribe", "clicks")
    if starting is not None:
        reader = reader.option("startingOffsets", starting)
    return reader.load().selectExpr("CAST(value AS STRING) AS value").writeStream.foreachBatch(record)


def kafka_latest(spark: Any) -> Any:
    return read_kafka(spark, None)


def kafka_earliest(spark: Any) -> Any:
    return read_kafka(spark, "earliest")


def named_under_conf(spark: Any) -> Any:
    """No checkpointLocation, a queryName, under spark.sql.streaming.checkpointLocation: the same folder each start."""
    spark.conf.set("spark.sql.streaming.checkpointLocation", "/checkpoints")
    return build(spark).queryName("counts")


if __name__ == "__main__":  # the plain Spark script: python -m tests.spark.jobs_checkpoints [checkpoint]
    import json
    import os
    import sys

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").config("spark.sql.shuffle.partitions", "1").getOrCreate()
    make = build_with_checkpoint if sys.argv[1:] == ["checkpoint"] else build
    os.makedirs(CLICKS, exist_ok=True)

    def put(n: int, *rows: tuple[str, str]) -> None:
        with open(os.path.join(CLICKS, f"part-{n}.json"), "w") as fh:
            fh.writelines(json.dumps({"page": p, "ts": f"2024-01-01T{t}Z"}) + "\n" for p, t in rows)

    put(1, ("home", "00:00:01"), ("cart", "00:00:02"))
    query = make(spark).start()
    query.processAllAvailable()
    put(2, ("home", "00:00:03"))
    query.processAllAvailable()
    query.stop()
    put(3, ("home", "00:00:04"))
    query = make(spark).start()  # the job deployed again
    query.processAllAvailable()
    query.stop()
    print("SEEN " + json.dumps(SEEN))
