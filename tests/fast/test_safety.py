"""A scenario file cannot run code, name a pipeline, touch files or change Spark settings outside the allow-list."""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest
import yaml

import eventtime
from eventtime import cli
from eventtime.registry import CONTRACTS
from eventtime.loader import ALLOWED_CONF, ScenarioInvalid, find_scenario_files, load_scenario, schema
from eventtime.spec import Scenario
from eventtime.scenarios import SUITE_DIR

# -- YAML tags never construct anything -----------------------------------------------------------

# Each payload, loaded with PyYAML's unsafe loader, creates the file MARKER (the control below shows it).
PAYLOADS = [
    "!!python/object/apply:builtins.open [MARKER, w]",
    "!!python/object/apply:os.system [touch MARKER]",
    "!!python/object/new:subprocess.check_call [[touch, MARKER]]",
    "!<tag:yaml.org,2002:python/object/apply:builtins.open> [MARKER, w]",
    "!!python/object/apply:builtins.exec [\"open('MARKER', 'w')\"]",
    "!!python/object/apply:builtins.eval [\"open('MARKER', 'w')\"]",
]


def _placed(base: str, payload: str, marker: Path, where: str) -> tuple[str, int]:
    """The base scenario with `payload` at `where`; returns the text and the payload's line."""
    payload = payload.replace("MARKER", str(marker))
    if where == "description":
        return base.replace("description: A demo.", f"description: {payload}"), 2
    if where == "row":
        return base.replace('[a, "00:00:03"]', f'[a, {payload}]'), 14
    return base.replace("  - process\n", f"  - process\n  - expect:\n      failure: {{message: {payload}}}\n"), 17


