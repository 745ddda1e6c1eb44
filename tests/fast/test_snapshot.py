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


ORDERED_OBSERVED = [_batch(0, [_row("a", "00:00:00", "00:00:10", 1), _row("b", "00:00:10", "00:00:20", 2)], 0,
                           T0 + 11_000)]


def _ordered(rows: list[str]) -> str:
    """An ordered expect whose rows are a block list, the watermark's key on the line after it."""
    return HEAD + "  - expect:\n      ordered: true\n      rows:\n" + "".join(f"        - {r}\n" for r in rows) + \
        '      watermark: "00:00:11"\n'


def test_fix_of_ordered_rows_takes_out_the_rows_past_the_last_the_run_wrote(tmp_path):
    # an ordered list longer than what the run wrote: the rows past its end are removed (an IndexError before)
    text = _ordered(['[a, "00:00:00", "00:00:10", 1]', '[b, "00:00:10", "00:00:20", 9]', '[c, "00:00:10", "00:00:20", 1]'])
    plan = _plan(tmp_path, text, "fix", batches=ORDERED_OBSERVED)
    assert plan.changes == ['line 11: rows: - [b, "00:00:10", "00:00:20", 9]',
                            'line 11: rows: - [c, "00:00:10", "00:00:20", 1]',
                            'line 11: rows: + [b, "00:00:10", "00:00:20", 2]']
    assert '[[a, "00:00:00", "00:00:10", 1], [b, "00:00:10", "00:00:20", 2]]' in plan.new
    # the control: the file fixed agrees with the run, so a second fix leaves it as it is
    assert _plan(tmp_path, plan.new, "fix", batches=ORDERED_OBSERVED).new == plan.new


def test_fix_of_an_ordered_block_list_leaves_the_next_key_on_its_line(tmp_path):
    # an ordered list is written again as one flow list, up to its last item: the next key stays on its own
    # line (it was joined on: `...]]watermark: ...`, a file that no longer reads)
    plan = _plan(tmp_path, _ordered(['[a, "00:00:00", "00:00:10", 1]', '[b, "00:00:10", "00:00:20", 9]']), "fix",
                 batches=ORDERED_OBSERVED)
    assert plan.new == HEAD + """  - expect:
      ordered: true
      rows:
        [[a, "00:00:00", "00:00:10", 1], [b, "00:00:10", "00:00:20", 2]]
      watermark: "00:00:11"
"""
    assert _plan(tmp_path, plan.new, "fix", batches=ORDERED_OBSERVED).new == plan.new  # it reads, and agrees


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


def test_snapshot_with_a_crossing_is_a_usage_error(tmp_path, capsys):
    # before: --previous was ignored by a snapshot run, without a word; the file is left as it was
    from eventtime.cli import main

    path = tmp_path / "snap.scenario.yaml"
    path.write_text(HEAD + "  - expect: {rows: []}\n")
    before = path.read_text()
    for extra in (["--previous", "tumbling_count=eventtime.pipelines.reference:tumbling_count"],
                  ["--previous-ref", "HEAD~1"]):
        assert main(["run", str(path), "--snapshot", "fix", "--yes", *extra]) == 2
        err = capsys.readouterr().err
        assert f"--snapshot does not go with {extra[0]}" in err, err
    assert path.read_text() == before


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
    plain.stdout.fnmatch_lines(["*'rows' has no value: a check left empty is for a snapshot to fill*"
                                "--eventtime-snapshot=create*"])
    alone = pytester.runpytest_subprocess(binding, "--eventtime-snapshot-yes", "--collect-only")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--eventtime-snapshot-yes and --eventtime-snapshot-on-spark go with*"])
    workers = pytester.runpytest_subprocess(binding, "--eventtime-snapshot=fix", "-n", "2", "--collect-only")
    assert workers.ret == pytest.ExitCode.OK, workers.stdout.str()  # xdist: the controller writes (below)


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


# -- the checks of what operators did and keep (updated, batch_watermark, operators, event_time: none, state) --
def _ops(*ops: tuple[str, int, int, int]) -> list[dict]:
    return [{"operatorName": n, "numRowsTotal": total, "numRowsUpdated": upd, "numRowsDroppedByWatermark": drop}
            for n, total, upd, drop in ops]


