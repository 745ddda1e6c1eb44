"""Turns the bundled scenario files into bad ones (Hypothesis strategies) and judges how the loader takes each.

Shared by `tests/fast/test_fuzz_loader.py` (a few thousand inputs per CI run) and
`benchmarks/fuzz_loader.py` (the long run). An input is the bytes of one scenario file:

- node-level: a bundled file is composed into PyYAML's node tree, one to three mutations change
  the tree (a value of the wrong type, a deleted or renamed key, an unknown step kind, absurd
  durations and timestamps, rows of the wrong width, odd text, huge numbers, duplicate keys,
  aliases, tags such as `!!python/object/apply`, deep nesting, alias bombs), and the tree is
  written back as YAML;
- text-level: the bytes of a bundled or node-mutated file are truncated, flipped, cut, re-indented,
  or given tabs, NUL bytes, byte order marks, invalid UTF-8 or another encoding.

`judge` loads one input the way `eventtime validate` does and says whether the loader behaved:
a `Scenario`, or a `ScenarioInvalid` whose every problem names the file, a line inside it and a
one-line message; no other exception; at most `TIME_LIMIT` seconds.
"""
from __future__ import annotations

import contextlib
import io
import pickle
import time
import traceback
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import yaml
from hypothesis import strategies as st

from eventtime import cli, yamlsource
from eventtime.loader import ScenarioInvalid, find_scenario_files, load_scenario
from eventtime.spec import Scenario
from eventtime.scenarios import SUITE_DIR

__all__ = ["TIME_LIMIT", "REACHES", "Verdict", "Tally", "judge", "fuzzed_files", "node_mutated", "text_mutated",
           "bundled"]

TIME_LIMIT = 1.0  # CPU seconds per file, loader or `eventtime validate`
# A run over the limit is timed again, up to this many times, and the fastest counts: a loaded
# machine can stall one run, while a slow input is slow every time.
RETIMES = 2

# Kinds of bad input the fuzzer must keep producing, by a phrase of the problem each gets.
REACHES = {
    "YAML syntax": "YAML syntax error", "not UTF-8": "not UTF-8", "bad character": "is not allowed in YAML text",
    "empty file": "the file is empty", "deep nesting": "nesting is deeper than", "alias bomb": "YAML aliases expand",
    "alias cycle": "refers to its own ancestor", "python tag": "YAML tag 'tag:yaml.org,2002:python/",
    "duplicate key": "appears twice", "huge number": "digits", "missing key": "missing required key",
    "unknown key": "unknown key", "wrong type": "must be text", "unknown step": "unknown step kind",
    "row width": "but source", "duration": "duration", "timestamp": "timestamp", "conf": "cannot be set by a scenario",
    "time zone": "unknown time zone",
}

_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"


class _Dumper(yaml.SafeDumper):
    """Writes a node tree back with the loader's own implicit types, so plain scalars stay plain."""


_Dumper.yaml_implicit_resolvers = yamlsource._Loader.yaml_implicit_resolvers


@lru_cache(maxsize=None)
def bundled() -> tuple[tuple[str, bytes, bytes], ...]:
    """(file name, bytes, pickled node tree) of every bundled scenario file."""
    files, _ = find_scenario_files([SUITE_DIR])
    out = []
    for f in files:
        data = f.read_bytes()
        tree = yaml.compose(data.decode("utf-8"), Loader=yamlsource._Loader)
        out.append((f.name, data, pickle.dumps(tree)))
    return tuple(out)


# -- values a mutation puts in ----------------------------------------------------------------------

