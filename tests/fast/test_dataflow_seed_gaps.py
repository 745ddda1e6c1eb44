"""The seed examples the first audit of issue 48 found not yet written as scenarios: each bundled
scenario passes `check-model`, and a control (one value changed) fails it; the model's rule each needs
is shown on its own."""
from __future__ import annotations

from pathlib import Path

import pytest

from eventtime.loader import load_scenario, load_scenario_text
from eventtime.problems import ScenarioInvalid
from eventtime.semantics import check_scenario
from eventtime.semantics.dataflow import WATERMARK, BoundedOutOfOrderness, DataflowQuery

S = 1_000_000  # µs

FOLDER = Path(__file__).resolve().parents[2] / "scenarios" / "dataflow"


def _bundled(name: str) -> tuple[str, str]:
    path = FOLDER / f"{name}.scenario.yaml"
    return str(path), path.read_text(encoding="utf-8")


def _passes_and_control_fails(name: str, old: str, new: str) -> list:
    """The bundled scenario passes; with `old` replaced (once) by `new` it fails: the failures."""
    path, text = _bundled(name)
    sc = load_scenario(path)
    assert f"seed {name[4:7]}" in " ".join(sc.description.split())
    assert check_scenario(sc).status == "passed"
    assert text.count(old) >= 1, old
    result = check_scenario(load_scenario_text(text.replace(old, new, 1), path))
    assert result.status == "failed"
    return [f for s in result.steps for f in s.failures]


# -- 1. seed 001 "With Punctuated Watermarks": the PunctuatedAssigner -----------------------------------------

def test_punctuated_assigner_emits_after_marker_elements_only_when_larger():
    failures = _passes_and_control_fails(
        "seed001-punctuated-assigner",  # control: the marker at 00:00:08 (below 00:00:10) said to be emitted
        '      rows: [[a, "00:00:00", "00:00:10", 1, dropped, "00:00:08"]]\n      watermark: "00:00:10"\n'
        '      watermarks: []',
        '      rows: [[a, "00:00:00", "00:00:10", 1, dropped, "00:00:08"]]\n      watermark: "00:00:10"\n'
        '      watermarks: ["00:00:08"]')
    assert [f.check for f in failures] == ["watermarks"]


# -- 2. seed 001 "With Periodic Watermarks": the TimeLagWatermarkGenerator ------------------------------------

def test_time_lag_generator_follows_processing_time_and_never_goes_back():
    g = BoundedOutOfOrderness(None, lag_ms=5_000, time_lag=True)
    g.on_event(90_000, 1_000)  # the elements do not move it
    assert g.on_periodic_emit(10_000) == 5_000
    assert g.on_periodic_emit(8_000) == 5_000  # not larger than the previous: not emitted
    assert g.on_periodic_emit(15_000) == 10_000


def test_time_lag_scenario_fires_on_processing_time_alone():
    failures = _passes_and_control_fails(
        "seed001-time-lag-generator",  # control: the lag read as 4 s
        "    lag: 5 seconds", "    lag: 4 seconds")
    assert failures and failures[0].check == "watermark"


# -- 3. seed 000 "Stalled Watermarks" / seed 003 "Idling sources": the idle fallback ---------------------------

def test_idle_after_proposes_processing_time_minus_lag_only_once_the_input_is_idle_that_long():
    g = BoundedOutOfOrderness(0, lag_ms=5_000, idle_after_ms=30_000, last_event_ms=0)
    g.on_event(12_000, 0)
    assert g.on_periodic_emit(0) == 11_999
    assert g.on_periodic_emit(20_000) == 11_999  # 20 s without an element: not idle yet
    assert g.on_periodic_emit(35_000) == 30_000  # 35 s: processing time - lag
    g.on_event(25_000, 35_000)  # an element: the fallback waits again, and nothing goes back
    assert g.on_periodic_emit(40_000) == 30_000


