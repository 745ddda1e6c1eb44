from pyspark import pipelines as dp

dp.create_streaming_table("page_views", comment="Every page view once, however often the tracker resent it")


@dp.append_flow(target="page_views", name="views_from_landing")
def views_from_landing():
    views = spark.readStream.schema("page string, ts timestamp").json(spark.conf.get("pages.landing_path"))
    return views.withWatermark("ts", "10 minutes").dropDuplicatesWithinWatermark(["page", "ts"])