ODD_TEXT = [
    "", " ", "\t", "x" * 10_000, "é", "中文", "🙂", "👨\u200d👩\u200d👧", "\u202eevil\u202c", "\u200b", "\ufeff",
    "\x85", "\u2028", "\x00", "\x07", "\x1b[2J", "\x7f", "\ud800", "\udfff", "\U0010ffff", "a\nb", "a\r\nb",
    "${HOME}", "$(touch pwned)", "`id`", "%s%n", "{0}", "\\", "'", '"', "null", "~", "NaN", "initial",
    "../../etc/passwd", "/etc/passwd", "file:///etc/passwd", "os:system", "subprocess:run", "__import__('os')",
    "America", "Etc", "posixrules", "right/UTC", "z" * 300, "Europe/Paris\n", "scenаrio",
]
DURATIONS = [
    "0s", "-5s", "5", "5 parsecs", "1e3s", "99999999999999999999 days", "36500 days", "36501 days",
    "1200 months", "1201 months", "0.0000001s", "1.5us", "١٢s", "5s 5s", "1h 1h", "1 month 1 day", "  ", "s",
    "5 s,", ",", "9" * 15 + "us", "9" * 16 + "us", "1.5 months", "1µs", "1 MINUTE", "5 seconds ago", "∞ s",
]
TIMESTAMPS = [
    "00:00:00", "23:59:59.999999", "24:00:00", "99:99", "0:0", "12:00:07.1234567", "2024-02-30", "2024-02-29",
    "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59.999999-23:59", "9999-12-31T23:59:59+99:99",
    "-2024-01-01", "+002024-01-01", "1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "2024-01-01 12:00:00 Z",
    "0000-01-01", "10000-01-01", "2024-01-01T00:00:00.0000001Z", "١٢:٠٠:٠٠", "12:00:07Z", "T12:00",
]
NUMBERS = [
    (_INT, "0"), (_INT, "-1"), (_INT, str(2 ** 31)), (_INT, str(2 ** 63)), (_INT, str(-2 ** 63 - 1)),
    (_INT, "9" * 40), (_INT, "9" * 41), (_INT, "1" + "0" * 400), (_INT, "-" + "9" * 5000), (_INT, "0x" + "f" * 50),
    (_INT, "0o17"), (_FLOAT, "1e308"), (_FLOAT, "1e309"), (_FLOAT, "-1e309"), (_FLOAT, "1e-400"),
    (_FLOAT, ".nan"), (_FLOAT, ".inf"), (_FLOAT, "-.inf"), (_FLOAT, "1" + "0" * 5000 + ".5"), (_FLOAT, "-0.0"),
    (_STR, "0b101"), (_STR, "1_000"), (_BOOL, "true"), (_BOOL, "FALSE"), (_NULL, "~"), (_NULL, ""),
]
KEYS = [
    "pipeline", "implementation", "module", "function", "path", "file", "checkpoint", "checkpointLocation",
    "output_path", "code", "exec", "python", "import", "sql", "jars", "spark.jars", "__class__", "<<", "",
    " scenario", "scenario ", "Scenario", "STEPS", "scenаrio", "a\nb", "\x00", "k" * 2000, "🙂", "1", "true",
]
CONF_KEYS = [
    "spark.sql.streaming.checkpointLocation", "spark.jars", "spark.driver.extraJavaOptions",
    "spark.sql.warehouse.dir", "spark.sql.session.timezone", "SPARK.SQL.SESSION.TIMEZONE",
    "spark.sql.streaming.noDataMicroBatches.enabled ", "spark.executor.memory", "spark.sql.session.timeZone",
    "spark.sql.streaming.stateStore.providerClass", "spark.sql.streaming.multipleWatermarkPolicy",
]
STEP_KINDS = ["add", "process", "advance", "stop", "start", "restart", "expect", "proces", "wait", "sleep",
              "run", "exec", "pipeline", "Add", "PROCESS", "add ", ""]
TAGS = [
    "tag:yaml.org,2002:python/object/apply:os.system", "tag:yaml.org,2002:python/name:os.system",
    "tag:yaml.org,2002:python/object:os._wrap_close", "tag:yaml.org,2002:python/object/new:subprocess.Popen",
    "tag:yaml.org,2002:python/module:os", "tag:yaml.org,2002:binary", "tag:yaml.org,2002:set",
    "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge",
    "tag:yaml.org,2002:value", _INT, _FLOAT, _BOOL, _NULL, _STR, "!foo", "!", "tag:example.com,2000:x",
]


def _scalar(tag: str, value: str) -> yaml.ScalarNode:
    return yaml.ScalarNode(tag, value)


