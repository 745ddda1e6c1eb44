"""Scenarios run against a Spark Declarative Pipeline bound by its spec (`conformance/sdpsteps.py`,
docs/pipelines.md *What runs*), on the kit's Connect server: `tests/connect/sdp/clicks` is a pipeline project
as `spark-pipelines init` lays one out (a streaming table with a watermark and a windowed count reading a
JSON folder), run unchanged; each `process` is one update on the run's own storage."""
from __future__ import annotations

from pathlib import Path

import pytest

from eventtime.harness import pipelinegraph
from eventtime.loader import load_scenario, load_scenario_text
from eventtime.runner import run_scenario

pytestmark = [pytest.mark.connect, pytest.mark.spark,
              pytest.mark.skipif(not pipelinegraph.available(), reason="pyspark.pipelines needs pyspark 4.1+")]

HERE = Path(__file__).resolve().parent / "sdp"
PIPELINE = str(HERE / "clicks") + "/"
SCENARIO = HERE / "late-clicks-across-updates.scenario.yaml"
TIMEOUT = 600  # one update of a tiny pipeline took 30-110 s on two loaded cores


def _files() -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (HERE / "clicks").rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_late_clicks_across_three_updates_and_a_restart(remote_spark):
    before = _files()
    result = run_scenario(load_scenario(SCENARIO), PIPELINE, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps]
    updates = [s for s in result.steps if s.kind == "process"]
    # each update: its data batch (the rows added before it), then the no-data batch its watermark calls for
    assert [[(b.batch_id, b.input_rows) for b in s.batches] for s in updates] == [[(0, 4), (1, 0)], [(2, 2), (3, 0)],
                                                                                  [(4, 2), (5, 0)]]
    assert [s.watermark_ms for s in updates] == [1704100200000, 1704101160000, 1704101700000]  # 09:10, 09:26, 09:35
    # the late 09:04 click was judged by the watermark batch 0 left (09:10), as Spark judges it: dropped
    assert updates[1].batches[0].watermark_before_ms == 1704100200000
    assert [(b.dropped, b.state_rows) for b in updates[1].batches] == [(1, 2), (0, 1)]
    assert _files() == before  # the pipeline's files are never touched
    assert any("the rows each wrote to its table are not known per batch" in n for n in result.notes)


def test_a_wrong_expected_value_fails_at_its_line(remote_spark):
    """The control: one update, a wrong count of the flow's rows, a wrong watermark, a wrong count of dropped
    rows, a table missing a row;
    a misspelt dataset is the scenario's error at its line, naming the datasets there are."""
    text = SCENARIO.read_text().split("  - add:\n      clicks: [[home, \"09:04:00\"]")[0]
    wrong = (text.replace('["09:00:00", "09:05:00", home, 2]', '["09:00:00", "09:05:00", home, 3]')
             .replace('watermark: "09:10:00"', 'watermark: "09:05:00"')
             .replace("dropped: 0", "dropped: 1")
             + "  - expect:\n      table: click_counts\n      rows: [[\"09:00:00\", \"09:05:00\", cart, 1]]\n"
             + "  - expect: {table: click_count, rows: []}\n")
    result = run_scenario(load_scenario_text(wrong, str(SCENARIO), file=SCENARIO), PIPELINE, session=remote_spark,
                          timeout=TIMEOUT)
    failed = {(f.check, f.where.line) for s in result.steps for f in s.failures}
    assert failed == {("watermark", _line(wrong, 'watermark: "09:05:00"')),
                      ("dropped", _line(wrong, "dropped: 1")),
                      ("rows", _line(wrong, "rows: [[\"09:00:00\", \"09:05:00\", home, 3]")),
                      ("rows", _line(wrong, "rows: [[\"09:00:00\", \"09:05:00\", cart, 1]]"))}, failed
    assert result.status == "error" and result.steps[-1].status == "error"
    assert f":{_line(wrong, 'click_count,')}:" in result.steps[-1].message
    assert "defines no dataset 'click_count' (it defines click_counts)" in result.steps[-1].message


