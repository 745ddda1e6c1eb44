"""`eventtime report`: merging results files, differences across versions, and the HTML, Markdown and
JUnit outputs, from real results files (tests/fast/data/report, see its README) and edited copies."""
from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from eventtime.cli import main
from eventtime.report import build_report
from eventtime.report.differences import AVAILABILITY, BEHAVIOUR, VERDICT
from eventtime.report.timeline import build_timeline
from eventtime.textreport import short_name, verdict_mark

DATA = Path(__file__).parent / "data"
REPORT = DATA / "report"
FILES = sorted(REPORT.glob("*.json"))
GENERATED = "2024-01-01T00:00:00Z"


def _load(name: str) -> dict:
    return json.loads((REPORT / name).read_text(encoding="utf-8"))


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _as_version(doc: dict, version: str) -> dict:
    """The same results as if run on another Spark version."""
    doc = copy.deepcopy(doc)
    doc["run"]["spark_version"] = version
    for r in doc["results"]:
        r["spark_version"] = version
        r["runtime"]["spark_version"] = version
    return doc


def _cells_from_json(paths) -> dict[tuple[str, str, str], str]:
    out = {}
    for p in paths:
        doc = json.loads(Path(p).read_text(encoding="utf-8"))
        for r in doc["results"]:
            version = (r.get("runtime") or {}).get("spark_version") or doc.get("spark_version") \
                or doc["run"]["spark_version"]
            out[(r["scenario"], short_name(r["implementation"]), version)] = verdict_mark(r["status"])
    return out


class _Cells(HTMLParser):
    """The matrix cells of the HTML report: (scenario, implementation, column) -> text."""

    def __init__(self):
        super().__init__()
        self.cells: dict[tuple[str, str, str], str] = {}
        self.svgs: dict[str, int] = {}
        self._row = self._name = self._impl = self._col = None
        self._in: str | None = None
        self.scripts_with_src = 0
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "tbody" and "row" in cls:
            self._row = a["id"]
        elif tag == "a" and "toggle" in cls:
            self._in = "name"
        elif tag == "code" and self._in is None and self._name and self._impl is None:
            self._in = "impl"
        elif tag == "td" and "cell" in cls:
            self._col, self._in = a["data-column"], "cell"
        elif tag == "svg" and self._row:
            self.svgs[self._row] = self.svgs.get(self._row, 0) + 1
        if tag in ("script", "img", "link", "iframe") and a.get("src") or tag == "link":
            self.scripts_with_src += 1
        if a.get("href"):
            self.links.append(a["href"])

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._row = self._name = self._impl = None
        if tag in ("a", "code", "td"):
            self._in = None

    def handle_data(self, data):
        if self._in == "name":
            self._name = data
        elif self._in == "impl":
            self._impl = data
        elif self._in == "cell":
            self.cells[(self._name, self._impl, self._col)] = data.strip()


# -- merge ---------------------------------------------------------------------------------------

def test_fixtures_are_real_runs_on_two_versions_with_failures():
    versions = {_load(p.name)["run"]["spark_version"] for p in FILES}
    assert len(versions) >= 2
    statuses = {r["status"] for p in FILES for r in _load(p.name)["results"]}
    assert {"passed", "failed", "not_applicable"} <= statuses


def test_merge_makes_one_column_per_version_and_one_row_per_scenario_and_implementation():
    report = build_report(FILES)
    m = report.matrix
    expected = _cells_from_json(FILES)
    assert [c.key for c in m.columns] == sorted({v for _, _, v in expected}, key=lambda v: [int(x) for x in v.split(".")])
    got = {(r.scenario, r.short_impl, col): cell.mark for r in m.rows for col, cell in r.cells.items()}
    assert got == expected
    assert [r.key for r in m.rows] == sorted(r.key for r in m.rows)
    for col in m.columns:
        assert sum(m.counts(col.key).values()) == sum(1 for k in expected if k[2] == col.key)