_ODD_TEXT = st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=30),
                      st.text(st.characters(codec="utf-8"), min_size=1, max_size=8).map(lambda s: s * 50))
_DURATION_TEXT = st.one_of(st.sampled_from(DURATIONS), st.builds(
    lambda n, sep, unit: f"{n}{sep}{unit}",
    st.one_of(st.integers(-10 ** 20, 10 ** 20), st.floats(allow_nan=True, allow_infinity=True)),
    st.sampled_from(["", " "]),
    st.sampled_from(["s", "ms", "us", "m", "h", "d", "w", "months", "seconds", "years", "x", ""])))
_TIMESTAMP_TEXT = st.one_of(st.sampled_from(TIMESTAMPS), st.builds(
    lambda d, sep, off: d.isoformat(sep=sep) + off,
    st.datetimes(), st.sampled_from(["T", " "]),
    st.sampled_from(["", "Z", "+00:00", "-23:59", "+14:00", "+2400", "-99:99"])))
_KEY_TEXT = st.one_of(st.sampled_from(KEYS + CONF_KEYS), st.text(max_size=12))

# A scalar node of any type: odd text, a duration, a timestamp, a number, a boolean or null.
_SCALARS = st.one_of(
    _ODD_TEXT.map(lambda s: _scalar(_STR, s)),
    _DURATION_TEXT.map(lambda s: _scalar(_STR, s)),
    _TIMESTAMP_TEXT.map(lambda s: _scalar(_STR, s)),
    st.sampled_from(NUMBERS).map(lambda tv: _scalar(*tv)),
    st.integers().map(lambda n: _scalar(_INT, str(n))),
    st.floats().map(lambda x: _scalar(_FLOAT, ".nan" if x != x else repr(x).replace("inf", ".inf"))),
)


def _collections(inner: st.SearchStrategy[yaml.Node]) -> st.SearchStrategy[yaml.Node]:
    return st.one_of(
        _SCALARS,
        st.lists(inner, max_size=3).map(lambda items: yaml.SequenceNode(_SEQ, items)),
        st.lists(st.tuples(_KEY_TEXT.map(lambda k: _scalar(_STR, k)), inner), max_size=3)
        .map(lambda pairs: yaml.MappingNode(_MAP, pairs)),
    )


# Any node: a scalar, or a small list or mapping of them (the wrong type for most places).
_VALUES = _collections(_collections(_SCALARS))


# -- the tree being mutated ---------------------------------------------------------------------------

@dataclass
class _Tree:
    """A node tree under mutation, with text to splice in where the serializer cannot write it."""

    root: yaml.Node
    raw: dict[str, str] = field(default_factory=dict)

    def slots(self) -> list[tuple[yaml.Node, yaml.Node | None, tuple[str, int] | None]]:
        """Every node with its parent and its slot there (('item'|'key'|'value', index))."""
        out, stack, seen = [], [(self.root, None, None)], set()
        while stack:
            node, parent, slot = stack.pop()
            out.append((node, parent, slot))
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, yaml.SequenceNode):
                stack.extend((item, node, ("item", i)) for i, item in enumerate(node.value))
            elif isinstance(node, yaml.MappingNode):
                for i, (k, v) in enumerate(node.value):
                    stack.append((k, node, ("key", i)))
                    stack.append((v, node, ("value", i)))
        return out

    def of_kind(self, kind: type) -> list[yaml.Node]:
        nodes, seen = [], set()
        for node, _, _ in self.slots():
            if isinstance(node, kind) and node.value and id(node) not in seen:
                seen.add(id(node))
                nodes.append(node)
        return nodes

    def replace(self, parent: yaml.Node | None, slot: tuple[str, int] | None, new: yaml.Node) -> None:
        if parent is None:
            self.root = new
            return
        kind, i = slot
        if kind == "item":
            parent.value[i] = new
        elif kind == "key":
            parent.value[i] = (new, parent.value[i][1])
        else:
            parent.value[i] = (parent.value[i][0], new)

    def placeholder(self, text: str) -> yaml.ScalarNode:
        token = f"RAW{len(self.raw)}PLACEHOLDER"
        self.raw[token] = text
        return _scalar(_STR, token)

    def steps(self) -> yaml.SequenceNode | None:
        if isinstance(self.root, yaml.MappingNode):
            for k, v in self.root.value:
                if k.value == "steps" and isinstance(v, yaml.SequenceNode):
                    return v
        return None


