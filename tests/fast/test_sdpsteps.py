"""The parts of a pipeline's run that need no Spark (`conformance/sdpsteps.py`): which steps and checks are
refused at their line, the rows a flow appended since its previous expect, a flow's progress waited for.
The run itself is tests/connect/test_connect_sdp_scenarios.py."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from eventtime.harness.pipelinegraph import Dataset, FlowDef, PipelineGraph
from eventtime.harness.jobio import Place
from eventtime.loader import load_scenario_text
from eventtime.sdpsteps import _checks_not_supported, _FlowObserved, _step_not_supported, _uri, streaming_flows

SCENARIO = Path(__file__).resolve().parents[1] / "connect" / "sdp" / "late-clicks-across-updates.scenario.yaml"


def _steps(body: str):
    text = SCENARIO.read_text().split("  - add:")[0] + body + "  - process\n"
    return load_scenario_text(text, str(SCENARIO), file=SCENARIO).steps


def test_checks_a_pipeline_does_not_judge_yet_are_named():
    judged, since_check, last, state = _steps(
        "  - expect: {query: click_counts, dropped: 1, state_rows: 2, rows: []}\n"
        "  - expect: {query: click_counts, dropped_since_check: 1}\n"
        "  - expect: {query: click_counts, last_batch: []}\n"
        "  - expect: {query: click_counts, state: {operator: 0, rows: []}}\n")[:4]
    assert _checks_not_supported(judged) == [] and _checks_not_supported(since_check) == []
    assert _checks_not_supported(last) == ["last_batch"]
    assert _checks_not_supported(state) == ["state"]


def test_steps_a_pipeline_does_not_run_yet_are_named():
    restart, conf, once, available, _ = _steps("  - restart\n  - restart: {conf: {spark.sql.shuffle.partitions: '2'}}\n"
                                            "  - run: once\n  - run: available_now\n")
    assert _step_not_supported(restart) is None and _step_not_supported(available) is None
    assert "with options is not supported for pipelines yet" in str(_step_not_supported(conf))
    assert "`run: once` is not supported for pipelines yet" in str(_step_not_supported(once))


def test_rows_since_the_previous_expect_are_the_table_now_less_the_table_then():
    observed = _FlowObserved([], [], "append", ["page", "n"], now=[("home", 2), ("cart", 1), ("home", 2), ("x", 1)],
                             before=[("cart", 1), ("home", 2)])
    assert observed.rows("rows") == [("home", 2), ("x", 1)]  # row by row: one of the two (home, 2) is new
    assert observed.rows("output") == [("home", 2), ("cart", 1), ("home", 2), ("x", 1)]


def test_a_flows_progress_is_waited_for_and_a_missing_one_is_said():
    """Spark reports a flow's progress to the session's listener on its own stream (`FlowProgress`): the
    reports of the batches the checkpoint lists are returned once there; one that never came is a
    HarnessTimeout naming the flow and the batch, never a batch observed without it."""
    import pytest

    from eventtime.harness.pipelinerun import FlowProgress
    from eventtime.harness.stream import HarnessTimeout

    listeners = []
    spark = SimpleNamespace(streams=SimpleNamespace(addListener=listeners.append, removeListener=listeners.remove))
    progress = FlowProgress(spark)
    for batch, dropped in ((2, 1), (3, 0)):
        report = {"name": "spark_catalog.eventtime_x.click_counts", "batchId": batch, "numInputRows": 2 - batch % 2 * 2,
                  "stateOperators": [{"numRowsDroppedByWatermark": dropped, "numRowsTotal": 1}]}
        listeners[0].onQueryProgress(SimpleNamespace(progress=SimpleNamespace(json=json.dumps(report))))
    got = progress.reports("click_counts", [2, 3], timeout=0)
    assert [(b, r["stateOperators"][0]["numRowsDroppedByWatermark"]) for b, r in got.items()] == [(2, 1), (3, 0)]
    with pytest.raises(HarnessTimeout, match=r"flow 'click_counts'.s batches \[4\] did not reach"):
        progress.reports("click_counts", [3, 4], timeout=0)
    progress.close()
    assert listeners == []


def test_only_flows_into_streaming_tables_have_checkpoints():
    place = Place("f.py", 1)
    graph = PipelineGraph(Path("spark-pipeline.yml"), "p", "s",
                          {"counts": Dataset("counts", "streaming_table", place),
                           "summary": Dataset("summary", "materialized_view", place)},
                          [FlowDef("counts", "counts", "flow", place), FlowDef("summary", "summary", "flow", place),
                           FlowDef("backfill", "counts", "flow", place)])
    assert streaming_flows(graph) == ["counts", "backfill"]
    assert streaming_flows(None) == []


def test_a_storage_root_is_an_absolute_uri():
    assert _uri("/srv/warehouse/x") == "file:///srv/warehouse/x"
    assert _uri("file:/srv/warehouse/x") == "file:/srv/warehouse/x"
    assert _uri("hdfs://nn/x") == "hdfs://nn/x"


def test_a_printed_rerun_binds_a_pipeline_folder_to_its_contract():
    """`eventtime run ... --pipeline clicks/` is refused (a path binds to a contract by name): the re-run
    line a result prints names the contract."""
    import shlex
    from eventtime.commands.files import rerun_command
    from eventtime.loader import load_scenario
    from eventtime.projectconfig import parse_binding

    args = SimpleNamespace(contracts=(), spark_conf=None, timeout=None)
    words = shlex.split(rerun_command(load_scenario(SCENARIO), SCENARIO, "clicks/", args))
    assert words[3:] == ["--pipeline", "click_counts=clicks/"]
    assert parse_binding(words[4], "--pipeline") == ("click_counts", None, "clicks/")
    function = shlex.split(rerun_command(load_scenario(SCENARIO), SCENARIO, "shop.clicks:transform", args))
    assert function[3:] == ["--pipeline", "shop.clicks:transform"]  # a function still binds every contract
