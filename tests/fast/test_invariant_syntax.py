"""A contract's `invariants:` (docs/properties.md, *The job's own invariants*): what each form reads, and each
mistake said at its file:line with what is wrong; the invariants judged on observations without Spark."""
from __future__ import annotations

import textwrap
from collections import Counter

import pytest

from eventtime.contractfile import ContractInvalid, load_contract_file
from eventtime.properties import Observations, judge_invariant

HEAD = textwrap.dedent("""\
    contract: orders_split
    description: orders -> clean and quarantine
    sources:
      orders:
        columns: "id string, amount int, ts timestamp"
        event_time: ts
    params:
      clean: {kind: path}
      quarantine: {kind: path}
    output:
      columns: "id string, amount int, ts timestamp"
    invariants:
    """)


def _contract(tmp_path, body: str):
    path = tmp_path / "orders_split.contract.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(body), "  "))
    return load_contract_file(path)


def _problems(tmp_path, body: str) -> list[str]:
    with pytest.raises(ContractInvalid) as info:
        _contract(tmp_path, body)
    return str(info.value).splitlines()


def test_each_form_is_read(tmp_path):
    c = _contract(tmp_path, """\
        routed_once: {conserve: {from: orders, into: [clean, quarantine]}, doc: each order in one folder}
        counted: {conserve: {from: [orders], into: [clean], count: "<="}}
        one_side: {disjoint: {key: [id], outputs: [clean, quarantine]}}
        clean_amounts: {not_null: {output: clean, columns: [amount, id]}}
        from_code: {hook: "my_checks:balanced"}
        """)
    by = {i.name: i for i in c.invariants}
    assert by["routed_once"].form == "conserve" and by["routed_once"].outputs == ("clean", "quarantine")
    assert by["routed_once"].sources == ("orders",) and by["routed_once"].doc == "each order in one folder"
    assert by["counted"].relation == "<=" and by["one_side"].columns == ("id",)
    assert by["clean_amounts"].outputs == ("clean",) and by["from_code"].hook == "my_checks:balanced"
    assert by["one_side"].where.line == 15


@pytest.mark.parametrize("body, line, said", [
    ("x: {disjoint: {key: [id], outputs: [clean, quarantin]}}", 13, "'quarantin' is not an output of the contract; "
                                                                   "did you mean 'quarantine'?"),
    ("x: {not_null: {output: clean, columns: [amont]}}", 13, "column 'amont' is not a column of output 'clean'; "
                                                             "did you mean 'amount'?"),
    ("x: {conserve: {from: order, into: [clean]}}", 13, "'order' is not a source of the contract; did you mean 'orders'?"),
    ("x: {conserve: {from: orders, into: [clean], count: '<'}}", 13, "a count relation is one of '==', '<=', '>='"),
    ("x: {not_null: {output: clean, columns: [id]}, hook: 'a:b'}", 13, "invariant 'x' states one form, not 2"),
    ("x: {hook: nope}", 13, "a hook is 'module:function'"),
    ("x: {conserve: {into: [clean]}}", 13, "`conserve` needs `from:`"),
    ("x: {disjoint: {key: [id], outputs: [clean]}}", 13, "needs two outputs or more"),
    ("x: {unique: {key: [id]}}", 13, "an invariant has no key 'unique'"),
    ("x: [conserve]", 13, "invariant 'x' is one of {conserve: ...}"),
    ("ok: {not_null: {output: clean, columns: [id]}}\nx y: {hook: 'a:b'}", 14, "an invariant's name is a word"),
])
def test_a_mistake_is_said_at_its_line(tmp_path, body, line, said):
    problems = _problems(tmp_path, body)
    assert any(p.startswith(f"{tmp_path / 'orders_split.contract.yaml'}:{line}:") and said in p
               for p in problems), problems


def test_a_conservation_needs_a_column_to_follow_rows_by(tmp_path):
    text = HEAD.replace('output:\n  columns: "id string, amount int, ts timestamp"',
                        'output:\n  columns: "n bigint"')
    path = tmp_path / "orders_split.contract.yaml"
    path.write_text(text + "  x: {conserve: {from: orders, into: [clean]}}\n")
    with pytest.raises(ContractInvalid) as info:
        load_contract_file(path)
    assert "share no column" in str(info.value) and ":13:" in str(info.value), str(info.value)
    path.write_text(text + "  x: {conserve: {from: orders, into: [clean], count: '<='}}\n")  # a count needs none
    assert load_contract_file(path).invariants[0].relation == "<="


def _obs(clean, quarantine, inputs):
    cols = ("id", "amount", "ts")
    as_dicts = [lambda rows: [dict(zip(cols, r)) for r in rows]][0]
    return Observations({"orders": as_dicts(inputs)}, {"clean": as_dicts(clean), "quarantine": as_dicts(quarantine)},
                        {})


ROWS = [("a", 1, 10), ("b", None, 20), ("c", 0, 30)]


