"""Differential test: generated scenarios run on Spark and on the model (spark profile) must agree.

Per contract family, Hypothesis generates scenarios (`conformance.strategies`); the model fills an
`expect` after every step that can run batches (`conformance.differential`), and the scenario runs
on Spark with the contract's reference implementation. Any failed check is a disagreement:
Hypothesis shrinks it, and the smallest case is written as a scenario file (to
$EVENTTIME_DIFF_OUT, default a pytest temporary directory) whose path and `eventtime run` command
the failure prints.

CI runs a few derandomized examples per family. The long run, randomized and seeded:

    python benchmarks/differential.py --family tumbling_count --examples 1000 --seed 1
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings

from conformance.differential import FAMILIES, compare_on_spark, differential_case, strategy_for
from conformance.textreport import describe_failure

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("EVENTTIME_DIFF_EXAMPLES", "2"))
CI = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture
def diff_out(tmp_path) -> Path:
    return Path(os.environ.get("EVENTTIME_DIFF_OUT") or tmp_path / "differential")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_spark_agrees_with_the_model(family, spark, diff_out):
    @CI
    @given(strategy_for(family, max_events=6))
    def spark_agrees(scenario):
        outcome = compare_on_spark(differential_case(scenario), session=spark)
        if not outcome.applicable:
            pytest.skip(outcome.result.reason)
        if not outcome.agrees:
            # every failing example overwrites the same file: the last one written is the shrunk case
            path = outcome.write(diff_out)
            note(f"written: {path}\nreproduce: eventtime run {path}")
            raise AssertionError(f"Spark and the model disagree; reproduce with: eventtime run {path}\n"
                                 + describe_failure(outcome.result))

    spark_agrees()
