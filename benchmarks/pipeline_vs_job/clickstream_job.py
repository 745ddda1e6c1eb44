"""The clickstream pipeline's flows written as an ordinary streaming job with a `main()`.

The same flows as examples/clickstream-pipeline/pipeline: bronze parses the Kafka topic clicks; silver
starts from the same parsed stream (the pipeline's silver reads the topic again: a job reads it once and
starts two queries on it, each with its own Kafka source in Spark), keeps each click_id once within a 10-minute watermark on ts; gold reads silver's
table as a stream, counts clicks per page and 5-minute window under its own 10-minute watermark and
appends a window once the watermark passes its end. The pipeline's materialized view page_totals is what
a job writes when it must keep a per-page total current: gold's batch function appends the closed windows
to the gold table, then recomputes the totals from that table with a batch read and overwrites them. That
is a materialized view's refresh (all of gold, summed) done where the job already is, once per gold batch
rather than once per update; a second streaming aggregation in complete mode would keep its totals in
state and need a sink that can overwrite, which is the same foreachBatch again.
"""
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

CLICK = "click_id string, page string, ts timestamp"


def read_clicks(spark):
    records = (spark.readStream.format("kafka")
               .option("kafka.bootstrap.servers", "kafka:9092")
               .option("subscribe", "clicks")
               .option("startingOffsets", "earliest")
               .load())
    return records.select(F.from_json(F.col("value").cast("string"), CLICK).alias("click")).select("click.*")


def write_gold(batch, batch_id):
    """Appends the windows the watermark closed, then refreshes the per-page totals over all of gold."""
    batch.write.mode("append").saveAsTable("gold_page_windows")
    spark = batch.sparkSession
    totals = spark.read.table("gold_page_windows").groupBy("page").agg(F.sum("clicks").alias("clicks"))
    totals.write.mode("overwrite").saveAsTable("page_totals")


def main():
    spark = SparkSession.builder.appName("clickstream").getOrCreate()
    clicks = read_clicks(spark)  # one reader of the topic, two queries on it (each its own source in Spark)
    bronze = (clicks.writeStream.queryName("bronze_clicks")
              .option("checkpointLocation", "checkpoints/bronze_clicks")
              .toTable("bronze_clicks"))
    silver = (clicks.withWatermark("ts", "10 minutes").dropDuplicatesWithinWatermark(["click_id"])
              .writeStream.queryName("silver_clicks")
              .option("checkpointLocation", "checkpoints/silver_clicks")
              .toTable("silver_clicks"))
    windows = (spark.readStream.table("silver_clicks")
               .withWatermark("ts", "10 minutes")
               .groupBy(F.window("ts", "5 minutes").alias("w"), "page")
               .agg(F.count(F.lit(1)).alias("clicks"))
               .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
                       "page", "clicks"))
    gold = (windows.writeStream.queryName("gold_page_windows").outputMode("append")
            .foreachBatch(write_gold)
            .option("checkpointLocation", "checkpoints/gold_page_windows")
            .start())
    try:
        spark.streams.awaitAnyTermination()
    finally:
        for query in (bronze, silver, gold):
            query.stop()


if __name__ == "__main__":
    main()
