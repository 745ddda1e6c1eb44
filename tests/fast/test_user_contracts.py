"""Contracts as data, Spark's type system, and the user's own function signatures (no JVM).

Each loader error is checked at its file:line:column; each accepted form is checked by the value it
reads, so a reader that accepted everything (or nothing) fails here.
"""
from __future__ import annotations

import datetime as dt
import decimal
import textwrap
import sys

import pytest

from eventtime.coltypes import MapValue, TypeSyntaxError, parse_type
from eventtime.contractfile import ContractInvalid, load_contract_file
from eventtime.contracts import Column, Contract, SourceSpec
from eventtime.loader import ScenarioInvalid, load_scenario
from eventtime.registry import CONTRACTS, ContractLookup, bundled_contract_files
from eventtime.userpipeline import OutputMismatch, SignatureError, check_output, pipeline_caller

CLICKS_CONTRACT = textwrap.dedent("""\
    contract: page_clicks
    title: Clicks and revenue per page and country
    description: clicks -> count and revenue per (page, country) and 5-minute window.
    sources:
      clicks:
        columns: "page string, country string, ts timestamp, revenue decimal(12,2), tags array<string>"
        event_time: ts
    params:
      window: {kind: duration, doc: window length}
      watermark_delay: {kind: duration, default: 10 minutes}
      currency: {kind: choice, choices: [EUR, USD], default: EUR}
    output:
      columns:
        page: string
        country: string
        window: "struct<start: timestamp, end: timestamp>"
        clicks: long
        revenue: decimal(22,2)
        meta: map<string, int>
      modes: [append, update]
      key: [page, country, window]
    """)

SCENARIO = textwrap.dedent("""\
    scenario: one-click
    description: One click is counted once its window closes.
    contract: page_clicks
    params: {window: 5 minutes}
    steps:
      - add:
          clicks:
            - {page: home, country: NL, ts: "00:01:00", revenue: 12.10, tags: [a, b]}
      - process
      - expect:
          rows:
            - [home, NL, {start: "00:00:00", end: "00:05:00"}, 1, "12.10", {x: 1}]
    """)