@pytest.mark.parametrize("where", ["description", "row", "expect"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_python_tags_are_refused_with_a_place_and_nothing_runs(base_scenario, write_scenario, tmp_path, monkeypatch,
                                                                payload, where, capsys):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    text, line = _placed(base_scenario, payload, marker, where)
    path = write_scenario("evil.scenario.yaml", text)
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(path)
    assert [(p.line, p.message.split(" is not")[0]) for p in info.value.problems] == [
        (line, f"YAML tag {_tag(payload)!r}")]
    assert cli.main(["validate", str(path)]) == 1
    assert f"{path}:{line}:" in capsys.readouterr().out
    assert not marker.exists()
    assert not (tmp_path / "MARKER").exists()


def _tag(payload: str) -> str:
    tag = payload.split()[0]
    return tag[2:-1] if tag.startswith("!<") else "tag:yaml.org,2002:" + tag[2:]


def test_the_payloads_do_run_under_an_unsafe_loader(base_scenario, tmp_path, monkeypatch):
    """The control: the same texts do create the marker when PyYAML is allowed to construct objects."""
    monkeypatch.chdir(tmp_path)
    for i, payload in enumerate(p for p in PAYLOADS if "system" not in p and "check_call" not in p):
        marker = tmp_path / f"ran-{i}"
        text, _ = _placed(base_scenario, payload, marker, "description")
        try:
            yaml.unsafe_load(text)
        except Exception:  # noqa: BLE001 - what the payload returns need not be YAML-able; the side effect counts
            pass
        assert marker.exists(), payload


def test_the_loader_uses_only_the_safe_composer():
    """No call in the scenario-reading modules constructs Python objects from YAML."""
    unsafe = {"load", "load_all", "unsafe_load", "unsafe_load_all", "full_load", "full_load_all", "Loader",
              "UnsafeLoader", "FullLoader", "construct_python_object"}
    for name in ("yamlsource.py", "loader.py"):
        source = (Path(eventtime.__file__).parent / name).read_text("utf-8")
        used = {node.attr for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml"}
        assert used & unsafe == set(), f"{name} uses yaml.{sorted(used & unsafe)}"


# -- a pipeline is bound from outside, never by a scenario ---------------------------------------

PIPELINE_KEYS = ["pipeline", "implementation", "module", "function", "code", "entry_point", "reference"]


@pytest.mark.parametrize("key", PIPELINE_KEYS)
@pytest.mark.parametrize("old, new, line", [
    ("contract:", "KEY: os:system\ncontract:", 3),
    ("    event_time: ts", "    event_time: ts\n    KEY: os:system", 11),
    ("  window: 10 seconds", "  window: 10 seconds\n  KEY: os:system", 6),
    ("  - process\n", "  - KEY: os:system\n", 15),
    ("  - process\n", "  - process\n  - restart: {KEY: os:system}\n", 16),
    ("      no_output: true", "      no_output: true\n      KEY: os:system", 18),
], ids=["top", "source", "params", "step", "restart", "expect"])
def test_no_key_names_a_pipeline(base_scenario, key, old, new, line):
    with pytest.raises(ScenarioInvalid) as info:
        eventtime.loader.load_scenario_text(base_scenario.replace(old, new.replace("KEY", key), 1), "s.yaml")
    assert any(p.line == line and key in p.message for p in info.value.problems), info.value


def test_the_schema_and_the_model_have_no_place_for_a_pipeline():
    names = _property_names(schema())
    assert not [n for n in names if re.search(r"pipeline|implementation|module|function|code|import", n, re.I)]
    fields = {f.name for f in dataclasses.fields(Scenario)}
    assert not [f for f in fields if re.search(r"pipeline|implementation|module|function|code", f, re.I)]


def test_pipelines_are_resolved_only_from_the_command_line_the_pytest_config_and_the_registry():
    """Every call of resolve_pipeline / import_module in the package, and where its argument comes from."""
    calls = []
    root = Path(eventtime.__file__).parent
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in ("resolve_pipeline", "import_module", "__import__", "exec", "eval", "run_path",
                            "run_module"):
                    calls.append((path.relative_to(root).as_posix(), name, ast.unparse(node.args[0])))
    assert sorted(calls) == [
        ("__init__.py", "import_module", "f'.{module}'"),                     # the public names, from _EXPORTS
        ("binding.py", "resolve_pipeline", "pipeline or scenario.contract.reference"),  # caller's, or the registry's
        ("commands/execute.py", "resolve_pipeline", "target"),  # --pipeline, the ini key eventtime_pipelines,
                                                                # a contract's implementations
        ("errors.py", "import_module", "f'eventtime.{module}'"),              # the error classes, from _EXPORTS
        ("previous.py", "resolve_pipeline", "at_ref"),  # --previous-ref: the bound declarative pipeline, at the ref
        ("previous.py", "resolve_pipeline", "str(then)"),  # --previous-ref: the bound script, at the ref
        ("previous.py", "resolve_pipeline", "target"),  # --previous-ref: the bound module, at the ref
        ("properties.py", "import_module", "module"),  # check-properties: a contract's invariant hook, as a
                                                       # contract's implementations are (never a scenario's)
        ("properties.py", "resolve_pipeline", "pipeline"),  # check-properties: the pipeline it was given, for the
                                                            # parameter values it declares it supports
        ("pytest_plugin.py", "resolve_pipeline", "ref"),                      # option, ini, bind(), hook
        ("streambatch.py", "resolve_pipeline", "pipeline"),  # check-properties: the pipeline it was given
        ("userpipeline.py", "import_module", "module_name"),                  # inside resolve_pipeline
        ("userpipeline.py", "run_module", "self.module"),                     # a script job, from resolve_pipeline
        ("userpipeline.py", "run_path", "self.path"),
        ("watch.py", "resolve_pipeline", "self.pipeline"),                    # watch --pipeline
        ("watch.py", "resolve_pipeline", "target"),  # a contract's bound module, imported to watch it
    ]


# -- Spark settings: the allow-list only ----------------------------------------------------------

REFUSED_CONF = [
    "spark.sql.streaming.checkpointLocation", "spark.jars", "spark.jars.packages", "spark.driver.extraJavaOptions",
    "spark.executor.extraJavaOptions", "spark.sql.warehouse.dir", "spark.sql.catalog.evil", "spark.sql.extensions",
    "spark.plugins", "spark.sql.streaming.stateStore.rocksdb.dir", "spark.local.dir", "spark.python.worker.reuse",
    "spark.sql.session.timezone", "SPARK.SQL.SESSION.TIMEZONE", "Spark.sql.streaming.multipleWatermarkPolicy",
    "spark.sql.streaming.noDataMicroBatches.enabled ", " spark.sql.streaming.noDataMicroBatches.enabled",
    "spark.sql.streaming.noDataMicroBatches.enabled\u200b", "spark.hadoop.fs.defaultFS", "spark.sql.streaming.metricsEnabled",
]


@pytest.mark.parametrize("key", REFUSED_CONF)
@pytest.mark.parametrize("place", ["top", "start"])
def test_spark_settings_outside_the_allow_list_are_refused(base_scenario, key, place):
    quoted = '"' + key.encode("unicode_escape").decode("ascii") + '"'
    if place == "top":
        text, line = base_scenario.replace("sources:", f"conf:\n  {quoted}: x\nsources:", 1), 8
    else:
        text, line = base_scenario.replace("  - process\n", f"  - process\n  - restart:\n      conf:\n"
                                                            f"        {quoted}: x\n", 1), 18
    with pytest.raises(ScenarioInvalid) as info:
        eventtime.loader.load_scenario_text(text, "s.yaml")
    assert [(p.line, "cannot be set by a scenario" in p.message) for p in info.value.problems] == [(line, True)]


@pytest.mark.parametrize("key, value", [
    ("spark.sql.streaming.stateStore.providerClass", "com.evil.Provider"),
    ("spark.sql.streaming.stateStore.providerClass", "org.apache.spark.sql.execution.streaming.state.Other"),
    ("spark.sql.session.timeZone", "/etc/localtime"),
    ("spark.sql.session.timeZone", "../../etc/passwd"),
    ("spark.sql.streaming.multipleWatermarkPolicy", "MIN"),
])
def test_allowed_settings_take_only_allowed_values(base_scenario, key, value):
    text = base_scenario.replace("sources:", f"conf:\n  {key}: {value!r}\nsources:", 1)
    with pytest.raises(ScenarioInvalid) as info:
        eventtime.loader.load_scenario_text(text, "s.yaml")
    assert [p.line for p in info.value.problems] == [8]


@pytest.mark.parametrize("zone", ["/etc/localtime", "../../../etc/passwd", "Europe/../../etc/passwd", "America"])
def test_a_time_zone_name_cannot_reach_a_file(base_scenario, zone):
    text = base_scenario.replace("contract:", f"timezone: {zone!r}\ncontract:", 1)
    with pytest.raises(ScenarioInvalid) as info:
        eventtime.loader.load_scenario_text(text, "s.yaml")
    assert [(p.line, p.column) for p in info.value.problems] == [(3, 11)]
    assert "unknown time zone" in info.value.problems[0].message


def test_the_allow_list_holds_no_path_jar_or_free_class_setting():
    for key, values in ALLOWED_CONF.items():
        assert not re.search(r"dir|path|location|jar|file|extraJava|plugin|extensions|catalog", key, re.I), key
        if key.endswith("Class"):
            assert values and all(v.startswith("org.apache.spark.") for v in values), key
        if values is None:  # checked by the loader: any IANA zone name; a whole number from 1 to 64
            assert key in ("spark.sql.session.timeZone", "spark.sql.shuffle.partitions")


@pytest.mark.parametrize("value, ok", [(4, True), ("4", True), (64, True), (1, True), (0, False), (65, False),
                                       ("200", False), (2.5, False), (True, False), ("four", False), (-1, False)])
def test_shuffle_partitions_is_a_small_whole_number(base_scenario, value, ok):
    text = base_scenario.replace("contract:", f"conf: {{spark.sql.shuffle.partitions: {value!r}}}\ncontract:", 1)
    if ok:
        assert eventtime.loader.load_scenario_text(text, "s.yaml").conf == {"spark.sql.shuffle.partitions": str(value)}
        return
    with pytest.raises(ScenarioInvalid) as info:
        eventtime.loader.load_scenario_text(text, "s.yaml")
    [problem] = info.value.problems
    assert (problem.line, problem.column) == (3, 38)  # at the value
    assert "spark.sql.shuffle.partitions must be a whole number from 1 to 64" in problem.message


def test_the_conf_reaching_spark_is_allow_listed():
    """What a query is started with: the scenario's conf plus conf-backed contract parameters."""
    for contract in CONTRACTS.values():
        for spec in contract.params:
            assert spec.conf is None or spec.conf in ALLOWED_CONF, (contract.name, spec.conf)
    files, _ = find_scenario_files([SUITE_DIR])
    for f in files:
        assert set(load_scenario(f).query_conf()) <= set(ALLOWED_CONF), f


# -- no key names a file ------------------------------------------------------------------------------

# Every place in the schema that takes text, and what the text is. A new one fails this test until
# it is listed here: say what it means, and make sure it names no file.
TEXT_SLOTS = {
    "/properties/scenario": "name (pattern: no '/')",
    "/properties/description": "prose",
    "/properties/tags/items": "tag (pattern: no '/')",
    "/properties/contract": "contract name, looked up among the contracts declared near the scenario, registered or bundled (or an inline contract)",
    "/properties/params/additionalProperties": "parameter value: a duration or a choice",
    "/properties/requires/properties/spark": "version specifier",
    "/properties/requires/properties/features/items": "feature name, looked up in eventtime.harness.features",
    "/properties/date": "date literal",
    "/properties/timezone": "IANA zone name, looked up in the zone database (absolute names and '..' refused)",
    "/properties/conf/additionalProperties": "allow-listed Spark setting value",
    "/$defs/conf_change/properties/conf/additionalProperties": "allow-listed Spark setting value",
    "/$defs/time": "time literal",
    "/$defs/input": "input name, `SOURCE` or `SOURCE partition K` (pattern), looked up among the scenario's sources "
                    "and their partitions",
    "/$defs/duration": "duration literal",
    "/$defs/value": "a row value",
    "/$defs/source/properties/event_time": "column name",
    "/$defs/source/properties/topic": "a kafka topic name, written into the source's rows",
    "/$defs/row/oneOf/2": "a text or kafka source's row, read by eventtime.sourcekinds",
    "/$defs/source/properties/columns/oneOf/0": "columns as Spark DDL ('name type, ...'), read by eventtime.coltypes",
    "/$defs/source/properties/columns/oneOf/1/additionalProperties": "a Spark DDL type, read by eventtime.coltypes",
    "/$defs/generate/properties/source": "source name, looked up among the scenario's sources",
    "/$defs/dataset_names/items": "a pipeline's dataset name (pattern), looked up among the datasets it defines",
    "/$defs/batch/properties/watermark_before": "time literal",
    "/$defs/batch/properties/watermark_after": "time literal",
    "/$defs/expect/properties/watermark/oneOf/0": "time literal",
    "/$defs/expect/properties/watermark/oneOf/1/properties/at_least": "time literal",
    "/$defs/expect/properties/watermark/oneOf/1/properties/at_most": "time literal",
    "/$defs/expect/properties/batch_watermark": "time literal",
    "/$defs/expect/properties/state/properties/operator/oneOf/0": "an operator name, looked up among the query's stateful operators",
    "/$defs/expect/properties/state/properties/variable": "a state variable name, passed to Spark's state reader",
    "/$defs/operator/properties/name": "an operator name, compared with the operatorName Spark's progress reports",
    "/$defs/expect/properties/schema": "output schema as Spark DDL, read by eventtime.coltypes",
    "/$defs/expect/properties/topic": "topic name, compared with the topics the job's Kafka sinks publish to",
    "/$defs/expect/properties/query": "query name, checked against the contract's `queries` and the job's queries",
    "/$defs/conf_change/properties/query": "query name, checked against the job's queries when the step runs",
    "/$defs/query_only/properties/query": "query name, checked against the job's queries when the step runs",
    "/$defs/expect/properties/columns/items": "output column name, checked against the contract",
    "/$defs/expect/properties/ignore/items": "output column name, checked against the contract",
    "/$defs/expect/properties/failure/properties/error_class": "text to find in the error",
    "/$defs/expect/properties/failure/properties/exception": "text to find in the error",
    "/$defs/expect/properties/failure/properties/message": "text to find in the error",
    "/$defs/expect/properties/table": "table name, read with spark.table in the scenario's own database",
    "/$defs/expect/properties/written": "parameter name, checked against the contract's parameters of its kind",
    "/properties/job/properties/args/items": "an argument handed to the user's own job as text in sys.argv",
    "/properties/job/properties/env/additionalProperties": "a value the user's own job reads from os.environ "
                                                           "(names that set how processes start are refused)",
}
PATH_LIKE = re.compile(r"path|dir|(?<!pro)file|folder|location|checkpoint|output_to|jar|url|uri|warehouse|log", re.I)


def _property_names(node, out=None) -> set[str]:
    out = set() if out is None else out
    if isinstance(node, dict):
        out.update(node.get("properties", {}))
        for value in node.values():
            _property_names(value, out)
    elif isinstance(node, list):
        for value in node:
            _property_names(value, out)
    return out


def _text_slots(node, pointer="") -> set[str]:
    found = set()
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "string" or (isinstance(kind, list) and "string" in kind):
            found.add(pointer)
        for key, value in node.items():
            found |= _text_slots(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found |= _text_slots(value, f"{pointer}/{i}")
    return found


def test_no_schema_key_names_a_file():
    assert [n for n in _property_names(schema()) if PATH_LIKE.search(n)] == []


def test_every_text_slot_of_the_schema_is_known_and_none_is_a_path():
    slots = _text_slots(schema())
    assert sorted(slots - set(TEXT_SLOTS)) == [], "a new place takes text: list it in TEXT_SLOTS"
    assert sorted(set(TEXT_SLOTS) - slots) == []
    assert not [s for s, meaning in TEXT_SLOTS.items() if PATH_LIKE.search(meaning)]


def test_every_object_in_the_schema_closes_its_keys_or_constrains_them():
    """Free-form keys exist only where the loader checks them against the contract or the allow-list."""
    open_maps = []

    def walk(node, pointer=""):
        if isinstance(node, dict):
            if node.get("type") == "object" and node.get("additionalProperties", True) is not False:
                open_maps.append(pointer)
            for key, value in node.items():
                walk(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{pointer}/{i}")

    walk(schema())
    assert sorted(open_maps) == sorted([
        "/properties/params",          # names: the contract's parameters
        "/properties/conf",            # names: ALLOWED_CONF
        "/properties/sources",         # names: the contract's sources
        "/$defs/row/oneOf/1",          # names: the source's or the output's columns
        "/$defs/source/properties/columns/oneOf/1",  # names: columns, types read by eventtime.coltypes
        "/$defs/conf_change/properties/conf",  # names: ALLOWED_CONF
        "/$defs/add",                  # names: the declared sources
        "/$defs/static",               # names: the contract's static inputs
        "/$defs/partitioned_rows",     # names: `partition K` (pattern), K checked against the source's partitions
        "/$defs/watermark_input",      # names: inputs (pattern), checked against the sources and their partitions
        "/$defs/expect/properties/state/properties/rows/items",  # names: key./value. fields (checked by the loader)
        "/$defs/expect/properties/on_spark",  # names: version specifiers, each parsed by the loader
        "/$defs/expect/properties/where",  # names: the contract's output columns
        "/$defs/expect/properties/records/items/properties/headers/oneOf/0",  # names: a record's header keys
        "/properties/job/properties/env",  # names: a job's variables, process settings refused by the loader
    ])
