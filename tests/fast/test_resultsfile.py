"""The results file: written per the schema, read back across format versions, bad files named."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from eventtime.loader import load_scenario
from eventtime.results import FAILED, CheckFailure, ScenarioResult, StepResult
from eventtime.resultsfile import (FORMAT_VERSION, ResultsFileError, build_document, read_results,
                                     result_record, write_results)
from eventtime.scenarios import SUITE_DIR

DATA = Path(__file__).parent / "data"
SCHEMA = json.loads(resources.files("eventtime").joinpath("schema/results.schema.json").read_text("utf-8"))


def _result(path: str, status: str = FAILED) -> ScenarioResult:
    sc = load_scenario(SUITE_DIR / path)
    res = ScenarioResult(sc, "pkg.mod:fn", status, spark_version="4.3.0",
                         runtime={"spark_version": "4.3.0", "java_version": "17.0.1", "master": "local[2]"})
    step = StepResult(1, "expect", sc.steps[-1].where, status=status, watermark_ms=5000)
    step.failures.append(CheckFailure("rows", sc.steps[-1].where, "rows differ", missing=[("a", 1)],
                                      unexpected=[("a", float("inf"))], columns=("key", "count")))
    res.steps.append(step)
    return res


def test_written_file_matches_the_schema_and_reads_back(tmp_path):
    recs = [result_record(_result("tumbling/append-late-row-dropped.scenario.yaml")),
            result_record(_result("tumbling/append-late-row-dropped.scenario.yaml", "passed"))]
    doc = build_document(recs, tool="certify", command="eventtime certify", seconds=1.5)
    out = write_results(tmp_path / "r.json", doc)
    data = json.loads(out.read_text())  # strict JSON: NaN / inf were turned into strings
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert data["format_version"] == FORMAT_VERSION
    assert data["run"]["java_version"] == "17.0.1" and data["run"]["spark_version"] == "4.3.0"
    assert data["counts"] == {"failed": 1, "passed": 1}
    assert list(data["scenarios"]) == ["tumbling-append-late-row-dropped"]  # one definition for both results
    definition = data["scenarios"]["tumbling-append-late-row-dropped"]
    adds = [s for s in definition["steps"] if s["kind"] == "add"]
    assert adds and all(isinstance(v, list) for s in adds for v in s["rows"].values())
    assert any("expect" in s for s in definition["steps"])
    assert data["results"][0]["steps"][0]["failures"][0]["unexpected"] == [["a", "Infinity"]]
    back = read_results(out)
    assert back.format_version == FORMAT_VERSION and len(back.results) == 2 and not back.warnings


def test_version_0_files_still_read():
    back = read_results(DATA / "results-v0.json")
    assert back.format_version == 0 and back.spark_version == "4.3.0"
    assert back.results[0]["runtime"]["spark_version"] == "4.3.0"


def test_newer_format_reads_with_a_warning(tmp_path):
    doc = build_document([], tool="run")
    doc["format_version"] = FORMAT_VERSION + 1
    doc["something_new"] = {"x": 1}
    p = tmp_path / "new.json"
    p.write_text(json.dumps(doc))
    back = read_results(p)
    assert back.warnings and "newer" in back.warnings[0]


@pytest.mark.parametrize("text, says", [
    ("{", "line 1: not valid JSON"),
    ("[]", "no 'results' list"),
    ('{"format": "other", "format_version": 1, "results": []}', "format 'other'"),
    ('{"format_version": 1, "format": "eventtime-results", "results": [{"scenario": 1}]}', "result #1"),
])
def test_bad_files_are_named_with_what_is_wrong(tmp_path, text, says):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ResultsFileError) as exc:
        read_results(p)
    assert str(p) in str(exc.value) and says in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(ResultsFileError, match="cannot read"):
        read_results(tmp_path / "nope.json")