def test_idle_after_resolves_the_periodic_assigner_stall():
    stalled = load_scenario(str(FOLDER / "seed000-periodic-assigner-stalls.scenario.yaml"))
    assert check_scenario(stalled).status == "passed"  # the same events stall without it
    failures = _passes_and_control_fails(
        "seed000-periodic-assigner-idle-fallback",  # control: no fallback (the stall) - the window never fires
        "    idle_after: 30 seconds            # how long the job is willing to wait for records\n"
        "    lag: 5 seconds                    # then: processing time - 5 s\n", "")
    assert {f.check for f in failures} >= {"rows", "watermark", "watermarks"}


# -- 4. seed 000 "Stalled Watermarks": SingleWatermarkCoFlatMap ---------------------------------------------

def test_an_ignored_input_never_enters_the_minimum_but_its_rows_count():
    q = DataflowQuery(("events",), 0, 10 * S, 0, clock_start_ms=0, trigger_ms=None, partitions={"events": 2},
                      subtasks={"events": 2}, ignored={"events": [1]})
    q.start()
    q.add("events", [{"key": "a", "ts": 12 * S}], partition=0)
    q.add("events", [{"key": "c", "ts": 3 * S}], partition=1)
    q.signal(["events#1"], WATERMARK, 1)
    [batch] = q.process()
    assert batch.forwarded == [11_999] and [r[0] for r in batch.rows] == ["c"]  # c fired by a's watermark
    q.signal(["events#1"], "idle")
    q.signal(["events#0"], "idle")
    q.process()
    assert q.valve.outputs[-1] == ("status", "idle")  # the other input alone decides the status too


def test_single_watermark_coflatmap_scenario_and_control():
    failures = _passes_and_control_fails(
        "seed000-single-watermark-coflatmap",  # control: the control stream's watermarks taken into the minimum
        "    ignore_watermarks: [1]", "    generator: periodic")
    assert failures


# -- validation: the new keys' misuse is a file:line error ----------------------------------------------------

HEAD = """\
scenario: s
description: the new source keys
contract: lateness_count
profile: {profile}
params: {{window: 10 seconds, bound: 0 seconds, allowed_lateness: 0 seconds}}
sources:
  events:
    columns: {{key: string, ts: timestamp}}
    event_time: ts
{source}steps:
  - process
"""


@pytest.mark.parametrize("profile, source, expected", [
    ("spark", "    generator: time_lag\n    lag: 5 seconds\n",
     "s.yaml:10:5: `generator` is a source setting only the dataflow profile's model takes"),
    ("dataflow", "    generator: time_lag\n", "s.yaml:10:16: source 'events': `generator: time_lag` needs `lag:`"),
    ("dataflow", "    lag: 5 seconds\n", "s.yaml:10:10: source 'events': `lag` is the lag behind processing time"),
    ("dataflow", "    idle_after: 30 seconds\n", "s.yaml:10:17: source 'events': `idle_after` needs `lag:`"),
    ("dataflow", "    generator: punctuated\n    idle_after: 30 seconds\n    lag: 1 second\n",
     "s.yaml:11:17: source 'events': `idle_after` is an option of the periodic generator"),
    ("dataflow", "    idle_after: 0 seconds\n    lag: 1 second\n", "s.yaml:10:17: the duration must be longer than zero"),
    ("dataflow", "    partitions: 2\n    subtasks: 2\n    ignore_watermarks: [2]\n",
     "s.yaml:12:25: source 'events' has no subtask 2"),
    ("dataflow", "    partitions: 2\n    subtasks: 2\n    ignore_watermarks: [0, 1]\n",
     "s.yaml:12:24: source 'events': `ignore_watermarks` leaves the window operator no input"),
    ("dataflow", "    ignore_watermarks: [0]\n", "s.yaml:10:24: source 'events': `ignore_watermarks` leaves"),
    ("dataflow", "    ignore_watermarks: yes\n", "s.yaml:10:24: 'ignore_watermarks' must be a list"),
])
def test_misuse_of_the_new_source_keys_is_a_file_line_error(profile, source, expected):
    with pytest.raises(ScenarioInvalid) as exc:
        load_scenario_text(HEAD.format(profile=profile, source=source), "s.yaml")
    found = [str(p) for p in exc.value.problems]
    assert any(p.startswith(expected) for p in found), found


# -- 5. seed 000 "Stream Status": the statuses an operator emits downstream -----------------------------------

