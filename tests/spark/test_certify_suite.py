"""The bundled suite certified by `eventtime certify --jobs 3` as a user runs it: every bundled implementation
of every bundled contract passes every scenario of it that applies to this Spark line.

This is how CI runs the suite on each line it tests (`./dev test` and `.ci/run`): three queries at once
in one JVM took 0.76x the time of one query at a time and 0.59x that of `pytest -n 2` (BENCHMARKS.md,
"Suite throughput"), and `test_parallel.py` shows concurrent runs observe what serial runs observe.
`test_suite.py` proves the same one item per pair; `./dev matrix` (tox) runs that form on every line and
leaves this file out. The control is `test_teeth.py`: the same scenarios fail each wrong implementation.
Which pairs are not applicable is predicted from the scenarios' and implementations' declarations and
from what this line offers, and what it offers is checked against the line each feature came in, so a
feature detection that breaks on one line fails here instead of turning its scenarios "not applicable".
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment
from eventtime.harness.features import FEATURES
from eventtime.loader import find_scenario_files, load_scenario
from eventtime.scenarios import SUITE_DIR

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CERTIFY_TIMEOUT = 1500  # seconds for the whole suite; about 3 min on 2 quiet cores, 6 at load average 12
# The first Spark line offering each feature (Spark's release notes; harness/features.py describes them).
SINCE = {"session_window_dynamic_gap": (3, 2), "multiple_stateful_operators": (3, 4),
         "apply_in_pandas_with_state": (3, 4), "drop_duplicates_within_watermark": (3, 5),
         "join_then_stateful": (3, 5), "transform_with_state": (4, 0),
         "trigger_once": (2, 2), "state_reader": (4, 0),  # deprecated since 3.4, in every line the kit supports (3.4 to 4.3)
         "pipelines": (4, 1)}
CONNECT_ONLY = {"pipelines"}  # a feature of Spark Connect sessions only: never one of this classic session's


def _line(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_this_lines_features_are_the_ones_it_introduced_or_inherited(spark):
    from eventtime.harness.compat import compat_for

    assert set(SINCE) == set(FEATURES), "a feature without its first Spark line here"
    expected = {f for f, since in SINCE.items() if _line(spark.version) >= since} - CONNECT_ONLY
    assert set(compat_for(spark).features) == expected, spark.version


def test_certify_passes_every_applicable_pair_of_the_bundled_suite(spark, tmp_path):
    from eventtime.harness.compat import compat_for
    from eventtime.runner import applicability
    from eventtime.userpipeline import implementation_info, resolve_pipeline

    features = compat_for(spark).features
    expected: dict[tuple[str, str], str] = {}  # (scenario, implementation) -> status
    statuses: dict[tuple[str, str], list[str]] = {}  # (contract, implementation) -> its scenarios' statuses
    for path in find_scenario_files([SUITE_DIR])[0]:
        scenario = load_scenario(path)
        for impl in scenario.contract.implementations:
            reason = applicability(scenario, spark.version, features) or implementation_info(
                resolve_pipeline(impl)).not_applicable(scenario.params, features)
            expected[(scenario.name, impl)] = "not_applicable" if reason else "passed"
            statuses.setdefault((scenario.contract.name, impl), []).append(expected[(scenario.name, impl)])
    assert sum(status == "passed" for status in expected.values()) >= len(expected) // 2, expected

    # a contract with an implementation none of whose scenarios applies to this line (a newer Spark's
    # operator) is said to be expected, as a user says it; else that implementation fails the run
    unjudged = sorted({contract for (contract, _), said in statuses.items() if set(said) == {"not_applicable"}})
    results = tmp_path / "results.json"
    env = child_environment(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    allow = [word for contract in unjudged for word in ("--allow-not-applicable", contract)]
    proc = subprocess.run([sys.executable, "-m", "eventtime.cli", "certify", "--jobs", "3", "--json", str(results),
                           *allow, "--teeth"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=CERTIFY_TIMEOUT)
    # what did not pass, in full (the run's own lines, not the tail of its TEETH list), then the tail
    unpassed = [line for line in proc.stdout.splitlines() if line.startswith(("FAIL", "ERROR", "INVALID", "REJECTED"))]
    out = "\n".join(unpassed) + "\n...\n" + _failure_details(proc.stdout) + proc.stdout[-3000:] + proc.stderr[-4000:]
    assert proc.returncode == 0, out
    # every check of every passing pair could have failed (docs/teeth.md): none vacuous, none weak
    [teeth] = [line for line in proc.stdout.splitlines() if line.startswith("teeth: ")]
    assert ", 0 vacuous, 0 weak" in teeth and "TOOTHLESS" not in proc.stdout, out  # then "N not judged", " in "
    # one verdict per implementation: NOT APPLICABLE where none of its scenarios applies to this line
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith(("CERTIFIED", "REJECTED", "NOT APPL"))]
    implementations = {impl for _, impl in expected}
    assert len(verdicts) == len(implementations) and not any(v.startswith("REJECTED") for v in verdicts), out

    doc = json.loads(results.read_text())
    assert doc["run"]["spark_version"] == spark.version and "incomplete" not in doc
    got = {(r["scenario"], r["implementation"]): r["status"] for r in doc["results"]}
    assert len(got) == len(doc["results"]), "a pair ran twice"
    wrong = {pair: (got.get(pair, "missing"), want) for pair, want in expected.items() if got.get(pair) != want}
    wrong.update({pair: (status, "not in the suite") for pair, status in got.items() if pair not in expected})
    assert not wrong, wrong


def _failure_details(stdout: str) -> str:
    """The indented block under each FAIL or ERROR line of a run's output (its step, its message)."""
    keep, out = False, []
    for line in stdout.splitlines():
        if line.startswith(("FAIL", "ERROR")):
            keep = True
        elif not line.startswith(" "):
            keep = False
        if keep:
            out.append(line)
    return "\n".join(out[:200]) + "\n"