def test_same_version_in_two_files_with_the_same_rows_gets_a_column_per_file(tmp_path):
    doc = _load("bundled-4.3.0.json")
    a, b = _write(tmp_path / "a.json", doc), _write(tmp_path / "b.json", doc)
    m = build_report([a, b]).matrix
    assert [c.key for c in m.columns] == ["4.3.0 (a.json)", "4.3.0 (b.json)"]


def test_files_of_one_version_with_different_rows_share_a_column():
    m = build_report([REPORT / "bundled-4.3.0.json", REPORT / "wrong-4.3.0.json"]).matrix
    assert [c.key for c in m.columns] == ["4.3.0"]
    assert {r.contract for r in m.rows} == {"tumbling_count", "union_tumbling_count", "hold_timer"} & {
        r.contract for r in m.rows} and len(m.contracts) >= 2


# -- differences across versions ------------------------------------------------------------------

def _step_with_dropped(doc: dict):
    for r in doc["results"]:
        for step in r["steps"]:
            for b in step["batches"]:
                if b["data"]:
                    return r, step, b
    raise AssertionError("no data batch in the fixture")


def test_a_different_dropped_count_is_named_with_its_step_and_values(tmp_path):
    new = _load("bundled-4.3.0.json")
    old = _as_version(new, "3.5.9")
    r, step, batch = _step_with_dropped(old)
    total_new = sum(b["dropped"] for b in step["batches"])
    batch["dropped"] += 1
    line = next(s["line"] for s in old["scenarios"][r["scenario"]]["steps"] if s["index"] == step["index"])
    report = build_report([_write(tmp_path / "new.json", new), _write(tmp_path / "old.json", old)])
    diffs = [d for d in report.differences if d.row.scenario == r["scenario"]]
    assert [d.kind for d in diffs] == [BEHAVIOUR]
    assert diffs[0].details == (f"dropped at step {step['index']} (line {line}): "
                                f"{total_new + 1} on 3.5.9, {total_new} on 4.3.0",)
    md = report.markdown()
    assert f"  - dropped at step {step['index']} (line {line}): {total_new + 1} on 3.5.9, {total_new} on 4.3.0" in md


def test_rows_and_watermark_differences_are_listed_per_step(tmp_path):
    new = _load("bundled-4.3.0.json")
    old = _as_version(new, "3.5.9")
    r, step, batch = _step_with_dropped(old)
    batch["rows"].append(["zz", 0, 10_000_000, 7])
    step["watermark_ms"] = (step["watermark_ms"] or 0) + 1000
    report = build_report([_write(tmp_path / "new.json", new), _write(tmp_path / "old.json", old)])
    (d,) = [d for d in report.differences if d.row.scenario == r["scenario"]]
    assert any(x.startswith(f"rows written at step {step['index']} ") and "(zz, " in x and "on 3.5.9" in x
               for x in d.details)
    assert any(x.startswith(f"watermark after the step at step {step['index']} ") for x in d.details)


def test_verdict_and_feature_availability_differences_from_the_real_runs():
    report = build_report(FILES)
    kinds = {(d.row.scenario, d.kind) for d in report.differences}
    wrong35 = {r["scenario"]: r["status"] for r in _load("wrong-3.5.9.json")["results"]}
    wrong43 = {r["scenario"]: r["status"] for r in _load("wrong-4.3.0.json")["results"]}
    for name in wrong35:
        if wrong35[name] != wrong43[name]:
            assert (name, VERDICT) in kinds
    na = [(r["scenario"], r["reason"]) for r in _load("bundled-3.5.9.json")["results"] if r["status"] == "not_applicable"]
    assert na
    for name, reason in na:
        (d,) = [d for d in report.differences if d.row.scenario == name and d.kind == AVAILABILITY]
        assert d.details[0].startswith(f"N/A ({reason}) on 3.5.9, ")


def test_identical_runs_show_no_difference(tmp_path):
    doc = _load("bundled-4.3.0.json")
    report = build_report([_write(tmp_path / "a.json", doc), _write(tmp_path / "b.json", _as_version(doc, "4.0.0"))])
    assert report.differences == []
    assert "None: every scenario run on more than one version was observed identically" in report.markdown()


# -- timeline ---------------------------------------------------------------------------------------

