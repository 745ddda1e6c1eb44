"""Pipelines for the harness tests: broken on purpose, each in its own way."""
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from eventtime.pipelines.reference import tumbling_count


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


EVENTS = [("key", "string"), ("ts", "timestamp")]
T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z, the scenarios' default date


def events_run(spark, pipeline, checkpoint, *, timeout=60, trigger_ms=None):
    """A StreamRun of `pipeline` (10 s windows, 5 s delay, append) over one MemorySource named
    `events`, for tests that drive the harness directly. Returns `(run, sources)`; the pipeline
    reads `sources["events"]` at every start, so a test may replace it (e.g. replayed elsewhere)."""
    from eventtime.model import Params
    from eventtime.timeparse import parse_duration
    from eventtime.harness import MemorySource, StreamRun

    params = Params({"window": parse_duration("10s"), "watermark_delay": parse_duration("5s"),
                     "output_mode": "append"})
    sources = {"events": MemorySource(spark, "events", EVENTS)}
    run = StreamRun(spark, lambda: (pipeline({"events": sources["events"].dataframe()}, params), "append"),
                    checkpoint=str(checkpoint), clock_start_ms=T0_MS, trigger_ms=trigger_ms, timeout=timeout)
    return run, sources


# -- pipelines that kill the driver JVM (tests/spark/test_driver_death.py) -------------------------
# EVENTTIME_TEST_KILL says where: `build:N` kills the JVM while the N-th query of the process is
# built (a start or a restart), `batch:N` while the N-th query runs its first batch with rows (from
# a Python worker, mid-step), `build:all` at every build. Counted per process: after a fresh
# session the count goes on, so a kill happens once unless `all`.
_BUILDS = [0]


def _jvm_pid(df):
    return int(df.sparkSession.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


def kills_driver(sources, params):
    import os
    import signal

    where, _, which = os.environ.get("EVENTTIME_TEST_KILL", "").partition(":")
    _BUILDS[0] += 1
    hit = which == "all" or (which.isdigit() and int(which) == _BUILDS[0])
    if hit and where == "build":
        os.kill(_jvm_pid(sources["events"]), signal.SIGKILL)
    if hit and where == "batch":
        pid = _jvm_pid(sources["events"])

        @F.udf("string")
        def kill(key):  # on the input side: runs for the first row of the first batch with rows
            import os
            import signal

            os.kill(pid, signal.SIGKILL)
            return key

        sources = {**sources, "events": sources["events"].withColumn("key", kill(F.col("key")))}
    return tumbling_count(sources, params)
