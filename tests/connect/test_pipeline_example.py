"""examples/clickstream-pipeline, issue 49's example project (a Spark Declarative Pipeline as the public docs
write one), from the kit's wheel in a fresh environment: the stage's `consumer` fixture (tests/consumer's
machinery; the project installs nothing of its own). Each run goes over a Connect server the installed
`eventtime connect-server` starts.
- The release's scenarios (tests/scenarios: three updates and a restart; a full refresh), through `pytest` and
  `eventtime run` with no options (pytest.ini binds the pipeline). Beside them the control, a copy of the first
  update with a wrong value in each kind of check it makes (`watermark`, `batches`, `dropped`, `state_rows`, a
  flow's `rows`, a table's `rows`): each fails at its own line.
- The run across the change from previous-release/ (tests/upgrade: silver gains a deduplication, deployed
  with a full refresh), through both faces with `--previous`/`--eventtime-previous`. Its control, the same
  deploy as a plain update, is Spark's refusal of the checkpoint (`cannot_restart`, in Spark's words).
After every run the pipelines' files are byte-identical to their committed form (pipeline.sha256). Here, not
in tests/consumer, because the server's Python workers (the staged Kafka source) must connect back within
Spark's constant 10 s (see test_consumer_over_connect)."""
from __future__ import annotations

import json
import shutil

import pytest

from eventtime.harness import pipelinegraph
from eventtime.results import ERROR, FAILED, PASSED
from tests.consumer.test_consumer_example import ROOT, RUN_TIMEOUT, _connect_here, _run
from tests.fast.test_example_pipeline_files import changes

pytestmark = [pytest.mark.skipif(not _connect_here(), reason="the installed pyspark ships no Spark Connect server"),
              pytest.mark.skipif(not pipelinegraph.available(), reason="pyspark.pipelines needs pyspark 4.1+")]

SCENARIO, REFRESH = "late-and-resent-clicks-across-updates", "a-full-refresh-counts-what-was-late"
UPGRADE, PLAIN_DEPLOY = "dedup-added-to-a-running-pipeline", "deployed-without-a-refresh"
# the control: in the first update of SCENARIO, each kind of check given a value Spark does not give
WRONG = {
    '      watermark: "09:10:00"                 # 09:20 - 10 min': '      watermark: "09:11:00"',
    '      batches: 2                            # the data batch': '      batches: 3                            # the',
    '      dropped: 0                            # the retried c1': '      dropped: 1                            # the',
    '      state_rows: 3                         # c1': '      state_rows: 4                         # c1',
    '[["09:00:00", "09:05:00", home, 1], ["09:00:00", "09:05:00", cart, 1]]':
        '[["09:00:00", "09:05:00", home, 2], ["09:00:00", "09:05:00", cart, 1]]',   # c1 counted twice
    "{table: page_totals, rows: [[home, 1], [cart, 1]]}": "{table: page_totals, rows: [[home, 1], [cart, 2]]}",
}


@pytest.fixture(scope="module")
def example(consumer, tmp_path_factory):
    """The project copied as a user checks it out, plus the controls (the module's docstring). Returns the
    environment's python, the project, the environment and the lines of the wrong values."""
    py, _, env, _ = consumer
    project = tmp_path_factory.mktemp("pipeline-example") / "clickstream-pipeline"
    shutil.copytree(ROOT / "examples" / "clickstream-pipeline", project, ignore=shutil.ignore_patterns("__pycache__"))
    assert changes(project) == []
    wrong = (project / "tests" / "scenarios" / f"{SCENARIO}.scenario.yaml").read_text().split("  # update 2:")[0]
    wrong = wrong.replace(f"scenario: {SCENARIO}", "scenario: wrong-every-kind")
    for right, bad in WRONG.items():
        assert wrong.count(right) == 1, right
        wrong = wrong.replace(right, bad)
    (project / "tests" / "scenarios" / "wrong-every-kind.scenario.yaml").write_text(wrong)
    lines = [next(i for i, text in enumerate(wrong.splitlines(), 1) if bad in text) for bad in WRONG.values()]
    upgrade = (project / "tests" / "upgrade" / f"{UPGRADE}.scenario.yaml").read_text()
    full_refresh = "  - update: {full_refresh: [silver_clicks, gold_page_windows]}"
    assert upgrade.count(full_refresh) == 1
    (project / "tests" / "upgrade" / f"{PLAIN_DEPLOY}.scenario.yaml").write_text(
        upgrade.replace(f"scenario: {UPGRADE}", f"scenario: {PLAIN_DEPLOY}").replace(full_refresh, "  - process"))
    return py, project, env, lines