def test_timeline_of_a_failing_run_marks_missing_and_unexpected_rows():
    m = build_report([REPORT / "wrong-4.3.0.json"]).matrix
    checked = 0
    for row in m.rows:
        cell = row.cells["4.3.0"]
        tl = build_timeline(row, cell, "4.3.0")
        failures = [f for s in cell.steps for f in s["failures"]]
        assert tl.missing == sum(len(f["missing"]) for f in failures)
        assert tl.unexpected == sum(len(f["unexpected"]) for f in failures)
        batches = [b for s in cell.steps for b in s["batches"]]
        assert len(tl.columns) == len(batches)
        added = sum(len(rows) for s in row.definition["steps"] if s["kind"] == "add" for rows in s["rows"].values())
        assert len(tl.events) == added
        assert sum(o.kind == "output" for o in tl.outputs) == sum(len(b["rows"]) for b in batches)
        assert sum(m.kind == "expect-failed" for m in tl.markers) == sum(
            s["status"] == "failed" for s in cell.steps if s["kind"] == "expect")
        # the watermark never moves back: y (downwards) never increases along the line
        ys = [s.y1 for s in tl.watermark if s.y1 == s.y2]
        assert ys == sorted(ys, reverse=True)
        checked += tl.missing > 0
    assert checked


def test_timeline_marks_late_events_and_restarts():
    m = build_report(FILES).matrix
    lates = restarts = 0
    for row in m.rows:
        for col, cell in row.cells.items():
            tl = build_timeline(row, cell, col)
            if tl is None:
                assert cell.status == "not_applicable"
                continue
            lates += sum(e.late for e in tl.events)
            restarts += sum(mk.kind == "restart" for mk in tl.markers)
    assert lates > 0 and restarts > 0


def _model_report(tmp_path: Path, text: str):
    """The report of the model's run of a scenario text, through a results file as `eventtime run` writes it."""
    from eventtime.loader import load_scenario_text
    from eventtime.resultsfile import build_document, result_record
    from eventtime.semantics import check_scenario

    result = check_scenario(load_scenario_text(text, "why.scenario.yaml"))
    result.runtime = {"spark_version": "4.3.0"}
    report = build_report([_write(tmp_path / "r.json", build_document([result_record(result)], tool="test"))])
    [row] = report.matrix.rows
    return report, build_timeline(row, row.cells["4.3.0"], "4.3.0")


def test_timeline_draws_the_explanation_of_a_missing_window(tmp_path):
    """The explanation (tests/fast/test_explain.py's tumbling case with late rows) in the picture: each
    batch's watermark before and after with the max event time that set it, the late row and the row only
    behind the watermark, the line at the missing window's end naming the batch that first ran with it."""
    from tests.fast.test_explain import TUMBLING_LATE

    report, tl = _model_report(tmp_path, TUMBLING_LATE)
    assert "watermark 00:00:07 -> 00:00:21 (max event time 00:00:26)" in tl.columns[2].title
    assert "batch 2 left watermark 00:00:21, set by the max event time it read, 00:00:26" in [s.title for s in tl.watermark]
    late = {e.title.split(" read")[0]: (e.late, e.behind) for e in tl.events}
    assert late == {"events (a, 00:00:12)": (False, False), "events (a, 00:00:26)": (False, False),
                    "events (b, 00:00:15)": (True, False), "events (a, 00:00:21)": (False, True)}
    [closes] = tl.closes
    assert closes.title.splitlines()[0] == ("a window ending at 00:00:20 closes when a batch runs with a watermark at "
                                            "or after it: batch 3 was the first to run with one (00:00:21)")
    assert closes.title.splitlines()[1].startswith("a row ending at 00:00:20 is written by the first batch")  # its words
    assert closes.y1 == closes.y2 and tl.left == closes.x1 and closes.x2 == tl.right
    html = report.html(generated_at=GENERATED)
    assert html.count('<line class="closes"') == 2 and 'class="ev src-0 behind"' in html  # the line and its legend
    assert "watermark that closes a missing window" in html


