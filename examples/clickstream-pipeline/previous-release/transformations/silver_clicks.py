from pyspark import pipelines as dp
from pyspark.sql import functions as F

CLICK = "click_id string, page string, ts timestamp"


@dp.table(comment="Clicks with a 10-minute watermark on their time")
def silver_clicks():
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", "kafka:9092")
        .option("subscribe", "clicks")
        .option("startingOffsets", "earliest")
        .load()
    )
    clicks = records.select(F.from_json(F.col("value").cast("string"), CLICK).alias("click")).select("click.*")
    return clicks.withWatermark("ts", "10 minutes")
