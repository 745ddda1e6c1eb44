"""The job's own invariants and bounded state, checked on generated streams (`eventtime.properties`,
docs/properties.md): seeded bugs in jobs of our own (`jobs_properties.py`), each found, shrunk to a few events
and written as a scenario file that fails as an ordinary scenario for the same reason, while the correct twin
passes that file and the property. A quality rule blind to nulls (a null amount lands in neither folder:
conservation), one whose sides overlap (a zero lands in both: a key in two outputs, and a hook of our own), a
dropDuplicates on the id alone and a stream-stream join with no time range in its condition (their state never
shrinks: bounded-state). Few examples, derandomized, no database.
"""
from __future__ import annotations

import textwrap

import pytest

from eventtime import load_scenario, run_scenario
from eventtime import spec as m
from eventtime.contractfile import load_contract_file
from eventtime.properties import check_properties
from eventtime.textreport import describe_failure

from tests.spark import jobs_properties as jobs

pytestmark = pytest.mark.spark
# Rows routed by null and range filters into folders: the kit's generation, shrinking and files, the same on every
# Spark line (CI runs them on the newest; ./dev matrix on every line). The dedup tests judge Spark's state
# eviction, so they run on every line CI runs.
LINE_FREE = pytest.mark.any_line

SPLIT = textwrap.dedent("""\
    contract: orders_split
    description: orders -> a clean folder (amount > 0) and a quarantine folder (the rest), written by the job.
    sources:
      orders:
        columns: "id string, amount int, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/orders}
    params:
      clean: {kind: path, conf: props.test.clean, doc: rows that pass the quality rule}
      quarantine: {kind: path, conf: props.test.quarantine, doc: rows that do not}
    output:
      columns: "id string, amount int, ts timestamp"
    invariants:
      routed_once:
        conserve: {from: orders, into: [clean, quarantine]}
        doc: every order lands in exactly one folder
      one_side: {disjoint: {key: [id, ts], outputs: [clean, quarantine]}}
      clean_amounts: {not_null: {output: clean, columns: [amount]}}
      no_more_out_than_in: {conserve: {from: orders, into: [clean, quarantine], count: "<="}}
    """)
DEDUP = textwrap.dedent("""\
    contract: events_dedup
    description: events deduplicated on their id, appended to a folder.
    sources:
      events:
        columns: "id string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/events}
    params:
      out: {kind: path, conf: props.test.out}
    output:
      columns: "id string, ts timestamp"
      modes: [append]
    """)
# Impressions joined with clicks on the same ad (a transform of both sources: `jobs.join_*`).
JOIN = textwrap.dedent("""\
    contract: ad_joins
    description: impressions and clicks, each with a 10-second watermark -> the clicks joined with their impression.
    sources:
      impressions:
        columns: "ad_id string, shown_at timestamp"
        event_time: shown_at
      ad_clicks:
        columns: "ad_id string, clicked_at timestamp"
        event_time: clicked_at
    output:
      columns: "ad_id string, shown_at timestamp, clicked_at timestamp"
      modes: [append]
    """)
ADS = {"ad_id": ["a", "b", None]}
FEW = {"derandomize": True, "database": None, "max_events": 6}


def _load(tmp_path, text, name):
    (tmp_path / f"{name}.contract.yaml").write_text(text)
    return load_contract_file(tmp_path / f"{name}.contract.yaml")


def _events(sc: m.Scenario) -> int:
    return sum(len(rows) for s in sc.steps if isinstance(s, m.AddStep) for rows in s.rows.values())


def _written(report, prop: str, tmp_path):
    (p,) = [p for p in report.properties if p.prop == prop]
    assert p.counterexample is not None, report.describe()
    path = p.written or p.counterexample.write(tmp_path)
    text = path.read_text()
    assert f"breaks the property {prop!r}" in text.splitlines()[0], text
    return load_scenario(str(path)), text


def _fails_where(sc, job, spark, what: str) -> None:
    result = run_scenario(sc, job, session=spark)
    assert result.status == "failed", describe_failure(result)
    assert what in describe_failure(result), describe_failure(result)


def test_a_dedup_without_event_time_keeps_its_state_and_its_shrunk_file_fails_at_state_rows(spark, tmp_path):
    contract = _load(tmp_path, DEDUP, "events_dedup")
    report = check_properties(contract, jobs.dedup_without_event_time, session=spark, properties=["bounded-state"],
                              max_examples=10, out_dir=tmp_path, **FEW)
    sc, text = _written(report, "bounded-state", tmp_path)
    assert _events(sc) <= 2 + 2 and "dedupe" in text, text  # the shrunk stream and the two closing events
    _fails_where(sc, jobs.dedup_without_event_time, spark, "state_rows")
    # control: with the event time in the key, the same file passes
    twin = run_scenario(sc, jobs.dedup_with_event_time, session=spark)
    assert twin.status == "passed", describe_failure(twin)


