"""Clicks and revenue per page in 5-minute windows, kept up to date in a parquet table partitioned by
window and page: the job exactly as it ships (`spark-submit shop/page_windows.py`).

Its query reads Kafka, and its `foreachBatch` function overwrites the partitions each micro-batch
touches (dynamic partition overwrite): every updated window replaces its own partition, so a batch
that runs twice (after a crash before its commit) leaves the same table. The table's folder, the
Kafka servers and the checkpoint come from the Spark conf (`--conf shop.page_windows.path=...`).
"""
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from shop.events import parse_clicks, read_clicks

TABLE_PATH = "shop.page_windows.path"


def write_windows(batch: DataFrame, batch_id: int) -> None:
    """Each updated window replaces its partition (slot = the window's start, page)."""
    (batch.withColumn("slot", F.date_format("window_start", "yyyyMMddHHmm"))
     .write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("slot", "page")
     .parquet(batch.sparkSession.conf.get(TABLE_PATH)))


def build(spark: SparkSession):
    conf = spark.conf
    clicks = parse_clicks(read_clicks(spark, conf.get("shop.kafka.bootstrap", "kafka:9092")))
    windows = (clicks.withWatermark("ts", "10 minutes")
               .groupBy("page", F.window("ts", "5 minutes").alias("window"))
               .agg(F.count(F.lit(1)).alias("clicks"),
                    F.coalesce(F.sum("price"), F.lit(0)).alias("revenue"))  # the sum's decimal(22,2)
               .select("page", F.col("window.start").alias("window_start"),
                       F.col("window.end").alias("window_end"), "clicks", "revenue"))
    return (windows.writeStream.outputMode("update").foreachBatch(write_windows)
            .option("checkpointLocation", conf.get("shop.page_windows.checkpoint", "/checkpoints/page_windows"))
            .trigger(processingTime="1 minute").queryName("page_windows"))


def main(spark: SparkSession) -> None:
    build(spark).start().awaitTermination()


if __name__ == "__main__":  # pragma: no cover - production entry point
    main(SparkSession.builder.appName("page-windows").getOrCreate())
