"""A Spark Declarative Pipeline's spec and definition files loaded by PySpark's own loader, no JVM
(`harness/pipelinegraph.py`): every dataset and flow by name, kind and file:line; the errors name the file."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from eventtime.harness import pipelinegraph as pg

pytestmark = pytest.mark.skipif(not pg.available(), reason="pyspark.pipelines needs pyspark 4.1+")

SPEC = """\
name: shop
storage: storage
libraries:
  - glob:
      include: transformations/**
"""

# Line numbers are relied upon below: 5 @dp.table, 11 @dp.materialized_view, 16 @dp.temporary_view,
# 21 create_streaming_table, 24 @dp.append_flow; 26 lines.
DEFINITIONS = """\
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table(comment="bronze")
def bronze():
    raise AssertionError("a flow function is not called when the graph is only recorded")
    return spark.readStream.format("kafka").option("subscribe", "clicks").load()


@dp.materialized_view
def daily():
    raise AssertionError("not called")


@dp.temporary_view
def parsed():
    raise AssertionError("not called")


dp.create_streaming_table("silver")


@dp.append_flow(target="silver", name="silver_from_bronze")
def silver_flow():
    raise AssertionError("not called")
"""


def _project(root: Path, definitions: str = DEFINITIONS, spec: str = SPEC, name: str = "spark-pipeline.yml") -> Path:
    (root / "transformations").mkdir(parents=True)
    (root / name).write_text(spec)
    (root / "transformations" / "layers.py").write_text(definitions)
    (root / "transformations" / "gold.sql").write_text("CREATE MATERIALIZED VIEW gold AS SELECT * FROM daily\n")
    return root


def test_datasets_and_flows_by_name_kind_and_line(tmp_path):
    root = _project(tmp_path / "shop")
    graph = pg.load_graph(root)                                   # the folder resolves to its one spec
    layers = str((root / "transformations" / "layers.py").resolve())
    gold = str((root / "transformations" / "gold.sql").resolve())
    assert graph.name == "shop" and graph.storage == "storage"
    assert graph.spec_path == (root / "spark-pipeline.yml").resolve()
    assert {n: (d.kind, d.place.file, d.place.line) for n, d in graph.datasets.items()} == {
        "bronze": ("streaming_table", layers, 5),
        "daily": ("materialized_view", layers, 11),
        "parsed": ("temporary_view", layers, 16),
        "silver": ("streaming_table", layers, 21),
        "gold": ("materialized_view", gold, 1),   # read from the SQL file's CREATE (the server parses it)
    }
    assert sorted((f.name, f.target, f.kind, f.place.line) for f in graph.flows) == [
        ("bronze", "bronze", "flow", 5), ("daily", "daily", "flow", 11), ("gold", "gold", "flow", 1),
        ("parsed", "parsed", "flow", 16), ("silver_from_bronze", "silver", "flow", 24)]
    assert graph.sql_files == [Path(gold)]  # resolved while the working folder is the spec's: read again from anywhere


def test_a_sql_files_datasets_and_flows_by_kind_and_line():
    """As the server registers them: a streaming table without a query has no flow of its own, a `CREATE FLOW`
    writes its INSERT's table; quotes and qualifiers go, comments and string literals define nothing."""
    text = textwrap.dedent("""\
        -- CREATE STREAMING TABLE commented AS SELECT 1;
        CREATE OR REFRESH STREAMING TABLE `sales`.`Platinum`;
        CREATE FLOW copy AS INSERT INTO Platinum BY NAME
          SELECT * FROM STREAM gold;
        CREATE TEMPORARY VIEW numbers AS SELECT * FROM range(10);
        CREATE MATERIALIZED VIEW totals AS SELECT 'CREATE FLOW x AS INSERT INTO y' AS s;
        CREATE STREAMING TABLE windows AS SELECT * FROM STREAM(silver) WATERMARK ts DELAY OF INTERVAL 1 MINUTE;
        """)
    datasets, flows = pg.sql_definitions(Path("defs.sql"), text)
    assert [(d.name, d.kind, d.place.line) for d in datasets] == [
        ("Platinum", "streaming_table", 2), ("numbers", "temporary_view", 5), ("totals", "materialized_view", 6),
        ("windows", "streaming_table", 7)]
    assert [(f.name, f.target, f.place.line) for f in flows] == [
        ("copy", "Platinum", 3), ("numbers", "numbers", 5), ("totals", "totals", 6), ("windows", "windows", 7)]


def test_the_definition_files_are_unchanged_and_the_working_folder_restored(tmp_path, monkeypatch):
    root = _project(tmp_path / "shop")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    pg.load_graph(root / "spark-pipeline.yml")
    assert Path.cwd() == tmp_path
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts} == before


def test_a_dataset_defined_twice_is_named_at_both_lines(tmp_path):
    root = _project(tmp_path / "shop", DEFINITIONS + "\n\n@dp.table\ndef daily():\n    pass\n")
    with pytest.raises(pg.PipelineLoadError, match=r"layers\.py:29: dataset 'daily' is defined twice "
                                                   r"\(first at .*layers\.py:11\)"):
        pg.load_graph(root)


def test_module_level_use_of_spark_is_named_at_its_line(tmp_path):
    definitions = "from pyspark import pipelines as dp\n\nSKIP = spark.conf.get('shop.skip')\n"
    root = _project(tmp_path / "shop", definitions)
    with pytest.raises(pg.PipelineLoadError, match=r"layers\.py:3 .*uses `spark\.conf` while it is imported"):
        pg.load_graph(root)


def test_pyspark_own_spec_errors_name_the_spec_file(tmp_path):
    root = _project(tmp_path / "shop", spec=SPEC.replace("transformations/**", "transformations/**/*.py"))
    with pytest.raises(pg.PipelineLoadError, match=r"spark-pipeline\.yml: .*PIPELINE_SPEC_INVALID_GLOB_PATTERN"):
        pg.load_graph(root)
    other = _project(tmp_path / "other", spec=SPEC + "trigger: continuous\n")
    with pytest.raises(pg.PipelineLoadError, match=r"PIPELINE_SPEC_UNEXPECTED_FIELD.*trigger"):
        pg.load_graph(other)