def test_timeline_of_rows_on_time_marks_none_late_and_a_passing_run_no_closing_line(tmp_path):
    """Controls: the same rows moved past the watermark are neither late nor behind (the window still
    missing: a closing line no batch has reached); the passing run draws no closing line."""
    from tests.fast.test_explain import TUMBLING_LATE

    on_time = TUMBLING_LATE.replace('[b, "00:00:15"], [a, "00:00:21"]', '[b, "00:00:22"]').replace(
        '[[b, "00:00:10", "00:00:20", 1]]', '[[b, "00:00:20", "00:00:30", 1]]')
    _, tl = _model_report(tmp_path, on_time)
    assert not any(e.late or e.behind for e in tl.events)
    assert [c.title.splitlines()[0] for c in tl.closes] == [
        "a window ending at 00:00:30 closes when a batch runs with a watermark at or after it: no batch has run with "
        "one yet"]
    passing = TUMBLING_LATE.replace('[[b, "00:00:10", "00:00:20", 1]]', "[]").replace("dropped: 0", "dropped: 1")
    _, tl = _model_report(tmp_path, passing)
    assert tl.closes == [] and tl.missing == 0


# -- outputs ----------------------------------------------------------------------------------------

def test_html_matrix_matches_the_files_and_is_self_contained_and_deterministic():
    report = build_report(FILES, title="T <&>")
    html = report.html(generated_at=GENERATED)
    assert html == build_report(FILES, title="T <&>").html(generated_at=GENERATED)
    assert html.count(GENERATED) == 1
    assert "<title>T &lt;&amp;&gt;</title>" in html
    p = _Cells()
    p.feed(html)
    expected = _cells_from_json(FILES)
    assert {k: v for k, v in p.cells.items() if v != "–"} == expected
    assert p.scripts_with_src == 0
    assert all(link.startswith("#") for link in p.links), [x for x in p.links if not x.startswith("#")]
    failing = {r.anchor for r in report.matrix.rows if any(c.failed for c in r.cells.values())}
    assert failing and all(p.svgs.get(a, 0) >= 1 for a in failing)
    assert "Behaviour differences across versions" in html and "Feature availability" in html


def test_html_escapes_what_the_files_say(tmp_path):
    doc = _load("bundled-4.3.0.json")
    name = doc["results"][0]["scenario"]
    doc["scenarios"][name]["description"] = "<script>alert(1)</script>"
    html = build_report([_write(tmp_path / "x.json", doc)]).html(generated_at=GENERATED)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_markdown_summary_counts_differences_and_failures():
    report = build_report(FILES)
    md = report.markdown()
    for col in report.matrix.columns:
        n = report.matrix.counts(col.key)
        assert f"| {col.key} | {n['passed']} | {n['failed']} | {n['error']} | {n['not_applicable']} |" in md
    assert "### What changed" in md and "No baseline given" in md
    assert "### Behaviour differences across versions" in md
    failures = [(r.scenario, col) for r in report.matrix.rows for col, c in r.cells.items() if c.failed]
    assert f"### Failures ({len(failures)})" in md
    summaries = [line for line in md.splitlines() if line.startswith("<details><summary>")]
    for scenario, col in failures:  # one block per row and failure text, naming every version it failed on
        assert any(f"<b>{scenario}</b>" in x and col in x.split(" on Spark ")[1].split("<")[0].split(", ")
                   for x in summaries)
    assert "missing (expected, not produced)" in md


def test_markdown_what_changed_against_a_baseline(tmp_path):
    new = _load("wrong-4.3.0.json")
    old = copy.deepcopy(new)
    flipped = old["results"][0]
    flipped["status"] = "passed"
    gone = old["results"][1]["scenario"]
    new["results"] = [r for r in new["results"] if r["scenario"] != gone]
    extra = copy.deepcopy(new["results"][-1])
    old["results"] = [r for r in old["results"] if r["scenario"] != extra["scenario"]]
    report = build_report([_write(tmp_path / "new.json", new)], baseline=[_write(tmp_path / "old.json", old)])
    md = report.markdown()
    impl = flipped["implementation"]
    assert f"- {flipped['scenario']} `[{impl}]` on Spark 4.3.0: PASS → FAIL" in md
    assert f"- {gone} `[{impl}]` on Spark 4.3.0: was FAIL" in md
    assert f"- {extra['scenario']} `[{impl}]` on Spark 4.3.0: FAIL" in md
    assert {c.kind for c in report.changes} == {"flipped", "added", "removed"}


