"""The YAML reader: plain data with positions, YAML-1.2-like scalars, and refusals with a place."""
from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventtime import yamlsource
from eventtime.yamlsource import MAX_DEPTH, Located, Position, YamlSyntaxError, load_yaml

FAST = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def value_of(scalar_text: str):
    return load_yaml(f"a: {scalar_text}\n").data["a"]


def error_of(text: str) -> YamlSyntaxError:
    with pytest.raises(YamlSyntaxError) as info:
        load_yaml(text)
    return info.value


# -- scalars -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    # what YAML 1.1 would turn into something else stays the text a person wrote
    ("12:00:07", "12:00:07"),  # YAML 1.1: base-60 integer 43207
    ("00:00:03", "00:00:03"),
    ("1:20", "1:20"),
    ("190:20:30", "190:20:30"),
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"),
    ("Yes", "Yes"), ("NO", "NO"), ("y", "y"), ("n", "n"),
    ("2024-01-01", "2024-01-01"),  # YAML 1.1: a date object
    ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("1_000", "1_000"),
    ("0b101", "0b101"),
    ("5 s", "5 s"),
    ("1.2.3", "1.2.3"),
    (".", "."),
    ("'12:00:07'", "12:00:07"),
    ('"yes"', "yes"),
    ("'5'", "5"),
    ("!!str 5", "5"),
    ("!!str true", "true"),
    # YAML 1.2 core values
    ("true", True), ("True", True), ("TRUE", True),
    ("false", False), ("False", False), ("FALSE", False),
    ("null", None), ("Null", None), ("NULL", None), ("~", None), ("", None),
    ("0", 0), ("-0", 0), ("+1", 1), ("42", 42), ("-17", -17),
    ("9" * 40, int("9" * 40)),
    ("0x1F", 31),
    ("1.5", 1.5), ("-1.5", -1.5), ("1.", 1.0), (".5", 0.5), ("1.5e+3", 1500.0),
    (".inf", math.inf), ("-.inf", -math.inf),
])
def test_scalars(text, expected):
    got = value_of(text)
    assert got == expected
    assert type(got) is type(expected)


def test_nan():
    assert math.isnan(value_of(".nan"))


def test_block_scalars_and_nested_data():
    located = load_yaml("a: |\n  text\n  more\nb:\n  - x\n  - {c: [1, 2.5, null]}\n")
    assert located.data == {"a": "text\nmore\n", "b": ["x", {"c": [1, 2.5, None]}]}


def test_keys_stay_text():
    assert load_yaml("1: x\ntrue: y\nnull: z\n12:00: w\n").data == {"1": "x", "true": "y", "null": "z", "12:00": "w"}


def test_byte_order_mark_and_yaml_directive_are_accepted():
    assert load_yaml("\ufeffa: 1\n").data == {"a": 1}
    assert load_yaml("%YAML 1.1\n---\na: 1\n").data == {"a": 1}


def test_aliases_are_expanded():
    assert load_yaml("a: &x [1, 2]\nb: *x\n").data == {"a": [1, 2], "b": [1, 2]}


# YAML 1.2 core numbers (YAML 1.1 would keep these as text).
@pytest.mark.parametrize("text, expected", [
    pytest.param("1e3", 1000.0),
    pytest.param("1.5E3", 1500.0),
    pytest.param("+.5", 0.5),
    pytest.param("0o17", 15),
])
def test_yaml_12_numbers_the_module_means_to_read(text, expected):
    got = value_of(text)
    assert got == expected and type(got) is type(expected)


def test_leading_zero_integer_is_an_integer():
    got = value_of("017")
    assert isinstance(got, int) and not isinstance(got, bool)


# -- positions -----------------------------------------------------------------------------------

def test_positions_of_values_and_keys_are_one_based():
    text = textwrap.dedent("""\
        scenario: x
        steps:
          - process
          - add:
              events: [[a, "00:00:03"]]
        """)
    loc = load_yaml(text)
    assert loc.values[()] == Position(1, 1)
    assert loc.keys[("scenario",)] == Position(1, 1)
    assert loc.values[("scenario",)] == Position(1, 11)
    assert loc.keys[("steps",)] == Position(2, 1)
    assert loc.values[("steps",)] == Position(3, 3)
    assert loc.values[("steps", 0)] == Position(3, 5)
    assert loc.values[("steps", 1)] == Position(4, 5)
    assert loc.keys[("steps", 1, "add")] == Position(4, 5)
    assert loc.keys[("steps", 1, "add", "events")] == Position(5, 7)
    assert loc.values[("steps", 1, "add", "events")] == Position(5, 15)
    assert loc.values[("steps", 1, "add", "events", 0)] == Position(5, 16)
    assert loc.values[("steps", 1, "add", "events", 0, 1)] == Position(5, 20)


