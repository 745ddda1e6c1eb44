"""A job's Kafka sink publishes to an output topic the scenario checks (`eventtime.topics`, docs/jobs.md):
records with their key and JSON value, at-least-once across a batch that runs again, and read in the same
step by another query of the job that subscribes to the topic. The sink's columns are checked as Spark
checks them when the query starts, naming the job's line."""
from __future__ import annotations

import textwrap

import pytest

from eventtime import run_scenario
from eventtime.textreport import describe_failure

from tests.spark import jobs_of_queries as jobs
from tests.spark.test_jobs import _line, _text

pytestmark = pytest.mark.spark

CONTRACT = textwrap.dedent("""\
    contract: order_alerts
    description: orders (Kafka JSON) -> big orders published to the alerts topic; the alerted ids read back.
    sources:
      orders: {kind: kafka, topic: orders}
    queries:
      alerted: {columns: "order_id string, offset bigint"}
    """)

ALERTS = textwrap.dedent("""\
    scenario: big-orders-alerted
    description: Each big order is published once; the alerts topic is read back by the job's second query.
    contract: order_alerts
    steps:
      - add:
          orders:
            - {key: o1, value: {order_id: o1, amount: 120.0, ts: "2024-01-01T00:00:01"}}
            - {key: o2, value: {order_id: o2, amount: 5.0, ts: "2024-01-01T00:00:02"}}
            - {key: o3, value: {order_id: o3, amount: 300.5, ts: "2024-01-01T00:00:03"}}
      - process
      - expect:
          topic: alerts
          records:
            - {key: o1, value: {order_id: o1, amount: 120.0}}
            - {key: o3, value: {order_id: o3, amount: 300.5}}
      - expect: {query: alerted, rows: [[o1, 0], [o3, 1]]}
      - add: {orders: [{key: o4, value: {order_id: o4, amount: 100.0, ts: "2024-01-01T00:00:04"}}]}
      - process
      - restart: {rerun_last_batch: true}
      - process
      - expect:
          topic: alerts
          records:
            - {key: o1, value: {order_id: o1, amount: 120.0}, partition: 0}
            - {key: o3, value: {order_id: o3, amount: 300.5}, partition: 0}
            - {key: o4, value: {order_id: o4, amount: 100.0}, partition: 0}
            - {key: o4, value: {order_id: o4, amount: 100.0}, partition: 0}
      - expect: {query: alerted, output: [[o1, 0], [o3, 1], [o4, 2], [o4, 3]]}  # its batch of o4 ran again too
    """)


@pytest.fixture
def scenario_of(contract_beside):
    return contract_beside(CONTRACT)


def test_an_output_topic_holds_what_the_sink_published_and_feeds_the_query_reading_it(spark, scenario_of):
    result = run_scenario(scenario_of(ALERTS), jobs.alerts, session=spark)
    assert result.status == "passed", describe_failure(result)


@pytest.mark.parametrize("old, new, words", [
    ("{key: o3, value: {order_id: o3, amount: 300.5}}", "{key: o3, value: {order_id: o3, amount: 300.0}}",
     "1 missing, 1 unexpected"),
    ("        - {key: o4, value: {order_id: o4, amount: 100.0}, partition: 0}\n"
     "        - {key: o4, value: {order_id: o4, amount: 100.0}, partition: 0}\n",
     "        - {key: o4, value: {order_id: o4, amount: 100.0}, partition: 0}\n",
     "0 missing, 1 unexpected"),
    ("{key: o1, value: {order_id: o1, amount: 120.0}}", "{value: {order_id: o1, amount: 120.0}}",
     "1 missing, 1 unexpected"),
], ids=["wrong-value", "no-duplicate-expected", "key-left-out"])
def test_a_wrong_expectation_of_a_topic_fails(spark, scenario_of, old, new, words):
    assert old in ALERTS
    result = run_scenario(scenario_of(ALERTS.replace(old, new, 1)), jobs.alerts, session=spark)
    assert result.status == "failed"
    assert words in _text(result), _text(result)


@pytest.mark.parametrize("job, marker, words", [
    (jobs.kafka_without_value, "no value", "a kafka sink needs a `value` column"),
    (jobs.reads_unknown_topic, "unknown topic", "no query of the job publishes to topic 'payments'"),
], ids=["no-value-column", "unknown-topic"])
def test_each_kafka_refusal_names_the_jobs_line(spark, scenario_of, job, marker, words):
    one = textwrap.dedent("""\
        scenario: one
        description: one batch
        contract: order_alerts
        steps:
          - add: {orders: [{key: o1, value: {order_id: o1, amount: 1.0, ts: "2024-01-01T00:00:01"}}]}
          - process
        """)
    result = run_scenario(scenario_of(one), job, session=spark)
    assert result.status == "error"
    text = _text(result)
    assert _line(marker, jobs) in text and words in text, text