OP_BATCHES = [
    BatchObservation(batch_id=0, input_rows=2, timestamp_ms=None, watermark_before_ms=0, watermark_after_ms=T0 + 11_000,
                     rows=[], state_rows=3, operators=_ops(("stateStoreSave", 1, 1, 0), ("symmetricHashJoin", 2, 2, 1)),
                     event_time={"max": T0 + 16_000, "watermark": 0}),
    BatchObservation(batch_id=1, input_rows=0, timestamp_ms=None, watermark_before_ms=T0 + 11_000,
                     watermark_after_ms=T0 + 11_000, rows=[_row("a", "00:00:00", "00:00:10", 1)], state_rows=2,
                     operators=_ops(("stateStoreSave", 0, 0, 0), ("symmetricHashJoin", 2, 0, 0)))]


def test_create_fills_what_the_operators_did(tmp_path):
    text = HEAD + """  - expect:
      updated:                 # both batches
      batch_watermark:         # the no-data batch's
      event_time: {max: , watermark: }
      batches:
        - {updated: }
        - {data: , updated: }
      operators:
        - {name: , dropped: }  # nearest the sink
        - {name: , state_rows: , updated: , dropped: }
  - expect: {operators: , event_time: , updated: }
"""
    plan = _plan(tmp_path, text, "create", batches=OP_BATCHES)
    assert plan.refused is None
    assert plan.new == HEAD + """  - expect:
      updated: 3                 # both batches
      batch_watermark: "00:00:11"         # the no-data batch's
      event_time: {max: "00:00:16", watermark: initial}
      batches:
        - {updated: 3}
        - {data: false, updated: 0}
      operators:
        - {name: stateStoreSave, dropped: 0}  # nearest the sink
        - {name: symmetricHashJoin, state_rows: 2, updated: 2, dropped: 1}
  - expect: {operators: [{name: stateStoreSave, state_rows: 0, updated: 0, dropped: 0}, {name: symmetricHashJoin, state_rows: 2, updated: 0, dropped: 0}], event_time: none, updated: 0}
"""
    sc = load_scenario_text(plan.new, "x")  # valid, and what was written is what the judge reads
    from eventtime.judge import judge

    assert judge(sc.steps[-2], Observed(OP_BATCHES, OP_BATCHES, "append", []), sc) == []
    assert judge(sc.steps[-1], Observed([], OP_BATCHES, "append", []), sc) == []
    # the control: an implementation not judged on its state writes none of what its operators keep
    path = tmp_path / "snap.scenario.yaml"
    result = _run(path, OP_BATCHES)
    for sr in result.steps:
        if sr.observed is not None:
            sr.observed.unjudged = frozenset({"state_rows"})
    unjudged = snap.plan_file(path, path.name, [result], "create")
    assert "updated: 3" not in unjudged.new and "symmetricHashJoin" not in unjudged.new
    assert "batch_watermark: \"00:00:11\"" in unjudged.new
    assert any("operators left out: the implementation is not judged on it" in n for n in unjudged.notes)