def test_what_a_pipeline_cannot_do_yet_is_an_error_at_its_line(remote_spark):
    text = SCENARIO.read_text().split("  - add:")[0] + (
        "  - expect: {query: click_counts, last_batch: []}\n"
        "  - restart: {conf: {spark.sql.shuffle.partitions: '2'}}\n"
        "  - process\n")
    result = run_scenario(load_scenario_text(text, str(SCENARIO), file=SCENARIO), PIPELINE, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "error"
    expect, restart, process = result.steps[1:]
    assert expect.status == "error" and f":{_line(text, 'last_batch: []')}:" in expect.message
    assert "not supported for pipelines yet: last_batch" in expect.message
    assert restart.status == "error" and f":{_line(text, 'restart: {conf')}:" in restart.message
    assert process.status == "skipped"  # no update ran after the step that could not


def test_an_append_flow_and_a_materialized_view_over_its_table(remote_spark):
    """`tests/connect/sdp/pages`, written otherwise: `create_streaming_table` with an `@append_flow` of its
    own name (deduplicating within the watermark), a materialized view reading the streaming table."""
    pages = HERE / "pages"
    before = {p: p.read_bytes() for p in pages.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    result = run_scenario(load_scenario(HERE / "resent-views-across-updates.scenario.yaml"), str(pages) + "/",
                          session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps]
    updates = [s for s in result.steps if s.kind == "process"]
    assert {b.query for s in updates for b in s.batches} == {"views_from_landing"}  # the MV has no checkpoint
    assert updates[0].batches[0].input_rows == 4 and sum(b.dropped for b in updates[1].batches) == 1
    assert {p: p.read_bytes() for p in pages.rglob("*") if p.is_file() and "__pycache__" not in p.parts} == before


FULL_REFRESH = HERE / "full-refresh-recounts-late-clicks.scenario.yaml"


def test_a_full_refresh_recomputes_the_table_on_a_new_checkpoint(remote_spark):
    """`update: {full_refresh: [...]}`: the table emptied, its flow started on checkpoint 1 beside 0, reading
    every row the staged source holds from the start (as a file or Kafka source does on a new checkpoint)."""
    before = _files()
    result = run_scenario(load_scenario(FULL_REFRESH), PIPELINE, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps]
    updates = [s for s in result.steps if s.kind in ("process", "update")]
    assert [[(b.checkpoint, b.batch_id, b.input_rows) for b in s.batches] for s in updates] == [
        [(0, 0, 4), (0, 1, 0)], [(0, 2, 2), (0, 3, 0)], [(1, 0, 6), (1, 1, 0)], [(1, 2, 2), (1, 3, 0)]]
    assert _files() == before


def test_an_update_of_selected_datasets_and_of_all_after_a_full_refresh(remote_spark):
    pages = HERE / "pages"
    result = run_scenario(load_scenario(HERE / "selected-datasets-and-a-full-refresh.scenario.yaml"),
                          str(pages) + "/", session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps
                                                        if s.status != "passed"]
    updates = [s for s in result.steps if s.kind in ("process", "update")]
    assert [[(b.checkpoint, b.batch_id) for b in s.batches] for s in updates][2:] == [[], [(1, 0), (1, 1)]]


def test_a_wrong_value_after_a_full_refresh_fails_at_its_line(remote_spark):
    """The control: the counts the incremental flow would hold (home 2: 09:04 dropped) and the batches of both
    checkpoints (4) fail at their lines after a full refresh; a misspelt dataset in a selection is an error at
    its line naming the pipeline's datasets, before the update runs."""
    text = FULL_REFRESH.read_text().split("  - expect:\n      table: click_counts")[0]
    wrong = (text.replace('        - ["09:00:00", "09:05:00", home, 3]      # 09:04 counted this time',
                          '        - ["09:00:00", "09:05:00", home, 2]')
             .replace("batches: 2                                 # on the new", "batches: 4  # on the new")
             + "  - update: {refresh: [click_count]}\n")
    result = run_scenario(load_scenario_text(wrong, str(FULL_REFRESH), file=FULL_REFRESH), PIPELINE,
                          session=remote_spark, timeout=TIMEOUT)
    failed = {(f.check, f.where.line) for s in result.steps for f in s.failures}
    # `batches` at its key's line, `rows` at the row that differs
    assert failed == {("batches", _line(wrong, "batches: 4")), ("rows", _line(wrong, "- [\"09:00:00\", \"09:05:00\", home, 2]"))}, failed
    assert result.status == "error" and result.steps[-1].status == "error"
    assert f":{_line(wrong, 'click_count]')}:" in result.steps[-1].message
    assert "defines no dataset 'click_count' (it defines click_counts)" in result.steps[-1].message


def _across(scenario: Path, current: str, remote_spark, text: str | None = None):
    """`scenario` run across a change: the updates before its restart run `clicks/`, the later ones `current`."""
    from eventtime.upgrade import NewVersion

    loaded = load_scenario(scenario) if text is None else load_scenario_text(text, str(scenario), file=scenario)
    return run_scenario(loaded, str(HERE / current) + "/", session=remote_spark, timeout=TIMEOUT,
                        crossing=NewVersion(PIPELINE, "clicks/"))


def test_a_changed_definition_restarts_from_the_previous_checkpoint(remote_spark):
    """A filter added before the count (clicks_v2): the state's schema is unchanged, the new definition goes on
    from the previous one's checkpoint (one checkpoint, batches 0-5) and counts no bot."""
    result = _across(HERE / "bots-filtered-after-a-restart.scenario.yaml", "clicks_v2", remote_spark)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps
                                                        if s.status != "passed"]
    assert result.upgrade is not None and result.upgrade["outcome"] == "restarts"
    batches = [(b.checkpoint, b.batch_id) for s in result.steps for b in s.batches]
    assert batches == [(0, n) for n in range(6)]


def test_the_same_definition_after_the_restart_differs_from_the_scenario(remote_spark):
    """The control: without the change (clicks/ on both sides) the bot's 09:30 window is counted, so the
    last expect fails at its line and the outcome is `differs`, not `restarts`."""
    scenario = HERE / "bots-filtered-after-a-restart.scenario.yaml"
    result = _across(scenario, "clicks", remote_spark)
    assert result.upgrade is not None and result.upgrade["outcome"] == "differs", result.reason
    failed = [(f.check, f.where.line) for s in result.steps for f in s.failures]
    assert failed == [("rows", _line(scenario.read_text(), '"09:35:00", "09:40:00", home, 1'))], failed


REGROUPED = HERE / "regrouped-after-a-restart.scenario.yaml"


def test_a_changed_state_key_cannot_restart_with_sparks_own_error(remote_spark):
    """The count keyed by one more column (clicks_v3) on the previous checkpoint: the update after the restart
    fails, and the outcome is `cannot_restart` with Spark's error class and message."""
    text = REGROUPED.read_text().replace("  - update: {full_refresh: [click_counts]}", "  - process  #")
    result = _across(REGROUPED, "clicks_v3", remote_spark, text)
    record = result.upgrade
    assert record is not None and record["outcome"] == "cannot_restart", (result.reason, record)
    assert result.status == "error" and "cannot restart from the previous version's checkpoint" in str(result.reason)
    print("MEASURED", record)
    assert record["error_class"] == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", record
    assert record["message"].startswith("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]"), record


def test_a_full_refresh_after_a_changed_state_key_recomputes_the_table(remote_spark):
    result = _across(REGROUPED, "clicks_v3", remote_spark)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps
                                                        if s.status != "passed"]
    assert result.upgrade is not None and result.upgrade["outcome"] == "restarts"
    assert [(b.checkpoint, b.batch_id) for s in result.steps for b in s.batches] == [(0, 0), (0, 1), (1, 0), (1, 1)]


