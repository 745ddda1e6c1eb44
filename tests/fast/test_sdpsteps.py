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


def test_an_update_step_with_a_selection_or_a_full_refresh():
    """`update` is `process` without options; with them, what `spark-pipelines run` takes."""
    from eventtime import spec as m

    plain, empty, selected, full, everything = _steps(
        "  - update\n  - update: {}\n  - update: {refresh: [click_counts]}\n"
        "  - update: {full_refresh: [click_counts, other]}\n  - update: {full_refresh: all}\n")[:5]
    assert all(isinstance(s, m.ProcessStep) and s.kind == "update" for s in (plain, empty, selected, full, everything))
    assert not plain.selective and not empty.selective
    assert (selected.refresh, selected.full_refresh, selected.full_refresh_all) == (("click_counts",), (), False)
    assert (full.refresh, full.full_refresh, full.full_refresh_all) == ((), ("click_counts", "other"), False)
    assert (everything.full_refresh, everything.full_refresh_all) == ((), True)


def _refused(body: str) -> str:
    import pytest

    from eventtime.errors import ScenarioInvalid

    text = SCENARIO.read_text().split("  - add:")[0] + body + "  - process\n"
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(text, str(SCENARIO), file=SCENARIO)
    line = text.splitlines().index(body.splitlines()[0]) + 1
    assert f":{line}" in str(info.value), str(info.value)
    return str(info.value)


def test_what_spark_refuses_in_a_selection_is_an_error_at_the_steps_line():
    assert "Spark refuses that" in _refused("  - update: {refresh: [a, click_counts], full_refresh: [Click_Counts]}\n")
    assert "CONFLICTING_PIPELINE_REFRESH_OPTIONS" in _refused("  - update: {refresh: [a], full_refresh: all}\n")
    assert "refreshh" in _refused("  - update: {refreshh: [a]}\n")
    _refused("  - update: {refresh: []}\n")  # an empty selection would be an update of everything
    _refused("  - update: {full_refresh: everything}\n")
    # the control: the same names, not overlapping, load
    assert _steps("  - update: {refresh: [a], full_refresh: [click_counts]}\n")[0].refresh == ("a",)


def test_a_selection_names_the_pipelines_datasets():
    """Spark filters the graph's tables by the names it is given (a misspelt one selects nothing): the kit
    refuses a name the pipeline does not define, listing those it does, before the update starts."""
    import pytest

    from eventtime.harness.pipelinerun import SelectionError, check_selection

    place = Place("f.py", 1)
    graph = PipelineGraph(Path("spark-pipeline.yml"), "clicks", "s",
                          {"click_counts": Dataset("click_counts", "streaming_table", place),
                           "summary": Dataset("summary", "materialized_view", place)}, [])
    check_selection(graph, ["click_counts", "SUMMARY", "spark_catalog.db.summary"])  # as Spark resolves them
    with pytest.raises(SelectionError, match=r"defines no dataset 'click_count' \(it defines click_counts, summary\)"):
        check_selection(graph, ["summary", "click_count"])


def test_a_full_refresh_replaces_the_tables_of_its_flows():
    from eventtime.sdpsteps import _replaced

    place = Place("f.py", 1)
    graph = PipelineGraph(Path("spark-pipeline.yml"), "p", "s",
                          {"counts": Dataset("counts", "streaming_table", place),
                           "other": Dataset("other", "streaming_table", place),
                           "summary": Dataset("summary", "materialized_view", place)},
                          [FlowDef("counts", "counts", "flow", place), FlowDef("summary", "summary", "flow", place),
                           FlowDef("backfill", "counts", "flow", place), FlowDef("other", "other", "flow", place)])
    assert _replaced(graph, ["Counts"], False) == {"counts", "backfill"}
    assert _replaced(graph, ["summary"], False) == set()  # a materialized view has no checkpoint
    assert _replaced(graph, [], True) == {"counts", "backfill", "other"}
    assert _replaced(graph, [], False) == set()


def test_a_new_checkpoints_batches_are_told_from_the_old_ones_by_query_id():
    """A full refresh starts a new checkpoint: its batch ids start at 0 again, under another query id."""
    from eventtime.harness.pipelinerun import FlowProgress

    listeners = []
    spark = SimpleNamespace(streams=SimpleNamespace(addListener=listeners.append, removeListener=listeners.remove))
    progress = FlowProgress(spark)
    for query, dropped in (("old", 1), ("new", 0)):
        report = {"name": "spark_catalog.x.click_counts", "id": query, "batchId": 0,
                  "stateOperators": [{"numRowsDroppedByWatermark": dropped}]}
        listeners[0].onQueryProgress(SimpleNamespace(progress=SimpleNamespace(json=json.dumps(report))))
    dropped_by = {q: progress.reports("click_counts", [0], 0, q)[0]["stateOperators"][0]["numRowsDroppedByWatermark"]
                  for q in ("old", "new")}
    assert dropped_by == {"old": 1, "new": 0}
    progress.close()


def test_a_selection_is_refused_for_a_job_or_a_function_at_its_line():
    from eventtime import spec as m
    from eventtime.binding import _pipeline_only
    from eventtime.drive import step_action
    from eventtime.results import ScenarioResult

    text = SCENARIO.read_text().split("  - add:")[0] + "  - update\n  - update: {full_refresh: all}\n"
    scenario = load_scenario_text(text, str(SCENARIO), file=SCENARIO)
    result = ScenarioResult(scenario, "shop.clicks:transform", "passed")
    assert _pipeline_only(result) and result.status == "error"
    assert f":{len(text.splitlines())}:5: `update` with a selection" in str(result.reason)
    plain = load_scenario_text(text.rsplit("  - update: {", 1)[0], str(SCENARIO), file=SCENARIO)
    assert m.pipeline_only(plain) is None  # the control: a plain `update` is `process`
    import pytest

    with pytest.raises(TypeError, match="takes no `update`"):
        step_action(scenario.steps[-1], SimpleNamespace(process=list), {})
    assert step_action(plain.steps[-1], SimpleNamespace(process=list), {}) is list