def test_a_dedup_with_event_time_holds_bounded_state(spark, tmp_path):
    contract = _load(tmp_path, DEDUP, "events_dedup")
    report = check_properties(contract, jobs.dedup_with_event_time, session=spark, properties=["bounded-state"],
                              max_examples=6, out_dir=tmp_path, **FEW)
    assert report.held and report.properties[0].held_on >= 3, report.describe()
    assert not list(tmp_path.glob("*.scenario.yaml"))


def test_a_dedup_within_the_watermark_holds_bounded_state(spark, tmp_path):
    from pyspark.sql import DataFrame

    if not hasattr(DataFrame, "dropDuplicatesWithinWatermark"):
        pytest.skip("dropDuplicatesWithinWatermark needs Spark 3.5+")
    contract = _load(tmp_path, DEDUP, "events_dedup")
    report = check_properties(contract, jobs.dedup_within_watermark, session=spark, properties=["bounded-state"],
                              max_examples=4, out_dir=tmp_path, **FEW)
    assert report.held and report.properties[0].held_on >= 2, report.describe()


def test_a_join_without_a_time_bound_keeps_its_state_and_its_shrunk_file_fails_at_state_rows(spark, tmp_path):
    contract = _load(tmp_path, JOIN, "ad_joins")
    report = check_properties(contract, jobs.join_without_time_bound, session=spark, properties=["bounded-state"],
                              max_examples=10, out_dir=tmp_path, pools=ADS, **FEW)
    sc, text = _written(report, "bounded-state", tmp_path)
    assert _events(sc) <= 10, text  # the shrunk stream and the closing events (one per source, twice)
    _fails_where(sc, jobs.join_without_time_bound, spark, "state_rows")
    # control: with a time range in the condition, the same file passes, and the property holds
    twin = run_scenario(sc, jobs.join_within_bound, session=spark)
    assert twin.status == "passed", describe_failure(twin)
    report = check_properties(contract, jobs.join_within_bound, session=spark, properties=["bounded-state"],
                              max_examples=6, pools=ADS, **FEW)
    assert report.held and report.properties[0].held_on >= 3, report.describe()


@LINE_FREE
def test_a_quality_rule_blind_to_nulls_loses_a_row_and_its_shrunk_file_expects_it_in_the_quarantine(spark, tmp_path):
    contract = _load(tmp_path, SPLIT, "orders_split")
    report = check_properties(contract, jobs.split_blind_to_nulls, session=spark,
                              properties=["invariant:routed_once"], max_examples=10, out_dir=tmp_path, **FEW)
    sc, text = _written(report, "invariant:routed_once", tmp_path)
    assert _events(sc) <= 2 and "in none of clean, quarantine" in text, text
    assert "every order lands in exactly one folder" in text, text
    _fails_where(sc, jobs.split_blind_to_nulls, spark, "'quarantine'")
    twin = run_scenario(sc, jobs.split_total, session=spark)  # control: nulls to the quarantine
    assert twin.status == "passed", describe_failure(twin)


@LINE_FREE
def test_overlapping_rules_put_a_row_in_two_outputs_and_a_hook_of_our_own_finds_it(spark, tmp_path):
    contract = _load(tmp_path, SPLIT, "orders_split")

    def clean_is_positive(obs):
        """clean amounts are above zero"""
        return [f"clean holds amount {r['amount']}" for r in obs.rows("clean")
                if r["amount"] is not None and r["amount"] <= 0]

    report = check_properties(contract, jobs.split_overlapping, session=spark, pools={"amount": [0, 1, -1, None]},
                              properties=["invariant:one_side", "invariant:clean_positive"], max_examples=6,
                              out_dir=tmp_path, invariants={"clean_positive": clean_is_positive}, **FEW)
    sc, text = _written(report, "invariant:one_side", tmp_path)
    assert _events(sc) <= 2 and "is in clean and quarantine" in text, text
    _fails_where(sc, jobs.split_overlapping, spark, "'clean'")
    twin = run_scenario(sc, jobs.split_total, session=spark)  # control
    assert twin.status == "passed", describe_failure(twin)
    sc, text = _written(report, "invariant:clean-positive".replace("-", "_"), tmp_path)
    assert "clean holds amount 0" in text and "correct them" in text, text


@LINE_FREE
def test_a_total_quality_rule_holds_every_invariant(spark, tmp_path):
    contract = _load(tmp_path, SPLIT, "orders_split")
    report = check_properties(contract, jobs.split_total, session=spark, properties=["invariants"], max_examples=6,
                              out_dir=tmp_path, **FEW)
    assert [p.prop for p in report.properties] == ["invariant:routed_once", "invariant:one_side",
                                                   "invariant:clean_amounts", "invariant:no_more_out_than_in"]
    assert report.held and all(p.held_on >= 3 for p in report.properties), report.describe()
