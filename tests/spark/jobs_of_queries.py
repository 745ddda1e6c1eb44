"""Jobs that start several streaming queries, written as users write them, for `test_job_queries.py`:
one read of the source feeding several queries, each with its own sink, and a `main` that waits on them
all. The comments `# <- NAME` mark the lines an error must name (the tests find them)."""
from __future__ import annotations

from pyspark.sql import functions as F

from tests.spark.jobs_under_test import _counts, overwrite_partitions


def _clicks(spark):
    return spark.readStream.format("json").schema("page string, ts timestamp").load("/data/clicks")


def layers(spark):
    """Three queries from one read: every record to a table (bronze), the deduplicated valid records
    (silver, kept in memory), and clicks per page and minute written by a batch function (gold)."""
    clicks = _clicks(spark)
    clicks.writeStream.queryName("raw").option("checkpointLocation", "/chk/raw").toTable("raw_clicks")
    valid = clicks.where(F.col("page") != "bot").withWatermark("ts", "0 seconds").dropDuplicates(["page", "ts"])
    valid.writeStream.queryName("valid").format("memory").option("checkpointLocation", "/chk/valid").start()
    (_counts(clicks).writeStream.outputMode("update").queryName("counts").foreachBatch(overwrite_partitions)
     .option("checkpointLocation", "/chk/counts").start())
    spark.streams.awaitAnyTermination()


def unnamed(spark):
    """Two queries without names: known by the table each writes."""
    clicks = _clicks(spark)
    clicks.writeStream.toTable("all_clicks")
    clicks.where(F.col("page") == "cart").writeStream.toTable("cart_clicks")


_calls = {"n": 0}


def changing(spark):
    """Starts another query on its second call: the kit must refuse to guess which is which."""
    _calls["n"] += 1
    clicks = _clicks(spark)
    clicks.writeStream.queryName("first").format("memory").start()
    if _calls["n"] > 1:
        clicks.writeStream.queryName("later").format("memory").start()


ORDER = "order_id string, amount double, ts timestamp"


def alerts(spark):
    """Orders from Kafka; big ones published to an alerts topic as JSON keyed by order id; a second query
    reads the alerts topic back (kept in memory)."""
    orders = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "kafka:9092")
              .option("subscribe", "orders").load()
              .select(F.from_json(F.col("value").cast("string"), ORDER).alias("o")).select("o.*"))
    big = orders.where(F.col("amount") >= 100)
    (big.select(F.col("order_id").alias("key"),
                F.to_json(F.struct("order_id", "amount")).alias("value"))
     .writeStream.format("kafka").option("kafka.bootstrap.servers", "kafka:9092").option("topic", "alerts")
     .option("checkpointLocation", "/chk/alerts").start())
    alerted = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "kafka:9092")
               .option("subscribe", "alerts").load()
               .select(F.col("key").cast("string").alias("order_id"), F.col("offset")))
    alerted.writeStream.queryName("alerted").format("memory").option("checkpointLocation", "/chk/alerted").start()
    spark.streams.awaitAnyTermination()


def kafka_without_value(spark):
    orders = spark.readStream.format("kafka").option("subscribe", "orders").load()
    (orders.select(F.col("key"), F.col("offset")).writeStream
     .format("kafka").option("topic", "alerts").start())  # <- no value


def reads_unknown_topic(spark):
    orders = spark.readStream.format("kafka").option("subscribe", "orders").load()
    orders.writeStream.format("kafka").option("topic", "alerts").start()
    other = spark.readStream.format("kafka").option("subscribe", "payments").load()  # <- unknown topic
    other.writeStream.format("memory").queryName("payments").start()


SILVER = "page string, ts timestamp"


def _per_minute(frame):
    return (frame.withWatermark("ts", "0 seconds").groupBy("page", F.window("ts", "1 minute")).count()
            .select("page", F.col("window.start").alias("window_start"), F.col("count").alias("clicks")))


def through_a_folder(spark):
    """Silver: the valid clicks, deduplicated, to a parquet folder; gold reads that folder as a stream
    and counts clicks per page and minute (append: a minute once gold's own watermark passes it)."""
    clicks = _clicks(spark)
    valid = clicks.where(F.col("page") != "bot").withWatermark("ts", "0 seconds").dropDuplicates(["page", "ts"])
    (valid.writeStream.format("parquet").option("path", "data/silver/clicks")
     .option("checkpointLocation", "checkpoints/silver").start())
    silver = spark.readStream.schema(SILVER).parquet("data/silver/clicks")
    (_per_minute(silver).writeStream.queryName("gold").format("memory").outputMode("append")
     .option("checkpointLocation", "checkpoints/gold").start())
    spark.streams.awaitAnyTermination()