def _verdicts(path) -> dict[str, str]:
    return {r["scenario"]: r["status"] for r in json.loads(path.read_text())["results"]}


def _each_wrong_value_failed_at_its_line(out: str, lines: list[int]) -> None:
    for line in lines:
        assert f"wrong-every-kind.scenario.yaml:{line}:" in out, (line, out[-8000:])


def test_through_pytest_the_scenarios_pass_and_each_wrong_value_fails_at_its_line(example):
    py, project, env, lines = example
    rc, out = _run([str(py.with_name("eventtime")), "connect-server", "--", str(py), "-m", "pytest", "-p",
                    "no:cacheprovider", "-q", "--eventtime-remote", "{remote}", "--eventtime-report-json", "pytest.json"],
                   cwd=project, env=env, timeout=RUN_TIMEOUT)
    assert rc == 1 and "1 failed, 2 passed" in out, out[-6000:]
    assert _verdicts(project / "pytest.json") == {SCENARIO: PASSED, REFRESH: PASSED, "wrong-every-kind": FAILED}
    _each_wrong_value_failed_at_its_line(out, lines)
    assert changes(project) == [], out[-4000:]


def test_through_the_cli_the_scenarios_pass_and_each_wrong_value_fails_at_its_line(example):
    py, project, env, lines = example
    rc, out = _run([str(py.with_name("eventtime")), "connect-server", "--", str(py.with_name("eventtime")), "run",
                    "tests/scenarios", "--remote", "{remote}", "--json", "cli.json"], cwd=project, env=env,
                   timeout=RUN_TIMEOUT)
    assert rc == 1 and "2 passed, 1 failed" in out, out[-6000:]
    assert _verdicts(project / "cli.json") == {SCENARIO: PASSED, REFRESH: PASSED, "wrong-every-kind": FAILED}
    _each_wrong_value_failed_at_its_line(out, lines)
    assert f"PASS  {SCENARIO}  [pipeline/]" in out, out[-6000:]
    assert changes(project) == [], out[-4000:]


def test_across_the_change_through_the_cli_the_deploy_restarts_and_a_plain_update_cannot(example):
    py, project, env, _ = example
    rc, out = _run([str(py.with_name("eventtime")), "connect-server", "--", str(py.with_name("eventtime")), "run",
                    "tests/upgrade", "--remote", "{remote}", "--previous", "clickstream=previous-release/", "--json",
                    "upgrade.json"], cwd=project, env=env, timeout=RUN_TIMEOUT)
    assert rc == 1 and "1 passed, 0 failed, 1 errors" in out, out[-6000:]
    results = {r["scenario"]: r for r in json.loads((project / "upgrade.json").read_text())["results"]}
    assert {name: r["status"] for name, r in results.items()} == {UPGRADE: PASSED, PLAIN_DEPLOY: ERROR}
    assert results[UPGRADE]["upgrade"]["outcome"] == "restarts"
    assert results[PLAIN_DEPLOY]["upgrade"]["outcome"] == "cannot_restart"
    assert results[PLAIN_DEPLOY]["upgrade"]["error_class"] == "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY"
    assert changes(project) == [], out[-4000:]


def test_across_the_change_through_pytest_the_deploy_restarts(example):
    py, project, env, _ = example
    rc, out = _run([str(py.with_name("eventtime")), "connect-server", "--", str(py), "-m", "pytest", "-p",
                    "no:cacheprovider", "-q", f"tests/upgrade/{UPGRADE}.scenario.yaml", "--eventtime-remote", "{remote}",
                    "--eventtime-previous", "clickstream=previous-release/"], cwd=project, env=env, timeout=RUN_TIMEOUT)
    assert rc == 0 and "1 passed" in out, out[-6000:]
    assert changes(project) == [], out[-4000:]
