"""benchmarks/pipeline_vs_job.py: its arguments, its table, its judging of a run, and the job's scenario
kept the pipeline's (same events, steps and expected values). No timing here."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pipeline_vs_job as bench  # noqa: E402

PIPELINE_SCENARIO = ROOT / "examples" / "clickstream-pipeline" / bench.SCENARIO
JOB_SCENARIO = ROOT / "benchmarks" / "pipeline_vs_job" / bench.JOB_SCENARIO


def test_arguments_default_and_refused():
    args = bench.parse_args([])
    assert (args.pairs, args.remote) == (3, None)
    assert bench.parse_args(["--pairs", "5", "--remote", "sc://h:1"]).remote == "sc://h:1"
    with pytest.raises(SystemExit):
        bench.parse_args(["--pairs", "0"])


def test_table_gives_each_pair_its_ratio_and_the_medians():
    rounds = [{"pipeline": {"seconds": 120.0}, "job": {"seconds": 60.0}},
              {"pipeline": {"seconds": 90.0}, "job": {"seconds": 60.0}},
              {"pipeline": {"seconds": 100.0}, "job": {"seconds": 40.0}}]
    lines = bench.table(rounds, ["pipeline", "job"])
    assert lines[2] == "| 1 | 120.0 | 60.0 | 2.00 |"
    assert lines[3].endswith("| 1.50 |") and lines[4].endswith("| 2.50 |")
    assert lines[-1] == "| median | 100.0 | 60.0 | 2.00 |"   # the median of the ratios, not a ratio of medians


def test_a_run_with_no_results_is_not_a_timing(tmp_path):
    assert bench.judged(tmp_path / "absent.json") == (False, "no results file")


def _without_contract_and_tables(doc: dict) -> dict:
    doc = dict(doc)
    doc.pop("contract"), doc.pop("description")
    for step in doc["steps"]:
        if isinstance(step, dict) and step.get("expect", {}).get("table") == "page_totals":
            step["expect"] = {"table": "page_totals", "rows": step["expect"]["rows"]}
    return doc


def _read(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_the_jobs_scenario_is_the_pipelines_but_for_its_contract_and_the_totals_columns():
    # the totals check names the query whose columns it compares on (a job's table is no query of its own)
    pipeline = _without_contract_and_tables(_read(PIPELINE_SCENARIO))
    assert _without_contract_and_tables(_read(JOB_SCENARIO)) == pipeline
    job = _read(JOB_SCENARIO)   # the control: one expected total changed in the job's scenario is seen
    job["steps"][-1]["expect"]["rows"] = [["home", 2], ["cart", 3]]
    assert _without_contract_and_tables(job) != pipeline
