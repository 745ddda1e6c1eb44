"""The HTML report in a real headless Chromium: loads cleanly and offline, shows the matrix the results
files hold, opens a failing scenario to its timeline, and filters rows. Leaves a screenshot in reports/."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventtime.report import build_report
from eventtime.report.timeline import build_timeline
from eventtime.textreport import short_name, verdict_mark

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "fast" / "data" / "report"
FILES = sorted(DATA.glob("*.json"))
SCREENSHOT = ROOT / "reports" / "report-screenshot.png"

pytestmark = pytest.mark.browser


def _expected_cells() -> dict[tuple[str, str, str], str]:
    """(scenario, implementation short name, Spark version) -> PASS/FAIL/ERROR/N/A, read from the JSON."""
    out = {}
    for path in FILES:
        doc = json.loads(path.read_text(encoding="utf-8"))
        for r in doc["results"]:
            version = (r.get("runtime") or {}).get("spark_version") or doc["run"]["spark_version"]
            out[(r["scenario"], short_name(r["implementation"]), version)] = verdict_mark(r["status"])
    return out


@pytest.fixture(scope="module")
def report_page(browser, tmp_path_factory):
    assert len(FILES) >= 2, f"fixture results files missing under {DATA}"
    report = build_report(FILES, title="Browser check")
    html = tmp_path_factory.mktemp("report") / "report.html"
    html.write_text(report.html(generated_at="2024-01-01T00:00:00Z"), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(html.as_uri(), wait_until="load")
    yield page, report, problems, requests, html
    page.close()


def test_loads_without_console_errors_or_network(report_page):
    page, _, problems, requests, html = report_page
    assert problems == []
    assert requests == [html.as_uri()], "the report fetched something besides itself"


def test_matrix_has_the_cells_of_the_results_files(report_page):
    page, report, _, _, _ = report_page
    expected = _expected_cells()
    headers = page.eval_on_selector_all("#matrix thead th.col", "ths => ths.map(t => t.dataset.column)")
    versions = sorted({v for _, _, v in expected}, key=lambda v: tuple(int(x) for x in v.split(".")))
    assert headers == versions and len(versions) >= 2
    cells = page.eval_on_selector_all(
        "#matrix tbody.row td.cell",
        """tds => tds.map(td => [td.closest('tbody').querySelector('td.name a').textContent,
                                 td.closest('tbody').querySelector('td.impl code').textContent,
                                 td.dataset.column, td.textContent.trim()])""")
    shown = {(s, i, v): mark for s, i, v, mark in cells if mark != "–"}
    assert shown == expected
    assert len(cells) == len({(s, i) for s, i, _ in expected}) * len(versions)
    assert "FAIL" in shown.values() and "PASS" in shown.values()


def test_failing_scenario_opens_to_a_timeline_with_missing_and_unexpected_rows(report_page):
    page, report, _, _, _ = report_page
    row, column = next((r, c) for r in report.matrix.rows for c, cell in r.cells.items()
                       if cell.status == "failed" and any(f.get("missing") for s in cell.steps
                                                          for f in s.get("failures") or []))
    cell = row.cells[column]
    missing = sum(len(f.get("missing") or []) for s in cell.steps for f in s.get("failures") or [])
    unexpected = sum(len(f.get("unexpected") or []) for s in cell.steps for f in s.get("failures") or [])
    body = page.locator(f"#{row.anchor}")
    svg = body.locator(f"figure[data-column='{column}'] svg.timeline")
    assert not svg.is_visible()
    body.locator("a.toggle").click()
    assert svg.is_visible()
    assert svg.locator(".row-mark.missing").count() == missing > 0
    assert svg.locator(".row-mark.unexpected").count() == unexpected
    assert svg.locator("circle.ev").count() > 0 and svg.locator("line.wm").count() > 0
    assert svg.locator("text.marker.expect-failed").count() > 0
    # the explanation drawn: a line at each missing window's end, the watermark that closes it
    closes = build_timeline(row, cell, column).closes
    assert svg.locator(":scope > line.closes").count() == len(closes) > 0
    assert "closes when a batch runs with a watermark at or after it" in svg.locator(
        ":scope > line.closes title").first.text_content()
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")  # a full-page shot of a scrolled page misplaces sticky headers
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    body.locator(f"figure[data-column='{column}']").screenshot(path=str(SCREENSHOT.with_name("report-timeline.png")))


def _visible_rows(page) -> list[str]:
    return page.eval_on_selector_all("#matrix tbody.row", "bs => bs.filter(b => !b.hidden).map(b => b.id)")


def test_filters_hide_rows(report_page):
    page, report, _, _, _ = report_page
    rows = report.matrix.rows
    assert len(_visible_rows(page)) == len(rows)
    contract = report.matrix.contracts[0]
    page.select_option("#f-contract", contract)
    assert sorted(_visible_rows(page)) == sorted(r.anchor for r in rows if r.contract == contract)
    page.select_option("#f-contract", "")
    tag = next(t for t in report.matrix.tags if 0 < sum(t in r.tags for r in rows) < len(rows))
    page.select_option("#f-tag", tag)
    assert sorted(_visible_rows(page)) == sorted(r.anchor for r in rows if tag in r.tags)
    page.select_option("#f-tag", "")
    page.check("#f-failing")
    failing = sorted(r.anchor for r in rows if any(c.failed for c in r.cells.values()))
    assert 0 < len(failing) < len(rows) and sorted(_visible_rows(page)) == failing
    page.uncheck("#f-failing")
    page.check("#f-differs")
    differing = sorted({d.row.anchor for d in report.differences if d.kind != "feature availability"})
    assert sorted(_visible_rows(page)) == differing
    page.uncheck("#f-differs")
    assert page.locator("#f-count").text_content() == f"showing {len(rows)} of {len(rows)} rows"
