"""Snapshot edits: what a Spark run observed at each `expect`, written into the scenario's text.

Pure text work, no Spark: `holes` finds the checks a file asks for without stating them (a key with an
empty value, a bare `expect:` or `expect: {}`); `placeholder_text` gives the text the loader reads
meanwhile; `expect_edits` turns one expect step's observation into edits of the text. Edits are made by
the places PyYAML's composer marks (as `eventtime expect --write` does), so every other character of the
file, its comments, key order, quoting and flow style, stays as written: a round-trip YAML library would
re-emit the file with its own rules (and YAML 1.1 scalars, where the kit reads `12:00:07` as text).

Values are written in the forms docs/scenario-format.md documents: time literals on the scenario's
`date` in its `timezone` (an exact instant with an offset where the local time is not one instant),
`initial` for Spark's first watermark, decimals as quoted text, structs as mappings by field name,
maps as mappings (string keys) or `[key, value]` pairs, binary as text or `{base64: ...}`.

What is left out, because Spark's result can vary between runs of the same scenario: the `avg` of
`event_time` when a source has several input partitions (the tasks' order changes its rounding), the
nullability in `schema` (the planner's, which differs between Spark lines), a `failure` (its message is
Spark's and changes between versions). Rows of an unordered check are written sorted (by their text),
so the same run writes the same text; a `state` check's rows too (each a mapping of the fields it names,
or of every field the state reader gives, read by the runner only where the check disagreed or names
none: `judge.Observed.state`). A `state` check's rows that name fields without values are a template,
not a hole: they load as nulls, and `create` fills them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import yaml

from . import spec as m
from .coltypes import ColumnType
from .judge import REL_TOL, compared, judge, match_rows, rows_updated, type_name
from .scenariotext import (WIDTH, Edit, append_checks, apply_edits, binary_text, line_end, block_items, check_text, flow_list, flow_text, json_flow, node_end,
                           row_text, text_scalar, time_text, value_text, watermark_text)

__all__ = ["Hole", "holes", "placeholder_text", "create_edits", "fix_edits", "variant_edit", "Edit", "apply_edits", "CHECK_KEYS",
           "LEFT_OUT"]

# The checks of an expect a snapshot writes, in the order it adds them to a bare `expect`.
CHECK_KEYS = ("rows", "output", "last_batch", "watermark", "dropped", "state_rows", "event_time", "batches",
              "schema", "records", "updated", "batch_watermark", "operators", "state", "updated_since_check",
              "dropped_since_check")
BATCH_KEYS = ("data", "watermark_before", "watermark_after", "dropped", "state_rows", "rows", "updated")
EVENT_TIME_KEYS = ("min", "max", "avg", "watermark")
OPERATOR_KEYS = ("name", "state_rows", "updated", "dropped", "updated_since_check", "dropped_since_check")
# the fields of an `operators:` a snapshot fills without a value (the `*_since_check` ones by name only)
_OPERATOR_LISTED = ("name", "state_rows", "updated", "dropped")
# checks that go with `state_rows`: an implementation not judged on its state size keeps its state in
# another shape, so what its operators did and hold is not written either (as `judge.judge` says)
WITH_STATE_ROWS = ("updated", "updated_since_check", "operators", "state")
# Keys that say how an expect's checks read, not what they expect: an expect of only these asks for
# the default checks (any other key, one of CHECK_KEYS or a check a snapshot does not write, is a check).
MODIFIERS = ("query", "columns", "ignore", "ordered", "tolerance", "table", "written", "format", "where", "topic")
# What the loader reads where a check's value is missing (the run observes everything anyway; the
# placeholder's own verdict is not what the snapshot writes).
_PLACEHOLDERS = {"rows": "[]", "output": "[]", "last_batch": "[]", "records": "[]", "watermark": "initial",
                 "watermark_before": "initial", "watermark_after": "initial", "dropped": "0", "state_rows": "0",
                 "batches": "0", "data": "true", "event_time": '{max: "00:00:00"}', "schema": '"x string"',
                 "min": '"00:00:00"', "max": '"00:00:00"', "avg": '"00:00:00"', "updated": "0",
                 "updated_since_check": "0", "dropped_since_check": "0",
                 "batch_watermark": "initial", "operators": "[{name: x}]", "name": "x", "state": "{rows: []}"}
_BARE = "{tolerance: 0.5}"  # a bare expect: a check-less mapping the loader accepts
LEFT_OUT = {"event_time.avg": "the average event time of a batch read from several input partitions depends "
                              "on the order Spark's tasks finish in",
            "failure": "a failure's message is Spark's own and changes between versions",
            "schema NOT NULL": "nullability is the planner's and differs between Spark lines"}


@dataclass(frozen=True)
class Hole:
    """A check asked for without a value: its loader path, the span of its (null) value, its key."""

    path: tuple
    start: int
    end: int
    key: str


@dataclass
class ExpectView:
    """What one expect step observed, as the snapshot needs it: the step as the run read it (the
    variant of this Spark line, if one applied), the scenario with the contract its rows are read
    with, and the observation (`judge.Observed`, or the records of a topic)."""

    scenario: m.Scenario
    step: m.ExpectStep
    observed: Any
    unjudged: frozenset[str] = frozenset()  # checks the implementation is not judged on: never written
    notes: list[str] = field(default_factory=list)
    failed: frozenset[str] = frozenset()  # the checks the step failed (the judge's verdict, `state` included)


# -- finding holes ---------------------------------------------------------------------------------------
def _is_null(node: yaml.Node) -> bool:
    return (isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"
            and node.value in ("", "~", "null", "Null", "NULL") and node.style is None)


def compose(text: str) -> yaml.Node | None:
    from .yamlsource import _Loader

    return yaml.compose(text, Loader=_Loader)


def expect_bodies(root: yaml.Node) -> dict[int, tuple[yaml.Node, yaml.Node]]:
    """Step index (1-based) -> (the `expect` key, its value) of every `- expect:` step."""
    steps = next((v for k, v in root.value if k.value == "steps"), None) if isinstance(root, yaml.MappingNode) else None
    out = {}
    for i, item in enumerate(steps.value if isinstance(steps, yaml.SequenceNode) else []):
        if isinstance(item, yaml.MappingNode) and len(item.value) == 1 and item.value[0][0].value == "expect":
            out[i + 1] = item.value[0]
    return out


def holes(text: str) -> list[Hole]:
    """Every check the text asks for without a value, in file order. A bare expect (`expect:`,
    `expect: {}`) is one hole whose key is `expect`."""
    try:
        root = compose(text)
    except yaml.YAMLError:
        return []  # the loader says what is wrong
    out: list[Hole] = []
    for index, (_, body) in expect_bodies(root).items() if root is not None else ():
        path = ("steps", index - 1, "expect")
        out += _body_holes(body, path)
        if isinstance(body, yaml.MappingNode):
            variants = next((v for k, v in body.value if k.value == "on_spark"), None)
            if isinstance(variants, yaml.MappingNode):
                for spec, variant in variants.value:
                    out += _body_holes(variant, path + ("on_spark", spec.value))
    return sorted(out, key=lambda h: h.start)


def _walk_holes(body: yaml.MappingNode) -> list[tuple[tuple, yaml.Node, yaml.Node, bool]]:
    """(path inside the expect, key node, null value node, whether the key's mapping is flow style) of
    each check of `body` without a value."""
    out: list[tuple[tuple, yaml.Node, yaml.Node, bool]] = []
    for k, v in body.value:
        if k.value in CHECK_KEYS and _is_null(v):
            out.append(((k.value,), k, v, bool(body.flow_style)))
        elif k.value == "event_time" and isinstance(v, yaml.MappingNode):
            out += [(("event_time", fk.value), fk, fv, bool(v.flow_style))
                    for fk, fv in v.value if fk.value in EVENT_TIME_KEYS and _is_null(fv)]
        elif k.value in ("batches", "operators") and isinstance(v, yaml.SequenceNode):
            fields = BATCH_KEYS if k.value == "batches" else OPERATOR_KEYS
            for j, item in enumerate(v.value):
                if isinstance(item, yaml.MappingNode):
                    out += [((k.value, j, fk.value), fk, fv, bool(item.flow_style))
                            for fk, fv in item.value if fk.value in fields and _is_null(fv)]
        elif k.value == "state" and isinstance(v, yaml.MappingNode):
            out += [(("state", "rows"), fk, fv, bool(v.flow_style)) for fk, fv in v.value
                    if fk.value == "rows" and _is_null(fv)]
    return out


def state_template(body: yaml.MappingNode) -> tuple[yaml.Node, yaml.Node, list[str]] | None:
    """(the `rows` key, its list, the fields) of a `state` whose rows name fields without values
    (`rows: [{key.id: , key.ts: }]`: what `create` fills with every row of those fields); None else.
    A template is a list of mappings with nothing after any colon; it loads as null values, so a run
    without a snapshot fails it (it is not a hole the loader needs a placeholder for)."""
    state = next((v for k, v in body.value if k.value == "state"), None)
    if not isinstance(state, yaml.MappingNode):
        return None
    for k, v in state.value:
        if k.value == "rows" and isinstance(v, yaml.SequenceNode) and v.value and all(
                isinstance(item, yaml.MappingNode) and item.value and all(
                    _is_null(fv) and fv.start_mark.index == fv.end_mark.index for _, fv in item.value)
                for item in v.value):
            return k, v, list(dict.fromkeys(str(fk.value) for item in v.value for fk, _ in item.value))
    return None


def _is_bare(body: yaml.Node) -> bool:
    return _is_null(body) or (isinstance(body, yaml.MappingNode) and not body.value)


def _body_holes(body: yaml.Node, path: tuple) -> list[Hole]:
    if _is_bare(body):
        return [Hole(path, body.start_mark.index, body.end_mark.index, "expect")]
    if not isinstance(body, yaml.MappingNode):
        return []
    return [Hole(path + rel, v.start_mark.index, v.end_mark.index, k.value) for rel, k, v, _ in _walk_holes(body)]


def placeholder_text(text: str, found: Sequence[Hole]) -> str:
    """The text with a value the loader accepts in each hole (on the same line: every place the
    loader reports stays where it is in the file)."""
    out = text
    for hole in sorted(found, key=lambda h: h.start, reverse=True):
        value = _BARE if hole.key == "expect" else _PLACEHOLDERS[hole.key]
        out = out[:hole.start] + (" " if hole.start == hole.end else "") + value + out[hole.end:]
    return out


# -- records -------------------------------------------------------------------------------------------
def _payload_text(payload: bytes | None) -> str:
    """A record's key or value as an expectation: JSON text where it is a JSON object or list (compared
    as JSON), else UTF-8 text, else base64."""
    if payload is None:
        return "null"
    try:
        parsed = json.loads(payload.decode("utf-8"))
    except ValueError:  # a UnicodeDecodeError too
        parsed = None
    return json_flow(parsed) if isinstance(parsed, (dict, list)) else binary_text(payload)


def record_texts(records: Sequence[Any], ordered: bool) -> list[str]:
    """The records of a topic as expected records (headers and partition only where any record has them)."""
    headers = any(r.headers for r in records)
    partition = any(r.partition for r in records)
    out = []
    for r in records:
        parts = [f"key: {_payload_text(r.key)}"] if r.key is not None else []
        parts.append(f"value: {_payload_text(r.value)}")
        if headers:
            parts.append("headers: [" + ", ".join(f"[{text_scalar(k)}, {_payload_text(v)}]" for k, v in r.headers) + "]")
        if partition:
            parts.append(f"partition: {r.partition}")
        out.append("{" + ", ".join(parts) + "}")
    return out if ordered else sorted(out)


# -- what a step observed --------------------------------------------------------------------------------
def observed_rows(view: ExpectView, scope: str) -> list[tuple]:
    """The rows a check of `scope` sees, in its compared columns, in the canonical form values compare in."""
    return [compared(view.step, view.scenario).canonical(r) for r in view.observed.rows(scope)]


def rows_texts(view: ExpectView, rows: Sequence[tuple], ordered: bool) -> list[str]:
    types = compared(view.step, view.scenario).types
    texts = [row_text(r, types, view.scenario) for r in rows]
    return texts if ordered else sorted(texts)


def _several_partitions(scenario: m.Scenario) -> bool:
    return any((s.partitions or 1) > 1 for s in scenario.sources.values())


def check_value(view: ExpectView, key: str) -> Any:
    """The observed value of check `key` as text (a list of item texts for a list check); None when
    the run cannot say it (the reason noted in `view.notes`)."""
    sc, obs = view.scenario, view.observed
    if key == "records":
        return record_texts(obs, view.step.topic.ordered if view.step.topic else False)
    if key in ("rows", "output", "last_batch"):
        return rows_texts(view, observed_rows(view, key), view.step.ordered)
    if key == "watermark":
        return watermark_text(obs.watermark_ms, sc)
    if key == "dropped":
        return str(sum(b.dropped for b in obs.since_expect))
    if key == "state_rows":
        return str(obs.history[-1].state_rows if obs.history else 0)
    if key == "batches":
        return [batch_text(view, b) for b in obs.since_expect] or "0"
    if key == "event_time":
        stats = _stats(view)
        if stats is None:  # no batch since the previous expect reported statistics
            return "none"
        return "{" + ", ".join(f"{k}: {v}" for k, v in stats.items()) + "}"
    if key == "schema":
        if obs.schema is None:
            return None
        return json.dumps(", ".join(f"{n} {type_name(t)}" for n, t, _ in obs.schema))
    if key == "updated":
        return str(sum(rows_updated(b) for b in obs.since_expect))
    if key == "updated_since_check":
        return str(sum(rows_updated(b) for b in obs.since_check))
    if key == "dropped_since_check":
        return str(sum(b.dropped for b in obs.since_check))
    if key == "batch_watermark":
        if not obs.history:
            view.notes.append("batch_watermark: no batch has run; left out")
            return None
        return watermark_text(obs.history[-1].watermark_before_ms, sc)
    if key == "operators":
        entries = operator_fields(view)
        if not entries:
            view.notes.append("operators: the query's progress lists no stateful operator; left out")
            return None
        return ["{" + ", ".join(f"{k}: {v}" for k, v in e.items() if k in _OPERATOR_LISTED) + "}" for e in entries]
    if key == "state":
        return state_text(view)
    raise KeyError(key)


def operator_values(view: ExpectView) -> list[dict[str, Any]]:
    """Each stateful operator the last batch's progress lists, in its order: its name, rows in state
    after the last batch, rows updated and dropped by the batches since the previous expect (as
    `judge` reads them)."""
    obs = view.observed
    last = obs.history[-1].operators if obs.history else []
    out = []
    for i, op in enumerate(last):
        window = [b.operators[i] for b in obs.since_expect if i < len(b.operators)]
        span = [b.operators[i] for b in obs.since_check if i < len(b.operators)]
        out.append({"name": str(op.get("operatorName")), "state_rows": int(op.get("numRowsTotal") or 0),
                    "updated": sum(int(o.get("numRowsUpdated") or 0) for o in window),
                    "dropped": sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in window),
                    "updated_since_check": sum(int(o.get("numRowsUpdated") or 0) for o in span),
                    "dropped_since_check": sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in span)})
    return out


def operator_fields(view: ExpectView) -> list[dict[str, str]]:
    """`operator_values` as the format writes them."""
    return [{k: text_scalar(v) if isinstance(v, str) else str(v) for k, v in e.items()} for e in operator_values(view)]


def _state_table(view: ExpectView) -> Any:
    """The state the step's `state` check read with every field (`stateread.StateTable`), or None with
    the reason noted."""
    table = getattr(view.observed, "state", None)
    if isinstance(table, str):
        view.notes.append(f"state: cannot read the state: {table}; nothing written for it")
        return None
    if table is None:
        view.notes.append("state: the state was not read (its check agreed, or Spark cannot read state here); "
                          "nothing written for it")
    return table


def state_rows(view: ExpectView, fields: Sequence[str] | None) -> tuple[list[ColumnType], list[tuple]] | None:
    """The types of `fields` (None: every field the state reader gives) and the state's rows in them,
    in their canonical form; None where the state was not read or lacks a field (noted)."""
    from .coltypes import parse_type

    table = _state_table(view)
    if table is None:
        return None
    names = list(table.paths) if fields is None else list(fields)
    absent = [f for f in names if f not in table.paths]
    if absent:
        view.notes.append(f"state: the state of {table.operator} has no field {absent[0]!r} (fields: "
                          f"{', '.join(table.paths)}); nothing written for it")
        return None
    at = [table.paths.index(f) for f in names]
    types = [parse_type(table.fields[f]) for f in names]
    return types, [tuple(t.canonical(row[i]) if row[i] is not None else None for t, i in zip(types, at))
                   for row in table.rows]


def state_row_text(fields: Sequence[str], types: Sequence[ColumnType], row: Sequence[Any], scenario: m.Scenario) -> str:
    return "{" + ", ".join(f"{text_scalar(f)}: {value_text(v, t, scenario)}" for f, t, v in zip(fields, types, row)) + "}"


def state_row_texts(view: ExpectView, fields: Sequence[str] | None) -> list[str] | None:
    """The state's rows as `state` rows of `fields` (None: every field), sorted (a multiset)."""
    read = state_rows(view, fields)
    if read is None:
        return None
    types, rows = read
    names = list(fields) if fields is not None else list(view.observed.state.paths)
    return sorted(state_row_text(names, types, r, view.scenario) for r in rows)


