"""A Spark Declarative Pipeline's update on the kit's Connect session (`harness/pipelinerun.py`): the
definition files run unchanged, the streaming table's flow carries its watermark and state from one
update to the next under the kit's storage (never the spec's), a late row does not reopen its closed
window (that it is counted as dropped is not checked yet), a full refresh recomputes it on a new
checkpoint, and a failed update is an error, not a pass."""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from eventtime.harness import pipelinegraph

pytestmark = pytest.mark.skipif(not pipelinegraph.available(), reason="pyspark.pipelines needs pyspark 4.1+")

DEFINITIONS = """\
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table
def {table}():
    return (spark.readStream.schema("page string, ts timestamp").json({landing!r})
            .withWatermark("ts", "10 minutes")
            .groupBy(F.window("ts", "5 minutes").alias("w"), "page").count()
            .select(F.col("w.start").alias("window_start"), "page", "count"))
"""


def _land(landing: Path, n: int, rows: list[tuple[str, str]]) -> None:
    (landing / f"part-{n}.json").write_text("".join(json.dumps({"page": p, "ts": ts}) + "\n" for p, ts in rows))


def _project(root: Path, table: str, definitions: str = DEFINITIONS) -> Path:
    landing = root / "landing"
    (root / "transformations").mkdir(parents=True)
    landing.mkdir()
    (root / "spark-pipeline.yml").write_text(
        "name: clicks\nstorage: production-storage\nlibraries:\n  - glob:\n      include: transformations/**\n")
    (root / "transformations" / "counts.py").write_text(definitions.format(table=table, landing=str(landing)))
    return root


def _table(spark, table: str) -> set[tuple[str, str, int]]:
    return {(r["window_start"].strftime("%H:%M"), r["page"], r["count"]) for r in spark.read.table(table).collect()}


def test_updates_carry_the_watermark_and_state_under_the_kits_storage(remote_spark, tmp_path):
    from eventtime.harness.pipelinerun import run_update
    table = f"click_counts_{uuid.uuid4().hex[:8]}"
    root = _project(tmp_path / "clicks", table)
    before = {p: p.read_bytes() for p in (root / "transformations").iterdir()}
    storage = tmp_path / "kit-storage"
    _land(root / "landing", 0, [("home", "2024-01-01T09:01:00Z"), ("home", "2024-01-01T09:02:00Z"),
                                ("cart", "2024-01-01T09:03:00Z"), ("home", "2024-01-01T09:20:00Z")])
    first = run_update(remote_spark, root, storage.as_uri(), conf={"spark.sql.shuffle.partitions": "1"})
    assert first.graph.datasets[table].kind == "streaming_table"
    # watermark 09:20 - 10 min = 09:10 after the no-data batch: 09:00-09:05 closed, 09:20 still open
    assert _table(remote_spark, table) == {("09:00", "home", 2), ("09:00", "cart", 1)}

    _land(root / "landing", 1, [("home", "2024-01-01T09:04:00Z"),   # late: its window closed at 09:10
                                ("home", "2024-01-01T09:36:00Z")])  # moves the watermark to 09:26
    run_update(remote_spark, root, storage.as_uri(), conf={"spark.sql.shuffle.partitions": "1"})
    # 09:20 was counted in the first update and kept in state; 09:00 home is not written again
    assert _table(remote_spark, table) == {("09:00", "home", 2), ("09:00", "cart", 1), ("09:20", "home", 1)}

    flow = storage / "_checkpoints" / "spark_catalog" / "default" / table / table / "0"
    assert sorted(int(p.name) for p in (flow / "commits").iterdir() if p.name.isdigit()) == [0, 1, 2, 3]
    assert not (root / "production-storage").exists() and not (tmp_path / "production-storage").exists()
    assert {p: p.read_bytes() for p in (root / "transformations").iterdir() if p.is_file()} == before

    # a full refresh of the table: emptied and recomputed from every file on a new checkpoint, so the row
    # that was late for the incremental flow (09:04) is counted now
    run_update(remote_spark, root, storage.as_uri(), full_refresh=[table], conf={"spark.sql.shuffle.partitions": "1"})
    assert _table(remote_spark, table) == {("09:00", "home", 3), ("09:00", "cart", 1), ("09:20", "home", 1)}
    assert sorted(p.name for p in flow.parent.iterdir()) == ["0", "1"]