def test_the_operator_emits_idle_when_every_input_is_idle_and_active_when_one_is_again():
    q = DataflowQuery(("events",), 0, 10 * S, 0, clock_start_ms=0, trigger_ms=None, partitions={"events": 2},
                      subtasks={"events": 2}, generator={"events": "none"})
    q.start()
    q.signal(["events#1"], "idle")
    assert [b.statuses for b in q.process()] == [[]]  # the other input is active
    q.signal(["events#0"], "idle")
    assert [b.statuses for b in q.process()] == [["idle"]]
    q.signal(["events#1"], "active")
    assert [b.statuses for b in q.process()] == [["active"]]
    q.signal(["events#0"], "active")
    assert [b.statuses for b in q.process()] == [[]]  # active already


def test_stream_status_scenario_and_control():
    failures = _passes_and_control_fails(
        "seed000-stream-status-operator-emits",  # control: the idle status said to come with one input idle
        "      watermarks: [\"00:00:12\"]\n      statuses: []", "      watermarks: [\"00:00:12\"]\n      statuses: [idle]")
    assert [(f.check, f.where.line) for f in failures] == [("statuses", 34)]
    assert "emitted stream statuses [none] since the previous expect, expected [idle]" in failures[0].message


def test_statuses_are_model_only_a_spark_profile_error_and_expect_write_fills_them(tmp_path, capsys):
    from eventtime.cli import main
    from eventtime.spec import model_only

    path, text = _bundled("seed000-stream-status-operator-emits")
    only = load_scenario_text(HEAD.format(profile="dataflow", source="") + "  - expect: {statuses: []}\n", "s.yaml")
    assert (model_only(only) or "").startswith("model only: step 2 checks the stream statuses an operator emitted")
    with pytest.raises(ScenarioInvalid) as exc:
        load_scenario_text(text.replace("profile: dataflow", "profile: spark"), path)
    assert any("`statuses` checks the stream statuses an operator emitted, which only the dataflow profile's model "
               "gives" in str(p) for p in exc.value.problems)
    with pytest.raises(ScenarioInvalid) as exc:
        load_scenario_text(text.replace("statuses: [idle]", "statuses: [sleeping]"), path)
    assert ":37:81: 'sleeping' is not allowed here (one of: idle, active)" in str(exc.value.problems[0])
    wrong = tmp_path / "s.scenario.yaml"
    wrong.write_text(text.replace("statuses: [idle]", "statuses: []").replace("statuses: [active]", "statuses: [idle]"),
                     encoding="utf-8")
    assert main(["check-model", str(wrong)]) == 1
    assert main(["expect", "--write", str(wrong)]) == 0
    assert wrong.read_text(encoding="utf-8") == text
    capsys.readouterr()


def test_the_statuses_check_has_teeth():
    from eventtime.teeth import examine

    sc = load_scenario(str(FOLDER / "seed000-stream-status-operator-emits.scenario.yaml"))
    teeth = examine(check_scenario(sc))
    checks = [c for c in teeth.checks if c.label == "statuses"]
    assert len(checks) == 5 and not [c for c in checks if c in teeth.vacuous]


# -- the stranger's findings: an ignored input's stream status, the watermark after a restart ----------------

IGNORED = """\
scenario: ignored-subtask-status
description: SingleWatermarkCoFlatMap with stream statuses
contract: lateness_count
profile: dataflow
params: {window: 10 seconds, bound: 2 seconds, allowed_lateness: 0 seconds}
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
    partitions: 2
    subtasks: 2
    ignore_watermarks: [1]
steps:
  - add: {events: {partition 0: [[a, "00:00:04"]], partition 1: [[ctl, "00:00:04"]]}}
  - process
  - expect: {rows: [], statuses: [], watermark: "00:00:01.999"}
  - idle: events partition 0
  - add: {events: {partition 1: [[ctl, "00:00:05"], [ctl, "00:00:30"]]}}
  - process
  - expect: {rows: [], statuses: [], watermark: "00:00:01.999", watermarks: []}
  - idle: events partition 1
  - process
  - expect: {statuses: [idle], watermark: "00:00:01.999"}
  - active: events partition 1
  - process
  - expect: {statuses: [active], watermark: "00:00:01.999"}
"""