KAFKA_LATEST = HERE / "kafka-latest-skips-what-the-topic-held.scenario.yaml"


def test_a_kafka_reader_at_latest_skips_what_the_topic_held_on_each_new_checkpoint(remote_spark):
    """`orders_kafka` reads Kafka with no startingOffsets (Spark's default, latest): its first update and the
    update after a full refresh start at the topic's end, as Spark's Kafka source does. Its
    `maxOffsetsPerTrigger` is noted at its line (each update reads what was added before it). The control:
    expecting the first update to read what the topic held fails at that line."""
    orders = str(HERE / "orders_kafka") + "/"
    result = run_scenario(load_scenario(KAFKA_LATEST), orders, session=remote_spark, timeout=TIMEOUT)
    assert result.status == "passed", result.reason or [(s.index, s.message, s.failures) for s in result.steps]
    assert any("bronze_orders.py:10" in n and "maxOffsetsPerTrigger" in n for n in result.notes), result.notes
    text = KAFKA_LATEST.read_text()
    wrong = text.replace("  - expect: {query: bronze_orders, rows: []}", "  - expect: {query: bronze_orders, rows: [[o1], [o2]]}")
    assert wrong != text
    control = run_scenario(load_scenario_text(wrong, str(KAFKA_LATEST), file=KAFKA_LATEST), orders,
                           session=remote_spark, timeout=TIMEOUT)
    assert control.status == "failed"
    failed = {(f.check, f.where.line) for s in control.steps for f in s.failures}
    assert failed == {("rows", _line(wrong, "rows: [[o1], [o2]]"))}, failed