def test_fix_sets_what_the_operators_did_and_leaves_what_agrees(tmp_path):
    right = HEAD + """  - expect:
      updated: 3
      batch_watermark: "00:00:11"   # ran with
      event_time: {max: "00:00:16", watermark: initial}
      batches: [{updated: 3}, {updated: 0}]
      operators:
        - {name: stateStoreSave, dropped: 0}
        - {name: symmetricHashJoin, state_rows: 2, dropped: 1}   # the join
"""
    assert _plan(tmp_path, right, "fix", batches=OP_BATCHES).new == right  # the control: all agree
    wrong = (right.replace("updated: 3\n", "updated: 4\n").replace('"00:00:11"   #', '"00:00:12"   #')
             .replace("watermark: initial}", 'watermark: "00:00:01"}').replace("{updated: 0}", "{updated: 9}")
             .replace("state_rows: 2, dropped: 1}", "state_rows: 5, dropped: 1}"))
    plan = _plan(tmp_path, wrong, "fix", batches=OP_BATCHES)
    assert plan.new == right
    assert plan.changes == ["line 10: updated: 4 -> 3", 'line 11: batch_watermark: "00:00:12" -> "00:00:11"',
                            'line 12: event_time.watermark: "00:00:01" -> initial', "line 13: batches.updated: 9 -> 0",
                            "line 16: operators.state_rows: 5 -> 2"]
    # another number of operators: the list is written again, every field of each
    one = right.replace("        - {name: stateStoreSave, dropped: 0}\n", "")
    assert _plan(tmp_path, one, "fix", batches=OP_BATCHES).new == right.replace(
        "        - {name: stateStoreSave, dropped: 0}\n        - {name: symmetricHashJoin, state_rows: 2, dropped: 1}"
        "   # the join", "        - {name: stateStoreSave, state_rows: 0, updated: 1, dropped: 0}\n"
        "        - {name: symmetricHashJoin, state_rows: 2, updated: 2, dropped: 1}   # the join")
    # `event_time: none` where a batch reported statistics, and the statistics where none did
    none = HEAD + "  - expect:\n      event_time: none\n  - expect:\n      event_time: {max: \"00:00:16\"}\n"
    assert _plan(tmp_path, none, "fix", batches=OP_BATCHES).new == HEAD + (
        '  - expect:\n      event_time: {max: "00:00:16", watermark: initial}\n  - expect:\n      event_time: none\n')


def _state_run(path: Path, table: object, failed: bool = True) -> ScenarioResult:
    """A run whose last expect's `state` check read `table` (a StateTable, or why it could not)."""
    from eventtime.results import CheckFailure

    result = _run(path)
    sr = result.steps[-1]
    sr.observed.state = table
    if failed:
        sr.failures = [CheckFailure("state", sr.where, "the state of dedupe: 1 missing, 1 unexpected")]
    return result


def _state_table(rows: list[tuple]) -> object:
    from eventtime.harness.stateread import StateTable

    return StateTable("dedupe (operator 0)", {"key.id": "string", "key.ts": "timestamp", "value.__dummy__": "void"},
                      rows, ("key.id", "key.ts"))


STATE = [("b", _us("00:00:12")), ("c", _us("00:00:16"))]


def test_create_fills_a_state_check_on_the_fields_its_rows_name_or_every_field(tmp_path):
    path = tmp_path / "snap.scenario.yaml"
    for asked, filled in (
            ("      state: {operator: dedupe, rows: [{key.id: }]}   # ids only\n",
             "      state: {operator: dedupe, rows: [{key.id: b}, {key.id: c}]}   # ids only\n"),
            ("      state:\n        rows:\n          - {key.id: , key.ts: }\n",
             '      state:\n        rows: [{key.id: b, key.ts: "00:00:12"}, {key.id: c, key.ts: "00:00:16"}]\n'),
            ("      state:\n", '      state: {rows: [{key.id: b, key.ts: "00:00:12"}, {key.id: c, key.ts: "00:00:16"}]}\n'),
            ("      state: {rows: }\n", '      state: {rows: [{key.id: b, key.ts: "00:00:12"}, {key.id: c, key.ts: "00:00:16"}]}\n')):
        path.write_text(HEAD + "  - expect:\n" + asked)
        plan = snap.plan_file(path, path.name, [_state_run(path, _state_table(STATE))], "create")
        assert plan.new == HEAD + "  - expect:\n" + filled, asked
    # a state that could not be read: nothing written for it, and the note says why
    path.write_text(HEAD + "  - expect:\n      rows:\n      state: {rows: [{key.id: }]}\n")
    plan = snap.plan_file(path, path.name, [_state_run(path, "the query has 2 stateful operators")], "create")
    assert "state: {rows: [{key.id: }]}" in plan.new
    assert any("cannot read the state: the query has 2 stateful operators" in n for n in plan.notes)


