from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table(comment="Order ids from the Kafka topic orders, from where the topic stood when the flow first ran")
def bronze_orders():
    records = (spark.readStream.format("kafka")
               .option("kafka.bootstrap.servers", "broker:9092")
               .option("subscribe", "orders")
               .option("maxOffsetsPerTrigger", 1000)
               .load())  # startingOffsets: Spark's default for a stream, latest
    return records.select(F.col("value").cast("string").alias("order_id"))