def test_an_ignored_input_still_counts_for_the_operators_stream_status():
    """Seed 000's SingleWatermarkCoFlatMap overrides processWatermark2 only: the inputs' stream statuses still
    combine (idle only when every input is idle); the ignored input's watermarks never reach the operator,
    also while the other input is idle (its 00:00:30 - 2 s moves nothing)."""
    result = check_scenario(load_scenario_text(IGNORED, "ignored.scenario.yaml"))
    assert result.status == "passed", [str(f) for s in result.steps for f in s.failures]
    q = DataflowQuery(("events",), 0, 10 * S, 0, clock_start_ms=0, trigger_ms=None, partitions={"events": 2},
                      subtasks={"events": 2}, generator={"events": "none"}, ignored={"events": [1]})
    q.start()
    q.signal(["events#0"], "idle")
    assert [b.statuses for b in q.process()] == [[]]  # the ignored input is active: the operator too
    q.signal(["events#1"], WATERMARK, 50_000)
    assert [b.forwarded for b in q.process()] == [[]] and q.watermark < 0  # its watermark is ignored, the other input idle or not


RESTART = """\
scenario: restart-dataflow
description: watermarks are not checkpointed; after a restart they start from Long.MIN_VALUE
contract: lateness_count
profile: dataflow
params: {window: 10 seconds, bound: 2 seconds, allowed_lateness: 0 seconds}
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
steps:
  - add: {events: [[a, "00:00:03"], [a, "00:00:15"]]}
  - process
  - expect: {rows: [[a, "00:00:00", "00:00:10", 1, on_time, "00:00:09.999"]], watermark: "00:00:12.999"}
  - restart
  - expect: {rows: [], watermark: initial, watermarks: []}
  - add: {events: [[a, "00:00:05"]]}
  - process
  - expect: {rows: [], watermark: "00:00:02.999", watermarks: ["00:00:02.999"]}
"""


def test_after_a_restart_the_watermark_is_initial_until_one_is_emitted(tmp_path, capsys):
    from eventtime.cli import main

    result = check_scenario(load_scenario_text(RESTART, "restart.scenario.yaml"))
    assert result.status == "passed", [str(f) for s in result.steps for f in s.failures]
    wrong = tmp_path / "restart.scenario.yaml"  # expect --write writes `initial` there too
    wrong.write_text(RESTART.replace("watermark: initial", 'watermark: "00:00:12.999"'), encoding="utf-8")
    assert main(["expect", "--write", str(wrong)]) == 0
    assert wrong.read_text(encoding="utf-8") == RESTART
    capsys.readouterr()


@pytest.mark.parametrize("args, said", [(["--profile", "dataflow"], "(dataflow profile)"),
                                        ([], "(each scenario's own profile)")])
def test_check_model_summary_names_the_profile_asked_for_when_no_file_loads(tmp_path, capsys, args, said):
    from eventtime.cli import main

    bad = tmp_path / "bad.scenario.yaml"  # statuses under the spark profile: invalid
    bad.write_text(HEAD.format(profile="spark", source="") + "  - expect: {statuses: []}\n", encoding="utf-8")
    assert main(["check-model", str(bad), *args]) == 1
    out = capsys.readouterr().out
    assert f"0 scenarios: 0 agree with the model {said}, 0 disagree, 0 not covered, 0 errors, 1 invalid files" in out


STEPS = HEAD.replace("steps:\n  - process\n", "steps:\n{steps}  - process\n")


@pytest.mark.parametrize("source, steps, expected", [
    ("", '  - watermark: {events partition: "00:00:04"}\n',
     "s.yaml:11:17: 'events partition' is not an input: write `SOURCE` (each of its partitions) or "
     "`SOURCE partition K` (K counts from 0, without leading zeros), such as `events` or `events partition 0`"),
    ("", "  - idle: [events partition 01]\n", "s.yaml:11:12: 'events partition 01' is not an input: write `SOURCE`"),
    ("    partitions: 2\n    ignore_watermarks: [1]\n", "",
     "s.yaml:11:25: source 'events' has no subtask 1: without `subtasks` one subtask reads every partition "
     "(subtask 0); give it `subtasks: N`"),
    ("    partitions: 2\n    subtasks: 2\n    ignore_watermarks: [2]\n", "",
     "s.yaml:12:25: source 'events' has no subtask 2: it has 2 (`subtasks: 2`: subtasks 0-1)"),
])
def test_the_new_keys_messages_say_the_forms_and_ranges(source, steps, expected):
    with pytest.raises(ScenarioInvalid) as exc:
        load_scenario_text(STEPS.format(profile="dataflow", source=source, steps=steps), "s.yaml")
    found = [str(p) for p in exc.value.problems]
    assert any(p.startswith(expected) for p in found), found