def test_a_state_template_an_implementation_is_not_judged_on_is_left_out(tmp_path):
    """An implementation not judged on its state (the applyInPandasWithState tumbling count) reads none: a
    state whose rows name fields (what strip_expectations leaves) is left out as a `state:` hole is, not
    kept as a template that loads as a row of nulls."""
    path = tmp_path / "snap.scenario.yaml"

    def plan(text: str, unjudged: frozenset) -> snap.Planned:
        path.write_text(HEAD + "  - expect:\n" + text)
        result = _state_run(path, _state_table(STATE), failed=False)
        for sr in result.steps:
            if sr.observed is not None:
                sr.observed.unjudged = unjudged
        return snap.plan_file(path, path.name, [result], "create")

    asked = "      watermark:\n      state:\n        rows: [{key.id: , key.ts: }]   # ids and times\n"
    left = plan(asked, frozenset({"state_rows"}))
    assert left.new == HEAD + '  - expect:\n      watermark: "00:00:11"\n'
    assert any("state left out: the implementation is not judged on it" in n for n in left.notes)
    # the only check of its expect: it stays (an empty expect would be a bare one), and the note names it
    alone = plan("      state: {rows: [{key.id: }]}\n", frozenset({"state_rows"}))
    assert "state: {rows: [{key.id: }]}" in alone.new
    assert any("state left out: the implementation is not judged on it" in n for n in alone.notes)
    # the control: judged on its state, the same template is filled
    assert plan(asked, frozenset()).new == HEAD + '  - expect:\n      watermark: "00:00:11"\n      state:\n' + (
        '        rows: [{key.id: b, key.ts: "00:00:12"}, {key.id: c, key.ts: "00:00:16"}]   # ids and times\n')


def test_fix_names_exactly_the_state_rows_that_changed(tmp_path):
    text = HEAD + """  - expect:
      state:
        operator: dedupe
        rows:
          - {key.id: b, key.ts: "00:00:12"}   # kept
          - {key.id: c, key.ts: "00:00:17"}   # wrong
"""
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(text)
    plan = snap.plan_file(path, path.name, [_state_run(path, _state_table(STATE))], "fix")
    assert plan.new == text.replace('"00:00:17"}   # wrong', '"00:00:16"}   # wrong')
    assert plan.changes == ['line 12: state.rows: - {key.id: c, key.ts: "00:00:17"}',
                            'line 12: state.rows: + {key.id: c, key.ts: "00:00:16"}']
    # the control: a check the judge passed is not changed, whatever was read
    assert snap.plan_file(path, path.name, [_state_run(path, _state_table([]), failed=False)], "fix").new == text
    # `rows: []` that was wrong: every field the state holds (a NullType placeholder field holds none)
    path.write_text(HEAD + "  - expect:\n      state: {rows: []}\n")
    assert snap.plan_file(path, path.name, [_state_run(path, _state_table(STATE[:1]))], "fix").new == HEAD + (
        '  - expect:\n      state: {rows: [{key.id: b, key.ts: "00:00:12"}]}\n')


def test_strip_keeps_the_fields_a_state_names_and_the_operators_entries():
    text = HEAD + """  - expect:
      state:
        operator: dedupe
        rows:
          - {key.id: b, key.ts: "00:00:12"}   # kept
      operators: [{name: dedupe, state_rows: 1}]
      updated: 1
      batch_watermark: initial
      event_time: none
  - expect: {state: {side: left, rows: []}}
"""
    stripped = strip_text(text)
    assert stripped == HEAD + """  - expect:
      state:
        operator: dedupe
        rows: [{key.id: , key.ts: }]   # kept
      operators: [{name: , state_rows: }]
      updated:
      batch_watermark:
      event_time:
  - expect: {state: {side: left, rows: }}
"""
    original = load_scenario_text(text, "x")
    assert differences(original, load_scenario_text(text, "x")) == []
    other = load_scenario_text(text.replace("state_rows: 1}", "state_rows: 2}").replace('"00:00:12"}   #', '"00:00:13"}   #'), "x")
    assert [d.split(": ", 2)[1] for d in differences(original, other)] == ["operators", "state"]  # the control


