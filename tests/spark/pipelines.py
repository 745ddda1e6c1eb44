"""Pipelines for the harness tests: broken on purpose, each in its own way."""
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType

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
    from eventtime.spec import Params
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


@F.udf(StringType())  # a type, not "string": parsing DDL needs a running Spark, none at import
def _same_key(key):  # a job module's UDF made at import: the JVM function it makes outlives a driver death
    return key


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
    sources = {**sources, "events": sources["events"].withColumn("key", _same_key(F.col("key")))}
    return tumbling_count(sources, params)


# -- pipelines that break the run's surroundings (tests/spark/test_faults.py) ----------------------
# EVENTTIME_TEST_FAULT says what and when, `KIND:N` for the N-th query built by the process:
# - `checkpoint:N`: while that query runs its first batch with rows, a Python worker replaces the
#   query's `commits/` directory by a regular file, so Spark cannot write the batch's commit;
# - `fill:N`: while that query runs its first batch with rows, a Python worker fills the file system
#   of the temporary directory (a file `eventtime-filler` written until the write fails); the next
#   build removes it;
# - `inodes:N`: the same, but the file system runs out of files (empty files made in
#   `eventtime-filler.d` until it refuses one), and nothing removes them: the scenarios after it find
#   a temporary directory that takes no new file;
# - `callback:N`: before the first trigger that query is granted, the sockets of py4j's callback
#   server (its listening socket and its connections) are shut down, while the stream thread is
#   parked in the harness's clock (a Python object served by it): its accept loop ends, and the
#   JVM's call in progress loses its connection.
_FAULT_BUILDS = [0]
FILLER = "eventtime-filler"


def _checkpoint_of_query_being_built():
    """The checkpoint of the query being built: the runner's newest `eventtime-*` work directory."""
    import glob
    import os
    import tempfile

    workdirs = glob.glob(os.path.join(tempfile.gettempdir(), "eventtime-*"))
    return os.path.join(max(workdirs, key=os.path.getmtime), "checkpoint")


def breaks_surroundings(sources, params):
    import os
    import tempfile

    kind, _, which = os.environ.get("EVENTTIME_TEST_FAULT", "").partition(":")
    _FAULT_BUILDS[0] += 1
    hit = which.isdigit() and int(which) == _FAULT_BUILDS[0]
    filler = os.path.join(tempfile.gettempdir(), FILLER)
    if os.path.exists(filler) and not hit:
        os.remove(filler)
    if hit and kind in ("checkpoint", "fill", "inodes"):
        commits = os.path.join(_checkpoint_of_query_being_built(), "commits")

        @F.udf("string")
        def fault(key):  # on the input side: runs for each row of the first batch with rows
            import os
            import shutil

            if kind == "checkpoint" and not os.path.isfile(commits):
                shutil.rmtree(commits, ignore_errors=True)
                with open(commits, "w") as fh:
                    fh.write("not a directory\n")
            if kind == "fill" and not os.path.exists(filler):
                try:
                    with open(filler, "wb") as fh:
                        while True:
                            fh.write(b"\0" * (1 << 16))
                except OSError:
                    pass
            if kind == "inodes" and not os.path.exists(filler + ".d"):
                try:
                    os.mkdir(filler + ".d")
                    for n in range(1 << 20):
                        open(os.path.join(filler + ".d", str(n)), "w").close()
                except OSError:
                    pass
            return key

        sources = {**sources, "events": sources["events"].withColumn("key", fault(F.col("key")))}
    if hit and kind == "callback":
        from eventtime.harness.clock import SteppedClock

        gateway = sources["events"].sparkSession.sparkContext._gateway
        grant = SteppedClock.grant

        def grant_after_breaking(self):
            import socket

            SteppedClock.grant = grant
            server = gateway._callback_server
            sockets = [server.server_socket] + [c.socket for c in list(server.connections)]
            for sock in sockets:  # as a failure would: no py4j shutdown, the sockets just stop working
                sock.shutdown(socket.SHUT_RDWR)
            return grant(self)

        SteppedClock.grant = grant_after_breaking
    return tumbling_count(sources, params)
