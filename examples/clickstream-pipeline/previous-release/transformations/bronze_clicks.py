from pyspark import pipelines as dp
from pyspark.sql import functions as F

CLICK = "click_id string, page string, ts timestamp"


@dp.table(comment="Click events from the Kafka topic clicks, parsed from their JSON payload")
def bronze_clicks():
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", "kafka:9092")
        .option("subscribe", "clicks")
        .option("startingOffsets", "earliest")
        .load()
    )
    return records.select(F.from_json(F.col("value").cast("string"), CLICK).alias("click")).select("click.*")
