"""Snapshot expectations without Spark (eventtime.snapshot, eventtime.snapshotedit, tools/strip_expectations.py):
holes found and read, values written in the documented forms and read back to themselves, `create` and
`fix` edits of a file from a recorded observation (the text around them kept byte for byte), the review's
decision (never in CI, `--yes`, the prompt, no terminal), a run that erred never touched, and `on_spark`
variants. The same on Spark, end to end: tests/spark/test_snapshot.py."""
from __future__ import annotations

import datetime as dt
import decimal
import sys
from pathlib import Path

import pytest

from eventtime import spec as m
from eventtime import snapshot as snap
from eventtime import snapshotedit as se
from eventtime.coltypes import parse_type
from eventtime.harness.observations import BatchObservation
from eventtime.judge import Observed
from eventtime.loader import ScenarioInvalid, load_scenario, load_scenario_text
from eventtime.registry import ContractLookup
from eventtime.results import ERROR, PASSED, ScenarioResult, StepResult
from eventtime.timeparse import parse_time

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.strip_expectations import differences, strip_text  # noqa: E402

CONSUMER = ROOT / "examples" / "consumer"

HEAD = """scenario: snap
description: a tumbling count
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s, output_mode: append}
steps:   # the contract's source: events (key, ts)
  - add:
      events: [[a, "00:00:03"], [b, "00:00:16"]]   # two rows
  - process
"""

MS = 1000  # microseconds per millisecond


def _batch(i: int, rows: list[tuple], before: int, after: int, data: bool = True, state: int = 1,
           dropped: int = 0, stats: dict | None = None) -> BatchObservation:
    return BatchObservation(batch_id=i, input_rows=2 if data else 0, timestamp_ms=None, watermark_before_ms=before,
                            watermark_after_ms=after, rows=rows, dropped=dropped, state_rows=state,
                            event_time=stats or {})


def _us(text: str) -> int:
    return parse_time(text, date=dt.date(2024, 1, 1))


def _row(key: str, start: str, end: str, count: int) -> tuple:
    return (key, _us(start), _us(end), count)


T0 = _us("00:00:00") // MS  # the scenario's midnight, in milliseconds as batches say times
BATCHES = [_batch(0, [], 0, T0 + 11_000, stats={"min": T0 + 3_000, "max": T0 + 16_000, "avg": T0 + 9_500}),
           _batch(1, [_row("a", "00:00:00", "00:00:10", 1)], T0 + 11_000, T0 + 11_000, data=False)]


def _run(path: Path, batches: list[BatchObservation] = BATCHES, version: str = "4.3.0",
         status: str = PASSED) -> ScenarioResult:
    """What a run of the scenario at `path` observed: every batch before its first expect, none after."""
    sc = m.for_spark_version(snap.load_scenario(path, display_path=path.name), version)
    result = ScenarioResult(sc, "impl", status, spark_version=version)
    seen: list[BatchObservation] = []
    for step in sc.steps:
        sr = StepResult(step.index, step.kind, step.where)
        if isinstance(step, m.ExpectStep):
            since, seen = (batches if not seen else []), batches
            sr.observed = Observed(since, batches, "append", [c.name for c in sc.contract.output])
        result.steps.append(sr)
    return result


def _plan(tmp_path: Path, text: str, mode: str, **kwargs) -> snap.Planned:
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(text)
    result = _run(path, **{k: v for k, v in kwargs.items() if k in ("batches", "version", "status")})
    return snap.plan_file(path, path.name, [result], mode, on_spark=kwargs.get("on_spark", False))


def _suite_files() -> list[Path]:
    return sorted((ROOT / "scenarios").rglob("*.scenario.yaml")) + sorted(CONSUMER.rglob("*.scenario.yaml"))


# -- holes ------------------------------------------------------------------------------------------------
def test_every_stripped_scenario_reads_with_its_holes_and_not_without():
    lookup = ContractLookup([CONSUMER / "contracts"])
    files = _suite_files()
    assert len(files) > 90
    for file in files:
        text = file.read_text()
        stripped = strip_text(text)
        holes = se.holes(stripped)
        assert holes, file  # every scenario states some value
        sc = load_scenario_text(se.placeholder_text(stripped, holes), file.name, contracts=lookup, file=file)
        assert len(sc.steps) == len(load_scenario(file, contracts=lookup).steps)
        with pytest.raises(ScenarioInvalid):  # the control: a hole is not a valid scenario without a snapshot
            load_scenario_text(stripped, file.name, contracts=lookup, file=file)


