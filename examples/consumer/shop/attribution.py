"""Ad attribution: each ad impression with the click it led to within 10 minutes.

A full outer join, so the report also shows the impressions nobody clicked and the clicks whose
impression never arrived (each written once the watermark says no partner can come any more).
Rows without an ad_id are left out before the join: Spark's stream-stream join pairs a null key with
another null key, where a batch join (and SQL's `=`) never does."""
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def transform(impressions: DataFrame, ad_clicks: DataFrame, watermark_delay: str = "5 minutes",
              within: str = "10 minutes") -> DataFrame:
    shown = impressions.where(F.col("ad_id").isNotNull()).withWatermark("shown_at", watermark_delay).alias("i")
    clicked = ad_clicks.where(F.col("ad_id").isNotNull()).withWatermark("clicked_at", watermark_delay).alias("c")
    matched = shown.join(
        clicked,
        (F.col("i.ad_id") == F.col("c.ad_id"))
        & (F.col("c.clicked_at") >= F.col("i.shown_at"))
        & (F.col("c.clicked_at") <= F.col("i.shown_at") + F.expr(f"INTERVAL {within}")),
        "full_outer")
    return matched.select(F.coalesce(F.col("i.ad_id"), F.col("c.ad_id")).alias("ad_id"),
                          F.col("i.shown_at"), F.col("c.clicked_at"))


def main(argv=None) -> None:  # pragma: no cover - production I/O, not under test
    impressions_table, clicks_table, out = (argv or sys.argv[1:])[:3]
    spark = SparkSession.builder.appName("ad-attribution").getOrCreate()
    (transform(spark.readStream.table(impressions_table), spark.readStream.table(clicks_table))
     .writeStream.outputMode("append").format("parquet")
     .option("path", out).option("checkpointLocation", out + "/_checkpoint").start().awaitTermination())


if __name__ == "__main__":  # pragma: no cover
    main()
