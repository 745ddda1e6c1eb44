"""What a new user met with `eventtime check-properties` on their own jobs (issue 46's findings): the job's
error said, a generated expect valid on a contract of several queries, the kit's own invalid scenario said
as the kit's, a job that is not there a usage error, a counterexample file overwritten said so. No Spark."""
from __future__ import annotations

import textwrap
from collections import Counter
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings

from eventtime import properties as props
from eventtime.cli import main
from eventtime.contractfile import load_contract_file

# the stranger's two-query contract (orders counted per customer by foreachBatch into a path parameter's
# folder, the orders with no amount to a quarantine)
ORDERS = textwrap.dedent("""\
    contract: orders
    description: JSON orders -> orders per customer in 5-minute windows; orders with no amount to quarantine.
    sources:
      orders:
        columns: "order_id string, customer string, amount decimal(10,2), ts timestamp"
        event_time: ts
    params:
      watermark_delay: {kind: duration, default: 10 minutes}
      counts_path: {kind: path, conf: shop.counts_path}
    queries:
      customer_counts: {columns: "window_start timestamp, window_end timestamp, customer string, orders bigint"}
      quarantine: {columns: "order_id string, customer string, amount decimal(10,2), ts timestamp"}
    """)
ERROR = ("jobs/dedup.py:21 (in main): readStream.json(... '/data/orders') matches no source of the contract: "
         "declare the source's from:")


@pytest.fixture
def orders(tmp_path):
    path = tmp_path / "orders.contract.yaml"
    path.write_text(ORDERS)
    return load_contract_file(path)


def _died(reason: str) -> SimpleNamespace:
    return SimpleNamespace(applicable=True, died=reason, mismatch=None, result=SimpleNamespace(reason=reason))


def test_the_error_a_run_ended_in_is_said_with_how_many_streams(orders):
    report = props.PropertyReport("exactly-once-rerun")
    judge = props._PropertyJudge(report, lambda text: None, [], orders, None, (None, None, (), None))
    for _ in range(3):
        assert not judge.usable(_died(ERROR))
    assert not judge.usable(_died("[CAST_INVALID_INPUT] The value 'x' cannot be cast"))
    assert report.run_errors == Counter({ERROR: 3, "[CAST_INVALID_INPUT] The value 'x' cannot be cast": 1})
    said = report.describe()
    assert "judged on no generated stream" in said
    assert f"3 stream(s) ended in: {ERROR}" in said, said
    assert "1 stream(s) ended in: [CAST_INVALID_INPUT]" in said, said


def test_a_written_folder_is_checked_validly_on_a_contract_of_several_queries(orders):
    from eventtime import snapshotedit as se
    from eventtime.loader import load_scenario_text
    from eventtime.registry import ContractLookup
    from eventtime.strategies import scenarios

    steps = props.observation_steps(orders)
    assert "- expect: {written: counts_path, query: customer_counts, rows: }" in steps, steps
    lookup = ContractLookup((), extra=[orders])

    @settings(max_examples=5, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(scenarios(orders, typed=True, delay="10 minutes", restarts=False, triggers=False, contracts=lookup))
    def loads(sc):
        text = props.with_step_after(sc, 0, "", tail=steps)
        # as observe_run reads it: raised ScenarioInvalid ("declares several queries ...") before the fix
        load_scenario_text(se.placeholder_text(text, se.holes(text)), "<generated orders stream>", contracts=lookup)

    loads()


def test_an_invalid_generated_scenario_is_said_as_the_kits_bug(orders, monkeypatch):
    from eventtime.problems import Problem, ScenarioInvalid

    def invalid(text, contract, **kwargs):
        raise ScenarioInvalid([Problem("<generated orders stream>", 31, 11,
                                       "contract 'orders' declares several queries")])
    monkeypatch.setattr(props, "observe_run", invalid)
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=["no-query-dies"],
                                    max_examples=1, database=None)
    (p,) = report.properties
    assert p.error is not None and p.error.startswith("the kit generated an invalid scenario (a bug of the kit"), p.error
    assert "please report it" in p.error and "declares several queries" in p.error
    assert not report.held