def test_a_failed_updates_spark_error_is_its_failure():
    """A run across a change reports Spark's own error class and message of a failed update (`cannot_restart`):
    they are in the update's events, mid-line; each message starts a line for `upgrade.spark_message`."""
    from eventtime.harness.pipelinerun import UpdateFailed
    from eventtime.sdpsteps import update_failure
    from eventtime.upgrade import spark_message

    exc = UpdateFailed("the update of pipeline 'clicks' (spark-pipeline.yml) failed: [PIPELINE_RUN_FAILED] flows "
                       "failed\nits last events:\nFlow 'click_counts' has FAILED. Error: [STREAM_FAILED] Query "
                       "terminated [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match.")
    failure = update_failure(exc, 7)
    assert failure is not None and failure.step == 7
    assert failure.error_classes == ["PIPELINE_RUN_FAILED", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"]
    assert spark_message(failure.text, "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE") == (
        "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match.")
    assert update_failure(ValueError("a definition that does not load"), 7) is None  # no run of the pipeline


def _result(text: str):
    from eventtime.results import ScenarioResult

    return ScenarioResult(load_scenario_text(text, str(SCENARIO), file=SCENARIO), "clicks_v2/", "passed")


def test_a_run_across_a_change_of_a_pipeline_needs_a_restart_and_a_pipeline_on_both_sides():
    from eventtime.upgrade import NewVersion

    compat = SimpleNamespace(features=frozenset(), connect=True, pipelines_not_applicable=lambda: None)
    no_restart = _result(SCENARIO.read_text().split("  - restart")[0])
    assert NewVersion(str(SCENARIO.parent / "clicks") + "/").previous_pipeline(no_restart, compat) is None
    assert no_restart.status == "not_applicable" and "no `start` or `restart` step" in str(no_restart.reason)
    function = _result(SCENARIO.read_text())
    assert NewVersion("eventtime.pipelines.reference:tumbling_count").previous_pipeline(function, compat) is None
    assert function.status == "error" and "is a Spark Declarative Pipeline: both must be of one kind" in str(
        function.reason)
    # the control: a pipeline's folder is its previous version, its spec found
    both = _result(SCENARIO.read_text())
    spec = NewVersion(str(SCENARIO.parent / "clicks") + "/").previous_pipeline(both, compat)
    assert spec is not None and spec.endswith("clicks/spark-pipeline.yml") and both.status == "passed"
    # a pipeline as the previous version of a function
    current = _result(SCENARIO.read_text())
    assert NewVersion(str(SCENARIO.parent / "clicks") + "/").refuses(current, False, compat)
    assert "is a Spark Declarative Pipeline and the current clicks_v2/ is a pipeline function" in str(current.reason)


def test_the_model_runs_a_plain_update_as_process_and_does_not_cover_a_selection():
    import pytest

    from eventtime.semantics import simulate
    from eventtime.semantics.plans import NotCovered

    path = Path(__file__).resolve().parents[2] / "scenarios" / "chained" / "window-count-waits-for-both-stages.scenario.yaml"
    text = path.read_text()
    assert "\n  - process\n" in text
    process = simulate(load_scenario_text(text, str(path), file=path))
    import re

    update = simulate(load_scenario_text(re.sub(r"^  - process\b", "  - update", text, flags=re.M), str(path), file=path))
    assert [(s.kind, [b.watermark_after_ms for b in s.batches]) for s in update.steps] == [
        ("update" if s.kind == "process" else s.kind, [b.watermark_after_ms for b in s.batches]) for s in process.steps]
    assert any(s.kind == "update" and s.batches for s in update.steps)
    selective = text.replace("\n  - process\n", "\n  - update: {full_refresh: all}\n", 1)
    with pytest.raises(NotCovered, match="does not model a pipeline update's selection or full refresh"):
        simulate(load_scenario_text(selective, str(path), file=path))


class _Conf:
    """A session's settings as `spark.conf` holds them; `static` ones refuse a set, as Spark's do on a live
    session."""

    def __init__(self, values: dict, static: set):
        self.values, self.static = dict(values), static

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        if key in self.static:
            raise RuntimeError(f"CANNOT_MODIFY_CONFIG {key}")
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


def test_the_specs_configuration_is_on_the_session_while_definitions_register_and_put_back_after():
    from eventtime.harness.pipelinerun import _session_configuration
    conf = _Conf({"spark.sql.shuffle.partitions": "200", "spark.executor.memory": "1g"}, {"spark.executor.memory"})
    spark = SimpleNamespace(conf=conf)
    spec = {"orders.landing_path": "/landing/orders", "spark.sql.shuffle.partitions": "2",
            "spark.executor.memory": "8g"}
    with _session_configuration(spark, spec):
        seen = dict(conf.values)
    assert seen == {"orders.landing_path": "/landing/orders", "spark.sql.shuffle.partitions": "2",
                    "spark.executor.memory": "1g"}   # a static setting is skipped, as PySpark's builder skips it
    assert conf.values == {"spark.sql.shuffle.partitions": "200", "spark.executor.memory": "1g"}


def test_the_session_is_put_back_when_a_definition_fails_while_registering():
    from eventtime.harness.pipelinerun import _session_configuration
    conf = _Conf({}, set())
    try:
        with _session_configuration(SimpleNamespace(conf=conf), {"orders.landing_path": "/landing"}):
            raise ValueError("a definition's own error")
    except ValueError:
        pass
    assert conf.values == {}
