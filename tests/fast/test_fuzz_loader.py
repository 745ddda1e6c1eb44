"""Mutated scenario files never crash the loader: a scenario or problems at file:line.

How long each takes is the long run's to judge (`benchmarks/fuzz_loader.py`, TIME_LIMIT each), not a
test's: a CPU-time limit here failed CI on an input that loads in 0.1-0.2 s when the worker is not
slowed. What made inputs slow is pinned below by counting the work, not timing it.

The fuzzer is `tests/fuzz_scenarios.py`; here it runs FUZZ_INPUTS inputs with a fixed derandomized
seed and no example database, so every CI run tries the same inputs. `benchmarks/fuzz_loader.py`
runs it long (figures in BENCHMARKS.md). Below it, the inputs it found that crashed the loader or
took too long, each reduced to a minimal file.
"""
from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from eventtime import yamlsource
from eventtime.loader import ScenarioInvalid, _validators, load_scenario_text
from tests.fuzz_scenarios import REACHES, Tally, fuzzed_files, judge

FUZZ_INPUTS = 2000  # inputs per CI run (the documented long run: 100,000)
CLI_EVERY = 8  # one input in 8 also goes through `eventtime validate`


def test_fuzzed_scenario_files_load_or_fail_with_a_place(tmp_path):
    tally = Tally()
    path = tmp_path / "fuzzed.scenario.yaml"

    @settings(max_examples=FUZZ_INPUTS, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))
    @given(data=fuzzed_files())
    def one(data: bytes) -> None:
        via_cli = tally.tried % CLI_EVERY == 0
        verdict = judge(path, data, via_cli=via_cli, time_limit=None)
        tally.record(data, verdict, via_cli=via_cli)
        assert not verdict.faults, "\n\n".join(verdict.faults)

    one()
    print(f"fuzz: {tally.tried} inputs ({tally.via_cli} through eventtime validate), {tally.valid} valid, "
          f"{tally.invalid} invalid, slowest {tally.slowest:.3f} s")
    assert tally.tried >= FUZZ_INPUTS
    assert tally.via_cli >= FUZZ_INPUTS // CLI_EVERY
    # the inputs are mostly bad, but not all: a fuzzer that only wrote empty files would pass the rules too
    assert tally.invalid > FUZZ_INPUTS // 2 and tally.valid > 0
    assert sorted(set(REACHES) - tally.reached) == [], "the fuzzer no longer produces these kinds of bad input"


# -- what the fuzzer found, minimal -------------------------------------------------------------------

def problems_of(text: str) -> list[str]:
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario_text(text, "s.yaml")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("old, new, expected", [
    # TypeError: 'int' object is not iterable
    ("contract:", "requires: {features: 5}\ncontract:", "s.yaml:3:22: 'features' must be a list, not an integer"),
    # TypeError: unhashable type: 'list'
    ("ts: timestamp}", "ts: [timestamp]}", "s.yaml:9:32: 'ts' must be text, not a list"),
    # IsADirectoryError: a folder of the time zone database
    ("contract:", "timezone: America\ncontract:", "s.yaml:3:11: unknown time zone 'America'"),
    ("contract:", "conf: {spark.sql.session.timeZone: Europe}\ncontract:", "s.yaml:3:36: unknown time zone 'Europe'"),
    # OSError: File name too long
    ("contract:", f"timezone: {'z' * 300}\ncontract:", "s.yaml:3:11: unknown time zone 'zzz"),
], ids=["features-not-a-list", "column-type-a-list", "zone-a-folder", "conf-zone-a-folder", "zone-name-too-long"])
def test_crashes_found_by_the_fuzzer(base_scenario, old, new, expected):
    found = problems_of(base_scenario.replace(old, new, 1))
    assert len(found) == 1 and found[0].startswith(expected), found


def test_sources_of_the_wrong_type_with_an_add_step(base_scenario):
    """`sources` that is not a mapping, with an `add` naming a source: two problems with places, not a
    TypeError from inside the loader."""
    text = base_scenario.replace("sources:\n  events:\n    columns: {key: string, ts: timestamp}\n"
                                 "    event_time: ts\n", "sources: 5\n")
    assert problems_of(text) == ["s.yaml:7:10: 'sources' must be a mapping, not an integer",
                                 "s.yaml:10:7: unknown source 'events' (sources: )"]


def test_a_message_is_one_printable_line_whatever_the_file_holds(base_scenario):
    text = base_scenario.replace("  - process\n", '  - process\n  - {"a\\x1b[2J\\nb\\u202e\\ud800": 1, add: {}}\n')
    found = problems_of(text)
    assert found == ["s.yaml:16:5: a step has exactly one kind, found 2 keys (a\\x1b[2J\\nb\\u202e\\ud800, add); "
                     "write one `- kind: ...` item per step"]
    assert all(p.isprintable() for p in found)


