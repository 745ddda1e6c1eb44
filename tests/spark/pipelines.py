"""Pipelines for the harness tests: broken on purpose, each in its own way."""
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from conformance.pipelines.reference import tumbling_count


def raises_at_definition(sources, params):
    raise ValueError("this pipeline cannot be built")


def fails_in_batch(sources, params):
    @F.udf(LongType())
    def explode(_):
        raise RuntimeError("boom inside a batch")

    df = tumbling_count(sources, params)
    return df.withColumn("count", explode(F.col("count")))


def never_finishes(sources, params):
    @F.udf(LongType())
    def slow(x):
        import time

        time.sleep(40)  # the batch outlives the harness's bound on purpose; nothing waits on this sleep
        return x

    return tumbling_count(sources, params).withColumn("count", slow(F.col("count")))


def no_watermark(sources, params):
    events = sources["events"]
    return (events.groupBy(F.window("ts", params.window.interval).alias("w"), "key").count()
            .select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "count"))


def not_streaming(sources, params):
    return sources["events"].sparkSession.range(3)