def test_strip_keeps_inputs_comments_and_keys():
    text = HEAD + """  - expect:
      rows: [[a, "00:00:00", "00:00:10", 1]]   # the first window
      watermark: "00:00:11"
      batches:
        - {data: true, watermark_after: "00:00:11"}
      event_time: {min: "00:00:03", max: "00:00:16"}
      failure_free: 1
"""
    text = text.replace("      failure_free: 1\n", "")
    stripped = strip_text(text)
    assert stripped.startswith(HEAD)
    assert stripped.endswith("""  - expect:
      rows:   # the first window
      watermark:
      batches:
        - {data: , watermark_after: }
      event_time: {min: , max: }
""")
    assert [h.key for h in se.holes(stripped)] == ["rows", "watermark", "data", "watermark_after", "min", "max"]


# -- values -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("type_name, value", [
    ("timestamp", _us("00:00:07")), ("timestamp", _us("2024-01-02T00:00:00.250")), ("timestamp_ntz", _us("12:00")),
    ("decimal(12,2)", decimal.Decimal("12.10")), ("date", dt.date(2024, 2, 29)), ("string", "true"),
    ("string", "12:00:07"), ("string", 'say "hi"\n'), ("string", "plain_word"), ("double", float("nan")),
    ("double", 1.5), ("double", float("-inf")), ("long", 7), ("boolean", False), ("binary", b"\x00\xff"),
    ("binary", b"text"), ("array<int>", (1, None, 3)), ("struct<name: string, version: int>", ("x", 2)),
    ("map<string,int>", (("a", 1), ("b", 2))), ("map<int,string>", ((1, "a"),)), ("string", None),
])
def test_a_value_written_reads_back_as_itself(type_name, value):
    from eventtime.yamlsource import load_yaml

    sc = m.Scenario(name="x", description="x", tags=(), contract=None, params=m.Params({}), sources={}, steps=(),
                    path="x", where=m.Where("x", 1, 1))  # type: ignore[arg-type]
    ctype = parse_type(type_name)
    text = se.value_text(ctype.canonical(value) if value is not None else None, ctype, sc)
    read = ctype.read(load_yaml(f"v: {text}").data["v"], parse_time=lambda v: parse_time(v, date=sc.date),
                      parse_date=lambda v: dt.date.fromisoformat(v))
    canonical = ctype.canonical(value) if value is not None else None
    assert ctype.equal(read, canonical) or (value is None and read is None), (text, read)


def test_times_are_written_on_the_scenario_date_in_its_zone():
    sc = m.Scenario(name="x", description="x", tags=(), contract=None, params=m.Params({}), sources={}, steps=(),
                    path="x", where=m.Where("x", 1, 1), date=dt.date(2024, 10, 27),
                    timezone="Europe/Paris")  # type: ignore[arg-type]
    at = parse_time("09:30:00", date=sc.date, zone=sc.timezone)
    assert se.time_text(at, sc) == '"09:30:00"'
    next_day = parse_time("2024-10-28T01:00:00", zone=sc.timezone)
    assert se.time_text(next_day, sc) == '"2024-10-28T01:00:00"'
    # 02:30 happens twice that night (the clocks go back at 03:00): the instant is written with its offset
    second = parse_time("2024-10-27T02:30:00+01:00")
    assert se.time_text(second, sc) == '"2024-10-27T02:30:00+01:00"'
    assert parse_time(se.time_text(second, sc).strip('"'), date=sc.date, zone=sc.timezone) == second


# -- create -----------------------------------------------------------------------------------------------
def test_create_fills_each_hole_and_keeps_every_other_character(tmp_path):
    text = HEAD + """  - expect:
      rows:   # the first window
      watermark:
      dropped: 0
      batches:
        - {data: , watermark_after: }
        - {data: , rows: }
      event_time: {min: , max: , avg: }
"""
    plan = _plan(tmp_path, text, "create")
    assert plan.refused is None
    assert plan.new == HEAD + """  - expect:
      rows: [[a, "00:00:00", "00:00:10", 1]]   # the first window
      watermark: "00:00:11"
      dropped: 0
      batches:
        - {data: true, watermark_after: "00:00:11"}
        - {data: false, rows: [[a, "00:00:00", "00:00:10", 1]]}
      event_time: {min: "00:00:03", max: "00:00:16", avg: "00:00:09.500"}
"""
    assert _plan(tmp_path, text, "fix").new == text  # fix leaves holes to create