def test_junit_has_a_suite_per_version_and_a_case_per_row():
    report = build_report(FILES)
    root = ET.fromstring(report.junit())
    assert root.tag == "testsuites"
    expected = _cells_from_json(FILES)
    marks = list(expected.values())
    assert int(root.get("tests")) == len(marks)
    assert int(root.get("failures")) == marks.count("FAIL")
    assert int(root.get("errors")) == marks.count("ERROR")
    assert int(root.get("skipped")) == marks.count("N/A")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"Spark {c.key}" for c in report.matrix.columns]
    for s in suites:
        cases = s.findall("testcase")
        assert int(s.get("tests")) == len(cases)
        assert int(s.get("failures")) == len(s.findall("testcase/failure"))
        assert int(s.get("skipped")) == len(s.findall("testcase/skipped"))
        assert s.find("properties/property[@name='spark_version']").get("value") == s.get("name").split()[1]
        for f in s.findall("testcase/failure"):
            assert f.get("message") and "step " in f.text
        names = {c.get("name") for c in cases}
        assert len(names) == len(cases)


# -- format 0 and bad input ----------------------------------------------------------------------

def test_version_0_files_still_render(tmp_path):
    report = build_report([DATA / "results-v0.json"])
    html = report.html(generated_at=GENERATED)
    assert "predates scenario definitions (format 0)" in html
    assert ET.fromstring(report.junit()).get("tests") == str(len(json.loads((DATA / "results-v0.json").read_text())["results"]))
    assert "### Failures" in report.markdown()


def _bad(tmp_path, name, mutate) -> Path:
    doc = _load("wrong-4.3.0.json")
    mutate(doc)
    return _write(tmp_path / name, doc)


