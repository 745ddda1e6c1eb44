"""Jobs for `test_kafka_properties.py`, written as a user writes them: orders read from Kafka, the JSON
payload parsed with `from_json(col("value").cast("string"), schema)`, appended each batch to the folder the
contract's `out` parameter names. The seeded bug: the event time parsed with a pattern that wants
milliseconds and a zone letter (`to_timestamp(ts, "yyyy-MM-dd'T'HH:mm:ss.SSSX")`), which under ANSI (Spark
4's default) stops the query on a time a producer writes without milliseconds; the twin parses the
timestamp in the JSON schema itself, where a time that does not parse is null."""
from __future__ import annotations

from pyspark.sql import functions as F

OUT = "props.kafka.out"  # the Spark setting the contract's `kind: path` parameter sets


def _orders(spark, schema):
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "broker:9092")
           .option("subscribe", "orders").option("startingOffsets", "earliest").load())
    return raw.select(F.from_json(F.col("value").cast("string"), schema).alias("o")).select("o.*")


def append_orders(batch, batch_id):
    batch.write.mode("append").parquet(batch.sparkSession.conf.get(OUT))


def append_orders_once(batch, batch_id):
    """Idempotent by batch id (`jobs_properties.append_once`): a batch run again writes nothing."""
    from tests.spark.jobs_properties import append_once

    append_once(batch, batch_id, batch.sparkSession.conf.get(OUT))


def _written(orders, write=append_orders):
    return (orders.select("order_id", "amount", "ts").writeStream.outputMode("append")
            .foreachBatch(write).option("checkpointLocation", "/checkpoints/orders"))


def fragile_parse(spark):
    orders = _orders(spark, "order_id string, amount double, ts string")
    return _written(orders.withColumn("ts", F.to_timestamp("ts", "yyyy-MM-dd'T'HH:mm:ss.SSSX")))


def tolerant_parse(spark):
    return _written(_orders(spark, "order_id string, amount double, ts timestamp"))


def tolerant_parse_once(spark):
    """Correct in every way: the tolerant parse, appended once per batch id."""
    return _written(_orders(spark, "order_id string, amount double, ts timestamp"), append_orders_once)


def _with_source(spark, pick):
    """Orders read with their headers (includeHeaders), each with the `source` header's value as a column."""
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "broker:9092")
           .option("subscribe", "orders").option("includeHeaders", "true").load())
    source = F.expr(f"{pick}(filter(headers, h -> h.key = 'source'), 1).value")
    return (raw.select(F.from_json(F.col("value").cast("string"), "order_id string, ts timestamp").alias("o"),
                       source.cast("string").alias("source"))
            .select("o.order_id", "source", "o.ts"))


def header_first_source(spark):
    """The seeded bug: the `source` header taken with `element_at(..., 1)`, which under ANSI stops the query
    on a record that has no such header."""
    return _written_sources(_with_source(spark, "element_at"))


def header_source_or_null(spark):
    """The twin: `try_element_at`, null where the header is missing."""
    return _written_sources(_with_source(spark, "try_element_at"))


def _written_sources(orders):
    return (orders.writeStream.outputMode("append").format("memory").queryName("sourced")
            .option("checkpointLocation", "/checkpoints/sourced"))
