"""Properties checked on generated streams with no expected values (`eventtime.properties`, docs/properties.md).

Seeded bugs in jobs of our own (`jobs_properties.py`), each found, shrunk and written as a scenario file
that fails as an ordinary scenario for the same reason, while the correct twin passes the same file and
every property: a foreachBatch that appends (exactly-once-rerun), the same job without a checkpoint location
(restart-transparency: restarted anew, it reads every file again and appends it all once more; with its
checkpoint the same file passes), a quality rule that casts text under ANSI casts (no-query-dies). Few examples,
derandomized, no database: each example is a few Spark runs on one session.
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

CONTRACT = textwrap.dedent("""\
    contract: page_windows
    description: clicks from JSON files -> clicks per page and 10-second window, the whole table written by the job.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    params:
      out: {kind: path, conf: props.test.out, doc: the folder the job's batch function writes}
    output:
      columns: "page string, window_start timestamp, clicks bigint"
      modes: [complete]
    """)
FEW = {"derandomize": True, "database": None, "max_events": 6}
ANSI = {"spark.sql.ansi.enabled": "true"}


@pytest.fixture
def contract(tmp_path):
    (tmp_path / "page_windows.contract.yaml").write_text(CONTRACT)
    return load_contract_file(tmp_path / "page_windows.contract.yaml")


def _events(sc: m.Scenario) -> int:
    return sum(len(rows) for s in sc.steps if isinstance(s, m.AddStep) for rows in s.rows.values())


def _written(report, prop: str, tmp_path):
    """The broken property's shrunk file, loaded as an ordinary scenario from beside the contract."""
    (p,) = [p for p in report.properties if p.prop == prop]
    assert p.counterexample is not None, report.describe()
    path = p.written or p.counterexample.write(tmp_path)  # beside the contract file, as under a scenario folder
    text = path.read_text()
    assert f"breaks the property {prop!r}" in text.splitlines()[0], text
    sc = load_scenario(str(path))
    assert _events(sc) <= 10, text
    return sc, text


def test_an_appending_foreachbatch_breaks_exactly_once_and_its_shrunk_file_fails_the_same_way(
        spark, contract, tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "true")  # never written in CI: the text is in the report only
    report = check_properties(contract, jobs.appending, session=spark, properties=["exactly-once-rerun"],
                              max_examples=10, out_dir=tmp_path, **FEW)
    assert not report.held and not list(tmp_path.glob("*.scenario.yaml")), report.describe()
    monkeypatch.delenv("CI")
    sc, text = _written(report, "exactly-once-rerun", tmp_path)
    assert any(isinstance(s, m.StartStep) and s.rerun_last_batch for s in sc.steps), text
    result = run_scenario(sc, jobs.appending, session=spark)
    assert result.status == "failed", describe_failure(result)
    failed = [s for s in result.steps if s.status == "failed"]
    assert len(failed) == 1 and failed[0].kind == "expect", describe_failure(result)
    assert "the rows written to 'out'" in describe_failure(result) and "0 missing" in describe_failure(result)
    # control: the overwriting twin passes the same file
    twin = run_scenario(sc, jobs.overwriting, session=spark)
    assert twin.status == "passed", describe_failure(twin)


def test_the_overwriting_twin_holds_every_property(spark, contract, tmp_path):
    report = check_properties(contract, jobs.overwriting, session=spark, max_examples=6,
                              out_dir=tmp_path, **FEW)
    assert report.held, report.describe()
    judged = [p for p in report.properties if p.does_not_apply is None]
    assert all(p.held_on >= 3 for p in judged), report.describe()  # judged, not skipped
    # complete mode keeps every group in state; a job has no transform to call as a batch; the contract states no
    # invariants: said, not checked
    assert [p.prop for p in report.properties if p not in judged] == [
        "bounded-state", "stream-equals-batch", "invariants"], report.describe()
    assert not list(tmp_path.glob("*.scenario.yaml"))


def test_an_appending_job_without_a_checkpoint_location_breaks_restart_transparency(spark, contract, tmp_path):
    report = check_properties(contract, jobs.without_checkpoint, session=spark, properties=["restart-transparency"],
                              max_examples=10, out_dir=tmp_path, **FEW)
    sc, text = _written(report, "restart-transparency", tmp_path)
    assert any(isinstance(s, m.StartStep) and s.restart for s in sc.steps), text
    result = run_scenario(sc, jobs.without_checkpoint, session=spark)
    assert result.status == "failed", describe_failure(result)
    assert "the rows written to 'out'" in describe_failure(result), describe_failure(result)
    twin = run_scenario(sc, jobs.appending, session=spark)  # control: with its checkpoint, the same file passes
    assert twin.status == "passed", describe_failure(twin)


def test_a_cast_in_a_quality_rule_dies_on_a_generated_value(spark, contract, tmp_path):
    report = check_properties(contract, jobs.numeric_pages, session=spark, properties=["no-query-dies"],
                              max_examples=10, out_dir=tmp_path, conf=ANSI, **FEW)
    sc, text = _written(report, "no-query-dies", tmp_path)
    assert "CAST_INVALID_INPUT" in text, text
    result = run_scenario(sc, jobs.numeric_pages, session=spark, conf=ANSI)
    assert result.status == "error" and "CAST_INVALID_INPUT" in (result.reason or ""), describe_failure(result)
    assert run_scenario(sc, jobs.overwriting, session=spark, conf=ANSI).status == "passed"  # control


SEEN_CONTRACT = textwrap.dedent("""\
    contract: new_orders
    description: orders from JSON files -> the orders not seen before, appended to the folder it reads them from.
    sources:
      orders:
        columns: "order_id string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/orders}
    params:
      seen: {kind: path, conf: props.test.seen, doc: the folder of orders already sent}
    output:
      columns: "order_id string, ts timestamp"
      modes: [append]
    """)


def test_a_rerun_batch_that_sends_other_rows_is_caught_by_its_file_though_the_sinks_end_alike(spark, tmp_path):
    """Only the query's rows differ (the folder ends the same): the file checks the re-run batch's rows."""
    (tmp_path / "new_orders.contract.yaml").write_text(SEEN_CONTRACT)
    contract = load_contract_file(tmp_path / "new_orders.contract.yaml")
    job = jobs.deduped_against_its_own_sink
    report = check_properties(contract, job, session=spark, properties=["exactly-once-rerun"],
                              max_examples=10, out_dir=tmp_path, shrink=False, **FEW)  # the file, not its size
    sc, text = _written(report, "exactly-once-rerun", tmp_path)
    (p,) = report.properties
    assert not any("written" in w for w in p.counterexample.why), p.counterexample.why  # only the query's rows differ
    assert "last_batch:" in text and "wrote the first time" in text, text
    result = run_scenario(sc, job, session=spark)
    assert result.status == "failed", describe_failure(result)
    (failed,) = [s for s in result.steps if s.status == "failed"]
    assert "last_batch" in sc.lines[failed.where.line - 1], describe_failure(result)
    # control: the same file without the re-run batch's check passes, as every file did before it
    kept = "\n".join(line for line in text.splitlines() if "last_batch:" not in line) + "\n"
    (tmp_path / "without.scenario.yaml").write_text(kept)
    without = run_scenario(load_scenario(str(tmp_path / "without.scenario.yaml")), job, session=spark)
    assert without.status == "passed", describe_failure(without)