Mutation = Callable[[Callable, _Tree], None]


def _m_wrong_value(draw, tree: _Tree) -> None:
    node, parent, slot = draw(st.sampled_from(tree.slots()))
    if slot is not None and slot[0] == "key":
        tree.replace(parent, slot, draw(_SCALARS))
    else:
        tree.replace(parent, slot, draw(_VALUES))


def _m_delete_key(draw, tree: _Tree) -> None:
    mappings = tree.of_kind(yaml.MappingNode)
    if mappings:
        m = draw(st.sampled_from(mappings))
        del m.value[draw(st.integers(0, len(m.value) - 1))]


def _m_rename_key(draw, tree: _Tree) -> None:
    mappings = tree.of_kind(yaml.MappingNode)
    if not mappings:
        return
    m = draw(st.sampled_from(mappings))
    i = draw(st.integers(0, len(m.value) - 1))
    key, value = m.value[i]
    old = key.value if isinstance(key, yaml.ScalarNode) else "k"
    cut = draw(st.integers(0, max(len(old) - 1, 0)))
    new = draw(st.one_of(_KEY_TEXT, st.sampled_from([old[:cut] + old[cut + 1:], old.upper(), old + "s"])))
    m.value[i] = (_scalar(_STR, new), value)


def _m_add_key(draw, tree: _Tree) -> None:
    mappings = tree.of_kind(yaml.MappingNode)
    if mappings:
        m = draw(st.sampled_from(mappings))
        key = draw(_KEY_TEXT)
        m.value.insert(draw(st.integers(0, len(m.value))), (_scalar(_STR, key), draw(_VALUES)))


def _m_duplicate_key(draw, tree: _Tree) -> None:
    mappings = tree.of_kind(yaml.MappingNode)
    if mappings:
        m = draw(st.sampled_from(mappings))
        key, value = m.value[draw(st.integers(0, len(m.value) - 1))]
        m.value.append((_scalar(key.tag, key.value) if isinstance(key, yaml.ScalarNode) else key,
                        draw(st.one_of(st.just(value), _VALUES))))


def _m_step_kind(draw, tree: _Tree) -> None:
    steps = tree.steps()
    if steps is None or not steps.value:
        return
    i = draw(st.integers(0, len(steps.value) - 1))
    kind = draw(st.sampled_from(STEP_KINDS))
    old = steps.value[i]
    if draw(st.booleans()):
        steps.value[i] = _scalar(_STR, kind)
    else:
        body = old.value[0][1] if isinstance(old, yaml.MappingNode) and old.value else draw(_VALUES)
        steps.value[i] = yaml.MappingNode(_MAP, [(_scalar(_STR, kind), body)])
    if draw(st.booleans()):  # and move a step elsewhere (stop/start order, expect before add)
        j = draw(st.integers(0, len(steps.value) - 1))
        steps.value.insert(j, steps.value.pop(i))


def _m_time_value(draw, tree: _Tree) -> None:
    scalars = [(n, p, s) for n, p, s in tree.slots()
               if isinstance(n, yaml.ScalarNode) and s is not None and s[0] != "key"]
    if scalars:
        _, parent, slot = draw(st.sampled_from(scalars))
        text = draw(st.one_of(_DURATION_TEXT, _TIMESTAMP_TEXT))
        tree.replace(parent, slot, _scalar(_STR, text))


def _m_row_width(draw, tree: _Tree) -> None:
    rows = [n for n in tree.of_kind(yaml.SequenceNode) if all(isinstance(v, yaml.ScalarNode) for v in n.value)]
    if rows:
        row = draw(st.sampled_from(rows))
        if draw(st.booleans()) and row.value:
            del row.value[draw(st.integers(0, len(row.value) - 1))]
        else:
            row.value.extend(draw(st.lists(_SCALARS, min_size=1, max_size=3)))