@pytest.mark.parametrize("make, what", [
    (lambda p: p / "missing.json", "cannot read"),
    (lambda p: (p / "t.json").write_text("{nope") and p / "t.json", "not valid JSON"),
    (lambda p: (p / "l.json").write_text("[1]") and p / "l.json", "no 'results' list"),
    (lambda p: _bad(p, "s.json", lambda d: d["results"][0].__setitem__("steps", "x")), "'steps' is not a list"),
    (lambda p: _bad(p, "b.json", lambda d: d["results"][0]["steps"][2]["batches"].append({"dropped": "x"})),
     "'dropped' is not an integer"),
    (lambda p: _bad(p, "r.json", lambda d: d.__setitem__("run", "x")), "not a well-formed results file"),
    (lambda p: _bad(p, "d.json", lambda d: next(iter(d["scenarios"].values())).__setitem__("steps", 3)),
     "'steps' is not a list of objects"),
    (lambda p: _bad(p, "f.json", lambda d: d.__setitem__("format", "other")), "not an eventtime results file"),
])
def test_bad_input_is_one_line_naming_the_file_and_exit_2(tmp_path, capsys, make, what):
    path = make(tmp_path)
    rc = main(["report", str(REPORT / "wrong-4.3.0.json"), str(path), "--html", str(tmp_path / "out.html")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"eventtime: error: {path}: ") and what in err and "Traceback" not in err
    assert not (tmp_path / "out.html").exists()


def test_cli_writes_the_three_reports_by_default(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = main(["report"] + [str(p) for p in FILES])
    out = capsys.readouterr().out
    assert rc == 0
    for name in ("reports/report.html", "reports/report.md", "reports/junit.xml"):
        assert (tmp_path / name).stat().st_size > 0 and f"wrote {name}" in out
    rc = main(["report", str(FILES[0]), "--junit", "j.xml", "--title", "Mine"])
    assert rc == 0 and (tmp_path / "j.xml").exists()
    assert ET.parse(tmp_path / "j.xml").getroot().get("name") == "Mine"


# -- --upgrade FROM TO ------------------------------------------------------------------------------

def test_upgrade_names_each_changed_scenario_with_its_file_step_and_values(tmp_path, capsys):
    new = _load("bundled-4.3.0.json")
    old = _as_version(new, "3.5.3")
    r, step, batch = _step_with_dropped(old)
    batch["dropped"] += 1
    definition = old["scenarios"][r["scenario"]]
    line = next(s["line"] for s in definition["steps"] if s["index"] == step["index"])
    paths = [str(_write(tmp_path / "old.json", old)), str(_write(tmp_path / "new.json", new))]
    rc = main(["report", *paths, "--upgrade", "3.5.3", "4.3.0", "--markdown", str(tmp_path / "up.md")])
    out = capsys.readouterr().out
    total = len(new["results"])
    assert rc == 0 and f"Upgrade from Spark 3.5.3 to 4.3.0: {total} scenario runs on both, 1 changed" in out, out
    head = f"  {r['scenario']} [{short_name(r['implementation'])}] ({r['file']}:{definition['line']}): PASS on both"
    assert head in out, out
    assert f"dropped at step {step['index']} (line {line}): " in out and f"no change: {total - 1} of {total}" in out
    md = (tmp_path / "up.md").read_text()
    assert "**1 changed**" in md and f"`{r['file']}:{definition['line']}`" in md
    assert not (tmp_path / "reports").exists()  # only what was asked for: the summary
    # control: the same results on both versions are said to be unchanged
    rc = main(["report", paths[1], str(_write(tmp_path / "same.json", _as_version(new, "3.5.3"))),
               "--upgrade", "3.5.3", "4.3.0"])
    assert rc == 0 and f"no change in any of the {total}" in capsys.readouterr().out


def _across(doc: dict, outcomes: dict[str, dict], source: str = "3.5.3") -> dict:
    """`doc`'s results as runs across Spark lines from a checkpoint of `source` (run --previous-python):
    the scenarios in `outcomes` with that upgrade record, the others not applicable (no restart)."""
    doc = copy.deepcopy(doc)
    for r in doc["results"]:
        record = outcomes.get(r["scenario"])
        if record is None:  # as eventtime.crossline marks it: of a run across the lines, with no outcome
            r.update(status="not_applicable", reason="not a run across Spark lines: the scenario has no `start`")
            r["upgrade"] = {"previous": f"Spark {source}", "restart_step": None, "restart_where": None,
                            "outcome": None, "across": "spark", "previous_spark": source}
            continue
        r["upgrade"] = {"previous": f"Spark {source}", "restart_step": 4, "restart_where": f"{r['file']}:22:5",
                        "across": "spark", "previous_spark": source, **record}
        if record["outcome"] != "restarts":
            r.update(status="error", reason="cannot restart from the previous version's checkpoint (Spark 3.5.3)")
    return doc


def test_upgrade_lists_the_runs_across_the_two_versions_beside_the_differences(tmp_path, capsys):
    new = _load("bundled-4.3.0.json")
    first, second = sorted({r["scenario"] for r in new["results"]})[:2]
    across = _across(new, {first: {"outcome": "restarts"},
                           second: {"outcome": "cannot_restart", "error_class": "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"}})
    paths = [str(_write(tmp_path / "old.json", _as_version(new, "3.5.3"))), str(_write(tmp_path / "new.json", new)),
             str(_write(tmp_path / "across.json", across))]
    rc = main(["report", *paths, "--upgrade", "3.5.3", "4.3.0", "--markdown", str(tmp_path / "up.md")])
    out = capsys.readouterr().out
    runs = sum(1 for r in across["results"] if "upgrade" in r)
    total = len(new["results"])
    # the runs across are not a third column: the differences are those of the two versions' results
    assert rc == 0 and f"{total} scenario runs on both, 0 changed" in out, out
    assert f"Restarted on Spark 4.3.0 from checkpoints of 3.5.3: {runs} runs, " in out, out
    assert "cannot restart: STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE" in out and f"  {second} [" in out
    assert f"  {first} [" not in out.split("Restarted on")[1]  # a restart that works is counted, not listed
    md = (tmp_path / "up.md").read_text()
    assert "### Restarted on Spark 4.3.0 from checkpoints of 3.5.3" in md and "| cannot restart |" in md
    # the runs not applicable across the lines are listed with why, never left out
    assert f"{runs - 2} not applicable" in out, out
    assert (f"  {sorted(r['scenario'] for r in across['results'] if r['status'] == 'not_applicable')[0]} [" in out
            and "not applicable: not a run across Spark lines: the scenario has no `start`" in out), out
    assert f"{runs} runs across the two: " in md and "| not applicable | not a run across Spark lines" in md, md
    # control: without the runs across, no such section
    rc = main(["report", *paths[:2], "--upgrade", "3.5.3", "4.3.0"])
    assert rc == 0 and "Restarted on" not in capsys.readouterr().out
    # runs across other versions than FROM and TO are said, not shown as theirs
    other = str(_write(tmp_path / "other.json", _across(new, {first: {"outcome": "restarts"}}, source="3.4.4")))
    rc = main(["report", *paths[:2], other, "--upgrade", "3.5.3", "4.3.0"])
    err = capsys.readouterr().err
    assert rc == 2 and "the runs across Spark lines given restart 3.4.4 -> 4.3.0, none from a checkpoint of 3.5.3" in err


def test_upgrade_mentions_a_run_across_the_lines_where_nothing_applied(tmp_path, capsys):
    """Every scenario of the run across not applicable (jobs, no restart): the summary says so, naming each
    with why; it once left them out, as if they had not been asked for."""
    new = _load("bundled-4.3.0.json")
    across = _across(new, {})
    paths = [str(_write(tmp_path / "old.json", _as_version(new, "3.5.3"))), str(_write(tmp_path / "new.json", new)),
             str(_write(tmp_path / "across.json", across))]
    rc = main(["report", *paths, "--upgrade", "3.5.3", "4.3.0"])
    out = capsys.readouterr().out
    total = len(across["results"])
    assert rc == 0 and f"Restarted on Spark 4.3.0 from checkpoints of 3.5.3: {total} runs, {total} not applicable" in out
    assert out.count("not applicable: not a run across Spark lines") == total, out


def test_upgrade_to_a_version_the_files_do_not_hold_is_a_usage_error(capsys):
    rc = main(["report", *map(str, FILES), "--upgrade", "3.5.9", "4.2.0"])
    err = capsys.readouterr().err
    assert rc == 2 and "--upgrade TO 4.2.0: no results for Spark 4.2.0 (the files hold 3.5.9, 4.3.0" in err


def test_upgrade_from_a_column_to_itself_is_a_usage_error(capsys):
    rc = main(["report", str(REPORT / "bundled-4.3.0.json"), "--upgrade", "4.3.0", "4.3.0"])
    err = capsys.readouterr().err
    assert rc == 2 and "FROM and TO are the same results (4.3.0)" in err, err


def test_a_failure_shows_its_explanation_and_the_state_rows_by_their_own_types():
    from eventtime.report.values import failure_lines

    definition = {"date": "2024-01-01", "output_columns": [["key", "string"], ["window_end", "timestamp"]]}
    failure = {"where": "s.yaml:9:7", "message": "the state of dedupe (operator 0): 1 missing, 0 unexpected",
               "explanation": "why, line 1\nwatermark timeline:", "missing": [["a", 1704067210000000]],
               "columns": ["key.id", "key.ts"], "types": ["string", "timestamp"]}
    lines = failure_lines(failure, definition)
    assert lines[:3] == ["s.yaml:9:7: the state of dedupe (operator 0): 1 missing, 0 unexpected", "  why, line 1",
                         "  watermark timeline:"]
    assert "00:00:10" in lines[-1]  # a timestamp by the failure's own types
    untyped = failure_lines({k: v for k, v in failure.items() if k != "types"}, definition)
    assert "1704067210000000" in untyped[-1]  # control: by the output's types, the state's timestamp is a number
    assert failure_lines({**failure, "explanation": ""}, definition)[1].startswith("  missing")  # control