def test_a_problem_repeated_through_aliases_is_reported_once(base_scenario):
    found = problems_of(base_scenario.replace('        - [a, "00:00:03"]\n',
                                              '        - &r [a, 1]\n        - *r\n        - *r\n'))
    assert found == ["s.yaml:14:18: column 'ts' is timestamp: expected a timestamp such as '12:00:07' or "
                     "'2024-01-01T12:00:07Z', got 1"]


def test_rows_repeated_through_aliases_are_refused_quickly(base_scenario, tmp_path, monkeypatch):
    """Was 8 s for a 10 KB file: 250 add steps, each an alias of 250 aliased rows, all loaded and checked.
    Counted, not timed: the values converted stay within the alias budget plus the document's own."""
    rows = "[" + ", ".join(['&r [a, "00:00:03"]'] + ["*r"] * 249) + "]"
    text = base_scenario.replace('      events:\n        - [a, "00:00:03"]\n',
                                 f"      events: &rows {rows}\n" + "  - add: {events: *rows}\n" * 250)
    assert len(text) < 10_000
    calls = []
    real = yamlsource._convert
    monkeypatch.setattr(yamlsource, "_convert", lambda *a: calls.append(1) or real(*a))
    verdict = judge(tmp_path / "bomb.scenario.yaml", text.encode(), via_cli=True, time_limit=None)
    assert verdict.outcome == "invalid" and not verdict.faults, verdict.faults
    assert 0 < len(calls) <= 2 * (yamlsource.MAX_ALIAS_VALUES + text.count("\n") * 8)  # two loads: file, CLI
    found = problems_of(text)
    assert found == [f"s.yaml:13:15: YAML aliases expand to more than {yamlsource.MAX_ALIAS_VALUES} values "
                     "(an alias bomb?); this is the aliased value that went over"]


def test_a_long_text_of_aliases_stops_composing_past_the_alias_budget(monkeypatch):
    """A fuzzed 22 KB file of `*r` cost 0.1-1.4 s of CPU: every alias was composed before any was counted.
    Each use adds at least one value, so composing stops at the use that goes over the budget."""
    composed = []
    real = yamlsource._Loader.compose_node
    monkeypatch.setattr(yamlsource._Loader, "compose_node", lambda self, *a: composed.append(1) or real(self, *a))
    text = "scenario: s\nrows: [&r [a, 1], " + ", ".join(["*r"] * 50_000) + "]\n"
    with pytest.raises(yamlsource.YamlSyntaxError) as info:
        yamlsource.load_yaml(text)
    assert info.value.message.startswith(f"YAML aliases expand to more than {yamlsource.MAX_ALIAS_VALUES} values")
    assert info.value.position == yamlsource.Position(2, 8)  # the anchored value, as `_convert` says it
    assert len(composed) <= yamlsource.MAX_ALIAS_VALUES + 10  # not 50,000


def test_unique_items_is_checked_in_linear_time(monkeypatch):
    """jsonschema compares every pair of a list it cannot sort (20,000 mixed tags took minutes): the
    loader's own check keys each item once, and jsonschema's pairwise check never runs."""
    import jsonschema._keywords
    import jsonschema._utils

    import eventtime.loader as loader

    def pairwise(*args, **kwargs):
        raise AssertionError("jsonschema's pairwise uniqueItems ran")

    monkeypatch.setattr(jsonschema._utils, "uniq", pairwise)
    monkeypatch.setattr(jsonschema._keywords, "uniq", pairwise, raising=False)
    keyed = []
    real = loader._hashable
    monkeypatch.setattr(loader, "_hashable", lambda value: keyed.append(value) or real(value))
    doc = {"tags": [x for i in range(10_000) for x in (i, f"t{i}")]}
    top, _ = _validators()
    errors = [e for e in top.iter_errors(doc) if e.validator == "uniqueItems"]
    assert errors == [] and len(keyed) == 20_000  # one key per item: linear
    dup = {"tags": [1, "1", 2.0, [1], {"a": 1}, 2]}  # 2.0 == 2 in JSON Schema; "1" != 1
    assert [e.validator for e in top.iter_errors(dup) if e.validator == "uniqueItems"] == ["uniqueItems"]
    distinct = {"tags": [1, "1", True, [1], [True], {"a": 1}, {"a": "1"}, None, 0, False]}
    assert [e for e in top.iter_errors(distinct) if e.validator == "uniqueItems"] == []


@pytest.mark.parametrize("text", ["a: " + "[" * 20_000 + "]" * 20_000 + "\n", "{a: " * 5_000 + "\n"],
                         ids=["brackets", "braces"])
def test_deep_flow_nesting_is_refused_without_scanning_ahead(text):
    """Was 0.3 s of CPU: PyYAML's scanner looks 1,024 characters ahead and compares every open level at each."""
    started = time.process_time()
    with pytest.raises(yamlsource.YamlSyntaxError) as info:
        yamlsource.load_yaml(text)
    assert time.process_time() - started < 0.1
    assert info.value.message == f"nesting is deeper than {yamlsource.MAX_DEPTH} levels"
    assert info.value.position.line == 1