def state_parts(view: ExpectView) -> tuple[list[str], list[str]] | None:
    """A whole `state` check: the step's `operator`, `side` and `variable` as `key: value` texts, and
    the rows on the fields it names (every field where it names none)."""
    check = view.step.state
    rows = state_row_texts(view, check.columns if check is not None and check.columns else None)
    if rows is None:
        return None
    parts = [f"{k}: {text_scalar(v) if isinstance(v, str) else v}" for k, v in (
        ("operator", check.operator if check else None), ("side", check.side if check else None),
        ("variable", check.variable if check else None)) if v is not None]
    return parts, rows


def state_text(view: ExpectView) -> str | None:
    found = state_parts(view)
    return None if found is None else "{" + ", ".join(found[0] + ["rows: [" + ", ".join(found[1]) + "]"]) + "}"


def _stats(view: ExpectView) -> dict[str, str] | None:
    stats = next((b.event_time for b in reversed(view.observed.since_expect) if b.event_time), None)
    if not stats:
        return None
    keys = [k for k in EVENT_TIME_KEYS if stats.get(k) is not None]
    if "avg" in keys and _several_partitions(view.scenario):
        keys.remove("avg")
        view.notes.append("event_time.avg left out: " + LEFT_OUT["event_time.avg"])
    return {k: watermark_text(stats[k], view.scenario) if k == "watermark" else time_text(stats[k] * 1000, view.scenario)
            for k in keys}