def test_at_falls_back_to_the_nearest_enclosing_value():
    loc = load_yaml("a:\n  b: 1\n")
    assert loc.at(("a", "b")) == Position(2, 6)
    assert loc.at(("a", "b", "missing", 3)) == Position(2, 6)
    assert loc.at(("a", "zzz")) == Position(2, 3)
    assert loc.at(("nothing",)) == Position(1, 1)
    assert loc.at(()) == Position(1, 1)
    assert loc.at(["a", "b"]) == Position(2, 6)  # any sequence works as a path


def test_key_at_uses_the_key_or_else_the_value():
    loc = load_yaml("a:\n  - x\n  - k: v\n")
    assert loc.key_at(("a", 1, "k")) == Position(3, 5)
    assert loc.at(("a", 1, "k")) == Position(3, 8)
    assert loc.key_at(("a", 0)) == Position(2, 5)  # list items have no key: their value


def test_empty_located_defaults():
    loc = Located(data=None)
    assert loc.at(("x",)) == Position(1, 1)
    assert loc.key_at(("x",)) == Position(1, 1)


# -- refusals ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, line, column, phrase", [
    ("a: 1\nb: 2\na: 3\n", 3, 1, "key 'a' appears twice in this mapping"),
    ("{a: 1, a: 2}\n", 1, 8, "key 'a' appears twice"),
    ("a: 1\n'a': 2\n", 2, 1, "key 'a' appears twice"),
    ("x:\n  - k: 1\n    k: 2\n", 3, 5, "key 'k' appears twice"),
    ("a: !foo x\n", 1, 4, "YAML tag '!foo' is not allowed"),
    ("a: !!python/object:os.system x\n", 1, 4, "is not allowed in scenario files"),
    ("a: !!binary aGVsbG8=\n", 1, 4, "tag:yaml.org,2002:binary"),
    ("a: !!set {x}\n", 1, 4, "tag:yaml.org,2002:set"),
    ("a: !!omap [b: 1]\n", 1, 4, "tag:yaml.org,2002:omap"),
    ("b: 1\n<<: {a: 1}\n", 2, 1, "merge keys ('<<') are not supported"),
    ("? [a]\n: 1\n", 1, 3, "mapping keys must be plain words"),
    ("? {a: 1}\n: 1\n", 1, 3, "mapping keys must be plain words"),
    ("--- 1\n--- 2\n", 2, 5, "one scenario per file: found a second YAML document"),
    ("a: 1\n---\nb: 2\n", 3, 1, "one scenario per file"),
    ("", 1, 1, "the file is empty"),
    ("# only a comment\n", 1, 1, "the file is empty"),
    ("a: [1, 2\n", 2, 1, "YAML syntax error: expected ',' or ']'"),
    ("a: b: c\n", 1, 5, "YAML syntax error: mapping values are not allowed"),
    ("a:\n  - b\n c: 1\n", 3, 2, "YAML syntax error: expected <block end>"),
    ("a: 'unterminated\n", 2, 1, "YAML syntax error: found unexpected end of stream"),
    ("\t- a\n", 1, 1, "YAML syntax error: found character '\\t' that cannot start any token"),
    ("a: @x\n", 1, 4, "YAML syntax error"),
    ("a: &x 1\nb: *y\n", 2, 4, "found undefined alias"),
    ("a: &a [*a]\n", 1, 4, "a YAML alias refers to its own ancestor"),
])
def test_refusals_carry_a_position(text, line, column, phrase):
    err = error_of(text)
    assert (err.position.line, err.position.column) == (line, column)
    assert phrase in err.message
    assert str(err) == err.message


def nested_flow(depth: int) -> str:
    return "a: " + "[" * depth + "]" * depth + "\n"


def test_nesting_up_to_the_limit_is_accepted():
    data = load_yaml(nested_flow(MAX_DEPTH)).data["a"]
    depth = 0
    while data:
        data = data[0]
        depth += 1
    assert depth == MAX_DEPTH - 1  # the mapping is level 0, `a`'s list level 1


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000])
def test_nesting_beyond_the_limit_is_refused(depth):
    err = error_of(nested_flow(depth))
    assert f"nesting is deeper than {MAX_DEPTH} levels" in err.message
    assert err.position == Position(1, 4 + MAX_DEPTH)