@pytest.fixture
def project(tmp_path):
    """A consumer repository: a pyproject.toml at its root, the contract file beside the scenario."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shop'\n")
    folder = tmp_path / "tests" / "scenarios"
    folder.mkdir(parents=True)
    (folder / "page_clicks.contract.yaml").write_text(CLICKS_CONTRACT)
    return folder


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


def problems(path, **kwargs):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(path, **kwargs)
    return [str(p) for p in info.value.problems]


# -- the type table --------------------------------------------------------------------------------
@pytest.mark.parametrize("text, name, ddl", [
    ("bigint", "long", "bigint"), ("INT", "int", "int"), ("smallint", "short", "smallint"),
    ("tinyint", "byte", "tinyint"), ("real", "float", "float"), ("decimal(12,2)", "decimal(12,2)", "decimal(12,2)"),
    ("decimal", "decimal(10,0)", "decimal(10,0)"), ("timestamp_ntz", "timestamp_ntz", "timestamp_ntz"),
    ("array<struct<a: int, `b c`: map<string, array<date>>>>", "array<struct<a:int,`b c`:map<string,array<date>>>>",
     "array<struct<`a`:int,`b c`:map<string,array<date>>>>"),
])
def test_every_ddl_type_is_read(text, name, ddl):
    t = parse_type(text)
    assert (t.name, t.ddl) == (name, ddl)
    assert parse_type(t.name) == t  # the kit's own name reads back as the same type


@pytest.mark.parametrize("text, message", [
    ("decimal(40,2)", "precision is 1 to 38"), ("uuid", "unknown type 'uuid'"), ("boolen", "did you mean 'boolean'"),
    ("array<int", "ends early"), ("map<int>", "expected ','"), ("struct<>", "at least one field"),
    ("struct<a: int, a: long>", "appears twice"), ("map<map<int,int>,int>", "cannot be a map"),
])
def test_a_bad_type_says_what_is_wrong(text, message):
    with pytest.raises(TypeSyntaxError, match=message):
        parse_type(text)


def _read(type_text, raw, float_text=None):
    return parse_type(type_text).read(raw, parse_time=lambda v: {"00:01:00": 60_000_000}[v],
                                      parse_date=dt.date.fromisoformat,
                                      float_text=lambda path: float_text)


def test_values_read_exactly_for_their_type():
    assert _read("decimal(12,2)", 12.1, float_text="12.10") == decimal.Decimal("12.10")
    # a float's binary value never reaches a decimal: 0.1 + 0.2 is read as written
    assert _read("decimal(5,2)", 0.3, float_text="0.30") == decimal.Decimal("0.30")
    assert _read("date", "2024-02-29") == dt.date(2024, 2, 29)
    assert _read("binary", "hi") == b"hi" and _read("binary", {"base64": "AP8="}) == b"\x00\xff"
    assert _read("array<timestamp>", ["00:01:00", None]) == (60_000_000, None)
    assert _read("struct<a: int, b: string>", {"a": 1, "b": "x"}) == _read("struct<a: int, b: string>", [1, "x"])
    assert _read("map<string, int>", {"y": 2, "x": 1}) == MapValue.of([("x", 1), ("y", 2)])
    assert _read("double", 1) == 1.0 and isinstance(_read("double", 1), float)


@pytest.mark.parametrize("type_text, raw, message", [
    ("decimal(12,2)", "12.123", "more than 2 digits after the point"),
    ("decimal(4,2)", "123.4", r"does not fit decimal\(4,2\)"),
    ("tinyint", 200, "out of range for byte"),
    ("int", 1.5, "expected a whole number"),
    ("struct<a: int>", {"b": 1}, "has no field 'b'"),
    ("map<string,int>", {"x": "one"}, "expected a whole number"),
    ("array<int>", 5, "expected a list"),
    ("binary", {"base64": "***"}, "not valid base64"),
    ("date", "2024-13-01", "'2024-13-01' is not a date: month must be in 1..12"),
])
def test_a_value_that_does_not_fit_its_type_says_why(type_text, raw, message):
    with pytest.raises(ValueError, match=message):
        _read(type_text, raw)


def test_values_compare_by_type_not_by_python_equality():
    long, double, dec = parse_type("long"), parse_type("double"), parse_type("decimal(4,2)")
    assert not long.equal(1, 1.0) and not long.equal(1, True)  # a double 1.0 is not a long 1
    assert double.equal(0.1 + 0.2, 0.3) and not double.equal(1.0, 1.1)
    assert dec.equal(decimal.Decimal("1.10"), decimal.Decimal("1.1")) and not dec.equal(decimal.Decimal("1.10"), 1.1)


# -- contract files --------------------------------------------------------------------------------
def test_a_contract_file_declares_sources_params_output_modes_and_key(project):
    contract = load_contract_file(project / "page_clicks.contract.yaml")
    assert contract.source("clicks").event_time == "ts"
    assert [c.type for c in contract.source("clicks").columns] == [
        "string", "string", "timestamp", "decimal(12,2)", "array<string>"]
    assert contract.output_modes == ("append", "update") and contract.key == ("page", "country", "window")
    assert contract.param("watermark_delay").default.interval == "10 minutes"
    assert contract.implementations == () and not contract.bundled


@pytest.mark.parametrize("old, new, place, message", [
    ("revenue decimal(12,2)", "revenue decimal(12,20)", (6, 14), "precision is 1 to 38"),
    ("clicks: long", "clicks: lon", (17, 13), "unknown type 'lon'; did you mean 'long'?"),
    ("event_time: ts", "event_time: tss", (7, 17), "event_time 'tss' is not a column of source 'clicks'"),
    ("{kind: duration, doc: window length}", "{kind: period}", (9, 18), "needs a kind"),
    ("modes: [append, update]", "modes: [append, upsert]", (20, 19), "output mode 'upsert'"),
    ("modes: [append, update]", "modes: [apend, update]", (20, 11), "'apend' is not one of append, update, "
                                                                    "complete; did you mean 'append'?"),
    ("key: [page, country, window]", "key: [page, county]", (21, 15), "did you mean 'country'?"),
    ("title:", "titel:", (2, 1), "did you mean 'title'?"),
])
def test_contract_file_errors_name_the_line_and_column(project, old, new, place, message):
    path = write(project, "page_clicks.contract.yaml", CLICKS_CONTRACT.replace(old, new))
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    found = [(p.line, p.column, p.message) for p in info.value.problems]
    assert any((line, col) == place and message in text for line, col, text in found), found


def test_the_bundled_contracts_are_files_read_by_the_same_code():
    files = bundled_contract_files()
    assert len(files) == len(CONTRACTS) == 17
    for path in files:
        contract = load_contract_file(path, bundled=True)
        assert CONTRACTS[contract.name] == contract and contract.bundled
        assert bool(contract.implementations) != bool(contract.model_only), contract.name  # one or the other


# -- scenarios of a user's contract ----------------------------------------------------------------
def test_a_scenario_finds_the_contract_file_beside_it_and_reads_typed_rows(project):
    sc = load_scenario(write(project, "one.scenario.yaml", SCENARIO))
    assert sc.contract.name == "page_clicks" and sc.sources["clicks"].event_time == "ts"  # from the contract
    (add,) = [s for s in sc.steps if s.kind == "add"]
    day = 1_704_067_200_000_000  # the scenario's date, 2024-01-01, in epoch microseconds
    assert add.rows["clicks"] == (("home", "NL", day + 60_000_000, decimal.Decimal("12.10"), ("a", "b")),)
    (expect,) = [s for s in sc.steps if s.kind == "expect"]
    assert expect.rows[0].rows == (("home", "NL", (day, day + 300_000_000), 1, decimal.Decimal("12.10"),
                                    MapValue.of([("x", 1)])),)


def test_a_contract_file_in_a_folder_above_the_scenario_is_found(project):
    nested = project / "clicks"
    nested.mkdir()
    assert load_scenario(write(nested, "one.scenario.yaml", SCENARIO)).contract.name == "page_clicks"


def test_a_contract_folder_given_to_the_lookup_is_searched(tmp_path):
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "c.contract.yaml").write_text(CLICKS_CONTRACT)
    (tmp_path / "s").mkdir()
    path = write(tmp_path / "s", "one.scenario.yaml", SCENARIO)
    assert "unknown contract 'page_clicks'" in problems(path)[0]
    sc = load_scenario(path, contracts=ContractLookup([tmp_path / "contracts"]))
    assert sc.contract.name == "page_clicks"


@pytest.mark.parametrize("old, new, place, message", [
    ("revenue: 12.10", "revenue: 12.101", (8, 62), "column 'revenue' is decimal(12,2): 12.101 has more than 2"),
    ("tags: [a, b]", "tags: [a, 7]", (8, 79), "column 'tags' is array<string>: expected text, got an integer 7"),
    ('{start: "00:00:00", end: "00:05:00"}', '{start: "00:00:00", stop: "00:05:00"}', (12, 48),
     "has no field 'stop'"),
    ("{x: 1}", "{x: one}", (12, 76), "column 'meta' is map<string,int>: expected a whole number"),
    ("contract: page_clicks", "contract: page_click", (3, 11), "did you mean 'page_clicks'?"),
])
def test_a_value_that_does_not_fit_is_an_error_at_its_place(project, old, new, place, message):
    found = problems(write(project, "one.scenario.yaml", SCENARIO.replace(old, new)))
    assert any(p.startswith(f"{project / 'one.scenario.yaml'}:{place[0]}:{place[1]}: ") and message in p
               for p in found), found


def test_two_contract_files_of_one_name_are_an_error_naming_both(project):
    write(project.parent, "again.contract.yaml", CLICKS_CONTRACT.replace("title: Clicks", "title: Other clicks"))
    (found,) = problems(write(project, "one.scenario.yaml", SCENARIO))
    assert "contract 'page_clicks' is declared in more than one place" in found
    assert "again.contract.yaml" in found and "page_clicks.contract.yaml" in found


def test_a_user_contract_cannot_take_a_bundled_name(project):
    write(project, "mine.contract.yaml", CLICKS_CONTRACT.replace("contract: page_clicks", "contract: tumbling_count"))
    scenario = SCENARIO.replace("contract: page_clicks", "contract: tumbling_count")
    found = problems(write(project, "one.scenario.yaml", scenario))
    assert any("contract 'tumbling_count' is bundled and also declared in" in p for p in found), found


def test_an_inline_contract_serves_a_one_off_pipeline(project):
    body = textwrap.indent(CLICKS_CONTRACT.replace("contract: page_clicks\n", ""), "  ")
    text = SCENARIO.replace("contract: page_clicks\n", "contract:\n" + body)
    sc = load_scenario(write(project.parent, "inline.scenario.yaml", text))
    assert sc.contract.name == "one_click" and sc.contract.key == ("page", "country", "window")


def test_a_broken_contract_file_is_reported_where_its_problem_is(project):
    write(project, "page_clicks.contract.yaml", CLICKS_CONTRACT.replace("clicks: long", "clicks: lon"))
    found = problems(write(project, "one.scenario.yaml", SCENARIO))
    assert any("page_clicks.contract.yaml:17:13: output: column 'clicks': unknown type 'lon'" in p for p in found), found
    assert any(":3:11: contract 'page_clicks' does not load" in p for p in found), found
    assert not any("unknown source" in p for p in found), found  # no follow-on errors from the missing contract


# -- the user's own signatures ---------------------------------------------------------------------
def _contract(*sources: str) -> Contract:
    return Contract(name="c", title="c", description="c",
                    sources=tuple(SourceSpec(s, (Column("ts", "timestamp"),), "ts") for s in sources),
                    params=(), output=(Column("n", "long"),), reference="")


class _Params(dict):
    pass


def test_a_pipeline_is_called_the_way_its_signature_asks():
    from eventtime.contracts import ParamSpec
    from eventtime.spec import Params
    from eventtime.timeparse import parse_duration

    contract = Contract(name="c", title="c", description="c",
                        sources=(SourceSpec("clicks", (Column("ts", "timestamp"),), "ts"),),
                        params=(ParamSpec("window", "duration", "w"), ParamSpec("currency", "choice", "c",
                                                                                choices=("EUR",))),
                        output=(Column("n", "long"),), reference="")
    frames, params = {"clicks": "DF"}, Params({"window": parse_duration("5 minutes"), "currency": "EUR"})
    assert pipeline_caller(lambda df: ("one", df), contract)(frames, params) == ("one", "DF")

    def named(window, clicks, limit=3):
        return window, clicks, limit
    assert pipeline_caller(named, contract)(frames, params) == ("5 minutes", "DF", 3)

    def classic(sources, params):
        return sources["clicks"], params.window.interval
    assert pipeline_caller(classic, contract)(frames, params) == ("DF", "5 minutes")


def test_a_pipeline_that_does_not_fit_is_named_with_its_signature():
    def transform(df, window, extra):
        return df
    with pytest.raises(SignatureError) as info:
        pipeline_caller(transform, _contract("left", "right"))
    message = str(info.value)
    assert "transform(df, window, extra)" in message and "'df', 'window', 'extra'" in message
    assert "source left, source right" in message


def test_the_output_check_names_every_missing_extra_and_mistyped_column():
    contract = Contract(name="c", title="c", description="c", sources=(), params=(), reference="",
                        output=(Column("page", "string"), Column("revenue", "decimal(12,2)"),
                                Column("n", "long")))
    assert check_output([("n", "bigint"), ("page", "string"), ("revenue", "decimal(12,2)")], contract) == [1, 2, 0]
    with pytest.raises(OutputMismatch) as info:
        check_output([("page", "string"), ("revenue", "double"), ("debug", "int")], contract)
    message = str(info.value)
    assert "column 'revenue' is double, the contract says decimal(12,2)" in message
    assert "column 'n' (long) is missing" in message
    assert "column 'debug' (int) is not in the contract's output" in message


# -- the model stays honest ------------------------------------------------------------------------
def test_the_model_predicts_nothing_for_a_users_contract(project, capsys):
    """check-model and expect --write say "not covered" for a contract the model does not implement
    and never write values into the file; a bundled contract's scenario is covered (the control)."""
    from eventtime.cli import main

    path = write(project, "one.scenario.yaml", SCENARIO)
    before = path.read_text()
    assert main(["check-model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "the model implements the bundled contracts only" in out and "0 agree" in out and "1 not covered" in out
    assert main(["expect", str(path), "--write"]) != 0
    captured = capsys.readouterr()
    assert "the model implements the bundled contracts only" in captured.out + captured.err
    assert path.read_text() == before

    from eventtime.scenarios import SUITE_DIR

    bundled = next(SUITE_DIR.glob("tumbling/*.scenario.yaml"))
    assert main(["check-model", str(bundled)]) == 0
    assert "1 agree" in capsys.readouterr().out


# -- what an expectation compares ------------------------------------------------------------------
EXPECT = '''  - expect:
      rows:
        - [home, NL, {start: "00:00:00", end: "00:05:00"}, 1, "12.10", {x: 1}]
'''


def test_an_expect_may_name_the_columns_it_checks_or_ignore_some(project):
    assert EXPECT in SCENARIO
    text = SCENARIO.replace(EXPECT, "  - expect:\n      columns: [clicks, page]\n      rows: [[1, home]]\n"
                                    "  - expect:\n      ignore: [window, meta]\n      rows: [[home, NL, 1, 12.10]]\n"
                                    "      tolerance: 0.001\n")
    sc = load_scenario(write(project, "one.scenario.yaml", text))
    first, second = [s for s in sc.steps if s.kind == "expect"]
    assert first.columns == ("clicks", "page") and first.rows[0].rows == ((1, "home"),)
    assert second.columns == ("page", "country", "clicks", "revenue") and second.tolerance == 0.001
    assert second.rows[0].rows == (("home", "NL", 1, decimal.Decimal("12.10")),)


@pytest.mark.parametrize("expect, place, message", [
    ("columns: [clicks, pgae]", (11, 25), "has no output column 'pgae'; did you mean 'page'?"),
    ("columns: [page]\n      ignore: [meta]", (12, 7), "give `columns` (what to compare) or `ignore`"),
    ("ignore: [page, country, window, clicks, revenue, meta]", (11, 15), "`ignore` leaves no column to compare"),
])
def test_a_bad_column_selection_is_an_error_at_its_place(project, expect, place, message):
    text = SCENARIO.replace(EXPECT, EXPECT.replace("  - expect:\n", f"  - expect:\n      {expect}\n"))
    found = problems(write(project, "one.scenario.yaml", text))
    assert any(f":{place[0]}:{place[1]}: " in p and message in p for p in found), found


def test_rows_compare_on_the_selected_columns_with_the_given_tolerance():
    from eventtime.judge import match_rows

    double, long = parse_type("double"), parse_type("long")
    assert match_rows([(1.0, 1)], [(1.0005, 1)], types=[double, long], rel_tol=0.001) == ([], [])
    assert match_rows([(1.0, 1)], [(1.0005, 1)], types=[double, long]) == ([(1.0, 1)], [(1.0005, 1)])
    assert match_rows([(1.0, 1)], [(1.0, 1.0)], types=[double, long]) == ([(1.0, 1)], [(1.0, 1.0)])


def test_the_judge_compares_only_the_selected_columns_of_each_output_row(project):
    """A selected expect passes on rows whose other columns differ, and fails (naming the selected
    columns) when a selected value differs: the control."""
    from eventtime.harness.observations import BatchObservation
    from eventtime.judge import Observed, judge

    text = SCENARIO.replace(EXPECT, "  - expect:\n      columns: [clicks, page]\n      rows: [[1, home]]\n")
    sc = load_scenario(write(project, "one.scenario.yaml", text))
    (step,) = [s for s in sc.steps if s.kind == "expect"]
    row = ("home", "NL", (0, 300_000_000), 1, decimal.Decimal("99.99"), (("y", 2),))
    batch = BatchObservation(batch_id=0, input_rows=1, timestamp_ms=0, watermark_before_ms=0,
                             watermark_after_ms=0, rows=[row])
    assert judge(step, Observed([batch], [batch], "append", sc.contract.output_names), sc) == []
    batch.rows = [row[:3] + (2,) + row[4:]]
    (failure,) = judge(step, Observed([batch], [batch], "append", sc.contract.output_names), sc)
    assert failure.columns == ("clicks", "page") and failure.missing == [(1, "home")]
    assert failure.unexpected == [(2, "home")]


def test_a_contract_declared_in_code_is_read_like_a_file_and_its_problems_are_at_the_callers_line():
    from eventtime import ContractInvalid, contract_from_mapping

    doc = {"contract": "echo", "description": "clicks -> clicks.",
           "sources": {"clicks": {"columns": "page string, ts timestamp", "event_time": "ts"}},
           "output": {"columns": "page string, ts timestamp", "modes": ["append"]}}
    contract = contract_from_mapping(doc)
    assert contract.name == "echo" and contract.source("clicks").event_time == "ts" and not contract.bundled
    line = sys._getframe().f_lineno + 2
    with pytest.raises(ContractInvalid) as info:
        contract_from_mapping({**doc, "output": {"columns": "page strng, ts timestamp"}})
    (problem,) = info.value.problems
    assert (problem.file, problem.line) == (__file__, line) and "did you mean 'string'?" in problem.message