def batch_fields(view: ExpectView, b: Any) -> dict[str, str]:
    sc = view.scenario
    rows = [compared(view.step, sc).canonical(r) for r in b.rows]
    return {"data": "true" if b.has_data else "false",
            "watermark_before": watermark_text(b.watermark_before_ms, sc),
            "watermark_after": watermark_text(b.watermark_after_ms, sc), "dropped": str(b.dropped),
            "state_rows": str(b.state_rows), "rows": flow_list(rows_texts(view, rows, False)),
            "updated": str(rows_updated(b))}


def batch_text(view: ExpectView, b: Any) -> str:
    """A whole batch: every field but `updated` (asked for by name: most queries' batches update
    nothing worth stating)."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in batch_fields(view, b).items() if k != "updated") + "}"


def default_checks(view: ExpectView) -> list[str]:
    """What a bare expect is filled with: the rows (the whole output in complete mode), the watermark,
    dropped rows and state size; for what a job wrote or published, its rows or records."""
    step = view.step
    if step.topic is not None:
        return ["records"]
    if step.written is not None:
        return ["rows"]
    mode = view.observed.output_mode
    return [k for k in ("output" if mode == "complete" else "rows", "watermark", "dropped", "state_rows")
            if k not in view.unjudged]


# -- agreement: the judge's own verdict on one check -----------------------------------------------------
def disagrees(view: ExpectView, key: str) -> bool:
    """Whether the value the step states for `key` is not what the run observed (the judge decides)."""
    from .topics import judge_records

    step = view.step
    if key == "records":
        return bool(step.topic is not None and judge_records(step.topic, view.observed))
    only = m.ExpectStep(where=step.where, columns=step.columns, tolerance=step.tolerance, ordered=step.ordered,
                        written=step.written, query=step.query)
    if key in ("rows", "output", "last_batch", "no_output"):
        scope = "rows" if key == "no_output" else key
        only = replace(only, rows=tuple(c for c in step.rows if c.scope == scope))
    elif key == "watermark":
        only = replace(only, watermark_us=step.watermark_us, watermark_range=step.watermark_range)
    elif key in ("dropped", "state_rows", "batches", "event_time", "schema", "updated", "operators",
                 "updated_since_check", "dropped_since_check"):
        field_name = "batch_count" if key == "batches" and step.batches is None else key
        only = replace(only, **{field_name: getattr(step, field_name)})
    elif key == "batch_watermark":
        only = replace(only, batch_watermark_us=step.batch_watermark_us)
    elif key == "state":  # read by the runner, not the judge: its verdict is the step's
        return "state" in view.failed
    else:
        return False
    return bool(judge(only, view.observed, view.scenario))


# -- edits -----------------------------------------------------------------------------------------------
def _next_line(text: str, index: int) -> int:
    """Where the line after the one holding `index` starts (the end of the text on the last line)."""
    at = text.find("\n", index)
    return len(text) if at < 0 else at + 1


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _list_value(text: str, key: yaml.Node, value_at: int, items: Sequence[str], in_flow: bool) -> Edit:
    """`items` as the value of `key`: one flow list on its line when it fits (or inside a flow mapping),
    else one item per line below it, two deeper than the key."""
    flow = flow_list(items)
    line = text[_line_start(text, key.start_mark.index):value_at]
    if in_flow or not items or len(line) + 2 + len(flow) <= WIDTH:
        return _scalar_at(text, value_at, flow, in_flow)
    at = line_end(text, value_at)
    return Edit(at, at, block_items(items, key.start_mark.column + 2))


def _scalar_at(text: str, at: int, value: str, in_flow: bool) -> Edit:
    """`value` where an empty value is: after the space that follows the colon in a flow mapping
    (`{min: , max: }` -> `{min: "x", max: "y"}`), else one space after the colon."""
    if in_flow and text[at:at + 1] == " ":
        return Edit(at + 1, at + 1, value)
    return Edit(at, at, " " + value)


def hole_edit(text: str, hole: Hole, key: yaml.Node, value: Any, in_flow: bool) -> Edit:
    if isinstance(value, list):
        return _list_value(text, key, hole.start, value, in_flow)
    if hole.start != hole.end:  # `~` or `null` written
        return Edit(hole.start, hole.end, value)
    return _scalar_at(text, hole.start, value, in_flow)


def bare_edit(text: str, body: yaml.Node, expect_key: yaml.Node, view: ExpectView) -> tuple[list[Edit], list[str]]:
    """Fill a bare `expect:` / `expect: {}` with the default checks, as a block mapping below it."""
    pad = " " * (expect_key.start_mark.column + 2)
    lines, written = [], []
    for key in default_checks(view):
        value = check_value(view, key)
        if value is None:
            continue
        written.append(key)
        lines.append(pad + check_text(key, value, len(pad)))
    edits = []
    if body.start_mark.index != body.end_mark.index:  # `{}`: removed, a comment after it stays
        start = body.start_mark.index
        edits.append(Edit(start - 1 if text[start - 1:start] == " " else start, body.end_mark.index, ""))
    at = line_end(text, body.end_mark.index)
    edits.append(Edit(at, at, "".join("\n" + line for line in lines)))
    return edits, written


def row_list_edits(text: str, node: yaml.Node, expected: Sequence[tuple], actual: Sequence[tuple],
                   types: Sequence[ColumnType], ordered: bool, tolerance: float | None, view: ExpectView,
                   render: Callable[[tuple], str] | None = None) -> tuple[list[Edit], list[str], list[str]]:
    """Edits that make a list of rows say `actual`, keeping each row that is right as it is written:
    (edits, rows removed, rows added) as texts. A row of `expected` is the item at the same position;
    a row is written by `render` (default: as an output row, `[a, "00:00:00", 1]`)."""
    tol = REL_TOL if tolerance is None else tolerance

    def written(row: tuple) -> str:
        return render(row) if render is not None else row_text(row, types, view.scenario)

    def same(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(t.equal(x, y, tol) for t, x, y in zip(types, a, b))

    items = list(node.value) if isinstance(node, yaml.SequenceNode) else []
    keep, left = _matched(expected, actual, same, ordered)
    added = [written(actual[j]) for j in left]
    if not ordered:
        added.sort()
    removed = [text[it.start_mark.index:node_end(it)] for it, k in zip(items, keep) if not k]
    if not removed and not added:
        return [], [], []
    if ordered or not isinstance(node, yaml.SequenceNode) or node.flow_style or not items:
        # one flow list (or order matters): written again, the rows that were right in their own text
        kept = iter(text[it.start_mark.index:node_end(it)] for it, k in zip(items, keep) if k)
        if ordered:
            # a row expected past the last one the run wrote is taken out (it has no row to become)
            new = [text[it.start_mark.index:node_end(it)] if k else written(actual[i])
                   for i, (it, k) in enumerate(zip(items, keep)) if k or i < len(actual)]
            new += [written(r) for r in actual[len(items):]]
        else:
            new = list(kept) + added
        # up to the last item's end: a block list's end mark is the next key's line, which would be joined on
        return [Edit(node.start_mark.index, node_end(node), flow_list(new))], removed, added
    if all(not k for k in keep) and not added:  # every row removed: an empty list
        return [Edit(node.start_mark.index, node_end(node), "[]")], removed, added
    return _block_list_edits(text, items, keep, added), removed, added


def _matched(expected: Sequence[tuple], actual: Sequence[tuple], same: Callable[[tuple, tuple], bool],
             ordered: bool) -> tuple[list[bool], list[int]]:
    """Which rows of `expected` are right (kept), and the positions in `actual` no kept row matched.
    Ordered: a row is right at its own position; else each expected row takes the first actual one
    left that equals it."""
    keep = [False] * len(expected)
    left = list(range(len(actual)))
    if ordered:
        for i, row in enumerate(expected):
            if i < len(actual) and same(row, actual[i]):
                keep[i] = True
                left.remove(i)
    else:
        for i, row in enumerate(expected):
            hit = next((j for j in left if same(row, actual[j])), None)
            if hit is not None:
                keep[i] = True
                left.remove(hit)
    return keep, left


def _block_list_edits(text: str, items: list[yaml.Node], keep: list[bool], added: list[str]) -> list[Edit]:
    """A block list: a line per row changed, a line per row removed or added (under the last item, at its
    indentation)."""
    edits = []
    pending = list(added)
    for it, k in zip(items, keep):
        if k:
            continue
        if pending:
            edits.append(Edit(it.start_mark.index, node_end(it), pending.pop(0)))
        else:
            edits.append(Edit(_line_start(text, it.start_mark.index), _next_line(text, node_end(it)), ""))
    if pending:
        last = items[-1]
        dash = text.rfind("-", _line_start(text, last.start_mark.index), last.start_mark.index)
        pad = " " * (dash - _line_start(text, last.start_mark.index))
        at = line_end(text, node_end(last))
        edits.append(Edit(at, at, block_items(pending, len(pad))))
    return edits


@dataclass
class StepEdits:
    """The edits of one expect step, and what they change, said per check for the review."""

    edits: list[Edit] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # "line 14: watermark: "00:00:02" -> "00:00:05""


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _append_checks(text: str, body: yaml.MappingNode, view: ExpectView, keys: Sequence[str]) -> tuple[Edit, list[str]]:
    """Checks added to an expect that states none (only which rows it reads: `query:`, `written:`, ...)."""
    written, parts = [], []
    for key in keys:
        value = check_value(view, key)
        if value is None:
            continue
        written.append(key)
        parts.append((key, value))
    return append_checks(text, body, parts), written


def create_edits(text: str, body: yaml.Node, expect_key: yaml.Node, view: ExpectView) -> StepEdits:
    """`create`: every check the step asks for without a value gets the run's value."""
    out = StepEdits()
    line = line_of(text, expect_key.start_mark.index)
    if _is_bare(body):
        edits, written = bare_edit(text, body, expect_key, view)
        out.edits += edits
        out.changes.append(f"line {line}: expect: + {', '.join(written)}")
        return out
    if not isinstance(body, yaml.MappingNode):
        return out
    if all(k.value in MODIFIERS for k, _ in body.value):  # any other key is a check of its own
        edit, written = _append_checks(text, body, view, default_checks(view))
        out.edits.append(edit)
        out.changes.append(f"line {line}: expect: + {', '.join(written)}")
        return out
    for rel, k, v, flow in _walk_holes(body):
        unjudged = next((r for r in (rel[0], rel[-1]) if r in view.unjudged), None)
        if unjudged is not None:
            view.notes.append(f"{unjudged} left out: the implementation is not judged on it")
        value = None if unjudged is not None else _hole_value(view, rel)
        if value is None:
            _leave_out(text, _parent_mapping(body, k), k, ".".join(map(str, rel)), out)
            continue
        hole = Hole(rel, v.start_mark.index, v.end_mark.index, k.value)
        if rel == ("state",):
            out.edits += _state_edit(text, hole, k, view)
        else:
            out.edits.append(hole_edit(text, hole, k, value, flow))
        shown = flow_text(value)
        out.changes.append(f"line {line_of(text, k.start_mark.index)}: {'.'.join(map(str, rel))}: + {shown}")
    template = state_template(body)
    if template is not None and "state" in view.unjudged:  # a template is the check's hole: left out the same
        view.notes.append("state left out: the implementation is not judged on it")
        _leave_out(text, body, next(k for k, _ in body.value if k.value == "state"), "state", out)
    elif template is not None:
        k, node, fields = template
        rows = state_row_texts(view, fields)
        if rows is not None:
            state = next(v for key, v in body.value if key.value == "state")
            out.edits.append(replace_list(text, k, node, rows, bool(state.flow_style)))
            out.changes.append(f"line {line_of(text, k.start_mark.index)}: state.rows: + [{', '.join(rows)}]")
    return out