def test_a_binding_names_a_spec_file_or_a_folder_with_exactly_one(tmp_path):
    with pytest.raises(pg.PipelineLoadError, match="no such pipeline spec file or folder"):
        pg.find_spec(tmp_path / "missing")
    with pytest.raises(pg.PipelineLoadError, match=r"no pipeline spec here \(looked for spark-pipeline\.yaml"):
        pg.find_spec(tmp_path)
    both = _project(tmp_path / "both")
    (both / "spark-pipeline.yaml").write_text(SPEC)
    with pytest.raises(pg.PipelineLoadError, match="holds both"):
        pg.find_spec(both)
    assert pg.find_spec(both / "spark-pipeline.yaml") == both / "spark-pipeline.yaml"


def test_only_the_files_the_globs_match_are_loaded(tmp_path):
    # a definition outside the spec's globs is not part of the pipeline, as for `spark-pipelines run`
    root = _project(tmp_path / "shop")
    (root / "scratch.py").write_text(textwrap.dedent("""\
        from pyspark import pipelines as dp
        @dp.table
        def stray():
            pass
        """))
    assert "stray" not in pg.load_graph(root).datasets


def test_an_update_on_a_classic_session_is_refused_before_anything_runs(tmp_path):
    from eventtime.harness.pipelinerun import run_update

    root = _project(tmp_path / "shop")
    # a classic SparkSession has no Connect `client`; a bare object has nothing to use either
    with pytest.raises(pg.PipelineLoadError, match="runs on a Spark Connect session only"):
        run_update(object(), root, (tmp_path / "storage").as_uri())


# -- SQL definition files: parsed by the server, so their reads of sources are refused at their lines ------
def _sql_project(root: Path, sql: str, definitions: str = DEFINITIONS) -> Path:
    _project(root, definitions)
    (root / "transformations" / "gold.sql").write_text(sql)
    return root