def _m_repeat_by_alias(draw, tree: _Tree) -> None:
    """Repeat an item of a list by reference: the serializer writes an anchor and aliases."""
    lists = tree.of_kind(yaml.SequenceNode)
    if lists:
        seq = draw(st.sampled_from(lists))
        item = seq.value[draw(st.integers(0, len(seq.value) - 1))]
        n = draw(st.sampled_from([1, 2, 10, 100, 500]))
        seq.value.extend([item] * n)


def _m_share_node(draw, tree: _Tree) -> None:
    """Put one node in a second place (an alias), or inside itself (a cycle)."""
    slots = tree.slots()
    node, _, _ = draw(st.sampled_from(slots))
    _, parent, slot = draw(st.sampled_from(slots))
    if draw(st.booleans()) and isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
        if isinstance(node, yaml.SequenceNode):
            node.value.append(node)
        else:
            node.value.append((_scalar(_STR, "self"), node))
    elif slot is None or slot[0] != "key":
        tree.replace(parent, slot, node)


def _m_tag(draw, tree: _Tree) -> None:
    node, parent, slot = draw(st.sampled_from(tree.slots()))
    tag = draw(st.sampled_from(TAGS))
    if "python/object/apply" in tag or "python/object/new" in tag:
        node = yaml.SequenceNode(tag, [_scalar(_STR, "touch fuzz-pwned")])
    elif tag.endswith("binary"):
        node = _scalar(tag, draw(st.sampled_from(["aGVsbG8=", "!!!not base64", "AAEC/w=="])))
    else:
        node.tag = tag
    tree.replace(parent, slot, node)


_BIG_BOMB = ", ".join(["&l0 [" + ", ".join(["x"] * 10) + "]"] +
                      [f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)])


def _m_raw(draw, tree: _Tree) -> None:
    """Text the serializer cannot produce: deep nesting, alias bombs, undefined aliases, odd tags."""
    _, parent, slot = draw(st.sampled_from(tree.slots()))
    if slot is not None and slot[0] == "key":
        return
    depth = draw(st.sampled_from([2, 32, 63, 64, 65, 66, 100, 1000, 20_000]))
    levels, fan = draw(st.integers(3, 9)), draw(st.integers(2, 10))
    rows = draw(st.sampled_from([10, 500, 5000]))
    bomb = ", ".join([f"&l0 [{', '.join(['x'] * fan)}]"] +
                     [f"&l{i} [{', '.join([f'*l{i - 1}'] * fan)}]" for i in range(1, levels)])
    # The loader's two limits come twice in this list, the alias limit once as a bomb always over it: few
    # of the depths and sizes drawn reach them, and the coverage test (REACHES) wants both in every run,
    # whatever the bundled corpus holds (13 new bundled scenarios once left 2000 inputs without a bomb).
    text = draw(st.sampled_from([
        "[" * depth + "]" * depth,
        "[" * depth + "]" * depth,
        "{a: " * depth + "1" + "}" * depth,
        "[" * depth,
        f"[{bomb}]",
        f"[{_BIG_BOMB}]",  # 10^9 values: over the loader's limit whatever levels and fan were drawn
        "[&r [a, '00:00:03'], " + ", ".join(["*r"] * rows) + "]",
        "*nowhere",
        "&a [*a]",
        "!!python/object/apply:os.system ['touch fuzz-pwned']",
        "!!python/name:os.system",
        "!<tag:yaml.org,2002:python/object/apply:os.system> [id]",
        "!!binary aGVsbG8=",
        "!!timestamp 2024-01-01",
        "!!float abc",
        "!!int 0x",
        "!!bool yes",
        "!!null x",
        "{? [a, b]: c}",
        "{<<: {a: 1}}",
        "|\n  block\n",
        "'unterminated",
        "\"\\ud800\\x00\\u202e\"",
        "\"\\N\\_\\L\\P\\e\"",
        "@reserved",
        "`reserved",
    ]))
    tree.replace(parent, slot, tree.placeholder(text))


ZONES = ["UTC", "Europe/Paris", "America", "Etc", "right/UTC", "posixrules", "zone.tab", "../../etc/passwd",
         "/etc/localtime", "Europe/Paris/", "z" * 300, "", "Mars/Olympus", "utc", "+02:00"]


