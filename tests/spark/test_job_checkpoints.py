"""A job's query with no checkpointLocation restarts as Spark restarts it (docs/stand-ins.md, *Checkpoints*).

Spark gives such a query a new temporary checkpoint at every start: batch 0 again, no state, a file
source reads every file again. The kit used to carry its own checkpoint over a restart (batch ids,
totals and state went on). Here the same job runs under the kit and in a plain Spark script (a
subprocess that imports nothing of the kit), with and without a checkpoint, and both must see the same
batches with the same rows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eventtime import run_scenario
from eventtime.harness.jobio import shown_file
from eventtime.textreport import describe_failure

from tests.spark import jobs_checkpoints as jobs

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

CONTRACT = textwrap.dedent("""\
    contract: page_totals
    description: clicks read from JSON files -> clicks per page so far.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        from: {format: json, path: data/clicks}
    output:
      columns: "page string, count bigint"
      modes: [update]
    """)

# What the plain script does: two batches, the query stopped, a file added, the job started again.
RESTARTED = textwrap.dedent("""\
    scenario: job-restarted
    description: The job's query stopped and started again, a click arriving in between.
    contract: page_totals
    steps:
      - add: {clicks: [{page: home, ts: "00:00:01"}, {page: cart, ts: "00:00:02"}]}
      - process
      - expect: {rows: [[home, 1], [cart, 1]]}
      - add: {clicks: [{page: home, ts: "00:00:03"}]}
      - process
      - expect: {rows: [[home, 2]]}
      - stop
      - add: {clicks: [{page: home, ts: "00:00:04"}]}
      - start
      - process
      - expect: {rows: ROWS}
    """)
ANEW = "[[home, 3], [cart, 1]]"  # batch 0 of a new checkpoint: every file read again, counted from nothing
ON = "[[home, 3]]"  # batch 2 of the same checkpoint: the new file, added to the kept counts


def _plain_spark(tmp_path, *args: str) -> list:
    """The job run by a plain Spark script (`jobs_checkpoints` as __main__): its batches as its function saw them."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SPARK_REMOTE", None)
    done = subprocess.run([sys.executable, "-m", "tests.spark.jobs_checkpoints", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    line = next((x for x in done.stdout.splitlines() if x.startswith("SEEN ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-4000:]
    return [(b, rows) for b, rows in json.loads(line[5:])]


def _kit(spark, contract_beside, job, rows: str):
    jobs.SEEN.clear()
    result = run_scenario(contract_beside(CONTRACT)(RESTARTED.replace("ROWS", rows)), job, session=spark)
    batches = [b.batch_id for s in result.steps for b in s.batches]
    return result, batches, list(jobs.SEEN)


def test_a_query_without_a_checkpoint_restarts_anew_as_in_a_plain_spark_script(spark, contract_beside, tmp_path):
    result, batch_ids, seen = _kit(spark, contract_beside, jobs.build, ANEW)
    assert result.status == "passed", describe_failure(result)
    plain = _plain_spark(tmp_path)
    assert plain == [(0, [["cart", 1], ["home", 1]]), (1, [["home", 2]]), (0, [["cart", 1], ["home", 3]])]
    assert seen == plain
    assert batch_ids == [0, 1, 0]
    note = [n for n in result.notes if "no checkpointLocation" in n]
    assert note and note[0].startswith(f"{shown_file(jobs.__file__)}:"), result.notes
    assert "new temporary checkpoint at every start" in note[0], note[0]


def test_control_a_query_with_a_checkpoint_goes_on_in_both(spark, contract_beside, tmp_path):
    result, batch_ids, seen = _kit(spark, contract_beside, jobs.build_with_checkpoint, ON)
    assert result.status == "passed", describe_failure(result)
    plain = _plain_spark(tmp_path, "checkpoint")
    assert plain == [(0, [["cart", 1], ["home", 1]]), (1, [["home", 2]]), (2, [["home", 3]])]
    assert seen == plain
    assert batch_ids == [0, 1, 2]
    assert not [n for n in result.notes if "checkpointLocation" in n], result.notes


def test_control_the_old_restart_carries_the_kits_checkpoint_over(spark, contract_beside, monkeypatch):
    """Without the rule (every query keeps the kit's checkpoint) the checkpoint-less job goes on: the old
    behaviour, which the plain script contradicts."""
    from eventtime.jobbuild import JobBuild

    monkeypatch.setattr(JobBuild, "anew", lambda self, index: False)
    result, batch_ids, seen = _kit(spark, contract_beside, jobs.build, ANEW)
    assert result.status == "failed", describe_failure(result)
    assert batch_ids == [0, 1, 2]


def test_a_named_query_under_the_checkpoint_setting_keeps_its_checkpoint(spark, contract_beside):
    result, batch_ids, _ = _kit(spark, contract_beside, jobs.named_under_conf, ON)
    assert result.status == "passed", describe_failure(result)
    assert batch_ids == [0, 1, 2]


KAFKA = textwrap.dedent("""\
    scenario: kafka-job-restarted
    description: A Kafka reader with no checkpoint, stopped and started again.
    contract: click_topic
    sources:
      clicks: {kind: kafka, topic: clicks}
    steps:
      - add: {clicks: [{value: a}]}
      - process
      - expect: {rows: [[a]]}
      - stop
      - add: {clicks: [{value: b}]}
      - start
      - add: {clicks: [{value: c}]}
      - process
      - expect: {rows: ROWS}
    """)
KAFKA_CONTRACT = textwrap.dedent("""\
    contract: click_topic
    description: the records of a topic, as text.
    sources:
      clicks: {kind: kafka, topic: clicks}
    output:
      columns: "value string"
    """)


@pytest.mark.parametrize("job, rows, batches", [
    (jobs.kafka_latest, "[[c]]", [0, 0]),  # from latest: b, added while it was stopped, is never read
    (jobs.kafka_earliest, "[[a], [b], [c]]", [0, 0, 1]),  # from earliest: the topic read again from its start
], ids=["latest", "earliest"])
def test_a_kafka_reader_without_a_checkpoint_starts_from_its_starting_offsets_again(spark, contract_beside, job,
                                                                                   rows, batches):
    result = run_scenario(contract_beside(KAFKA_CONTRACT)(KAFKA.replace("ROWS", rows)), job, session=spark)
    assert result.status == "passed", describe_failure(result)
    assert [b.batch_id for s in result.steps for b in s.batches if b.input_rows] == batches
