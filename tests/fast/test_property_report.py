"""check-properties' verdicts in the reports (issue 46, "a report: per property, how many generated streams it
held on, and the shrunk counterexamples; in the HTML and JSON reports beside the verdicts"): `--json` writes
each property's entry into a results file (docs/results-format.md, *Properties*), and `eventtime report`
shows them in the HTML, the Markdown summary and JUnit XML. No Spark: the check is a stand-in."""
from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from collections import Counter
from importlib import resources

import jsonschema
import pytest

from eventtime.cli import main
from eventtime.properties import CheckReport, Counterexample, PropertyReport
from eventtime.report import build_report
from eventtime.resultsfile import build_document, read_results, write_results

SCHEMA = json.loads(resources.files("eventtime").joinpath("schema/results.schema.json").read_text("utf-8"))
RUNTIME = {"spark_version": "4.3.0", "pyspark_version": "4.3.0", "java_version": "17", "master": "local[2]"}
WHY = "a batch run again after a crash after step 2 changed written 'out': 1 row(s) more: [a, <b>, 2]"


def _check() -> CheckReport:
    """One property of each verdict."""
    ce = Counterexample("exactly-once-rerun", "page_windows", "scenario: exactly-once-rerun-page-windows\n", [WHY])
    return CheckReport("page_windows", [
        PropertyReport("no-query-dies", held_on=7, not_judged=Counter({"the run ended in an error": 2}),
                       run_errors=Counter({"jobs/p.py:3 (in main): boom": 2}),
                       judged_by=Counter({"split": 5, "merge": 2})),
        PropertyReport("exactly-once-rerun", held_on=2, counterexample=ce),
        PropertyReport("bounded-state", does_not_apply="complete mode only"),
        PropertyReport("restart-transparency", error="every run fails as eventtime run fails it: column 'n' ..."),
        PropertyReport("batch-boundary-independence",
                       not_judged=Counter({"one data batch, of one row: nothing to split or merge": 3})),
    ], "shop.pages:main")


def _file(tmp_path) -> str:
    doc = build_document([], tool="check-properties", command="eventtime check-properties page_windows",
                         properties=_check().records(RUNTIME, {"max_examples": 9, "seed": 1}))
    return str(write_results(tmp_path / "props.json", doc))


def test_each_verdict_is_written_as_the_schema_says_and_read_back(tmp_path):
    path = _file(tmp_path)
    doc = json.loads(open(path).read())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    verdicts = {p["property"]: p["verdict"] for p in doc["properties"]}
    assert verdicts == {"no-query-dies": "held", "exactly-once-rerun": "broken", "bounded-state": "does_not_apply",
                        "restart-transparency": "not_checked", "batch-boundary-independence": "judged_nothing"}
    assert doc["run"]["spark_version"] == "4.3.0" and doc["run"]["tool"] == "check-properties"
    broken = next(p for p in doc["properties"] if p["verdict"] == "broken")
    assert broken["counterexample"]["why"] == [WHY] and broken["implementation"] == "shop.pages:main"
    assert broken["settings"] == {"max_examples": 9, "seed": 1}
    assert read_results(path).properties == doc["properties"]


def test_the_verdicts_that_fail_are_the_ones_the_command_exits_1_on():
    check = _check()
    assert [p.held for p in check.properties] == [True, False, True, False, False]
    assert not check.held


def test_the_html_report_shows_each_property_and_the_counterexample_escaped(tmp_path):
    html = build_report([_file(tmp_path)]).html("2026-11-28T00:00:00Z")
    assert 'id="properties"' in html
    for text in ("held on 7 generated stream(s) (judged by a split on 5, a merge on 2), not judged on 2", "BROKEN; held on 2 stream(s) before it broke",
                 "does not apply: complete mode only", "not checked: every run fails",
                 "judged on no generated stream, not judged on 3", "scenario: exactly-once-rerun-page-windows",
                 "2 stream(s) ended in: jobs/p.py:3 (in main): boom"):
        assert text in html, text
    assert "[a, &lt;b&gt;, 2]" in html and "[a, <b>, 2]" not in html


def test_the_markdown_summary_lists_them_and_the_broken_ones_reasons(tmp_path):
    md = build_report([_file(tmp_path)]).markdown()
    assert "### Properties on generated streams (5, 3 failing)" in md, md
    assert "| page_windows | `shop.pages:main` | 4.3.0 | `exactly-once-rerun` | BROKEN" in md, md
    assert WHY in md
    assert "held on 7 generated stream(s) (judged by a split on 5, a merge on 2), not judged on 2" in md, md
    assert "| Spark | passed |" not in md  # properties only: no empty table of scenario verdicts


def test_junit_fails_the_broken_and_the_unjudged_errs_the_unchecked_and_skips_what_does_not_apply(tmp_path):
    root = ET.fromstring(build_report([_file(tmp_path)]).junit())
    (suite,) = [s for s in root if s.get("name") == "Properties on generated streams"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("5", "2", "1", "1")
    assert root.get("failures") == "2" and root.get("errors") == "1"
    (broken,) = [c for c in suite if c.get("name").startswith("exactly-once-rerun")]
    assert WHY in broken.find("failure").text


def test_a_malformed_entry_is_refused_naming_the_file_and_the_property(tmp_path, capsys):
    path = _file(tmp_path)
    doc = json.loads(open(path).read())
    doc["properties"][1]["held_on"] = "two"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    code = main(["report", str(tmp_path / "bad.json"), "--html", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 2 and "bad.json" in err and "property #2" in err and "'held_on'" in err, err


ROWS = textwrap.dedent("""\
    contract: page_windows
    description: clicks -> clicks per page
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
    output:
      columns: "page string, clicks bigint"
    """)


@pytest.fixture
def stand_in(monkeypatch):
    """The command with a stand-in session and check: no Spark."""
    from eventtime import properties
    from eventtime.commands import spark
    from eventtime.harness import backend

    class Runtime:
        def runtime(self):
            return dict(RUNTIME)

    def check(contract, target, *, properties, **kwargs):
        return _check()
    monkeypatch.setattr(spark, "open_session", lambda args: (object(), 0))
    monkeypatch.setattr(properties, "check_properties", check)
    monkeypatch.setattr(backend, "backend_for", lambda session: Runtime())


def test_check_properties_json_is_what_eventtime_report_reads(tmp_path, monkeypatch, capsys, stand_in):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(ROWS)
    code = main(["check-properties", "page_windows.contract.yaml", "--pipeline", "page_windows=json:loads",
                 "--json", "out/props.json", "--seed", "3"])
    out = capsys.readouterr().out
    assert code == 1 and "wrote out/props.json" in out, out  # a property broke: the command fails, the file is written
    doc = json.loads((tmp_path / "out/props.json").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["properties"][0]["settings"]["seed"] == 3
    assert doc["run"]["command"].startswith("eventtime")  # the command line, as run/certify record it
    code = main(["report", "out/props.json", "--markdown", "r.md"])
    out = capsys.readouterr().out
    assert code == 0 and "5 properties checked on generated streams, 3 broken, not checked or judged on nothing" in out
    assert "exactly-once-rerun" in (tmp_path / "r.md").read_text()


def test_without_json_no_file_and_no_runtime_asked(tmp_path, monkeypatch, capsys, stand_in):
    from eventtime.harness import backend

    monkeypatch.setattr(backend, "backend_for", lambda session: pytest.fail("the runtime was asked without --json"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(ROWS)
    assert main(["check-properties", "page_windows.contract.yaml", "--pipeline", "page_windows=json:loads"]) == 1
    assert not list(tmp_path.glob("**/*.json"))
