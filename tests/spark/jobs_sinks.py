"""Jobs whose file sinks write as production jobs write them, for `test_job_readback.py`: CSV with and
without a header, another separator, gzip, JSON, parquet, partitioned by text columns (`date`, `hour`),
and a foreachBatch function's own batch write. Each writes the clicks it reads, one row per click."""
from __future__ import annotations

from typing import Any, Callable

from pyspark.sql import functions as F

OUT = "data/out"


def _rows(spark: Any) -> Any:
    clicks = spark.readStream.format("json").schema("page string, ts timestamp, amount double").load("/data/clicks")
    return clicks.select("page", F.date_format("ts", "yyyy-MM-dd").alias("date"), F.date_format("ts", "HH").alias("hour"),
                         "ts", "amount")


def file_sink(fmt: str, *, partitioned: bool = False, **options: str) -> Callable[[Any], None]:
    """A job writing its clicks with Spark's `fmt` file sink to `data/out`, with `options`."""
    def main(spark: Any) -> None:
        writer = _rows(spark).writeStream.format(fmt).option("checkpointLocation", "/checkpoints/out")
        for key, value in options.items():
            writer = writer.option(key, value)
        if partitioned:
            writer = writer.partitionBy("date", "hour")
        writer.start(OUT)
    main.__qualname__ = f"{fmt}_sink"
    return main


def _write_pipes(batch: Any, batch_id: int) -> None:
    batch.write.mode("append").option("sep", "|").partitionBy("date").csv("data/batches")


def batch_write(spark: Any) -> None:
    """A foreachBatch function writing each batch as `|`-separated CSV, partitioned by date, with no header."""
    _rows(spark).writeStream.foreachBatch(_write_pipes).option("checkpointLocation", "/checkpoints/b").start()


def update_file_sink(spark: Any) -> None:
    """A file sink in update mode, which Spark refuses to start."""
    counts = _rows(spark).groupBy("page").count()
    counts.writeStream.format("parquet").outputMode("update").option("checkpointLocation", "/c").start("data/c")  # <- update sink
