"""Scenario text: values, rows and checks as a scenario file states them, written by every face that writes one.

One writer for the model's checks (`eventtime expect`, `expect --write` and the differential's generated
cases: `semantics.fill`) and for what a Spark run observed (`--snapshot`: `snapshotedit`), so that the same
observation reads the same whichever face wrote it. Pure text: it imports the format's own modules only
(`spec`, `coltypes`, `timeparse`), never Spark nor the model, so both sides may use it.

Values are written in the forms docs/scenario-format.md documents, and each reads back through the
scenario loader as the value it was written from (tests/fast/test_scenariotext.py, for every column type):
- times on the scenario's `date` in its `timezone` (`"00:00:07"`), else its local date and time there, else
  (a local time that is not one instant) the instant with its offset; `initial` for Spark's first watermark;
- text plain where it is a word no YAML reader takes for another value (`yes`, `on`, `null` are quoted),
  else quoted, with an escape for every character that is not printable (inside quotes YAML folds a line
  break into a space, and refuses control characters);
- floats as their shortest repr, `.nan`, `.inf`, `-.inf`; decimals as quoted text (never read through a
  float); dates as quoted ISO dates; binary as text where it is printable UTF-8, else `{base64: ...}`;
- arrays as lists, structs as mappings by field name, maps as mappings (string keys) or `[key, value]` pairs.

Layout: flow style inside a check; a list on its key's line up to WIDTH characters, else one item per line,
two deeper than its key.
"""
from __future__ import annotations

import base64
import datetime as _dt
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import yaml

from . import spec as m
from .coltypes import ColumnType
from .timeparse import parse_time

__all__ = ["WIDTH", "time_text", "watermark_text", "text_scalar", "binary_text", "value_text", "row_text", "rows_text",
           "json_flow", "flow_list", "flow_text", "block_items", "check_text", "checks_block", "node_end",
           "line_end", "Edit", "apply_edits", "append_checks"]

WIDTH = 110  # a list written on its key's line up to this many characters, else one item per line

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
# words written quoted: what a YAML 1.1 reader (an editor, another tool) takes for a boolean, null or
# number, and `initial`, which the kit reads as Spark's first watermark where a time is expected
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "initial", "~", "nan", "inf"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


# -- values ----------------------------------------------------------------------------------------------
def _clock(local: _dt.datetime) -> str:
    clock = local.strftime("%H:%M:%S")
    us = local.microsecond
    if us:
        clock += f".{us // 1000:03d}" if us % 1000 == 0 else ("." + f"{us:06d}").rstrip("0")
    return clock


def time_text(micros: int, scenario: m.Scenario) -> str:
    """A time literal on the scenario's date in its zone (`"00:00:07"`), else its date and time there, else
    (a local time that is not one instant, around a daylight-saving change) the instant with its offset."""
    from zoneinfo import ZoneInfo

    zone = scenario.timezone or "UTC"
    instant = _EPOCH + _dt.timedelta(microseconds=micros)
    local = instant if zone in ("UTC", "Z") else instant.astimezone(ZoneInfo(zone))
    clock = _clock(local)
    text = clock if local.date() == scenario.date else f"{local.date().isoformat()}T{clock}"
    try:
        exact = parse_time(text, date=scenario.date, zone=zone) == micros
    except ValueError:
        exact = False
    if not exact:
        offset = local.utcoffset() or _dt.timedelta(0)
        minutes, seconds = divmod(int(offset.total_seconds()), 60)
        if seconds:  # a local mean time of the 19th century: no offset a literal can say; the instant in UTC
            text = f"{instant.date().isoformat()}T{_clock(instant)}Z"
        else:
            sign = "-" if minutes < 0 else "+"
            text = f"{local.date().isoformat()}T{clock}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return f'"{text}"'


def watermark_text(ms: int | None, scenario: m.Scenario) -> str:
    """A watermark in milliseconds: `initial` for Spark's first (0), else a time literal."""
    return "initial" if not ms else time_text(ms * 1000, scenario)


def text_scalar(value: str) -> str:
    """Text as YAML reads it back as that text: plain where it is a word, single-quoted where it holds
    double quotes (JSON in a string reads as written), else double-quoted with escapes."""
    if _PLAIN.match(value) and value.lower() not in _RESERVED:
        return value
    if '"' in value and value.isprintable():
        return "'" + value.replace("'", "''") + "'"
    out = []
    for ch in value:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:  # a line or paragraph separator, a control or format character: YAML's escapes
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def binary_text(value: bytes) -> str:
    """Bytes as text where they are printable UTF-8, else `{base64: ...}`."""
    try:
        decoded = value.decode("utf-8")
        if decoded.isprintable():
            return text_scalar(decoded)
    except UnicodeDecodeError:
        pass
    return '{base64: "' + base64.b64encode(value).decode("ascii") + '"}'