def _leave_out(text: str, parent: yaml.MappingNode | None, key: yaml.Node, shown: str, out: StepEdits) -> None:
    """A check the run cannot say is taken out of its mapping; where it is the mapping's only key it stays
    (an empty expect would be a bare one, filled with other checks), and the notes name it."""
    if parent is not None and len(parent.value) > 1:
        out.edits.append(remove_key(text, parent, key))
        out.changes.append(f"line {line_of(text, key.start_mark.index)}: {shown}: left out "
                           "(the run cannot say it; see the notes)")


def replace_list(text: str, key: yaml.Node, node: yaml.Node, items: Sequence[str], in_flow: bool) -> Edit:
    """`items` in place of the list `node` (the value of `key`): one flow list where it fits on the key's
    line (or inside a flow mapping), else one item per line below the key, two deeper."""
    flow = flow_list(items)
    line = text[_line_start(text, key.start_mark.index):key.end_mark.index]
    if in_flow or not items or len(line) + 2 + len(flow) <= WIDTH:
        if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:  # a block list: on the key's line
            return Edit(text.index(":", key.end_mark.index) + 1, node_end(node), " " + flow)
        return Edit(node.start_mark.index, node_end(node), flow)
    return Edit(key.end_mark.index, node_end(node), ":" + block_items(items, key.start_mark.column + 2))