def _m_setting(draw, tree: _Tree) -> None:
    """Set one of the optional top-level keys most bundled files lack: conf, timezone, date, clock, requires."""
    if not isinstance(tree.root, yaml.MappingNode):
        return
    conf = yaml.MappingNode(_MAP, [(_scalar(_STR, draw(st.sampled_from(CONF_KEYS))),
                                    draw(st.one_of(st.sampled_from(ZONES).map(lambda z: _scalar(_STR, z)),
                                                   _SCALARS, _VALUES)))])
    key, value = draw(st.sampled_from([
        ("conf", conf),
        ("timezone", _scalar(_STR, draw(st.sampled_from(ZONES)))),
        ("date", _scalar(_STR, draw(_TIMESTAMP_TEXT))),
        ("clock", yaml.MappingNode(_MAP, [(_scalar(_STR, "start"), _scalar(_STR, draw(_TIMESTAMP_TEXT))),
                                          (_scalar(_STR, "trigger"), _scalar(_STR, draw(_DURATION_TEXT)))])),
        ("requires", yaml.MappingNode(_MAP, [(_scalar(_STR, draw(st.sampled_from(["spark", "features"]))),
                                              draw(_VALUES))])),
    ]))
    tree.root.value = [(k, v) for k, v in tree.root.value if getattr(k, "value", None) != key]
    tree.root.value.insert(draw(st.integers(0, len(tree.root.value))), (_scalar(_STR, key), value))
    steps = tree.steps()
    if key == "conf" and steps is not None and draw(st.booleans()):  # or in a restart step
        steps.value.append(yaml.MappingNode(_MAP, [(_scalar(_STR, "restart"),
                                                    yaml.MappingNode(_MAP, [(_scalar(_STR, "conf"), conf)]))]))


# `_m_raw` twice: its texts are the only way to the loader's nesting and alias limits (REACHES).
MUTATIONS: list[Mutation] = [
    _m_wrong_value, _m_delete_key, _m_rename_key, _m_add_key, _m_duplicate_key, _m_step_kind, _m_time_value,
    _m_row_width, _m_repeat_by_alias, _m_share_node, _m_tag, _m_raw, _m_raw, _m_setting,
]


def _serialize(tree: _Tree, draw) -> str:
    width = draw(st.sampled_from([80, 1_000_000]))
    try:
        text = yaml.serialize(tree.root, Dumper=_Dumper, width=width, allow_unicode=draw(st.booleans()))
    except RecursionError:  # a tree nested too deeply for PyYAML's recursive emitter
        text = ""
    for token, raw in tree.raw.items():
        text = text.replace(token, raw)
    return text


@st.composite
def node_mutated(draw) -> bytes:
    """A bundled file with one to three node-level mutations, written back as YAML (UTF-8 bytes)."""
    _, _, blob = draw(st.sampled_from(bundled()))
    tree = _Tree(pickle.loads(blob))
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        mutation(draw, tree)
    return _serialize(tree, draw).encode("utf-8", "surrogatepass")


