"""A contract bound to a Spark Declarative Pipeline (docs/pipelines.md, plan step 2): the binding's forms,
and what a run makes of it before any step (not applicable on a classic session or without
`pyspark.pipelines`, with the reason from the version seam; a SQL file reading a source is an error at its
line). No JVM: the sessions are stand-ins, the seam's answers are the real ones."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from eventtime import projectconfig
from eventtime.harness import pipelinegraph
from eventtime.harness.compat import ConnectCompat, SparkCompat, available_now_mixin
from eventtime.loader import load_scenario
from eventtime.results import ERROR, NOT_APPLICABLE, PASSED, ScenarioResult
from eventtime.scenarios import SUITE_DIR
from eventtime.userpipeline import DeclarativePipeline

pytest_plugins = ["pytester"]

SCENARIO = Path(SUITE_DIR) / "tumbling" / "append-late-row-dropped.scenario.yaml"
SPEC = "name: clicks\nstorage: storage\nlibraries:\n  - glob:\n      include: transformations/**\n"
COUNTS = """\
from pyspark import pipelines as dp


@dp.table
def click_counts():
    return spark.readStream.format("kafka").option("subscribe", "clicks").load()
"""


def _pipeline(root: Path, sql: str | None = None) -> Path:
    (root / "transformations").mkdir(parents=True)
    (root / "spark-pipeline.yml").write_text(SPEC)
    (root / "transformations" / "counts.py").write_text(COUNTS)
    if sql is not None:
        (root / "transformations" / "gold.sql").write_text(sql)
    return root


@pytest.mark.parametrize("target", ["pipelines/clicks/spark-pipeline.yml", "spark-pipeline.yaml", "pipelines/clicks/"])
def test_a_pipeline_is_bound_by_its_spec_or_its_folder(target):
    assert projectconfig.parse_binding(f"page_clicks = {target}", "ini") == ("page_clicks", None, target)
    assert projectconfig.is_path_target(target)  # from the settings file's folder, as a script's path


def test_a_folder_without_its_slash_is_neither_form():
    """Control: `pipelines/clicks` could be a misspelt script or module; the error says every form."""
    with pytest.raises(projectconfig.SettingsError, match="is not CONTRACT=MODULE:FUNCTION.*spark-pipeline.yml or its "
                                                          "folder, CONTRACT=path/to/folder/"):
        projectconfig.parse_binding("page_clicks = pipelines/clicks", "ini")
    assert not projectconfig.is_path_target("jobs:count")


def _prepare(compat, pipeline: str):
    return _prepared(compat, pipeline)[0]


def _prepared(compat, pipeline: str):
    from eventtime.binding import prepare

    result = ScenarioResult(load_scenario(SCENARIO), pipeline, PASSED, spark_version="4.3.0")
    prepared = prepare(result, pipeline, compat)
    # a pipeline never runs as a function: where it runs, its steps run as updates (`sdpsteps`)
    assert prepared is None or (isinstance(prepared[0], DeclarativePipeline) and prepared[1:] == (None, False))
    return result, prepared


def _classic() -> SparkCompat:
    compat = SparkCompat(SimpleNamespace(version="4.3.0"))
    compat.__dict__["features"] = frozenset()  # the scenario needs none; the stand-in has no JVM to ask
    return compat


def _connect() -> ConnectCompat:
    compat = ConnectCompat(SimpleNamespace(version="4.3.0"))
    compat.__dict__["features"] = frozenset()  # as above
    return compat


needs_pipelines = pytest.mark.skipif(not pipelinegraph.available(), reason="pyspark.pipelines needs pyspark 4.1+")


@needs_pipelines
def test_a_bound_pipeline_is_recognised_and_not_applicable_on_a_classic_session(tmp_path):
    root = _pipeline(tmp_path / "clicks")
    result = _prepare(_classic(), str(root / "spark-pipeline.yml"))
    assert result.status == NOT_APPLICABLE
    assert "runs on a Spark Connect session only" in result.reason and "this session is classic" in result.reason
    assert _prepare(_classic(), f"{root}/").reason == result.reason  # the folder form resolves to the same spec


@needs_pipelines
def test_over_connect_a_pipeline_is_prepared_to_run_its_steps_as_updates(tmp_path):
    """Prepared as the bound spec, to run as updates (tests/connect/test_connect_sdp_scenarios.py runs it)."""
    root = _pipeline(tmp_path / "clicks")
    result, prepared = _prepared(_connect(), f"{root}/")
    if available_now_mixin() is None:
        assert result.status == NOT_APPLICABLE and "SupportsTriggerAvailableNow" in result.reason
    else:
        assert result.status == PASSED and prepared[0].spec == str(root / "spark-pipeline.yml")


def test_without_pyspark_pipelines_it_is_not_applicable_with_the_reason(tmp_path, monkeypatch):
    root = _pipeline(tmp_path / "clicks")
    monkeypatch.setattr(pipelinegraph, "available", lambda: False)
    for compat in (_classic(), _connect()):
        result = _prepare(compat, str(root / "spark-pipeline.yml"))
        assert result.status == NOT_APPLICABLE
        assert "has no Spark Declarative Pipelines (pyspark.pipelines, Spark 4.1 and later)" in result.reason


@needs_pipelines
def test_a_sql_file_reading_a_source_is_an_error_at_its_line_on_any_session(tmp_path):
    root = _pipeline(tmp_path / "clicks", "CREATE STREAMING TABLE raw AS\n  SELECT * FROM STREAM read_files('/in');\n")
    for compat in (_classic(), _connect()):
        result = _prepare(compat, f"{root}/")
        assert result.status == ERROR
        assert f"{root / 'transformations' / 'gold.sql'}:2: `FROM STREAM read_files(`" in result.reason


def test_a_missing_spec_is_an_error_naming_the_forms(tmp_path):
    result = _prepare(_classic(), f"{tmp_path / 'nowhere'}/")
    assert result.status == ERROR and "no such pipeline spec file or folder" in result.reason


SCENARIO_TEXT = """\
scenario: mine
description: A late row is dropped (a pipeline bound by its folder).
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
sources:
  events: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add: {events: [[a, "00:00:03"]]}
  - process
  - expect: {no_output: true}
"""


@needs_pipelines
def test_the_pytest_plugin_binds_a_pipeline_from_the_projects_root(pytester):
    """`CONTRACT = pipelines/clicks/` in the ini: an item named as written (resolved when it runs, from the
    project's root: `path_from`, below)."""
    pytester.makefile(".scenario.yaml", mine=SCENARIO_TEXT)
    _pipeline(pytester.path / "pipelines" / "clicks")
    pytester.makeini("[pytest]\neventtime_pipelines = tumbling_count = pipelines/clicks/\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*mine[[]pipelines/clicks/[]]"])


def test_a_path_binding_is_from_the_settings_files_folder_keeping_a_folders_slash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert projectconfig.path_from(tmp_path / "proj", "pipelines/clicks/") == f"{tmp_path}/proj/pipelines/clicks/"
    assert projectconfig.path_from(tmp_path / "proj", "pipelines/clicks/", relative=True) == "proj/pipelines/clicks/"
    assert projectconfig.path_from(tmp_path / "proj", "jobs/job.py", relative=True) == "proj/jobs/job.py"
    result = _prepare(_classic(), projectconfig.path_from(tmp_path, "pipelines/click/"))  # a misspelt folder
    assert result.status == ERROR and "Spark Declarative Pipeline" in result.reason and "no such pipeline" in result.reason