def through_a_table(spark):
    """Silver: the valid clicks to a table (`toTable`); gold reads the table as a stream, clicks per page."""
    clicks = _clicks(spark)
    clicks.where(F.col("page") != "bot").writeStream.option("checkpointLocation", "chk/silver").toTable("silver_clicks")
    gold = spark.readStream.table("silver_clicks").groupBy("page").count()
    gold.writeStream.queryName("gold").outputMode("complete").format("memory").start()


def reads_before_it_is_written(spark):
    clicks = _clicks(spark)
    silver = spark.readStream.schema(SILVER).parquet("data/silver/clicks")  # <- read before written
    clicks.writeStream.format("parquet").option("path", "data/silver/clicks").start()
    silver.writeStream.queryName("gold").format("memory").start()


def table_of_a_format_without_jars(spark):
    clicks = _clicks(spark)
    clicks.writeStream.format("delta").option("checkpointLocation", "chk/t").toTable("clicks_delta")  # <- delta


def enriched(spark):
    """Clicks enriched from a dimension table (`spark.read.table`) and a reference CSV of page owners
    (`spark.read.csv`), both read once when the query is built: a stream-static join."""
    pages = spark.read.table("pages")
    owners = spark.read.option("header", True).schema("page string, owner string").csv("ref/owners.csv")
    clicks = _clicks(spark)
    out = clicks.join(pages, "page", "left").join(owners, "page", "left").select("page", "section", "owner", "ts")
    out.writeStream.queryName("enriched").format("memory").option("checkpointLocation", "chk/enriched").start()


def reads_a_database(spark):
    customers = spark.read.jdbc("jdbc:postgresql://db:5432/shop", "customers")  # <- jdbc read
    _clicks(spark).join(customers, "page").writeStream.format("memory").queryName("joined").start()


def _to_warehouse(batch, batch_id):
    (batch.write.format("jdbc").option("url", "jdbc:postgresql://db:5432/shop")
     .option("dbtable", "clicks").mode("append").save())  # <- jdbc write


def writes_a_database(spark):
    _clicks(spark).writeStream.foreachBatch(_to_warehouse).start()


SEEN: dict[str, object] = {}  # what the monitoring jobs saw of their queries


def monitored(spark):
    """A job that watches its queries as production jobs do: their ids, status and progress, a lookup by
    id, a listener, then a loop on `spark.streams.active` around `awaitAnyTermination(timeout=...)`."""
    from pyspark.sql.streaming import StreamingQueryListener

    class Events(StreamingQueryListener):
        def onQueryStarted(self, event):  # noqa: N802 - pyspark's names
            SEEN.setdefault("started", []).append(event.name)

        def onQueryProgress(self, event):  # noqa: N802
            pass

        def onQueryIdle(self, event):  # noqa: N802
            pass

        def onQueryTerminated(self, event):  # noqa: N802
            pass

    spark.streams.addListener(Events())
    query = _clicks(spark).writeStream.queryName("raw").format("memory").start()
    SEEN.update(active=query.isActive, status=query.status["message"], progress=query.lastProgress,
                found=spark.streams.get(query.id) is query, listed=len(spark.streams.active))
    while spark.streams.active:  # the heartbeat loop of a production job
        spark.streams.awaitAnyTermination(timeout=60)
    SEEN.update(ended=not query.isActive, after=len(spark.streams.active))
    spark.stop()


def never_returns(spark):
    _clicks(spark).writeStream.queryName("raw").format("memory").start()
    ready = False
    while not ready:  # <- waits forever
        pass


def to_json_files(spark):
    """The clicks to a JSON folder: its timestamps are text in the files."""
    _clicks(spark).writeStream.format("json").option("path", "out/clicks").start()


def _refuse_bots(batch, batch_id):
    """A batch function that raises on a record it cannot handle, as jobs' validations do."""
    if batch.where(F.col("page") == "bot").count():
        raise ValueError(f"bot traffic in batch {batch_id}")


def one_query_fails(spark):
    """Two queries from one read: every record kept in memory (raw), and a batch function that raises on
    a bot's record (checked): only the checked query fails."""
    clicks = _clicks(spark)
    clicks.writeStream.queryName("raw").format("memory").option("checkpointLocation", "/chk/raw").start()
    (clicks.writeStream.queryName("checked").foreachBatch(_refuse_bots)
     .option("checkpointLocation", "/chk/checked").start())
    spark.streams.awaitAnyTermination()
