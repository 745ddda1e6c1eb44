"""Jobs and a transform for `test_text_static_properties.py`, written as a user writes them: orders read as
JSON lines (`spark.readStream.text` and the job's own `from_json`), joined with a customers table the job
reads as a batch (`spark.read.table`: a stream-static join), appended each batch to the folder the contract's
`out` parameter names. Seeded bugs: a parse of the event time with a pattern for `Z` only
(`to_timestamp(ts, "yyyy-MM-dd'T'HH:mm:ss[.SSS]'Z'")`), which under ANSI (Spark 4's default) stops the query
on a `+02:00` offset, microseconds or a time with no zone (CANNOT_PARSE_TIMESTAMP, measured on 4.3.0); an inner join, which loses the orders of a customer the table
does not hold. The twins parse the time in the JSON schema and join with `left`."""
from __future__ import annotations

from pyspark.sql import functions as F

OUT = "props.lines.out"  # the Spark setting the contract's `kind: path` parameter sets
COLUMNS = ("order_id", "customer", "region", "amount", "ts")


def _orders(spark, schema):
    lines = spark.readStream.text("in/orders")
    return lines.select(F.from_json("value", schema).alias("o")).select("o.*")


def append_orders(batch, batch_id):
    batch.write.mode("append").parquet(batch.sparkSession.conf.get(OUT))


def _written(spark, orders, how):
    customers = spark.read.table("customers")
    out = orders.join(customers, "customer", how).select(*COLUMNS)
    return (out.writeStream.outputMode("append").foreachBatch(append_orders)
            .option("checkpointLocation", "/checkpoints/orders"))


def zulu_only_parse(spark):
    orders = _orders(spark, "order_id string, customer string, amount double, ts string")
    return _written(spark, orders.withColumn("ts", F.to_timestamp("ts", "yyyy-MM-dd'T'HH:mm:ss[.SSS]'Z'")), "left")


def left_join(spark):
    return _written(spark, _orders(spark, "order_id string, customer string, amount double, ts timestamp"), "left")


def inner_join(spark):
    return _written(spark, _orders(spark, "order_id string, customer string, amount double, ts timestamp"), "inner")


def with_sections(clicks):
    """Correct: each click with its page's section from the `pages` table (a stream-static left join)."""
    pages = clicks.sparkSession.read.table("pages")
    return clicks.join(pages, "page", "left").select("page", "section", "ts")
