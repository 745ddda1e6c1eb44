"""Messages that named too little (issue 45): a query failure names its query (and, Spark's own error, the job's
line that started it); Spark's PATH_NOT_FOUND for a
job's path says where the kit kept it and that the working directory decides where a relative one lands;
a UDF's error shows the UDF's file:line and the Python traceback lines of the user's code (they were
only in the driver's log)."""
from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from eventtime import run_scenario
from eventtime.textreport import describe_failure

from tests.spark.jobs_of_queries import _clicks
from tests.spark.test_job_ends import CONTRACT, ONE  # a one-query job's contract and one click

pytestmark = pytest.mark.spark

PAGES = {"home": "landing"}


def _line(text: str) -> int:
    """The line of this file holding `text`."""
    with open(__file__, encoding="utf-8") as fh:
        return next(i for i, line in enumerate(fh, 1) if text in line and "_line(" not in line)


def _save(batch, batch_id):
    batch.select(F.col("page")).collect()
    raise KeyError("section")  # the batch function's own error


def saves_to_a_named_query(spark):
    _clicks(spark).writeStream.queryName("enriched").foreachBatch(_save).start()


def test_a_query_failure_names_the_query(spark, contract_beside):
    result = run_scenario(contract_beside(CONTRACT)(ONE), saves_to_a_named_query, session=spark)
    assert result.status == "error", describe_failure(result)
    text = describe_failure(result)
    assert "query 'enriched': the job's foreachBatch function _save raised KeyError in batch 0: 'section'" in text, text
    line = _line('raise KeyError("section")')
    assert f'{__file__}", line {line}, in _save' in text, text


def picks_a_part_that_is_not_there(spark):
    parts = F.split(F.col("page"), "/")  # "home" has one part: element_at(..., 2) fails under ANSI
    (_clicks(spark).withColumn("page", F.element_at(parts, 2)).writeStream.format("memory").queryName("picked")
     .start())  # the line Python gives the chain's call


def test_a_query_that_spark_fails_names_the_jobs_line_that_started_it(spark, contract_beside):
    """Spark's message names neither the job's file nor the line of `element_at` (its DataFrame context covers
    only some Column methods): the verdict names the line that started the failing query."""
    result = run_scenario(contract_beside(CONTRACT)(ONE), picks_a_part_that_is_not_there, session=spark,
                          conf={"spark.sql.ansi.enabled": "true"})
    assert result.status == "error", describe_failure(result)
    text = describe_failure(result)
    line = _line(".start())  # the line Python gives")
    where = os.path.relpath(__file__)
    assert f"query 'picked' (started at {where}:{line}): the query failed during " in text, text
    assert "INVALID_ARRAY_INDEX_IN_ELEMENT_AT" in text, text


def reads_a_folder_nobody_wrote(spark):
    pages = spark.read.parquet("ref/pages")  # a dimension folder production has
    _clicks(spark).join(pages, "page").writeStream.format("memory").queryName("joined").start()


def test_path_not_found_says_where_the_jobs_path_landed_and_what_decides_it(spark, contract_beside):
    result = run_scenario(contract_beside(CONTRACT)(ONE), reads_a_folder_nobody_wrote, session=spark)
    assert result.status == "error", describe_failure(result)
    text = describe_failure(result)
    assert "PATH_NOT_FOUND" in text, text
    assert "the kit keeps every path a job names inside the scenario's own run folder, keeping its name: 'ref/pages' " \
           "is kept at " in text, text
    assert f"a relative path is named from the working directory, {os.getcwd()}, an absolute one from the root" in text
    assert "a contract `static:` input the scenario gives rows (docs/jobs.md, *Static inputs*)" in text, text


@F.udf(StringType())
def section_of(page):
    return PAGES[page]  # KeyError for a page the mapping lacks


def with_section(clicks):
    return clicks.withColumn("page", section_of("page"))


def test_a_udfs_error_shows_its_file_line_and_the_users_traceback_lines(spark, contract_beside):
    scenario = contract_beside(CONTRACT)(ONE.replace("page: home", "page: cart"))
    result = run_scenario(scenario, with_section, session=spark)
    assert result.status == "error", describe_failure(result)
    text = describe_failure(result)
    line = _line("return PAGES[page]")
    assert "KeyError: 'cart'" in text and f", raised at {__file__}:{line} (in section_of)" in text, text
    assert f'File "{__file__}", line {line}, in section_of\n' in text, text
    assert "return PAGES[page]  # KeyError" in text and "pyspark" not in text.split("raised at", 1)[1], text
    # control: a page the mapping has passes
    ok = run_scenario(contract_beside(CONTRACT)(ONE.replace('[[home, "00:00:10"]]', '[[landing, "00:00:10"]]')),
                      with_section, session=spark)
    assert ok.status == "passed", describe_failure(ok)
