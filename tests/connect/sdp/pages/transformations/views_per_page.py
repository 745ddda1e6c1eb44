from pyspark import pipelines as dp


@dp.materialized_view(comment="Views per page so far, recomputed at each update")
def views_per_page():
    return spark.read.table("page_views").groupBy("page").count()