def _state_edit(text: str, hole: Hole, key: yaml.Node, view: ExpectView) -> list[Edit]:
    """A whole `state:` filled: `{rows: [...]}` on its line where it fits, else a block below it."""
    found = state_parts(view)
    assert found is not None
    parts, rows = found
    flow = "{" + ", ".join(parts + ["rows: [" + ", ".join(rows) + "]"]) + "}"
    line = text[_line_start(text, key.start_mark.index):hole.start]
    if len(line) + 1 + len(flow) <= WIDTH:
        return [hole_edit(text, hole, key, flow, False)]
    pad = " " * (key.start_mark.column + 2)
    block = "".join(f"\n{pad}{part}" for part in parts) + f"\n{pad}rows:" + block_items(rows, len(pad) + 2)
    at = line_end(text, hole.start)
    return [Edit(hole.start, hole.end, ""), Edit(at, at, block)]


def _hole_value(view: ExpectView, rel: tuple) -> Any:
    if len(rel) == 1:
        return check_value(view, rel[0])
    if rel[0] == "event_time":
        stats = _stats(view)
        return None if stats is None else stats.get(rel[1])
    if rel[0] == "state":
        return state_row_texts(view, None)
    if rel[0] == "operators":
        entries = operator_fields(view)
        if rel[1] >= len(entries):
            view.notes.append(f"operators[{rel[1]}]: the query's progress lists {len(entries)} stateful operator(s)")
            return None
        return entries[rel[1]][rel[2]]
    if rel[0] == "batches":
        batches = view.observed.since_expect
        if rel[1] >= len(batches):
            view.notes.append(f"batches[{rel[1]}]: only {len(batches)} batch(es) ran since the previous expect")
            return None
        return batch_fields(view, batches[rel[1]])[rel[2]]
    return None