def test_a_failing_flow_fails_the_update(remote_spark, tmp_path):
    from eventtime.harness.pipelinerun import UpdateFailed, run_update
    table = f"broken_{uuid.uuid4().hex[:8]}"
    broken = DEFINITIONS.replace('.select(F.col("w.start")', '.select(F.col("no_such_column")')
    root = _project(tmp_path / "broken", table, broken)
    _land(root / "landing", 0, [("home", "2024-01-01T09:01:00Z")])
    with pytest.raises((UpdateFailed, pipelinegraph.PipelineLoadError), match="no_such_column"):
        run_update(remote_spark, root, (tmp_path / "kit-storage").as_uri(), conf={"spark.sql.shuffle.partitions": "1"})


def test_a_refresh_selection_runs_only_the_flows_of_the_named_tables(remote_spark, tmp_path):
    from eventtime.harness.pipelinerun import run_update
    table = f"picked_{uuid.uuid4().hex[:8]}"
    other = f"left_{uuid.uuid4().hex[:8]}"
    second = DEFINITIONS.split("\n\n\n")[1].replace("{table}", other)        # the same flow, another table
    root = _project(tmp_path / "two", table, DEFINITIONS + "\n\n" + second)
    _land(root / "landing", 0, [("home", "2024-01-01T09:01:00Z"), ("home", "2024-01-01T09:20:00Z")])
    storage = tmp_path / "kit-storage"
    result = run_update(remote_spark, root, storage.as_uri(), refresh=[table],
                        conf={"spark.sql.shuffle.partitions": "1"})
    assert {table, other} <= set(result.graph.datasets)
    assert _table(remote_spark, table) == {("09:00", "home", 1)}
    checkpoints = storage / "_checkpoints" / "spark_catalog" / "default"
    assert sorted(p.name for p in checkpoints.iterdir()) == [table]              # the other flow never ran


# -- sources substituted (docs/pipelines.md step 1) ------------------------------------------------------
KAFKA_DEFINITIONS = """\
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table
def {table}():
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "broker-1:9092")
              .option("subscribe", "clicks")
              .option("startingOffsets", "earliest")
              .load())
    return (clicks.select(F.from_json(F.col("value").cast("string"), "page string, ts timestamp").alias("e"))
            .select("e.*")
            .withWatermark("ts", "10 minutes")
            .groupBy(F.window("ts", "5 minutes").alias("w"), "page").count()
            .select(F.col("w.start").alias("window_start"), "page", "count"))
"""
KAFKA_COLUMNS = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
                 ("offset", "long"), ("timestamp", "timestamp"), ("timestampType", "int")]


def _kafka_project(root: Path, table: str) -> Path:
    (root / "transformations").mkdir(parents=True)
    (root / "spark-pipeline.yml").write_text(
        "name: clicks\nstorage: production-storage\nlibraries:\n  - glob:\n      include: transformations/**\n")
    (root / "transformations" / "counts.py").write_text(KAFKA_DEFINITIONS.format(table=table))
    return root


def _clicks(source, offset: int, events: list[tuple[str, str]]) -> int:
    """One add of Kafka records (value = the event as JSON), as a producer would have written them."""
    from datetime import datetime, timezone
    rows = []
    for page, ts in events:
        micros = int(datetime.fromisoformat(ts).replace(tzinfo=timezone.utc).timestamp() * 1_000_000)
        rows.append((None, json.dumps({"page": page, "ts": ts + "Z"}).encode(), "clicks", 0, offset, micros, 0))
        offset += 1
    source.add(rows)
    return offset