def value_text(value: Any, ctype: ColumnType | None, scenario: m.Scenario) -> str:
    """One value of a column of type `ctype` (None: by its Python type), as the scenario format writes it."""
    if value is None:
        return "null"
    k = ctype.kind if ctype is not None else None
    if k in ("timestamp", "timestamp_ntz") and isinstance(value, int) and not isinstance(value, bool):
        return time_text(value, scenario)
    if isinstance(value, bool):
        return "true" if value else "false"
    if k == "decimal":
        return f'"{value:f}"' if not isinstance(value, str) else f'"{value}"'
    if k == "date" and isinstance(value, _dt.date):
        return f'"{value.isoformat()}"'
    if k == "binary" and isinstance(value, (bytes, bytearray)):
        return binary_text(bytes(value))
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, str):
        return text_scalar(value)
    if k == "array" and isinstance(value, (list, tuple)):
        assert ctype is not None
        return flow_list(value_text(v, ctype.element, scenario) for v in value)
    if k == "map" and isinstance(value, (list, tuple)):
        assert ctype is not None and ctype.key is not None
        if ctype.key.kind == "string":
            return "{" + ", ".join(f"{text_scalar(a)}: {value_text(b, ctype.value, scenario)}" for a, b in value) + "}"
        return flow_list(f"[{value_text(a, ctype.key, scenario)}, {value_text(b, ctype.value, scenario)}]"
                         for a, b in value)
    if k == "struct" and isinstance(value, (list, tuple)):
        assert ctype is not None
        return "{" + ", ".join(f"{text_scalar(n)}: {value_text(v, t, scenario)}"
                               for (n, t), v in zip(ctype.fields, value)) + "}"
    return str(value)


def row_text(row: Sequence[Any], types: Sequence[ColumnType | None], scenario: m.Scenario) -> str:
    """A row as a flow list, each value by its column's type (a value past the types: by its Python type)."""
    typed = list(types) + [None] * (len(row) - len(types))
    return flow_list(value_text(v, t, scenario) for v, t in zip(row, typed))


def rows_text(rows: Sequence[Sequence[Any]], types: Sequence[ColumnType | None], scenario: m.Scenario) -> str:
    return flow_list(row_text(r, types, scenario) for r in rows)


def json_flow(value: Any) -> str:
    """A JSON value (a record's payload) as YAML flow: `{order_id: o2, amount: 1200.0}`."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{text_scalar(str(k))}: {json_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return flow_list(json_flow(v) for v in value)
    if isinstance(value, str):
        return text_scalar(value)
    return json.dumps(value)


# -- layout ----------------------------------------------------------------------------------------------
def flow_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


def flow_text(value: str | Sequence[str]) -> str:
    """A check's value in flow style: a list (of item texts) as a flow list, a scalar's text as it is."""
    return value if isinstance(value, str) else flow_list(value)


def block_items(items: Iterable[str], column: int) -> str:
    """Items one per line at `column` (each line begins with its line break)."""
    return "".join(f"\n{' ' * column}- {item}" for item in items)


def check_text(key: str, value: str | Sequence[str], column: int) -> str:
    """`key: value` for a key at `column`: a list (of item texts) on the key's line where it fits in WIDTH
    (or is empty), else one item per line, two deeper."""
    if isinstance(value, str):
        return f"{key}: {value}"
    flow = flow_list(value)
    if not value or column + len(key) + 2 + len(flow) <= WIDTH:
        return f"{key}: {flow}"
    return f"{key}:" + block_items(value, column + 2)


def checks_block(checks: Mapping[str, str | Sequence[str]], indent: int) -> list[str]:
    """An expect's checks as block-mapping lines at `indent` spaces (`check_text` for each)."""
    return [line for key, value in checks.items() for line in (" " * indent + check_text(key, value, indent)).split("\n")]


def node_end(node: yaml.Node) -> int:
    """Where a node's text ends: a block collection ends with its last value (not at the next token, which
    may be a comment or the next key's line)."""
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return node_end(node.value[-1])
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return node_end(node.value[-1][1])
    return node.end_mark.index


# -- edits -------------------------------------------------------------------------------------------------
# Edits are made at the places PyYAML's composer marks, so every other character of the file (comments,
# key order, quoting, flow style) stays as written: a round-trip YAML library would re-emit the file by its
# own rules (and YAML 1.1 scalars, where the kit reads `12:00:07` as text).
@dataclass(frozen=True)
class Edit:
    """The text from `start` to `end` (character indexes) replaced by `text`."""

    start: int
    end: int
    text: str


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """The text with every edit made (edits do not overlap; each is placed by the original text)."""
    out = text
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[:e.start] + e.text + out[e.end:]
    return out


def line_end(text: str, index: int) -> int:
    """Where the line holding `index` ends: before its `\n` (or `\r\n`), or at the end of the text."""
    at = text.find("\n", index)
    if at < 0:
        return len(text)
    return at - 1 if at > 0 and text[at - 1] == "\r" else at


def append_checks(text: str, body: yaml.MappingNode, checks: Sequence[tuple[str, str | Sequence[str]]]) -> Edit:
    """The edit that adds `checks` (key, value text) to an expect step's mapping, values in flow style: in a
    block mapping one a line at the indentation of its keys, after the line its last value ends on (a
    comment there stays where it is); in a flow mapping before its closing brace."""
    if body.flow_style:
        close = text.rindex("}", 0, body.end_mark.index)
        return Edit(close, close, "".join(f", {key}: {flow_text(value)}" for key, value in checks))
    pad = " " * body.value[0][0].start_mark.column
    at = line_end(text, node_end(body))
    return Edit(at, at, "".join(f"\n{pad}{key}: {flow_text(value)}" for key, value in checks))
