"""Reads YAML into plain data while remembering where every key and value stood (file:line:column).

Only PyYAML's composer runs (a safe node tree; no object is ever constructed), and scalars are
resolved here with a small YAML-1.2-like rule set: `12:00:07` stays the string a person wrote
(YAML 1.1 would read it as the base-60 integer 43207) and `yes`/`no`/`on`/`off` stay strings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from eventtime.harness.errors import EventtimeError



class _Loader(yaml.SafeLoader):
    """PyYAML's pure-Python safe composer with YAML-1.2-core implicit types.

    Not libyaml: its C composer recurses without bound and crashes the interpreter on deeply
    nested input. This one counts the collections it is inside and refuses to go deeper than
    MAX_DEPTH, so it never recurses far (and the text is parsed once, not checked first).
    """

    _depth = 0
    _aliases = 0  # alias uses composed so far

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # Refuse a `[` or `{` past the limit while scanning: the scanner looks ahead up to 1,024
        # characters for a possible key, comparing all open levels at each (0.3 s for 1,000 `[`).
        if len(self.indents) + self.flow_level > MAX_DEPTH:  # block levels + flow levels open
            raise YamlSyntaxError(f"nesting is deeper than {MAX_DEPTH} levels", _pos(self.get_mark()))
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            # Each alias use adds at least one value, so past MAX_ALIAS_VALUES uses the document is over
            # the limit `_convert` enforces: stop here rather than compose (and pay for) the rest of a
            # long text of aliases (a 22 KB fuzzed file of `*r` took 0.1-1.4 s of CPU before).
            self._aliases += 1
            if self._aliases > MAX_ALIAS_VALUES:
                anchored = self.anchors.get(self.peek_event().anchor)
                mark = anchored.start_mark if anchored is not None else self.peek_event().start_mark
                raise YamlSyntaxError(f"YAML aliases expand to more than {MAX_ALIAS_VALUES} values (an alias "
                                      "bomb?); this is the aliased value that went over", _pos(mark))
            return super().compose_node(parent, index)
        if not self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:  # the document's own mapping is level 0
                raise YamlSyntaxError(f"nesting is deeper than {MAX_DEPTH} levels", _pos(self.peek_event().start_mark))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("merge", r"^<<$", ["<"]),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+0123456789.")),
):
    _Loader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), _first)

__all__ = ["Position", "Located", "YamlSyntaxError", "load_yaml"]

MAX_DEPTH = 64
MAX_NODES = 200_000
# Aliases let a few lines stand for millions of values ("billion laughs"); each alias use counts
# its values again, and all alias uses together may add at most this many.
MAX_ALIAS_VALUES = 5_000
MAX_BYTES = 20 * 1024 * 1024

Path = tuple  # of str | int


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


class YamlSyntaxError(EventtimeError):
    """The text is not YAML the kit accepts; carries the position and a plain message."""

    def __init__(self, message: str, position: Position):
        super().__init__(message)
        self.message = message
        self.position = position


@dataclass
class Located:
    """Plain data (dict/list/str/int/float/bool/None) plus the position of each value and key."""

    data: Any
    values: dict[Path, Position] = field(default_factory=dict)
    keys: dict[Path, Position] = field(default_factory=dict)
    # The text of each scalar read as a float, as written: a decimal column reads `12.10` exactly.
    float_texts: dict[Path, str] = field(default_factory=dict)

    def at(self, path: Path) -> Position:
        """Where the value at `path` starts; falls back to the nearest enclosing value."""
        path = tuple(path)
        while path:
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), Position(1, 1))

    def key_at(self, path: Path) -> Position:
        """Where the key of the entry at `path` stands (or its value, for list items)."""
        return self.keys.get(tuple(path)) or self.at(path)


_NULLS = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_MAX_DIGITS = 40


def _scalar(node: yaml.ScalarNode) -> Any:
    """Resolve a scalar by its tag: implicit (YAML 1.2 core rules above) or written (`!!int 5`)."""
    tag, value = node.tag.rsplit(":", 1)[-1], node.value
    if tag == "str":
        return value
    where = _pos(node.start_mark)
    text = value.strip()
    if tag == "null":
        if text in _NULLS:
            return None
    elif tag == "bool":
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
    elif tag == "int":
        digits = text.lstrip("+-")
        if len(digits) > _MAX_DIGITS:
            raise YamlSyntaxError(f"the number {text[:20]}... has more than {_MAX_DIGITS} digits", where)
        try:
            if digits.startswith("0x"):
                return int(text.replace("0x", "", 1), 16)
            if digits.startswith("0o"):
                return int(text.replace("0o", "", 1), 8)
            return int(text, 10)
        except ValueError:
            pass
    elif tag == "float":
        lowered = text.lower()
        if lowered in (".inf", "+.inf"):
            return float("inf")
        if lowered == "-.inf":
            return float("-inf")
        if lowered == ".nan":
            return float("nan")
        try:
            return float(text)
        except ValueError:
            pass
    elif tag in ("timestamp", "value", "merge"):
        return value
    raise YamlSyntaxError(f"cannot read {value!r} as !!{tag}", where)


_CORE_TAGS = {"tag:yaml.org,2002:" + t for t in
              ("str", "int", "float", "null", "bool", "timestamp", "seq", "map", "value", "merge")}


def _pos(mark: Any) -> Position:
    return Position(mark.line + 1, mark.column + 1)


def load_yaml(text: str) -> Located:
    """Parse one YAML document. Raises YamlSyntaxError with a position for anything unacceptable."""
    if len(text) > MAX_BYTES:
        raise YamlSyntaxError(f"file is larger than {MAX_BYTES // (1024 * 1024)} MiB", Position(1, 1))
    try:
        nodes = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = _pos(mark) if mark is not None else Position(1, 1)
        what = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            what = f"{exc.problem} ({exc.context})"
        raise YamlSyntaxError(f"YAML syntax error: {what}", pos) from None
    except yaml.reader.ReaderError as exc:
        index = getattr(exc, "position", 0) or 0
        line = text.count("\n", 0, index) + 1
        column = index - (text.rfind("\n", 0, index) + 1) + 1
        char = exc.character if isinstance(exc.character, str) else chr(exc.character or 0)
        raise YamlSyntaxError(f"character {char!r} (U+{ord(char):04X}) is not allowed in YAML text",
                              Position(line, column)) from None
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise YamlSyntaxError(f"YAML syntax error: {first}", Position(1, 1)) from None
    except RecursionError:
        raise YamlSyntaxError(f"nesting is deeper than {MAX_DEPTH} levels", Position(1, 1)) from None
    except (UnicodeError, ValueError) as exc:
        raise YamlSyntaxError(f"cannot read the file as text: {exc}", Position(1, 1)) from None
    nodes = [n for n in nodes if n is not None]
    if not nodes:
        raise YamlSyntaxError("the file is empty; a scenario is a YAML mapping", Position(1, 1))
    if len(nodes) > 1:
        raise YamlSyntaxError("one scenario per file: found a second YAML document",
                              _pos(nodes[1].start_mark))
    located = Located(data=None)
    budget = [MAX_NODES, MAX_ALIAS_VALUES]
    located.data = _convert(nodes[0], (), located, 0, budget, set(), set(), None)
    return located


def _convert(node: yaml.Node, path: Path, out: Located, depth: int, budget: list[int],
             active: set[int], seen: set[int], aliased: Position | None) -> Any:
    """Plain data of `node`; `aliased` is where the aliased node starts, inside an alias use."""
    if depth > MAX_DEPTH:
        raise YamlSyntaxError(f"nesting is deeper than {MAX_DEPTH} levels", _pos(node.start_mark))
    budget[0] -= 1
    if budget[0] < 0:
        raise YamlSyntaxError(f"the document has more than {MAX_NODES} values (alias expansion?)",
                              _pos(node.start_mark))
    if aliased is None and id(node) in seen:
        aliased = _pos(node.start_mark)
    seen.add(id(node))
    if aliased is not None:
        budget[1] -= 1
        if budget[1] < 0:
            raise YamlSyntaxError(f"YAML aliases expand to more than {MAX_ALIAS_VALUES} values (an alias "
                                  "bomb?); this is the aliased value that went over", aliased)
    out.values[path] = _pos(node.start_mark)
    if node.tag not in _CORE_TAGS:
        raise YamlSyntaxError(f"YAML tag {node.tag!r} is not allowed in scenario files",
                              _pos(node.start_mark))
    if isinstance(node, yaml.ScalarNode):
        value = _scalar(node)
        if isinstance(value, float):
            out.float_texts[path] = node.value.strip()
        return value
    if id(node) in active:
        raise YamlSyntaxError("a YAML alias refers to its own ancestor", _pos(node.start_mark))
    active.add(id(node))
    try:
        if isinstance(node, yaml.SequenceNode):
            return [_convert(item, path + (i,), out, depth + 1, budget, active, seen, aliased)
                    for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise YamlSyntaxError("YAML merge keys ('<<') are not supported in scenario files",
                                          _pos(key_node.start_mark))
                if not isinstance(key_node, yaml.ScalarNode):
                    raise YamlSyntaxError("mapping keys must be plain words", _pos(key_node.start_mark))
                key = key_node.value
                if key in result:
                    raise YamlSyntaxError(f"key {key!r} appears twice in this mapping",
                                          _pos(key_node.start_mark))
                out.keys[path + (key,)] = _pos(key_node.start_mark)
                result[key] = _convert(value_node, path + (key,), out, depth + 1, budget, active, seen, aliased)
            return result
    finally:
        active.discard(id(node))
    raise YamlSyntaxError(f"unsupported YAML node {type(node).__name__}", _pos(node.start_mark))
