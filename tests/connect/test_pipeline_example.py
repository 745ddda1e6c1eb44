"""examples/clickstream-pipeline, issue 49's example project (a Spark Declarative Pipeline as the public docs
write one), from the kit's wheel in a fresh environment: the stage's `consumer` fixture (tests/consumer's
machinery; the project installs nothing of its own). One run through each face, each over a Connect server
the installed `eventtime connect-server` starts: `pytest` and `eventtime run` with no options (pytest.ini
binds the pipeline). In each run the project's scenario passes and a copy of its first update expecting a
wrong count in gold fails at that line (the control); afterwards the pipeline's files are byte-identical to
their committed form (pipeline.sha256). Here, not in tests/consumer, because the server's Python workers (the
staged Kafka source) must connect back within Spark's constant 10 s (see test_consumer_over_connect)."""
from __future__ import annotations

import json
import shutil

import pytest

from eventtime.harness import pipelinegraph
from eventtime.results import FAILED, PASSED
from tests.consumer.test_consumer_example import ROOT, RUN_TIMEOUT, _connect_here, _run
from tests.fast.test_example_pipeline_files import changes

pytestmark = [pytest.mark.skipif(not _connect_here(), reason="the installed pyspark ships no Spark Connect server"),
              pytest.mark.skipif(not pipelinegraph.available(), reason="pyspark.pipelines needs pyspark 4.1+")]

SCENARIO = "late-and-resent-clicks-across-updates"
WRONG = "tests/scenarios/wrong-gold-count.scenario.yaml"
RIGHT_GOLD = '[["09:00:00", "09:05:00", home, 1], ["09:00:00", "09:05:00", cart, 1]]'
WRONG_GOLD = '[["09:00:00", "09:05:00", home, 2], ["09:00:00", "09:05:00", cart, 1]]'  # c1 counted twice


@pytest.fixture(scope="module")
def example(consumer, tmp_path_factory):
    """The project copied as a user checks it out, plus the control: the scenario's first update, renamed,
    expecting gold's 09:00 window of home to hold 2 clicks (Spark's answer is 1: silver kept the resent c1
    once). Returns the environment's python, the project, the environment and the wrong value's line."""
    py, _, env, _ = consumer
    project = tmp_path_factory.mktemp("pipeline-example") / "clickstream-pipeline"
    shutil.copytree(ROOT / "examples" / "clickstream-pipeline", project, ignore=shutil.ignore_patterns("__pycache__"))
    assert changes(project) == []
    first = (project / "tests" / "scenarios" / f"{SCENARIO}.scenario.yaml").read_text().split("  # update 2:")[0]
    assert first.count(RIGHT_GOLD) == 1
    wrong = first.replace(f"scenario: {SCENARIO}", "scenario: wrong-gold-count").replace(RIGHT_GOLD, WRONG_GOLD)
    (project / WRONG).write_text(wrong)
    line = next(i for i, text in enumerate(wrong.splitlines(), 1) if WRONG_GOLD in text)
    return py, project, env, line


def _verdicts(path) -> dict[str, str]:
    return {r["scenario"]: r["status"] for r in json.loads(path.read_text())["results"]}


def _the_pipeline_was_tested_unchanged(project, out: str) -> None:
    assert changes(project) == [], out[-4000:]


def test_through_pytest_the_scenario_passes_and_a_wrong_count_fails_at_its_line(example):
    py, project, env, line = example
    rc, out = _run([str(py.with_name("eventtime")), "connect-server", "--", str(py), "-m", "pytest", "-p",
                    "no:cacheprovider", "-q", "--eventtime-remote", "{remote}", "--eventtime-report-json", "pytest.json"],
                   cwd=project, env=env, timeout=RUN_TIMEOUT)
    assert rc == 1 and "1 failed, 1 passed" in out, out[-6000:]
    assert _verdicts(project / "pytest.json") == {SCENARIO: PASSED, "wrong-gold-count": FAILED}
    assert f"wrong-gold-count.scenario.yaml:{line}:" in out, out[-6000:]
    _the_pipeline_was_tested_unchanged(project, out)


def test_through_the_cli_the_scenario_passes_and_a_wrong_count_fails_at_its_line(example):
    py, project, env, line = example
    rc, out = _run([str(py.with_name("eventtime")), "connect-server", "--", str(py.with_name("eventtime")), "run",
                    "tests/scenarios", "--remote", "{remote}", "--json", "cli.json"], cwd=project, env=env,
                   timeout=RUN_TIMEOUT)
    assert rc == 1 and "1 passed, 1 failed" in out, out[-6000:]
    assert _verdicts(project / "cli.json") == {SCENARIO: PASSED, "wrong-gold-count": FAILED}
    assert f"wrong-gold-count.scenario.yaml:{line}:" in out, out[-6000:]
    assert f"PASS  {SCENARIO}  [pipeline/]" in out, out[-6000:]
    _the_pipeline_was_tested_unchanged(project, out)