@pytest.mark.parametrize("pipeline", ["jobs/nope.py", "jobs.nope:transform"])
def test_a_job_that_is_not_there_is_a_usage_error(pipeline, capsys, tmp_path, monkeypatch):
    from eventtime.commands import spark

    def refuse(args):
        raise AssertionError("Spark was started")
    monkeypatch.setattr(spark, "open_session", refuse)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.contract.yaml").write_text(ORDERS)
    assert main(["check-properties", "orders.contract.yaml", "--pipeline", pipeline]) == 2
    assert "nope" in capsys.readouterr().err
    # `eventtime run` follows the same rule
    (tmp_path / "s.scenario.yaml").write_text("scenario: s\ndescription: d\ncontract: orders\nsteps:\n- process\n")
    assert main(["run", "s.scenario.yaml", "--contracts", str(tmp_path), "--pipeline", f"orders={pipeline}"]) == 2


def test_a_counterexample_that_overwrites_an_earlier_file_says_so(tmp_path):
    first = props.Counterexample("bounded-state", "order_dedup", "scenario: a\n", ["why"])
    path = first.write(tmp_path)
    assert not first.replaced
    again = props.Counterexample("bounded-state", "order_dedup", "scenario: a\n", ["why"])
    assert again.write(tmp_path) == path and not again.replaced  # the same text: nothing lost
    other = props.Counterexample("bounded-state", "order_dedup", "scenario: b\n", ["why"])
    other.write(tmp_path)
    assert other.replaced
    report = props.PropertyReport("bounded-state", counterexample=other, written=path)
    assert "overwrote the file of that name" in report.describe()


MISMATCH = ("pipeline jobs.orders:main: the output does not match contract 'orders': column 'amount' is double, "
            "the contract says decimal(10,2)")


@pytest.mark.parametrize("prop", ["no-query-dies", "exactly-once-rerun", "bounded-state"])
def test_an_output_that_does_not_match_the_contract_is_never_held(prop, orders, monkeypatch):
    from eventtime.results import FAILED, CheckFailure

    def mismatched(text, contract, **kwargs):  # what run_scenario returns for it (sparksteps._output_mismatch)
        step = SimpleNamespace(index=1, failures=[CheckFailure("output_schema", None, MISMATCH)], batches=[],
                               observed=None)
        result = SimpleNamespace(status=FAILED, cause=None, reason=None, steps=[step], scenario=None)
        return props.RunObservation(text, result)  # type: ignore[arg-type]
    monkeypatch.setattr(props, "observe_run", mismatched)
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=[prop], max_examples=3,
                                    database=None)
    (p,) = report.properties
    assert not report.held and p.held_on == 0, p.describe()  # before: "no-query-dies: held on 3 ..."
    assert p.error is not None and "column 'amount' is double, the contract says decimal(10,2)" in p.error, p.describe()
    assert p.describe().count("column 'amount'") == 1


# -- a green as wide as what was read: a folder a foreachBatch writes at a path of its own is not ------------
def test_a_held_sink_property_says_what_it_compared_and_that_a_job_s_own_folder_was_not_read(orders, tmp_path):
    """The stranger's double-appending foreachBatch wrote a hard-coded folder that no parameter named:
    `exactly-once-rerun: held` then judged the queries' rows only, without a word. The line says what was read."""
    bare = tmp_path / "bare.contract.yaml"
    bare.write_text(ORDERS.replace("  counts_path: {kind: path, conf: shop.counts_path}\n", ""))
    without = load_contract_file(bare)
    for prop in ("exactly-once-rerun", "restart-transparency", "batch-boundary-independence"):
        report = props.PropertyReport(prop, held_on=5, compared=props._compared(prop, without, ()))
        said = report.describe()
        assert said.startswith(f"{prop}: held on 5 generated stream(s)\n  compared: the queries' rows"), said
        assert "is not read back, only the rows its queries handed their sinks" in said, said
        assert "name it as a `kind: path` parameter or with --table" in said, said
    # with the folder named (or a table given) it is read, and nothing is said missing
    named = props._compared("exactly-once-rerun", orders, ())
    assert "folder 'counts_path'" in named and "not read back" not in named, named
    assert "table 'gold.counts'" in props._compared("restart-transparency", without, ("gold.counts",))
    # a property that compares no sinks says nothing of them
    assert props._compared("no-query-dies", without, ()) == ""
    assert "compared" not in props.PropertyReport("bounded-state", held_on=2).describe()


