from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table(comment="Clicks per page and 5-minute window, written once the window is closed; bots' clicks left out")
def click_counts():
    clicks = spark.readStream.schema("page string, ts timestamp").json("/data/landing/clicks")
    return (clicks.withWatermark("ts", "10 minutes")
            .where(F.col("page") != "bot")
            .groupBy(F.window("ts", "5 minutes").alias("w"), "page").count()
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "page", "count"))