def test_a_bare_expect_gets_rows_watermark_dropped_and_state(tmp_path):
    plan = _plan(tmp_path, HEAD + "  - expect: {}   # after both\n", "create")
    assert plan.new == HEAD + """  - expect:   # after both
      rows: [[a, "00:00:00", "00:00:10", 1]]
      watermark: "00:00:11"
      dropped: 0
      state_rows: 1
"""
    load_scenario_text(plan.new, "x")  # a valid scenario


def test_the_average_of_several_partitions_is_left_out(tmp_path):
    text = HEAD.replace("steps:", "sources:\n  events: {columns: \"key string, ts timestamp\", partitions: 2}\nsteps:") + \
        "  - expect:\n      event_time: {min: , max: , avg: }\n"
    plan = _plan(tmp_path, text, "create")
    assert plan.new.endswith('  - expect:\n      event_time: {min: "00:00:03", max: "00:00:16"}\n')
    assert any("avg left out" in note for note in plan.notes)


# -- fix --------------------------------------------------------------------------------------------------
def test_fix_names_exactly_the_rows_that_changed_in_a_block_list(tmp_path):
    text = HEAD + """  - expect:
      rows:
        - [a, "00:00:00", "00:00:10", 1]   # right
        - [b, "00:00:10", "00:00:20", 9]   # wrong count
        - [c, "00:00:10", "00:00:20", 1]   # never written
      watermark: "00:00:11"
"""
    observed = [_batch(0, [_row("a", "00:00:00", "00:00:10", 1), _row("b", "00:00:10", "00:00:20", 2)], 0,
                       T0 + 11_000)]
    plan = _plan(tmp_path, text, "fix", batches=observed)
    removed = [line for line in plan.diff().splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in plan.diff().splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed == ['-        - [b, "00:00:10", "00:00:20", 9]   # wrong count',
                       '-        - [c, "00:00:10", "00:00:20", 1]   # never written']
    assert added == ['+        - [b, "00:00:10", "00:00:20", 2]   # wrong count']
    assert plan.changes == ['line 10: rows: - [b, "00:00:10", "00:00:20", 9]',
                            'line 10: rows: - [c, "00:00:10", "00:00:20", 1]',
                            'line 10: rows: + [b, "00:00:10", "00:00:20", 2]']
    # the control: what agrees is left as written (`initial`-free text, the comments, the watermark)
    assert _plan(tmp_path, plan.new, "fix", batches=observed).new == plan.new


def test_fix_sets_scalars_and_keeps_their_comments(tmp_path):
    text = HEAD + "  - expect: {rows: [], watermark: \"00:00:02\", state_rows: 1}   # wrong\n"
    plan = _plan(tmp_path, text, "fix")
    assert plan.new == HEAD + ('  - expect: {rows: [[a, "00:00:00", "00:00:10", 1]], watermark: "00:00:11", '
                               'state_rows: 1}   # wrong\n')


def test_fix_writes_a_variant_for_the_line_where_the_step_has_variants(tmp_path):
    text = HEAD + """  - expect:
      rows: []
      on_spark:
        "<3.5.4": {no_output: true}
"""
    plan = _plan(tmp_path, text, "fix", version="4.3.0")
    assert plan.new == HEAD + """  - expect:
      rows: []
      on_spark:
        "<3.5.4": {no_output: true}
        ">=4.3,<4.4": {rows: [[a, "00:00:00", "00:00:10", 1]]}
"""
    sc = load_scenario_text(plan.new, "x")
    assert m.for_spark_version(sc, "4.3.0").steps[-1].rows[0].rows == (_row("a", "00:00:00", "00:00:10", 1),)
    assert m.for_spark_version(sc, "4.2.1").steps[-1].rows[0].rows == ()  # other lines: as before
    # without variants, fix changes the common checks; --snapshot-on-spark makes the variant anyway
    plain = HEAD + "  - expect:\n      rows: []\n"
    assert _plan(tmp_path, plain, "fix").new == HEAD + '  - expect:\n      rows: [[a, "00:00:00", "00:00:10", 1]]\n'
    assert _plan(tmp_path, plain, "fix", on_spark=True).new == HEAD + (
        '  - expect:\n      rows: []\n      on_spark:\n        ">=4.3,<4.4": {rows: [[a, "00:00:00", "00:00:10", 1]]}\n')


def test_a_variant_that_applied_is_the_one_fixed(tmp_path):
    text = HEAD + """  - expect:
      rows: []
      on_spark:
        ">=4.3": {rows: [], watermark: "00:00:02"}
"""
    plan = _plan(tmp_path, text, "fix", version="4.3.0")
    assert plan.new == HEAD + """  - expect:
      rows: []
      on_spark:
        ">=4.3": {rows: [[a, "00:00:00", "00:00:10", 1]], watermark: "00:00:11"}
"""


# -- what is never touched ---------------------------------------------------------------------------------
def test_a_run_that_erred_is_never_touched(tmp_path):
    text = HEAD + "  - expect:\n      rows:\n"
    plan = _plan(tmp_path, text, "all", status=ERROR)
    assert plan.refused is not None and "erred" in plan.refused and not plan.changed


def test_implementations_that_observed_differently_are_refused(tmp_path):
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(HEAD + "  - expect:\n      rows:\n")
    other = [_batch(0, [_row("z", "00:00:00", "00:00:10", 1)], 0, T0 + 11_000)]
    plan = snap.plan_file(path, path.name, [_run(path), _run(path, other)], "create")
    assert plan.refused is not None and "observed different things" in plan.refused
    same = snap.plan_file(path, path.name, [_run(path), _run(path)], "create")  # the control
    assert same.refused is None and same.changed


# -- the review -------------------------------------------------------------------------------------------
@pytest.fixture
def review(tmp_path):
    plan = _plan(tmp_path, HEAD + "  - expect:\n      rows:\n", "create")
    return snap.Review([plan], "create", out=lambda line: None)


def test_ci_never_writes_even_with_yes(review, monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert review.decide(True, lambda q: "y") == (False, review.decide(True, None)[1])
    assert "never written in CI" in review.decide(True, None)[1]


def test_yes_a_prompt_or_nothing(review, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert review.decide(True, None)[0]
    assert review.decide(False, lambda q: "y")[0]
    assert not review.decide(False, lambda q: "")[0]
    write, why = review.decide(False, None)  # no terminal to ask
    assert not write and "--yes" in why
    monkeypatch.setenv("CI", "0")  # CI=0 is not CI
    assert review.decide(True, None)[0]


def test_settle_writes_only_what_was_decided(review, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    plan = review.plans[0]
    results = [_run(plan.path)]
    assert not snap.settle(review, results, yes=False, ask=None, out=lambda line: None)
    assert plan.path.read_text() == plan.text  # not written
    assert snap.settle(review, results, yes=True, ask=None, out=lambda line: None)
    assert plan.path.read_text() == plan.new


def test_restored_values_are_compared_by_value_not_by_text():
    original = load_scenario_text(HEAD + '  - expect: {no_output: true, watermark: "00:00:11"}\n', "x")
    same = load_scenario_text(HEAD + '  - expect:\n      rows: []\n      watermark: "2024-01-01T00:00:11Z"\n', "x")
    other = load_scenario_text(HEAD + '  - expect:\n      rows: []\n      watermark: "00:00:12"\n', "x")
    assert differences(original, same) == []
    assert differences(original, other) == ["x:9: watermark: 1704067211000000 != 1704067212000000"]


def test_expect_write_says_what_to_use_for_a_contract_without_a_model(capsys):
    from eventtime.cli import main

    scenario = CONSUMER / "tests" / "scenarios" / "clicks" / "late-click-is-dropped.scenario.yaml"
    code = main(["expect", str(scenario), "--write", "--contracts", str(CONSUMER / "contracts")])
    err = capsys.readouterr().err
    assert code == 1 and "the model cannot compute" in err
    assert f"eventtime run {scenario} --snapshot create" in err
    assert scenario.read_text() == (CONSUMER / "tests" / "scenarios" / "clicks" / "late-click-is-dropped.scenario.yaml"
                                    ).read_text()


def test_yes_without_snapshot_is_a_usage_error(tmp_path, capsys):
    from eventtime.cli import main

    path = tmp_path / "snap.scenario.yaml"
    path.write_text(HEAD + "  - expect: {rows: []}\n")
    assert main(["run", str(path), "--yes"]) == 2
    assert "--yes goes with --snapshot" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse's choices
        main(["run", str(path), "--snapshot", "bogus"])
    assert exited.value.code == 2


def test_a_file_with_windows_line_ends_keeps_them(tmp_path):
    text = (HEAD + "  - expect:\n      rows:\n      watermark:   # after both\n").replace("\n", "\r\n")
    path = tmp_path / "snap.scenario.yaml"
    path.write_bytes(text.encode())
    plan = snap.plan_file(path, path.name, [_run(path)], "create")
    assert plan.new == (HEAD + '  - expect:\n      rows: [[a, "00:00:00", "00:00:10", 1]]\n'
                        '      watermark: "00:00:11"   # after both\n').replace("\n", "\r\n")
    bare = (HEAD + "  - expect:\n").replace("\n", "\r\n")
    path.write_bytes(bare.encode())
    filled = snap.plan_file(path, path.name, [_run(path)], "create").new
    assert filled is not None and "\n" not in filled.replace("\r\n", "")


def test_an_implementation_that_does_not_apply_leaves_the_others_to_the_snapshot(tmp_path):
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(HEAD + "  - expect:\n      rows:\n")
    ran, skipped = _run(path), _run(path, status="not_applicable")
    plan = snap.plan_file(path, path.name, [ran, skipped], "create")
    assert plan.refused is None and plan.changed
    alone = snap.plan_file(path, path.name, [skipped], "create")  # the control: nothing observed, nothing written
    assert alone.refused is not None and "not applicable" in alone.refused


# -- the pytest option (pytester; the run itself: tests/spark/test_snapshot.py) --------------------------
def test_the_pytest_options_collect_holes_and_refuse_what_they_cannot_do(pytester):
    pytester.makefile(".scenario.yaml", snap=HEAD + "  - expect:\n      rows:\n")
    binding = "--eventtime-pipeline=tumbling_count=eventtime.pipelines.reference:tumbling_count"
    collected = pytester.runpytest_subprocess(binding, "--eventtime-snapshot=create", "--collect-only", "-q")
    assert collected.ret == pytest.ExitCode.OK, collected.stdout.str()
    collected.stdout.fnmatch_lines(["*snap.scenario.yaml::snap*"])
    plain = pytester.runpytest_subprocess(binding, "--collect-only", "-q")  # the control: without it, a hole is a problem
    assert plain.ret == pytest.ExitCode.INTERRUPTED
    plain.stdout.fnmatch_lines(["*'rows' must be a list, not null*"])
    alone = pytester.runpytest_subprocess(binding, "--eventtime-snapshot-yes", "--collect-only")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--eventtime-snapshot-yes and --eventtime-snapshot-on-spark go with*"])
    workers = pytester.runpytest_subprocess(binding, "--eventtime-snapshot=fix", "-n", "2", "--collect-only")
    assert workers.ret == pytest.ExitCode.USAGE_ERROR
    workers.stderr.fnmatch_lines(["*--eventtime-snapshot runs in one process*"])


def test_an_expect_with_a_check_the_snapshot_does_not_write_is_not_bare(tmp_path):
    text = HEAD + "  - expect: {failure: {message: boom}}\n"  # a check of its own: nothing added
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(text)
    sc = snap.load_scenario(path)
    result = ScenarioResult(sc, "impl", PASSED, spark_version="4.3.0")
    sr = StepResult(3, "expect", sc.steps[-1].where)
    sr.observed = Observed(BATCHES, BATCHES, "append", [c.name for c in sc.contract.output])
    result.steps.append(sr)
    assert snap.plan_file(path, path.name, [result], "create").new == text
    modifiers_only = HEAD + "  - expect: {ordered: true}\n"  # the control: only how rows are read
    path.write_text(modifiers_only)
    result.scenario = snap.load_scenario(path)
    assert snap.plan_file(path, path.name, [result], "create").new == HEAD + (
        '  - expect: {ordered: true, rows: [[a, "00:00:00", "00:00:10", 1]], watermark: "00:00:11", dropped: 0, '
        'state_rows: 1}\n')