def test_a_kafka_reading_pipeline_reads_the_kits_source_across_updates(remote_spark, tmp_path):
    from eventtime.harness.connect import ConnectSource, ConnectStaging
    from eventtime.harness.jobio import kafka_reads
    from eventtime.harness.pipelinerun import PipelineRun, PipelineSource
    table = f"kafka_counts_{uuid.uuid4().hex[:8]}"
    root = _kafka_project(tmp_path / "clicks", table)
    before = (root / "transformations" / "counts.py").read_bytes()
    storage = tmp_path / "kit-storage"
    source = ConnectSource(ConnectStaging(remote_spark), "clicks", KAFKA_COLUMNS)
    run = PipelineRun(remote_spark, root, storage.as_uri(), [PipelineSource("clicks", kafka_reads("clicks"), source)],
                      conf={"spark.sql.shuffle.partitions": "1"})

    def counts() -> set[tuple[str, str, int]]:
        return {(r["window_start"].strftime("%H:%M"), r["page"], r["count"]) for r in run.rows(table)}

    offset = _clicks(source, 0, [("home", "2024-01-01T09:01:00"), ("home", "2024-01-01T09:02:00"),
                                 ("cart", "2024-01-01T09:03:00"), ("home", "2024-01-01T09:20:00")])
    run.update()
    flow = storage / "_checkpoints" / "spark_catalog" / "default" / table / table / "0"

    def logged(log: str, batch: int) -> list[dict]:
        return [json.loads(line) for line in (flow / log / str(batch)).read_text().splitlines()[1:]]

    # Measured: with `SupportsTriggerAvailableNow` on the staged reader an update runs as over a Kafka or
    # file source (the first test): the data batch, then the no-data batch its watermark calls for.
    # Batch 0 read the add and computed watermark 09:10 (09:20 - 10 min); batch 1, with no data, emitted
    # the 09:00-09:05 windows by it. (Without the mixin Spark 4 runs one batch per update, as
    # Trigger.Once: the table stayed empty here and the 09:04 row below was counted.)
    assert counts() == {("09:00", "home", 2), ("09:00", "cart", 1)}
    assert logged("offsets", 0)[-1] == {"adds": 1, "source": "clicks"}
    assert logged("commits", 0) == [{"nextBatchWatermarkMs": 1704100200000}]             # 09:10
    assert logged("offsets", 1)[0]["batchWatermarkMs"] == 1704100200000
    assert logged("offsets", 1)[-1] == {"adds": 1, "source": "clicks"}      # no new data: the no-data batch

    _clicks(source, offset, [("home", "2024-01-01T09:04:00"),    # behind the watermark 09:10: dropped
                             ("home", "2024-01-01T09:36:00")])   # on time; moves the watermark to 09:26
    run.update()
    # batch 2 judges lateness by watermark 09:10, so the 09:04 row is dropped (home stays 2, as the file
    # source's updates keep it); batch 3 (no data) evicts the 09:20 window by watermark 09:26.
    assert counts() == {("09:00", "home", 2), ("09:00", "cart", 1), ("09:20", "home", 1)}
    assert logged("offsets", 2)[0]["batchWatermarkMs"] == 1704100200000
    assert logged("offsets", 2)[-1] == {"adds": 2, "source": "clicks"}      # the second add
    assert logged("commits", 2) == [{"nextBatchWatermarkMs": 1704101160000}]             # 09:26
    assert logged("offsets", 3)[0]["batchWatermarkMs"] == 1704101160000
    assert logged("offsets", 3)[-1] == {"adds": 2, "source": "clicks"}
    assert sorted(int(p.name) for p in (flow / "offsets").iterdir() if p.name.isdigit()) == [0, 1, 2, 3]
    assert (root / "transformations" / "counts.py").read_bytes() == before
    assert not (root / "production-storage").exists()


def test_a_read_the_kit_cannot_stand_in_for_is_refused_at_its_line(remote_spark, tmp_path):
    """Controls: a source for another topic leaves the definition's Kafka read unmatched (an error at its
    line, before any update); with no substitution the definition reads real Kafka and the update fails."""
    from eventtime.harness.connect import ConnectSource, ConnectStaging
    from eventtime.harness.jobio import SubstitutionError, kafka_reads
    from eventtime.harness.pipelinerun import PipelineSource, UpdateFailed, run_update
    table = f"refused_{uuid.uuid4().hex[:8]}"
    root = _kafka_project(tmp_path / "clicks", table)
    definition = root / "transformations" / "counts.py"
    # the reader chain's first line or its `load()` line (Python 3.11 places a chained call on either)
    lines = [n for n, text in enumerate(definition.read_text().splitlines(), 1) if "clicks = (" in text or ".load()" in text]
    other = ConnectSource(ConnectStaging(remote_spark), "orders", KAFKA_COLUMNS)
    storage = (tmp_path / "kit-storage").as_uri()
    with pytest.raises(SubstitutionError, match=rf"counts\.py:({lines[0]}|{lines[1]})\b.*subscribe='clicks'.*matches no source") as err:
        run_update(remote_spark, root, storage, sources=[PipelineSource("orders", kafka_reads("orders"), other)])
    assert err.value.place is not None and (root / err.value.place.file).resolve() == definition.resolve()

    with pytest.raises((UpdateFailed, pipelinegraph.PipelineLoadError), match="(?i)kafka"):
        run_update(remote_spark, root, storage, conf={"spark.sql.shuffle.partitions": "1"}, timeout=300)