def test_block_nesting_beyond_the_limit_is_refused():
    text = "\n".join("  " * i + "k:" for i in range(MAX_DEPTH + 1)) + " 1\n"
    err = error_of(text)
    assert "nesting is deeper" in err.message
    assert err.position.line == MAX_DEPTH + 1


_DEEP_SCRIPT = """
import sys
from eventtime.yamlsource import load_yaml, YamlSyntaxError
try:
    load_yaml("a: " + "[" * 200000 + "]" * 200000)
except YamlSyntaxError as exc:
    print(exc.message)
"""


def test_very_deep_nesting_does_not_crash_the_process():
    import os

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", _DEEP_SCRIPT], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, f"exit status {proc.returncode}: {proc.stderr[-500:]}"
    assert "nesting is deeper than" in proc.stdout


def test_alias_expansion_is_bounded():
    # "billion laughs": 10 ** 9 values once expanded
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    err = error_of("\n".join(lines) + "\n")
    assert f"YAML aliases expand to more than {yamlsource.MAX_ALIAS_VALUES} values" in err.message
    assert err.position == Position(3, 5)  # &l2: l3 goes over the budget through its aliases of l2


def test_aliases_within_the_budget_expand():
    per_use = 3  # the list and its two values
    uses = yamlsource.MAX_ALIAS_VALUES // per_use
    data = load_yaml("a: &a [1, 2]\nb: [" + ", ".join(["*a"] * uses) + "]\n").data
    assert data["b"] == [[1, 2]] * uses
    err = error_of("a: &a [1, 2]\nb: [" + ", ".join(["*a"] * (uses + 1)) + "]\n")
    assert "YAML aliases expand to more than" in err.message and err.position == Position(1, 4)  # &a


def test_written_out_values_are_bounded_too(monkeypatch):
    monkeypatch.setattr(yamlsource, "MAX_NODES", 10)
    assert load_yaml("a: [1, 2, 3, 4, 5, 6, 7, 8]\n").data == {"a": [1, 2, 3, 4, 5, 6, 7, 8]}
    err = error_of("a: [1, 2, 3, 4, 5, 6, 7, 8, 9]\n")
    assert "the document has more than 10 values" in err.message and err.position == Position(1, 29)


def test_oversized_text_is_refused_before_parsing():
    err = error_of("#" * (yamlsource.MAX_BYTES + 1))
    assert "larger than 20 MiB" in err.message
    assert err.position == Position(1, 1)


def test_control_character_is_refused():
    err = error_of("a: 1\n\x00\n")
    assert "is not allowed in YAML text" in err.message


def test_control_character_is_refused_at_its_place_on_one_line():
    err = error_of("a: 1\n\x00\n")
    assert err.position == Position(2, 1)
    assert "\n" not in err.message


def test_explicit_empty_document_is_null():
    assert load_yaml("---\n...\n").data is None


# -- fuzzing -------------------------------------------------------------------------------------

_YAMLISH = st.lists(st.sampled_from(
    list("ab:- []{},'\"\n#&*!|>%@`?\t09.~<=\\") +
    ["---", "...", "&x ", "*x", "!!str ", "!!int ", "!foo ", "<<: ", "\x00", "\ufeff", "\x85", "\u2028", "é",
     "12:00:07", "yes", "  ", "\n  - "]), max_size=60).map("".join)


def _loads_or_refuses(text: str) -> None:
    try:
        located = load_yaml(text)
    except YamlSyntaxError as exc:
        assert isinstance(exc.position, Position)
        assert exc.position.line >= 1 and exc.position.column >= 1
        assert exc.message
        return
    assert isinstance(located, Located)
    assert () in located.values


@FAST
@given(st.text(max_size=200))
def test_load_yaml_on_arbitrary_text_only_raises_yaml_syntax_error(text):
    _loads_or_refuses(text)


@FAST
@given(_YAMLISH)
def test_load_yaml_on_yaml_like_text_only_raises_yaml_syntax_error(text):
    _loads_or_refuses(text)


def test_a_number_with_too_many_digits_is_refused_at_its_place():
    err = error_of("a: " + "9" * 41 + "\n")
    assert err.position == Position(1, 4)
    assert "more than 40 digits" in err.message