def fix_edits(text: str, body: yaml.Node, view: ExpectView) -> StepEdits:
    """`fix`: every check whose stated value is not what the run observed gets the run's value; a list
    of rows keeps the rows that were right, so the diff names exactly the rows that changed."""
    out = StepEdits()
    if not isinstance(body, yaml.MappingNode):
        return out
    step = view.step
    for k, v in body.value:
        key, line = k.value, line_of(text, k.start_mark.index)
        if _is_null(v) or key not in CHECK_KEYS + ("no_output",) or key in view.unjudged or not disagrees(view, key):
            continue
        if key in ("rows", "output", "last_batch"):
            check = next(c for c in step.rows if c.scope == key)
            types = compared(view.step, view.scenario).types
            edits, removed, added = row_list_edits(text, v, check.rows, observed_rows(view, key), types,
                                                   step.ordered, step.tolerance, view)
            out.edits += edits
            out.changes += [f"line {line}: {key}: - {r}" for r in removed] + [f"line {line}: {key}: + {r}" for r in added]
        elif key == "no_output":
            rows = check_value(view, "rows")
            out.edits.append(Edit(k.start_mark.index, node_end(v), "rows: [" + ", ".join(rows) + "]"))
            out.changes += [f"line {line}: no_output: true -> rows:"] + [f"line {line}: rows: + {r}" for r in rows]
        elif key == "batches" and isinstance(v, yaml.SequenceNode) and step.batches is not None \
                and len(v.value) == len(view.observed.since_expect):
            out.edits += _batch_edits(text, v, view, out.changes)
        elif key == "event_time":
            out.edits += _event_time_edits(text, k, v, view, out.changes)
        elif key == "operators" and isinstance(v, yaml.SequenceNode):
            out.edits += _operator_edits(text, k, v, view, out.changes)
        elif key == "state" and isinstance(v, yaml.MappingNode):
            out.edits += _state_fix_edits(text, v, view, out.changes)
        elif key == "watermark" and isinstance(v, yaml.MappingNode):  # a range says what may vary: yours to move
            view.notes.append(f"line {line}: watermark: the range is left as written; the run's watermark is "
                              f"{check_value(view, 'watermark')}")
        else:
            value = check_value(view, key)
            if value is None:
                continue
            old = text[v.start_mark.index:node_end(v)]
            if isinstance(value, list):
                if isinstance(v, yaml.SequenceNode) and not v.flow_style and value:
                    out.edits.append(Edit(k.end_mark.index, node_end(v), ":" + block_items(value, k.start_mark.column + 2)))
                else:
                    out.edits.append(Edit(v.start_mark.index, node_end(v), flow_list(value)))
                new = flow_list(value)
            else:
                out.edits.append(Edit(v.start_mark.index, node_end(v), value))
                new = value
            out.changes.append(f"line {line}: {key}: {' '.join(old.split())} -> {new}")
    return out


