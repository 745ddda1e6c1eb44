"""Orders medallion: Kafka -> bronze, bad, silver -> gold, and an alerts topic.

Run it as it ships:  spark-submit shop/medallion/job.py
Every path is relative to the working directory, as the team's deployment has it.
"""
import logging

from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, StringType, StructField, StructType, TimestampType

from shop.medallion.spark_session import get_spark

log = logging.getLogger("orders-medallion")

KAFKA_SERVERS = "broker-1:9092,broker-2:9092"
ORDER_SCHEMA = StructType([
    StructField("order_id", StringType()),
    StructField("customer", StringType()),
    StructField("country", StringType()),
    StructField("amount", DecimalType(12, 2)),
    StructField("ts", TimestampType()),
])
SILVER_SCHEMA = "order_id string, customer string, amount decimal(12,2), ts timestamp, country string"
BIG_ORDER = 1000


def read_orders(spark):
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", KAFKA_SERVERS)
            .option("subscribe", "orders")
            .option("startingOffsets", "earliest")
            .load())


def parse(raw):
    return (raw.select(F.col("value").cast("string").alias("payload"), F.col("timestamp").alias("kafka_ts"))
            .withColumn("o", F.from_json("payload", ORDER_SCHEMA))
            .select("payload", "kafka_ts", "o.*"))


def is_valid():
    return (F.col("order_id").isNotNull() & F.col("ts").isNotNull()
            & F.col("amount").isNotNull() & (F.col("amount") > 0))


def main():
    spark = get_spark("orders-medallion")
    raw = read_orders(spark)
    orders = parse(raw)

    bronze = (raw.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS payload",
                             "partition", "offset", "timestamp AS kafka_ts")
              .writeStream.format("parquet")
              .option("path", "data/bronze/orders")
              .option("checkpointLocation", "checkpoints/bronze_orders")
              .start())

    bad = (orders.where(~is_valid())
           .select("payload", "kafka_ts")
           .writeStream.format("json")
           .option("path", "data/bad/orders")
           .option("checkpointLocation", "checkpoints/bad_orders")
           .start())

    valid = orders.where(is_valid()).select("order_id", "customer", "country", "amount", "ts")
    silver_orders = valid.withWatermark("ts", "10 minutes").dropDuplicates(["order_id", "ts"])
    silver = (silver_orders.writeStream.format("parquet")
              .partitionBy("country")
              .option("path", "data/silver/orders")
              .option("checkpointLocation", "checkpoints/silver_orders")
              .start())

    # gold reads what silver wrote, as the team's gold layer always has: the silver folder as a stream
    revenue = (spark.readStream.schema(SILVER_SCHEMA).parquet("data/silver/orders")
               .withWatermark("ts", "10 minutes")
               .groupBy(F.window("ts", "1 minute").alias("window"))
               .agg(F.sum("amount").alias("revenue"), F.count(F.lit(1)).alias("orders"))
               .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                       "revenue", "orders"))
    gold = (revenue.writeStream.format("parquet").outputMode("append")
            .option("path", "data/gold/revenue_by_window")
            .option("checkpointLocation", "checkpoints/gold_revenue")
            .start())

    alerts = (valid.where(F.col("amount") >= BIG_ORDER)
              .select(F.col("order_id").alias("key"),
                      F.to_json(F.struct("order_id", "customer", "amount")).alias("value"))
              .writeStream.format("kafka")
              .option("kafka.bootstrap.servers", KAFKA_SERVERS)
              .option("topic", "order-alerts")
              .option("checkpointLocation", "checkpoints/order_alerts")
              .start())

    queries = [bronze, bad, silver, gold, alerts]
    try:
        spark.streams.awaitAnyTermination()
    finally:
        for query in queries:
            query.stop()
        log.info("stopping the session")
        spark.stop()


if __name__ == "__main__":
    main()