# -- Hypothesis's own lines: its slow-shrinking warning said in the report's words, its falsifying example not
# repeated (the counterexample file is the report's) --------------------------------------------------------
def _dies_on_two_rows(text, contract, **kwargs):
    """A stand-in run: the query dies on a stream of two rows or more."""
    rows = text.count("    - - ")  # a row of an add step, as the generated text writes it
    status = props.ERROR if rows >= 2 else "passed"
    result = SimpleNamespace(status=status, cause=None, reason="[CAST_INVALID_INPUT] boom", steps=[], scenario=None)
    return props.RunObservation(text, result)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit, said", [(0, True), (300, False)])
def test_shrinking_cut_short_is_said_and_hypothesis_prints_nothing_of_its_own(limit, said, orders, monkeypatch,
                                                                              capsys):
    from hypothesis.internal.conjecture import engine

    monkeypatch.setattr(props, "observe_run", _dies_on_two_rows)
    monkeypatch.setattr(engine, "MAX_SHRINKING_SECONDS", limit)  # 0: the limit is reached at the first shrink
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=["no-query-dies"],
                                    max_examples=30, database=None, derandomize=True)
    (p,) = report.properties
    assert p.verdict == "broken", p.describe()
    assert (props.SLOW_SHRINK in p.notes) is said, p.notes
    assert (props.SLOW_SHRINK in p.describe()) is said
    assert p.record()["notes"] == p.notes
    out = capsys.readouterr().out
    assert "Falsifying example" not in out and "PLEASE REPORT THIS" not in out, out  # printed raw before


def test_the_streams_tried_while_shrinking_are_not_counted_as_held(orders, monkeypatch):
    """Before, a check of 5 examples said 'held on 113 of the streams tried': every smaller stream Hypothesis
    tried while it shrank, and the property held on, was counted."""
    calls: list[bool] = []

    def counting(text, contract, **kwargs):
        obs = _dies_on_two_rows(text, contract)
        calls.append(obs.result.status == props.ERROR)
        return obs
    monkeypatch.setattr(props, "observe_run", counting)
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=["no-query-dies"],
                                    max_examples=30, database=None, derandomize=True)
    (p,) = report.properties
    first = calls.index(True)  # the streams run before the first that broke it all held
    assert p.verdict == "broken" and p.held_on == first, (p.held_on, first, len(calls))
    assert p.shrink_tried >= len(calls) - first - 1 > 0, (p.shrink_tried, len(calls), first)
    assert f"held on {first} stream(s) before it broke" in p.describe()
    assert f"shrinking tried {p.shrink_tried} smaller stream(s)" in p.describe()


# -- a stranger's trial of --json and the report (issue 46): what the check says of itself ---------------------
def test_bounded_state_of_a_job_that_keeps_no_state_does_not_apply(orders, monkeypatch):
    """Before, a stateless job's bounded-state was 'judged on no generated stream' (a failure): no default check
    of such a job could pass."""
    def stateless(text, contract, **kwargs):
        step = SimpleNamespace(index=1, failures=[], batches=[], observed=None)
        return props.RunObservation(text, SimpleNamespace(status="passed", cause=None, reason=None, steps=[step],
                                                           scenario=None, notes=["trigger(...) is not used"]))
    monkeypatch.setattr(props, "observe_run", stateless)
    def judge_bounded(self, sc):  # a run, then what the judge finds on it: no stateful operator ran
        self.run(props.with_step_after(sc, 0, ""))
        self.report.not_judged.update([props.STATELESS])
    monkeypatch.setattr(props._PropertyJudge, "judge_bounded", judge_bounded)
    said: list[str] = []
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=["bounded-state"],
                                    max_examples=4, database=None, derandomize=True, progress=said.append)
    (p,) = report.properties
    assert p.verdict == "does_not_apply" and "no stateful operator ran on any of the" in p.does_not_apply, p.describe()
    assert report.tally() == "1 does not apply (of 1 properties)"
    # the delay drawn around, and where it came from; the job's notes said once
    assert "a watermark delay of 10 minutes (the contract's parameter 'watermark_delay')" in said[0], said
    assert report.job_notes == ["trigger(...) is not used"] and said.count("eventtime: note: trigger(...) is not used") == 1
    assert report.records()[0]["job_notes"] == ["trigger(...) is not used"]