def _event_time_edits(text: str, key: yaml.Node, node: yaml.Node, view: ExpectView, changes: list[str]) -> list[Edit]:
    """`event_time` set to what the run's statistics say: `none` where no batch reported any, the
    statistics where `none` is stated, else each statistic stated set to the observed one."""
    stats, step, line = _stats(view), view.step, line_of(text, key.start_mark.index)
    if stats is None or not isinstance(node, yaml.MappingNode):
        new = "none" if stats is None else "{" + ", ".join(f"{k}: {v}" for k, v in stats.items()) + "}"
        changes.append(f"line {line}: event_time: {' '.join(text[node.start_mark.index:node_end(node)].split())} -> {new}")
        return [Edit(node.start_mark.index, node_end(node), new)]
    raw = next(b.event_time for b in reversed(view.observed.since_expect) if b.event_time)
    edits = []
    for fk, fv in node.value:
        stat = stats.get(fk.value)
        got = (raw.get(fk.value) or 0) * 1000  # the watermark: 0 is `initial`
        if stat is not None and not _is_null(fv) and getattr(step.event_time, f"{fk.value}_us", None) != got:
            edits.append(Edit(fv.start_mark.index, node_end(fv), stat))
            changes.append(f"line {line_of(text, fk.start_mark.index)}: event_time.{fk.value}: "
                           f"{text[fv.start_mark.index:node_end(fv)]} -> {stat}")
    return edits


def _operator_edits(text: str, key: yaml.Node, seq: yaml.SequenceNode, view: ExpectView,
                    changes: list[str]) -> list[Edit]:
    """Each field an `operators` entry states set to its operator's; a list of another length is written
    again with every field of every operator."""
    values, fields = operator_values(view), operator_fields(view)
    line = line_of(text, key.start_mark.index)
    if len(seq.value) != len(values) or not all(isinstance(item, yaml.MappingNode) for item in seq.value):
        items = ["{" + ", ".join(f"{k}: {v}" for k, v in e.items() if k in _OPERATOR_LISTED) + "}" for e in fields]
        changes.append(f"line {line}: operators: {len(seq.value)} entries -> {len(items)}: [{', '.join(items)}]")
        return [replace_list(text, key, seq, items, False)]
    assert view.step.operators is not None
    edits = []
    for item, want, got, shown in zip(seq.value, view.step.operators, values, fields):
        for fk, fv in item.value:
            if fk.value in got and not _is_null(fv) and getattr(want, fk.value) != got[fk.value]:
                edits.append(Edit(fv.start_mark.index, node_end(fv), shown[fk.value]))
                changes.append(f"line {line_of(text, fk.start_mark.index)}: operators.{fk.value}: "
                               f"{text[fv.start_mark.index:node_end(fv)]} -> {shown[fk.value]}")
    return edits