@pytest.mark.parametrize("clean, quarantine, broken, remove, add", [
    ([ROWS[0]], [ROWS[1], ROWS[2]], [], {}, {}),                                              # control
    ([ROWS[0]], [ROWS[2]], ["landed in none of clean, quarantine"], {}, {"quarantine": ROWS[1]}),
    ([ROWS[0], ROWS[2]], [ROWS[1], ROWS[2]], ["landed in clean and quarantine"], {"clean": ROWS[2]}, {}),
    ([ROWS[0], ("z", 5, 1)], [ROWS[1], ROWS[2]], ["never added to orders"], {"clean": ("z", 5, 1)}, {}),
    ([ROWS[0]], [ROWS[1], ROWS[2], ROWS[2]], ["landed in quarantine x2"], {"quarantine": ROWS[2]}, {}),
])
def test_conservation_on_observations(tmp_path, clean, quarantine, broken, remove, add):
    c = _contract(tmp_path, "x: {conserve: {from: orders, into: [clean, quarantine]}}")
    v = judge_invariant(c.invariants[0], _obs(clean, quarantine, ROWS), c)
    assert len(v.why) == len(broken) and all(b in w for b, w in zip(broken, v.why)), v.why
    assert v.remove == {k: Counter([r]) for k, r in remove.items()}
    assert v.add == {k: Counter([r]) for k, r in add.items()}


def test_the_other_forms_on_observations(tmp_path):
    c = _contract(tmp_path, """\
        one_side: {disjoint: {key: [id], outputs: [clean, quarantine]}}
        clean_amounts: {not_null: {output: clean, columns: [amount]}}
        counted: {conserve: {from: orders, into: [clean, quarantine], count: "<="}}
        """)
    one_side, not_null, counted = c.invariants
    good = _obs([ROWS[0]], [ROWS[1], ROWS[2]], ROWS)
    assert not any(judge_invariant(i, good, c).why for i in c.invariants)  # the control
    bad = _obs([ROWS[0], ROWS[1], ("c", 7, 40)], [ROWS[2], ROWS[2]], ROWS)
    assert judge_invariant(one_side, bad, c).why == ["key id = ['c'] is in clean and quarantine"]
    assert judge_invariant(not_null, bad, c).remove == {"clean": Counter([ROWS[1]])}
    assert judge_invariant(counted, bad, c).why == ["5 row(s) in clean + quarantine against 3 added to orders: not <="]


def test_a_hook_says_why_in_its_own_words():
    from eventtime.contracts import InvariantSpec

    spec = InvariantSpec("positive", "hook", hook="tests:positive")
    obs = _obs([("a", -1, 1)], [], [("a", -1, 1)])

    def messages(o):
        return [f"clean holds {r['amount']}" for r in o.rows("clean") if r["amount"] < 0]

    def asserts(o):
        assert not o.rows("clean"), "clean is not empty"

    assert judge_invariant(spec, obs, None, messages).why == ["clean holds -1"]  # type: ignore[arg-type]
    (said,) = judge_invariant(spec, obs, None, asserts).why  # type: ignore[arg-type]
    assert said.startswith("clean is not empty"), said
    assert judge_invariant(spec, obs, None, lambda o: False).why == ["the hook returned False"]  # type: ignore[arg-type]
    assert not judge_invariant(spec, obs, None, lambda o: None).why  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="no sink 'gold'"):
        obs.rows("gold")


def test_a_hook_named_in_the_contract_is_imported_before_any_run(tmp_path, monkeypatch):
    from eventtime.properties import check_properties

    c = _contract(tmp_path, "balanced: {hook: 'no_such_checks:balanced'}")
    with pytest.raises(ValueError) as info:  # before any run: no session is needed to say it
        check_properties(c, "json:loads", session=None, properties=["invariants"])
    said = str(info.value)
    assert said.startswith(f"{tmp_path / 'orders_split.contract.yaml'}:13: invariant 'balanced'"), said
    assert "No module named 'no_such_checks'" in said, said
    (tmp_path / "my_checks.py").write_text("limit = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    c = _contract(tmp_path, "balanced: {hook: 'my_checks:limit'}")
    with pytest.raises(ValueError, match="its hook my_checks:limit is not a function"):
        check_properties(c, "json:loads", session=None, properties=["invariants"])


def test_nothing_to_check_is_not_a_pass(tmp_path):
    from eventtime.properties import check_properties

    path = tmp_path / "plain.contract.yaml"  # no invariants, complete mode only
    path.write_text(HEAD.replace("invariants:\n", "") + "  modes: [complete]\n")
    report = check_properties(load_contract_file(path), "json:loads", session=None,
                              properties=["bounded-state", "invariants"])
    assert [p.does_not_apply is not None for p in report.properties] == [True, True] and not report.held
    assert "complete mode only" in report.describe() and "declares no invariants" in report.describe()