def test_a_stateless_reason_among_others_is_still_judged_nothing():
    report = props.PropertyReport("bounded-state", not_judged=Counter({props.STATELESS: 2, "the run ended in an error": 1}))
    props._found_not_to_apply(report)
    assert report.verdict == "judged_nothing"


def test_stream_equals_batch_does_not_apply_when_every_stream_ran_an_operator_with_no_batch_equivalent():
    from eventtime.streambatch import BY_DESIGN

    reasons = {f"stateful operator applyInPandasWithState: {BY_DESIGN}": 5,
               f"stateful operator dedupeWithinWatermark: {BY_DESIGN}": 3}
    report = props.PropertyReport(props.STREAM_BATCH, not_judged=Counter(reasons))
    props._found_not_to_apply(report)
    assert report.verdict == "does_not_apply", report.describe()
    assert report.does_not_apply == (
        "on 8 of the 8 generated stream(s) the job ran stateful operator(s) applyInPandasWithState; "
        "dedupeWithinWatermark, whose streaming result is not a batch result by design (a key kept only within "
        "the watermark delay, or state a function keeps batch by batch with timeouts)")
    # streams not judged for a reason of their own (late rows) or not applicable (a mode the implementation does
    # not handle) before their operators were looked at: the operators are the job's plan's, the same on each
    mixed = props.PropertyReport(props.STREAM_BATCH, not_judged=Counter({**reasons, "rows added where no `process` "
                                                                          "ends their batch": 1, (
        "not applicable: the implementation supports output_mode append, update, the scenario uses complete"): 2}))
    props._found_not_to_apply(mixed)
    assert mixed.verdict == "does_not_apply" and mixed.does_not_apply.startswith(
        "on 8 of the 11 generated stream(s) (3 other(s) not judged before"), mixed.does_not_apply
    # control: no stream found such an operator
    alone = props.PropertyReport(props.STREAM_BATCH, not_judged=Counter({"not applicable: no": 2, "late rows": 1}))
    props._found_not_to_apply(alone)
    assert alone.verdict == "judged_nothing"
    # control: one stream judged (held): the verdict is that, whatever the others found
    judged = props.PropertyReport(props.STREAM_BATCH, held_on=1, not_judged=Counter(reasons))
    props._found_not_to_apply(judged)
    assert judged.verdict != "does_not_apply"


def test_stream_equals_batch_does_not_apply_to_a_transform_of_processing_time():
    """processing_time_stamp (current_timestamp): the streams in update mode with no `key:` were never tried,
    the others found the transform impure; it is the job's code, so the property does not apply. Control: the
    update-mode reason alone stays judged nothing."""
    from eventtime.streambatch import IMPURE

    impure = f"the transform uses current_timestamp: {IMPURE}"
    no_key = "update mode with no declared `key:`: the last row per key is not defined"
    report = props.PropertyReport(props.STREAM_BATCH, not_judged=Counter({impure: 4, no_key: 4}))
    props._found_not_to_apply(report)
    assert report.verdict == "does_not_apply" and report.does_not_apply.startswith(impure), report.describe()
    alone = props.PropertyReport(props.STREAM_BATCH, not_judged=Counter({no_key: 8}))
    props._found_not_to_apply(alone)
    assert alone.verdict == "judged_nothing"