# -- what the docs say of the new keys, pinned to what the model and expect --write do -----------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _docs(name: str) -> str:
    return " ".join((DOCS / name).read_text(encoding="utf-8").split())


def test_bound_is_unused_under_time_lag_and_none_and_the_docs_say_so():
    path, text = _bundled("seed001-time-lag-generator")
    assert "bound: 0 seconds" in text
    assert check_scenario(load_scenario_text(text.replace("bound: 0 seconds", "bound: 7 seconds"), path)).status == "passed"
    assert "`bound` is not used by `time_lag` and `none`" in _docs("scenario-format.md")


def test_one_long_advance_emits_one_time_lag_watermark_and_the_docs_say_so():
    q = DataflowQuery(("events",), 0, 10 * S, 0, clock_start_ms=10_000, trigger_ms=None,
                      generator={"events": "time_lag"}, lag_ms={"events": 5_000})
    q.start()
    assert [b.forwarded for b in q.advance(60_000)] == [[65_000]]  # not one per auto-watermark interval
    assert "one `advance` emits one watermark" in _docs("scenario-format.md")


def test_the_minus_one_ms_is_cited_to_seeds_002_and_003_not_001():
    doc = _docs("scenario-format.md")
    assert 'seed 001: "no more elements with timestamp <= t"' not in doc
    assert "seed 001's BoundedOutOfOrdernessGenerator returns `max - bound`" in doc


def test_expect_write_adds_rows_and_watermark_under_dataflow_and_the_docs_say_what_each_profile_gets(tmp_path, capsys):
    from eventtime.cli import main

    path, text = _bundled("seed001-time-lag-generator")
    bare = text.replace('      watermark: "00:00:25"\n      watermarks: ["00:00:25"]\n', "", 1)
    assert bare != text
    f = tmp_path / "s.scenario.yaml"
    f.write_text(bare, encoding="utf-8")
    assert main(["expect", "--write", str(f)]) == 0
    written = f.read_text(encoding="utf-8")
    tail = written[written.rindex("- expect:"):]  # watermark added; watermarks not
    assert "rows:" in tail and 'watermark: "00:00:25"' in tail and "watermarks" not in tail and "dropped" not in tail
    capsys.readouterr()
    doc = _docs("commands.md")
    assert "under the dataflow profile `rows` (or `output`) and `watermark`" in doc
    assert "never `watermarks` nor `statuses`" in doc


# -- compare-profiles: the spark side says which dataflow-only source keys it cannot run; statuses shown -------

def test_compare_profiles_spark_side_names_the_dataflow_only_source_keys_and_the_dataflow_side_shows_statuses(capsys):
    from eventtime.cli import main

    path, _ = _bundled("seed001-time-lag-generator")
    assert main(["compare-profiles", path]) == 0
    out = capsys.readouterr().out
    assert "  spark: cannot run these steps: " in out
    assert "source 'events' sets generator, lag: dataflow-only source settings" in out
    assert "  spark     watermark" not in out and '  dataflow  watermark "00:00:05"' in out
    path, _ = _bundled("seed000-single-watermark-coflatmap")
    assert main(["compare-profiles", path]) == 0
    assert "source 'events' sets subtasks, ignore_watermarks: dataflow-only" in capsys.readouterr().out
    path, _ = _bundled("seed000-stream-status-operator-emits")
    assert main(["compare-profiles", path]) == 0
    out = capsys.readouterr().out
    assert '  dataflow  watermark "00:00:12"  forwarded []  statuses [idle]  rows []' in out
    assert "statuses [active]" in out
