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

        time.sleep(600)  # the batch outlives the harness's bound on purpose; stopping the query kills it
        return x

    return tumbling_count(sources, params).withColumn("count", slow(F.col("count")))


def no_watermark(sources, params):
    events = sources["events"]
    return (events.groupBy(F.window("ts", params.window.interval).alias("w"), "key").count()
            .select("key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "count"))


def not_streaming(sources, params):
    return sources["events"].sparkSession.range(3)


def blocks_while_file_exists(sources, params):
    """The tumbling count, with every input row waiting while the file named by the environment
    variable EVENTTIME_TEST_BLOCK_FILE exists (bounded: 120 s): a batch that is in flight for as long
    as a test needs, to kill the driver in the middle of it."""
    @F.udf("string")
    def held(key):
        import os
        import time

        path = os.environ.get("EVENTTIME_TEST_BLOCK_FILE", "")
        deadline = time.monotonic() + 120
        while path and os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.05)  # waits to be killed; the result never depends on it
        return key

    events = sources["events"]
    return tumbling_count({"events": events.withColumn("key", held(F.col("key")))}, params)


def cast_fails_in_batch(sources, params):
    """Casts each key to int: under ANSI mode Spark fails the batch with an error class
    (CAST_INVALID_INPUT) as soon as a row arrives."""
    events = sources["events"]
    keyed = events.withColumn("key", F.concat(F.col("key"), F.col("key").cast("int").cast("string")))
    return tumbling_count({"events": keyed}, params)