def test_no_shrink_writes_the_first_stream_it_broke_on(orders, monkeypatch):
    monkeypatch.setattr(props, "observe_run", _dies_on_two_rows)
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=["no-query-dies"],
                                    max_examples=30, database=None, derandomize=True, shrink=False)
    (p,) = report.properties
    assert p.verdict == "broken" and p.shrink_tried == 0, p.describe()


# -- the same seed, the same streams: Hypothesis's draws from the literals of loaded modules left out ------------
def _drawn(orders, monkeypatch) -> list[str]:
    texts: list[str] = []

    def recording(text, contract, **kwargs):
        texts.append(text)
        return _dies_on_two_rows("", contract)  # held: a stream of no rows never dies
    monkeypatch.setattr(props, "observe_run", recording)
    props.check_properties(orders, "jobs.orders:main", session=None, properties=["no-query-dies"],
                           max_examples=25, database=None, derandomize=True)
    return texts


def test_a_derandomized_check_draws_the_same_streams_whatever_was_imported_since(orders, monkeypatch, tmp_path):
    """Before, a module of the working directory imported between two checks (another test's, the user's job)
    changed the streams: Hypothesis draws about one value in twenty from such modules' literals (measured: 25
    derandomized streams of this contract changed after such an import, and stayed the same with the fix)."""
    import importlib
    import sys

    from hypothesis.internal.conjecture import providers

    monkeypatch.chdir(tmp_path)
    first = _drawn(orders, monkeypatch)
    (tmp_path / "literals_of_a_job.py").write_text(  # short texts and fractions, as a job's code holds them
        "S = [" + ", ".join(repr(f"{a}{i}") for a in "abcdefgh" for i in range(40)) + "]\n"
        + "F = [" + ", ".join(repr(i * 0.37 + 0.01) for i in range(1, 300)) + "]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("literals_of_a_job")
    try:
        assert "a1" in providers._get_local_constants().set_for_type("string")  # the control: Hypothesis sees them
        with props._own_draws():
            assert "a1" not in providers._get_local_constants().set_for_type("string")  # not while a check runs
        again = _drawn(orders, monkeypatch)
    finally:
        sys.modules.pop("literals_of_a_job", None)
    assert again == first, "the streams changed"
    assert "a1" in providers._get_local_constants().set_for_type("string")  # Hypothesis's own lookup given back


# -- a property of the consumer's medallion (issue 46): closing events its quality rules dropped -----------------
def _stateful_run(moves: bool):
    """A stand-in run of a job with a dedup: one state row left after the generated stream, none after the closing
    steps alone; the closing events move the watermark only where `moves`."""
    def run(text, contract, **kwargs):
        alone = text.count("- add:") <= 2  # the closing steps run alone
        batch = SimpleNamespace(query=None, state_rows=0 if alone else 1, operators=[{"operatorName": "dedupe"}],
                                watermark_before_ms=0, watermark_after_ms=1_000 if moves else 0)
        step = SimpleNamespace(index=1, failures=[], batches=[batch], observed=None)
        return props.RunObservation(text, SimpleNamespace(status="passed", cause=None, reason=None, steps=[step],
                                                           scenario=None, notes=[]))
    return run


def test_bounded_state_is_not_judged_where_the_closing_events_move_no_watermark(orders, monkeypatch):
    """The medallion's quality rule (`amount > 0`) dropped closing events whose amount was 0, so its silver query's
    watermark never passed the stream and its state was said unbounded: a false alarm."""
    monkeypatch.setattr(props, "observe_run", _stateful_run(moves=False))
    report = props.check_properties(orders, "jobs.orders:main", session=None, properties=["bounded-state"],
                                    max_examples=3, database=None, derandomize=True)
    (p,) = report.properties
    assert p.verdict == "judged_nothing" and p.counterexample is None, p.describe()
    assert any("the closing events alone move no watermark of query" in r for r in p.not_judged), p.not_judged
    # control: where the closing events move it, the state left is judged (and the rule sees the query)
    moved = _stateful_run(moves=True)("- add: {}", orders)
    assert props._watermark_moved(moved, orders) == {"None"} and not props._watermark_moved(
        _stateful_run(moves=False)("- add: {}", orders), orders)