# -- pytest-xdist: workers observe, the controller plans and writes once (on Spark: tests/spark/test_snapshot.py)
def _xdist_session(tmp_path: Path, worker_outputs: list[list[snap.Observation]], ran: int, monkeypatch) -> tuple:
    """The controller's plugin after workers sent `worker_outputs` and `ran` items of the file ran."""
    from types import SimpleNamespace

    from eventtime.snapshot_pytest import SnapshotPlugin

    monkeypatch.delenv("CI", raising=False)
    options = {"eventtime_snapshot": "create", "eventtime_snapshot_yes": True, "eventtime_snapshot_on_spark": False}
    lines: list[str] = []
    config = SimpleNamespace(getoption=options.get, pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    plugin = SnapshotPlugin(config, SimpleNamespace(contracts=None))
    for i, sent in enumerate(worker_outputs):  # each worker's session end, then its node going down
        worker = SnapshotPlugin(SimpleNamespace(getoption=options.get, workerinput={"workerid": f"gw{i}"},
                                                workeroutput={}), None)
        worker.observations = sent
        worker.pytest_sessionfinish(SimpleNamespace(), 0)
        plugin.pytest_testnodedown(SimpleNamespace(workeroutput=worker.config.workeroutput), None)
    for _ in range(ran):
        plugin.pytest_runtest_logreport(SimpleNamespace(when="call", nodeid="snap.scenario.yaml::snap[x]", failed=False))
    session = SimpleNamespace(exitstatus=0)
    import builtins

    monkeypatch.setattr(builtins, "print", lambda *a, **k: lines.append(" ".join(map(str, a))))
    plugin.pytest_sessionfinish(session, 0)
    return session.exitstatus, lines


def _observation(path: Path, implementation: str, batches: list[BatchObservation] = BATCHES) -> snap.Observation:
    result = _run(path, batches, status="failed")  # a hole's placeholder fails, as on Spark
    result.implementation = implementation
    obs = snap.observe(path, path.name, result, "create")
    obs.path = "snap.scenario.yaml\0" + obs.path  # as the worker's plugin keys it by the item's file
    return obs


def test_under_xdist_the_controller_writes_each_file_once_from_every_worker(tmp_path, monkeypatch):
    path = tmp_path / "snap.scenario.yaml"
    text = HEAD + "  - expect:\n      rows:\n"
    path.write_text(text)
    status, said = _xdist_session(tmp_path, [[_observation(path, "a")], [_observation(path, "b")]], 2, monkeypatch)
    assert status == 0 and path.read_text() == HEAD + '  - expect:\n      rows: [[a, "00:00:00", "00:00:10", 1]]\n'
    assert sum("wrote 1 file" in line for line in said) == 1
    # the controls: the workers' implementations observed different things; a third run of the file
    # ended without an observation (its worker crashed): nothing written either way
    other = [_batch(0, [_row("z", "00:00:00", "00:00:10", 1)], 0, T0 + 11_000)]
    for second, ran, why in ((other, 2, "observed different things (a; b)"), (BATCHES, 3, "1 of its runs ended")):
        path.write_text(text)
        outputs = [[_observation(path, "a")], [_observation(path, "b", second)]]
        status, said = _xdist_session(tmp_path, outputs, ran, monkeypatch)
        assert status == 1 and path.read_text() == text
        assert any(why in line for line in said), said


def test_a_variant_keeps_a_state_check_that_agreed_as_stated(tmp_path):
    text = HEAD + """  - expect:
      rows: []
      state:
        operator: dedupe
        rows:
          - {key.id: b, key.ts: "00:00:12"}
"""
    path = tmp_path / "snap.scenario.yaml"
    path.write_text(text)
    plan = snap.plan_file(path, path.name, [_state_run(path, None, failed=False)], "fix", on_spark=True)
    assert plan.new == text + ('      on_spark:\n        ">=4.3,<4.4": {rows: [[a, "00:00:00", "00:00:10", 1]], '
                               'state: {operator: dedupe, rows: [{key.id: b, key.ts: "00:00:12"}]}}\n')
    variant = m.for_spark_version(load_scenario_text(plan.new, "x"), "4.3.0").steps[-1].state
    common = load_scenario_text(text, "x").steps[-1].state
    assert (variant.operator, variant.columns, variant.rows) == (common.operator, common.columns, common.rows)
    # the control: a state that disagreed goes into the variant as it was read
    disagreed = snap.plan_file(path, path.name, [_state_run(path, _state_table(STATE))], "fix", on_spark=True)
    assert '{key.id: c, key.ts: "00:00:16"}' in disagreed.new.split("on_spark:")[1]


# -- the run: `eventtime run --snapshot` goes through the one run loop (commands/execute.py) ---------------
def test_a_driver_death_in_a_snapshot_run_is_said_the_rest_runs_on_a_fresh_session_and_the_results_written(
        tmp_path, monkeypatch, capsys):
    """The driver dies under the first file: its death is said in words, a fresh session runs the second
    file (which is written), the first is not touched, and the results file holds both runs (before the
    snapshot had its own run loop: no recovery, the second file never ran, no results file)."""
    import json
    from types import SimpleNamespace

    from eventtime import parallel
    from eventtime.cli import main
    from eventtime.commands import spark as spark_command
    from eventtime.exitcodes import ExitCode
    from eventtime.results import DRIVER_DIED

    monkeypatch.chdir(tmp_path)
    text = HEAD + "  - expect:\n      rows:\n      watermark:\n"
    for name in ("a", "b"):
        (tmp_path / f"{name}.scenario.yaml").write_text(text)
    session = SimpleNamespace(version="4.3.0", sparkContext=SimpleNamespace(master="local[2]"), _jsparkSession=None)
    fresh = SimpleNamespace(version="4.3.0", sparkContext=SimpleNamespace(master="local[2]"), _jsparkSession=None)
    sessions_used = []

    def run_pairs(pairs, *, session=None, recovery=None, **kwargs):  # as parallel.run_pairs does with jobs 1
        for i, p in enumerate(pairs):
            sessions_used.append(session)
            if i == 0:
                died = ScenarioResult(p.scenario, str(p.implementation), ERROR, rerun=p.rerun, spark_version="4.3.0",
                                      reason="the Spark driver died: its JVM (pid 1) was killed by SIGKILL")
                died.cause = DRIVER_DIED
                yield died
                if recovery is None or not recovery.died(False, died, pairs[1:]):
                    return
                session = recovery.fresh()
                continue
            ran = ScenarioResult(p.scenario, str(p.implementation), PASSED, rerun=p.rerun, spark_version="4.3.0")
            for step in p.scenario.steps:
                sr = StepResult(step.index, step.kind, step.where)
                if isinstance(step, m.ExpectStep):
                    sr.observed = Observed(BATCHES, BATCHES, "append", [c.name for c in p.scenario.contract.output])
                ran.steps.append(sr)
            yield ran

    monkeypatch.setattr(parallel, "run_pairs", run_pairs)
    monkeypatch.setattr(spark_command, "open_session", lambda args: (session, ExitCode.OK))
    monkeypatch.setattr(spark_command, "start_session", lambda master, fresh_=False, **kw: fresh)
    monkeypatch.delenv("CI", raising=False)
    code = main(["run", "a.scenario.yaml", "b.scenario.yaml", "--pipeline",
                 "tumbling_count=eventtime.pipelines.reference:tumbling_count", "--snapshot", "create", "--yes",
                 "--json", "results.json"])
    out, err = capsys.readouterr()
    assert code == ExitCode.FAILED, out + err  # the file whose run the driver died under is not written
    assert "eventtime: the Spark driver died: its JVM (pid 1) was killed by SIGKILL" in err
    assert "starting a fresh Spark session for the scenarios left" in err
    assert sessions_used == [session, fresh]
    assert "1 driver death" in out and "(before the snapshot)" in out
    assert "a.scenario.yaml: not touched: its run erred" in out
    assert (tmp_path / "a.scenario.yaml").read_text() == text
    assert "wrote 1 file: b.scenario.yaml" in out
    assert (tmp_path / "b.scenario.yaml").read_text() != text
    results = json.loads((tmp_path / "results.json").read_text())
    assert [(r["file"], r["status"]) for r in results["results"]] == [("a.scenario.yaml", "error"),
                                                                      ("b.scenario.yaml", "passed")]
