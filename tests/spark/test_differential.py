"""Differential test: generated scenarios run on Spark and on the model (spark profile) must agree.

Per contract family, Hypothesis generates scenarios (`eventtime.strategies`); the model fills an
`expect` after every step that can run batches (`eventtime.differential`), and the scenario runs
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
from hypothesis import HealthCheck, assume, event, given, note, settings

from eventtime.differential import FAMILIES, compare_on_spark, differential_case, strategy_for
from eventtime.textreport import describe_failure

pytestmark = pytest.mark.spark

# Examples per family (EVENTTIME_DIFF_EXAMPLES overrides): two, one for the families whose
# scenarios run many slow batches (two stateful operators, transformWithState), so that the
# whole file stays near 3 minutes on 2 cores.
EXAMPLES = os.environ.get("EVENTTIME_DIFF_EXAMPLES")
SLOW = {"chained_window_count", "join_then_count", "hold_timer"}


def _settings(family: str):
    n = int(EXAMPLES) if EXAMPLES else (1 if family in SLOW else 2)
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture
def diff_out(tmp_path) -> Path:
    return Path(os.environ.get("EVENTTIME_DIFF_OUT") or tmp_path / "differential")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_spark_agrees_with_the_model(family, spark, diff_out):
    from eventtime.registry import CONTRACTS
    from eventtime.harness.compat import compat_for

    missing = [f for f in CONTRACTS[family].requires if f not in compat_for(spark).features]
    if missing:  # the whole family: every scenario of the contract needs these
        pytest.skip(f"contract {family} needs Spark feature(s) {', '.join(missing)}, not in Spark {spark.version}")

    @_settings(family)
    @given(strategy_for(family, max_events=5))
    def spark_agrees(scenario):
        outcome = compare_on_spark(differential_case(scenario), session=spark)
        if not outcome.applicable:  # this example only (e.g. parameters this Spark refuses): draw another
            event(f"not applicable: {outcome.result.reason}")
            assume(False)
        if not outcome.agrees:
            # every failing example overwrites the same file: the last one written is the shrunk case
            path = outcome.write(diff_out)
            note(f"written: {path}\nreproduce: eventtime run {path}")
            raise AssertionError(f"Spark and the model disagree; reproduce with: eventtime run {path}\n"
                                 + describe_failure(outcome.result))

    spark_agrees()
