from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table(comment="Clicks per page and 5-minute window, once the window is closed; keyed by the page's initial too")
def click_counts():
    clicks = spark.readStream.schema("page string, ts timestamp").json("/data/landing/clicks")
    return (clicks.withWatermark("ts", "10 minutes")
            .groupBy(F.window("ts", "5 minutes").alias("w"), "page", F.substring("page", 1, 1).alias("initial"))
            .count()
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "page", "count"))
