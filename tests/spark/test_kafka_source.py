"""A kafka source on Spark: the job's own `from_json(col("value").cast("string"), schema)` runs unchanged.

The contract (a file beside the scenario, as in a user's repository) reads a kafka source with
headers. The scenario has a payload that does not parse, two partitions, keys, headers, a record
timestamp given and one defaulted to the processing-time clock, and a restart across which the
offsets count on. The job passes; a job with a wrong JSON schema (a misnamed field) fails on the rows.
A second job counts per page and event-time window from the payload's `ts`, across the restart.
"""
from __future__ import annotations

import textwrap

import pytest
from pyspark.sql import functions as F

from eventtime import load_scenario, run_scenario
from eventtime.textreport import describe_failure
from tests.user_project import user_scenario

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: kafka_records
    description: clicks as Kafka JSON records -> each record parsed, with its Kafka metadata.
    sources:
      clicks: {kind: kafka, topic: shop.clicks, headers: true}
    output:
      columns: "user string, page string, ts timestamp, topic string, partition int, offset bigint,
                trace string, kafka_ts timestamp, kafka_ts_type int"
      modes: [append]
    """)

SCENARIO = textwrap.dedent("""\
    scenario: kafka-records
    description: JSON payloads parsed by the job; a payload that does not parse is a row of nulls; offsets per partition.
    contract: kafka_records
    steps:
      - add:
          clicks:
            - {key: u1, value: {page: home, ts: "2024-01-01T00:00:01"}, headers: {trace: t-1}}
            - {key: u2, value: {page: cart, ts: "2024-01-01T00:00:02"}, partition: 1, timestamp: "00:00:07"}
            - {value: "not json {", partition: 1, headers: [[trace, t-2], [trace, t-3]]}
      - process
      - expect:
          rows:
            - [u1, home, "00:00:01", shop.clicks, 0, 0, t-1, "00:00:00", 0]
            - [u2, cart, "00:00:02", shop.clicks, 1, 0, null, "00:00:07", 0]
            - [null, null, null, shop.clicks, 1, 1, t-2, "00:00:00", 0]
      - restart
      - advance: 10s
      - add:
          clicks:
            - {key: u1, value: {page: home, ts: "2024-01-01T00:00:15"}, partition: 1}
            - {key: {base64: dTM=}, value: {page: cart, ts: "2024-01-01T00:00:16"}}
      - process
      - expect:
          rows:
            - [u1, home, "00:00:15", shop.clicks, 1, 2, null, "00:00:10", 0]
            - [u3, cart, "00:00:16", shop.clicks, 0, 1, null, "00:00:10", 0]
    """)

PAYLOAD = "page string, ts timestamp"


def parse_records(clicks, payload=PAYLOAD, page="page"):
    """The job's own parsing, as it runs against a real Kafka source."""
    parsed = F.from_json(F.col("value").cast("string"), payload)
    trace = F.expr("try_element_at(filter(headers, h -> h.key = 'trace'), 1).value")
    return clicks.select(
        F.col("key").cast("string").alias("user"), parsed[page].alias("page"), parsed["ts"].alias("ts"),
        "topic", "partition", "offset", trace.cast("string").alias("trace"),
        F.col("timestamp").alias("kafka_ts"), F.col("timestampType").alias("kafka_ts_type"))


def misnamed_field(clicks):
    """The control: the job's schema names the page field `pageName`, so every page is null."""
    return parse_records(clicks, "pageName string, ts timestamp", "pageName")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return user_scenario(tmp_path_factory.mktemp("shop"), contract=("kafka_records.contract.yaml", CONTRACT),
                         scenario=("records.scenario.yaml", SCENARIO))


def test_the_jobs_from_json_runs_unchanged_on_a_kafka_source(scenario, spark):
    result = run_scenario(scenario, parse_records, session=spark)
    assert result.status == "passed", describe_failure(result)


def test_a_job_with_a_wrong_json_schema_fails_on_the_rows(scenario, spark):
    result = run_scenario(scenario, misnamed_field, session=spark)
    assert result.status == "failed", describe_failure(result)
    text = describe_failure(result)
    assert "missing" in text and "'home'" in text


WINDOWED_CONTRACT = textwrap.dedent("""\
    contract: kafka_page_counts
    description: clicks as Kafka JSON -> count per page and 10-second event-time window of the payload's ts.
    sources:
      clicks: {kind: kafka}
    output:
      columns: "page string, window_start timestamp, clicks bigint"
      modes: [append]
    """)

WINDOWED = textwrap.dedent("""\
    scenario: kafka-page-counts
    description: The event time is the payload's ts; a record that does not parse has no event time and counts nowhere.
    contract: kafka_page_counts
    steps:
      - add:
          clicks:
            - {value: {page: home, ts: "2024-01-01T00:00:01"}}
            - {value: {page: home, ts: "2024-01-01T00:00:04"}, partition: 1}
            - {value: "{\\"page\\": \\"home\\""}
      - process
      - expect: {no_output: true, watermark: "00:00:04"}
      - restart
      - add:
          clicks:
            - {value: {page: cart, ts: "2024-01-01T00:00:12"}, partition: 1}
      - process
      - expect:
          rows: [[home, "00:00:00", 2]]
          watermark: "00:00:12"
    """)


def page_counts(clicks):
    parsed = clicks.select(F.from_json(F.col("value").cast("string"), PAYLOAD).alias("p")).select("p.*")
    return (parsed.withWatermark("ts", "0 seconds").groupBy("page", F.window("ts", "10 seconds"))
            .count().select("page", F.col("window.start").alias("window_start"), F.col("count").alias("clicks")))


def test_the_event_time_comes_from_the_payload_across_a_restart(tmp_path, spark):
    scenario = user_scenario(tmp_path, contract=("kafka_page_counts.contract.yaml", WINDOWED_CONTRACT),
                             scenario=("counts.scenario.yaml", WINDOWED))
    result = run_scenario(scenario, page_counts, session=spark)
    assert result.status == "passed", describe_failure(result)


TEXT_SCENARIO = textwrap.dedent("""\
    scenario: json-lines
    description: A job that reads JSON lines parses each `value`; a line that does not parse is a row of nulls.
    contract:
      description: JSON lines -> page and ts.
      sources:
        lines: {kind: text}
      output:
        columns: "page string, ts timestamp"
    steps:
      - add:
          lines:
            - {page: home, ts: "2024-01-01T00:00:01"}
            - '{"page": "cart", "ts": "2024-01-01T00:00:02"}'
            - "oops"
      - process
      - expect:
          rows: [[home, "00:00:01"], [cart, "00:00:02"], [null, null]]
    """)


def json_lines(lines, payload=PAYLOAD):
    parsed = F.from_json("value", payload)
    return lines.select(parsed["page"].cast("string").alias("page"), parsed["ts"].alias("ts"))


def test_a_text_source_feeds_the_jobs_json_lines_parsing(tmp_path, spark):
    path = tmp_path / "lines.scenario.yaml"
    path.write_text(TEXT_SCENARIO)
    result = run_scenario(load_scenario(path), json_lines, session=spark)
    assert result.status == "passed", describe_failure(result)
    # the control: the same job reading `page` as a number finds no page
    wrong = run_scenario(load_scenario(path), lambda lines: json_lines(lines, "page int, ts timestamp"),
                         session=spark)
    assert wrong.status == "failed", describe_failure(wrong)
