"""The click event as the web tier writes it to Kafka (topic `clicks`), as JSON."""
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, StringType, StructField, StructType, TimestampType

CLICK = StructType([
    StructField("user_id", StringType()),
    StructField("page", StringType()),
    StructField("country", StringType()),
    StructField("ts", TimestampType()),
    StructField("price", DecimalType(12, 2)),
])


def parse_clicks(raw: DataFrame) -> DataFrame:
    """Kafka records -> one row per click; a payload that is not a click (bad JSON, no time) is dropped."""
    parsed = raw.select(F.from_json(F.col("value").cast("string"), CLICK).alias("click"))
    return parsed.select("click.*").where(F.col("ts").isNotNull())


def read_clicks(spark, bootstrap: str) -> DataFrame:
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", "clicks").option("startingOffsets", "latest").load())
