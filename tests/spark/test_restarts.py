"""Exactly-once across restarts: a restart at every point of a scenario, in the same and in a new SparkSession."""
import pytest

from eventtime import load_scenario
from eventtime.differential import check_restarts, restart_variants
from eventtime.scenarios import SUITE_DIR

pytestmark = pytest.mark.spark

# A window closing, a late row dropped, state pending between batches: every gap between its steps
# is a point of interest. The whole set of bases runs with `python benchmarks/restart_points.py`.
BASE = SUITE_DIR / "tumbling" / "append-late-row-dropped.scenario.yaml"


def test_restart_variants_cover_every_gap_while_running():
    scenario = load_scenario(BASE)
    labels = [label for label, _ in restart_variants(scenario)]
    assert len(labels) == 2 * 7  # 8 steps that are not expects: a gap after each but the last
    assert sum("(new session)" in label for label in labels) == 7


def test_restart_anywhere_loses_and_duplicates_nothing(spark):
    # alternate the session kind over the points, so each point is covered once within CI time
    scenario = load_scenario(BASE)
    checks = check_restarts(scenario, session=spark, sessions=("new",))
    assert len(checks) == 7
    bad = [c.describe() for c in checks if not c.holds]
    assert not bad, "\n\n".join(bad)
    assert all(c.output == c.baseline for c in checks)  # here no restart changes the whole output


def test_a_new_session_restart_runs_in_another_session_on_replayed_sources(spark, tmp_path):
    from eventtime.pipelines.reference import tumbling_count
    from eventtime.harness import other_session
    from tests.spark.pipelines import events_run

    run, sources = events_run(spark, tumbling_count, tmp_path / "checkpoint")
    run.start()
    sources["events"].add([("a", 1_704_067_203_000_000)])
    run.process()
    sources["events"].add([("a", 1_704_067_216_000_000)])  # pending at the stop
    run.stop()
    other = other_session(spark)
    assert other is not spark and other.sparkContext is spark.sparkContext and other_session(other) is spark
    sources["events"] = sources["events"].replayed_in(other)
    assert sources["events"].offsets == 2
    run.move_to(other)
    batches = run.start()
    try:
        assert [q.name for q in other.streams.active] == [run.name]
        assert [q.name for q in spark.streams.active] == []
        batches += run.process()
    finally:
        run.stop()
    assert [b.input_rows for b in batches] == [1, 0]  # the pending add, once; then the no-data batch
    assert batches[-1].rows == [("a", 1_704_067_200_000_000, 1_704_067_210_000_000, 1)]