def test_sql_reads_of_the_pipelines_own_datasets_pass(tmp_path):
    root = _sql_project(tmp_path / "shop", textwrap.dedent("""\
        -- FROM kafka_topic in a comment is no read, nor 'FROM x' in a string
        CREATE MATERIALIZED VIEW gold AS
          WITH recent AS (SELECT EXTRACT(YEAR FROM ts) AS y, 'FROM x' AS s FROM daily)
          SELECT * FROM recent JOIN STREAM(silver) ON TRUE;
        CREATE STREAMING TABLE platinum;
        CREATE FLOW copy AS INSERT INTO platinum BY NAME SELECT * FROM STREAM gold;
        CREATE TEMPORARY VIEW numbers AS SELECT * FROM range(10);
        """))
    graph = pg.check_definitions(root)
    assert {"bronze", "daily", "silver"} <= set(graph.datasets)


@pytest.mark.parametrize("line, read, why", [
    (3, "SELECT * FROM STREAM read_files('/landing/clicks', format => 'json')", "reads a source in a SQL definition"),
    (3, "SELECT * FROM STREAM(kafka_clicks)", "reads 'kafka_clicks', which no definition file of pipeline 'shop'"),
    (3, "SELECT * FROM sales.orders", "reads 'sales.orders', which no definition file"),
])
def test_a_sql_read_outside_the_pipeline_is_an_error_at_its_line(tmp_path, line, read, why):
    root = _sql_project(tmp_path / "shop", f"CREATE MATERIALIZED VIEW gold AS\n  SELECT * FROM daily\n  UNION ALL {read};\n")
    with pytest.raises(pg.PipelineLoadError, match=rf"gold\.sql:{line}: .*{why}") as err:
        pg.check_definitions(root)
    assert str(root / "transformations" / "gold.sql") in str(err.value)


def test_with_a_python_file_needing_a_session_only_sql_source_functions_are_judged(tmp_path):
    """A Python file using `spark` while imported hides its datasets from a session-less load: a SQL read of
    a table is then left to the update (which knows the graph), a source function is still refused."""
    needs = DEFINITIONS + "\nCONF = spark.conf.get('x')\n"
    root = _sql_project(tmp_path / "shop", "CREATE MATERIALIZED VIEW gold AS SELECT * FROM daily;\n", needs)
    pg.check_definitions(root)
    (root / "transformations" / "gold.sql").write_text("CREATE STREAMING TABLE g AS SELECT * FROM STREAM read_kafka(x => 1);\n")
    with pytest.raises(pg.PipelineLoadError, match=r"gold\.sql:1: .*read_kafka"):
        pg.check_definitions(root)


@pytest.mark.parametrize("body, said", [
    ('from pyspark import pipelines as dp\nLANDING = {}["landing"]\n', "transformations/orders.py:2: a definition of "
     "pipeline 'orders' raised KeyError: 'landing'"),
    ('from pyspark import pipelines as dp\nX = (\n', "transformations/orders.py:2: a definition of pipeline 'orders' "
     "raised SyntaxError"),
])
def test_a_definition_that_raises_is_an_error_at_its_own_line(tmp_path, monkeypatch, body, said):
    (tmp_path / "transformations").mkdir()
    (tmp_path / "spark-pipeline.yml").write_text("name: orders\nstorage: st\nlibraries:\n"
                                                 "  - glob: {include: transformations/**}\n")
    (tmp_path / "transformations" / "orders.py").write_text(body)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pg.PipelineLoadError) as caught:
        pg.load_graph(tmp_path)
    assert str(caught.value).startswith(said)


def test_a_table_not_found_says_what_spark_does_with_a_watermark_on_a_dataset_of_the_pipeline():
    said = ("[TABLE_OR_VIEW_NOT_FOUND] The table or view `bronze_orders` cannot be found. Verify the spelling "
            "and correctness of the schema and catalog.")
    hint = pg._not_found_hint(said)
    assert "`bronze_orders` is a dataset of this pipeline" in hint and "WATERMARK col DELAY OF INTERVAL" in hint
    assert pg._not_found_hint("[SQL_CONF_NOT_FOUND] The SQL config \"x\" cannot be found.") == ""