def _state_fix_edits(text: str, node: yaml.MappingNode, view: ExpectView, changes: list[str]) -> list[Edit]:
    """A `state` check's rows set to the state's, on the fields it names (every field where it names
    none, `rows: []`), keeping each row that is right as written."""
    from .statecheck import _read_row

    check = view.step.state
    rows_key, rows_node = next(((k, v) for k, v in node.value if k.value == "rows"), (None, None))
    if check is None or rows_key is None or rows_node is None:
        return []
    fields = list(check.columns) or None
    read = state_rows(view, fields)
    if read is None:
        return []
    types, actual = read
    names = fields if fields is not None else list(view.observed.state.paths)
    expected = []
    for raw in check.rows:
        row, bad = _read_row(raw, names, types, view.scenario)
        if bad:
            view.notes.append(f"state: {bad}; nothing written for it")
            return []
        expected.append(row)
    edits, removed, added = row_list_edits(text, rows_node, expected, actual, types, False, view.step.tolerance, view,
                                           render=lambda r: state_row_text(names, types, r, view.scenario))
    line = line_of(text, rows_key.start_mark.index)
    changes += [f"line {line}: state.rows: - {r}" for r in removed] + [f"line {line}: state.rows: + {r}" for r in added]
    return edits


def _batch_edits(text: str, seq: yaml.SequenceNode, view: ExpectView, changes: list[str]) -> list[Edit]:
    """Each field a `batches` entry states set to its batch's, the fields the author left out left out."""
    edits = []
    types, pick = compared(view.step, view.scenario)[1:]
    assert view.step.batches is not None
    for item, b, want in zip(seq.value, view.observed.since_expect, view.step.batches):
        if not isinstance(item, yaml.MappingNode):
            continue
        wrong = {name for name, differs in (
            ("data", want.data is not None and want.data != b.has_data),
            ("watermark_before", want.watermark_before_us is not None
             and (b.watermark_before_ms or 0) * 1000 != want.watermark_before_us),
            ("watermark_after", want.watermark_after_us is not None
             and (b.watermark_after_ms or 0) * 1000 != want.watermark_after_us),
            ("dropped", want.dropped is not None and want.dropped != b.dropped),
            ("state_rows", want.state_rows is not None and want.state_rows != b.state_rows),
            ("updated", want.updated is not None and want.updated != rows_updated(b)),
            ("rows", want.rows is not None and any(match_rows(want.rows, [pick(r) for r in b.rows], types=types,
                                                              rel_tol=view.step.tolerance)))) if differs}
        fields = batch_fields(view, b)
        for fk, fv in item.value:
            if fk.value in wrong and not _is_null(fv):
                edits.append(Edit(fv.start_mark.index, node_end(fv), fields[fk.value]))
                changes.append(f"line {line_of(text, fk.start_mark.index)}: batches.{fk.value}: "
                               f"{' '.join(text[fv.start_mark.index:node_end(fv)].split())} -> {fields[fk.value]}")
    return edits


def variant_edit(text: str, body: yaml.MappingNode, view: ExpectView, spec: str) -> Edit:
    """An `on_spark` variant for `spec` holding every check of the step with what this run observed (a
    variant replaces the step's checks as a whole), and the step's own modifiers (`columns`, `ordered`,
    ...) as written; added to the step's `on_spark` (made when it has none)."""
    parts = []
    for k, v in body.value:
        if k.value == "on_spark" or k.value in view.unjudged:
            continue
        if k.value == "state" and "state" not in view.failed and view.step.state is not None:
            parts.append("state: " + _state_as_written(view.step.state))  # it agreed: as stated (not read again)
        elif k.value in CHECK_KEYS + ("no_output",):
            key = "rows" if k.value == "no_output" else k.value
            value = check_value(view, key)
            if value is None:
                continue
            parts.append(f"{key}: " + (flow_text(value)))
        elif k.value != "failure":
            parts.append(f"{k.value}: {' '.join(text[v.start_mark.index:node_end(v)].split())}")
    entry = json.dumps(spec) + ": {" + ", ".join(parts) + "}"
    variants = next((v for k, v in body.value if k.value == "on_spark"), None)
    if isinstance(variants, yaml.MappingNode) and variants.value:
        if variants.flow_style:
            close = text.rindex("}", 0, variants.end_mark.index)
            return Edit(close, close, ", " + entry)
        pad = " " * variants.value[0][0].start_mark.column
        at = line_end(text, node_end(variants))
        return Edit(at, at, f"\n{pad}{entry}")
    if body.flow_style:
        close = text.rindex("}", 0, body.end_mark.index)
        return Edit(close, close, ", on_spark: {" + entry + "}")
    pad = " " * body.value[0][0].start_mark.column
    at = line_end(text, node_end(body))
    return Edit(at, at, f"\n{pad}on_spark:\n{pad}  {entry}")


def _state_as_written(check: m.StateCheck) -> str:
    """A `state` check as its file states it, in flow style (its values as YAML read them)."""
    head = {k: v for k, v in (("operator", check.operator), ("side", check.side), ("variable", check.variable))
            if v is not None}
    return json_flow({**head, "rows": [dict(zip(check.columns, row)) for row in check.rows]})


def _parent_mapping(body: yaml.MappingNode, key: yaml.Node) -> yaml.MappingNode | None:
    """The mapping of `body` (itself, its `event_time`, a `batches` entry) that holds `key`."""
    todo: list[yaml.Node] = [body]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            if any(k is key for k, _ in node.value):
                return node
            todo += [v for _, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return None


def remove_key(text: str, mapping: yaml.MappingNode, key: yaml.Node) -> Edit:
    """The edit that takes `key` and its value out of `mapping` (which has other keys)."""
    index = next(i for i, (k, _) in enumerate(mapping.value) if k is key)
    value = mapping.value[index][1]
    if not mapping.flow_style:
        return Edit(_line_start(text, key.start_mark.index), _next_line(text, node_end(value)), "")
    if index > 0:  # from the comma before it; up to the closing brace when it is the last
        end = value.end_mark.index
        rest = len(text[end:]) - len(text[end:].lstrip(" "))
        end += rest if text[end + rest:end + rest + 1] == "}" else 0
        return Edit(text.rindex(",", 0, key.start_mark.index), end, "")
    return Edit(key.start_mark.index, mapping.value[1][0].start_mark.index, "")