_INSERTS = [
    b"\t", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\x80", b"\xc0\xaf", b"\r", b"\r\n", b"\xc2\x85", "\u2028".encode(), b"\x1b[2J", b": ", b"- ", b"&a ", b"*a",
    b"!!python/object/apply:os.system [touch fuzz-pwned]", b"{", b"[", b"'", b'"', b"%YAML 1.3\n", b"%TAG ! !x\n",
    b"---\n", b"...\n", b"? ", b"|", b">", b"#", b"  ", b"\n", b"\\", b"\xf0\x9f\x99\x82", "\u202e".encode(),
]


def _edit_bytes(draw, data: bytes) -> bytes:
    n = len(data)
    pos = draw(st.integers(0, n))
    op = draw(st.sampled_from(["truncate", "flip", "insert", "cut", "indent", "tabs", "dup_line", "swap_lines"]))
    if op == "truncate":
        return data[:pos]
    if op == "flip" and n:
        i = min(pos, n - 1)
        return data[:i] + bytes([data[i] ^ (1 << draw(st.integers(0, 7)))]) + data[i + 1:]
    if op == "insert":
        return data[:pos] + draw(st.one_of(st.sampled_from(_INSERTS), st.binary(min_size=1, max_size=4))) + data[pos:]
    if op == "cut":
        return data[:pos] + data[pos + draw(st.integers(1, 40)):]
    lines = data.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    if op == "indent":
        lines[i] = b" " * draw(st.integers(1, 3)) + lines[i] if draw(st.booleans()) else lines[i][1:]
    elif op == "tabs":
        lines[i] = b"\t" + lines[i].lstrip(b" ")
    elif op == "dup_line":
        lines.insert(i, lines[i])
    elif op == "swap_lines":
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _whole(draw, data: bytes) -> bytes:
    text = data.decode("utf-8", "surrogatepass")
    form = draw(st.sampled_from(["utf-16", "utf-32", "latin-1", "crlf", "cr", "bom", "one-line", "tabs", "empty",
                                 "blank", "only-bom", "comment"]))
    if form in ("utf-16", "utf-32", "latin-1"):
        return text.encode(form, "replace")
    return {
        "crlf": data.replace(b"\n", b"\r\n"), "cr": data.replace(b"\n", b"\r"), "bom": b"\xef\xbb\xbf" + data,
        "one-line": data.replace(b"\n", b" "), "tabs": data.replace(b"  ", b"\t"), "empty": b"",
        "blank": b" \n\n  \n", "only-bom": b"\xef\xbb\xbf", "comment": b"# " + data.replace(b"\n", b"\n# "),
    }[form]


@st.composite
def text_mutated(draw) -> bytes:
    """A bundled (or node-mutated) file with byte-level damage, or in another encoding or line ending."""
    data = draw(st.one_of(st.sampled_from(bundled()).map(lambda b: b[1]), node_mutated()))
    if draw(st.integers(0, 4)) == 0:
        data = _whole(draw, data)
    for _ in range(draw(st.integers(1, 4))):
        data = _edit_bytes(draw, data)
    return data


def fuzzed_files() -> st.SearchStrategy[bytes]:
    """Bad (and now and then still valid) scenario files: node-level and text-level mutations."""
    return st.one_of(node_mutated(), text_mutated())


# -- judging one input --------------------------------------------------------------------------------

@dataclass
class Verdict:
    """How the loader took one input: `outcome` valid / invalid / crash, `faults` what broke the rules."""

    outcome: str
    seconds: float
    faults: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def _line_bound(data: bytes) -> int:
    text = data.decode("utf-8", "replace")
    return max(data.count(b"\n"), len(text.splitlines())) + 1


_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _message_faults(message: str) -> list[str]:
    if not message.strip():
        return ["empty message"]
    odd = sorted({c for c in message if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c in _BIDI})
    if odd:
        return [f"message holds control, line-break, surrogate or bidi characters {odd!r}: {message[:200]!r}"]
    return []


def _timed(fn: Callable[[], object]) -> tuple[float, object, BaseException | None]:
    # CPU time of this process, not wall time: on a shared, loaded machine (CI, pytest -n 2 next to
    # Spark) wall time measures the neighbours; a slow input costs CPU every time.
    start = time.process_time()
    try:
        result, error = fn(), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - anything else is what the fuzzer looks for
        result, error = None, exc
    return time.process_time() - start, result, error


def _load_faults(path: Path, data: bytes, result: object, error: BaseException | None) -> tuple[str, list[str]]:
    if error is None:
        if not isinstance(result, Scenario) or result.path != str(path):
            return "crash", [f"load_scenario returned {type(result).__name__}, not a Scenario of {path}"]
        return "valid", []
    if not isinstance(error, ScenarioInvalid):
        return "crash", ["".join(traceback.format_exception(error)).strip()]
    faults = []
    if not error.problems:
        faults.append("ScenarioInvalid without problems")
    bound = _line_bound(data)
    for p in error.problems:
        if p.file != str(path):
            faults.append(f"problem names file {p.file!r}, not {str(path)!r}")
        if not 1 <= p.line <= bound or p.column < 1:
            faults.append(f"problem at line {p.line}, column {p.column}; the file has {bound - 1} line breaks: {p}")
        faults.extend(_message_faults(p.message))
        if not str(p).startswith(f"{p.file}:{p.line}:{p.column}: "):
            faults.append(f"problem does not print as file:line:column: message: {str(p)[:200]!r}")
    return ("crash" if faults else "invalid"), faults


def _cli_faults(path: Path, outcome: str, problems: list[str]) -> tuple[float, list[str]]:
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return cli.main(["validate", str(path)])

    seconds, code, error = _timed(run)
    if error is not None:
        return seconds, ["eventtime validate raised:\n" + "".join(traceback.format_exception(error)).strip()]
    lines = out.getvalue().split("\n")
    faults = []
    want_code, summary = (0, "1 valid, 0 invalid (1 file)") if outcome == "valid" else (1, "0 valid, 1 invalid (1 file)")
    if code != want_code:
        faults.append(f"eventtime validate exited {code}, expected {want_code}")
    if lines[:-2] != problems or lines[-2:] != [summary, ""]:
        faults.append(f"eventtime validate printed {out.getvalue()[:500]!r}")
    if err.getvalue():
        faults.append(f"eventtime validate wrote to stderr: {err.getvalue()[:500]!r}")
    return seconds, faults


def judge(path: Path, data: bytes, *, via_cli: bool = False, time_limit: float | None = TIME_LIMIT) -> Verdict:
    """Write `data` to `path`, load it as `eventtime validate` does (and, if asked, run the command).

    `time_limit=None` judges what the loader says and never how long it took (the seconds are still
    measured): a test must not depend on the machine's speed, the long run in benchmarks/ times them."""
    path.write_bytes(data)
    limit = float("inf") if time_limit is None else time_limit
    seconds, result, error = _timed(lambda: load_scenario(path))
    for _ in range(RETIMES):
        if seconds > limit:
            seconds = min(seconds, _timed(lambda: load_scenario(path))[0])
    outcome, faults = _load_faults(path, data, result, error)
    messages = [p.message for p in error.problems] if isinstance(error, ScenarioInvalid) else []
    if seconds > limit:
        faults.append(f"loading took {seconds:.2f} s (limit {limit} s)")
    if via_cli and outcome != "crash":
        problems = [str(p) for p in error.problems] if isinstance(error, ScenarioInvalid) else []
        cli_seconds, cli_faults = _cli_faults(path, outcome, problems)
        for _ in range(RETIMES):
            if cli_seconds > limit:
                cli_seconds = min(cli_seconds, _cli_faults(path, outcome, problems)[0])
        if cli_seconds > limit:
            cli_faults.append(f"eventtime validate took {cli_seconds:.2f} s (limit {limit} s)")
        seconds = max(seconds, cli_seconds)
        faults.extend(cli_faults)
        outcome = "crash" if cli_faults else outcome
    return Verdict("crash" if faults else outcome, seconds, faults, messages)


@dataclass
class Tally:
    """Counts over many inputs, the slowest one, and the first inputs that broke the rules."""

    tried: int = 0
    valid: int = 0
    invalid: int = 0
    crashes: int = 0
    via_cli: int = 0
    slowest: float = 0.0
    slowest_input: bytes = b""
    failures: list[tuple[bytes, Verdict]] = field(default_factory=list)
    reached: set[str] = field(default_factory=set)
    interrupted: bool = False

    def record(self, data: bytes, verdict: Verdict, *, via_cli: bool, keep: int = 20) -> None:
        self.tried += 1
        self.via_cli += via_cli
        if verdict.outcome == "valid":
            self.valid += 1
        elif verdict.outcome == "invalid":
            self.invalid += 1
        else:
            self.crashes += 1
            if len(self.failures) < keep:
                self.failures.append((data, verdict))
        for name, phrase in REACHES.items():
            if name not in self.reached and any(phrase in m for m in verdict.messages):
                self.reached.add(name)
        if verdict.seconds > self.slowest:
            self.slowest, self.slowest_input = verdict.seconds, data
