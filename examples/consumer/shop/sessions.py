"""User sessions: clicks within 30 minutes of each other form one session."""
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from shop.events import parse_clicks, read_clicks


def transform(clicks: DataFrame, gap: str = "30 minutes", watermark_delay: str = "10 minutes") -> DataFrame:
    events = parse_clicks(clicks).withWatermark("ts", watermark_delay)
    return (events.groupBy("user_id", F.session_window("ts", gap).alias("session"))
            .agg(F.count(F.lit(1)).alias("clicks"), F.array_sort(F.collect_set("page")).alias("pages"))
            .select("user_id", F.col("session.start").alias("session_start"),
                    F.col("session.end").alias("session_end"), "clicks", "pages"))


def main(argv=None) -> None:  # pragma: no cover - production I/O, not under test
    bootstrap, table = (argv or sys.argv[1:])[:2]
    spark = SparkSession.builder.appName("user-sessions").getOrCreate()
    (transform(read_clicks(spark, bootstrap)).writeStream.outputMode("append")
     .option("checkpointLocation", f"/checkpoints/{table}").toTable(table).awaitTermination())


if __name__ == "__main__":  # pragma: no cover
    main()
