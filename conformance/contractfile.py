"""Reads contracts written as data: `*.contract.yaml` files and inline `contract:` mappings.

A contract file (the bundled ones are in the suite folder, `scenarios/*.contract.yaml`):

    contract: page_clicks                     # the name scenarios use
    title: Clicks and revenue per page and country, 5-minute windows
    description: clicks(page, country, ts, revenue) -> count and sum per (page, country) and window.
    sources:
      clicks:
        columns: "page string, country string, ts timestamp, revenue decimal(12,2)"   # or a mapping
        event_time: ts                        # the source's event-time column, if it has one
        from: {format: kafka, subscribe: clicks}   # optional: the job's reader it replaces (docs/jobs.md)
        generate: {country: [DE, FR], revenue: {min: 0, max: 5000}}   # optional: check-properties' values
      orders: {kind: kafka, topic: orders, headers: true}   # Spark's Kafka columns (`sourcekinds`)
    params:
      window: {kind: duration, doc: window length}
      watermark_delay: {kind: duration, default: 10 minutes}
      currency: {kind: choice, choices: [EUR, USD], default: EUR}
    output:
      columns: {page: string, country: string, window_start: timestamp, clicks: long,
                revenue: "decimal(22,2)"}
      modes: [append, update]                 # the output modes it allows (the first is the default)
      key: [page, country, window_start]      # optional: the columns that identify a row
    queries:                                  # a job that starts several queries: each one's output, by
      gold: {columns: "window_start timestamp, revenue decimal(22,2)"}   # the name the user knows it by
    requires: [multiple_stateful_operators]   # optional: Spark features every implementation needs
    implementations: [my_jobs.clicks:count]   # optional: what `eventtime certify` runs without --pipeline
    invariants:                               # optional: the job's own properties (docs/properties.md)
      routed_once: {conserve: {from: clicks, into: [clean, quarantine]}}
      one_side: {disjoint: {key: [page], outputs: [clean, quarantine]}}
      clean_pages: {not_null: {output: clean, columns: [page]}}
      balanced: {hook: "my_checks:balanced", doc: what it guards}

Parameter kinds: duration (a Spark interval: `params.window.interval`), choice, string, int, double,
bool, path (a folder of the scenario's own, made by the kit for each run; give it `conf:` so the job
can read it). Column types are Spark DDL (`coltypes`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from .coltypes import TypeSyntaxError, parse_type
from .contracts import Column, Contract, InvariantSpec, ParamSpec, QuerySpec, SourceSpec, StaticSpec
from .sourcekinds import SOURCE_KINDS, source_columns
from .problems import Checker, FileInvalid, Problem, Where, _json_type, did_you_mean
from .timeparse import TimeFormatError, parse_duration
from .yamlsource import YamlSyntaxError, load_yaml

__all__ = ["CONTRACT_SUFFIXES", "ContractInvalid", "contract_from_mapping", "load_contract_file", "read_contract", "parse_columns",
           "read_columns", "source_shape"]

CONTRACT_SUFFIXES = (".contract.yaml", ".contract.yml")
PARAM_KINDS = ("duration", "choice", "string", "int", "double", "bool", "path")
OUTPUT_MODES = ("append", "update", "complete")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_TOP_KEYS = ("contract", "name", "title", "description", "sources", "static", "params", "output", "queries",
             "requires", "implementations", "model_only", "invariants")


class ContractInvalid(FileInvalid):
    """A contract file (or inline contract) has problems, each at its file:line:column."""


def load_contract_file(path: str | Path, *, display_path: str | None = None, bundled: bool = False) -> Contract:
    """Read and check one contract file; raises ContractInvalid listing every problem."""
    shown = display_path or str(path)
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractInvalid([Problem(shown, 1, 1, f"cannot read contract file: {exc}")]) from None
    try:
        located = load_yaml(text)
    except YamlSyntaxError as exc:
        raise ContractInvalid([Problem(shown, exc.position.line, exc.position.column, exc.message)]) from None
    checker = Checker(shown, located)
    if not isinstance(located.data, dict):
        checker.at((), f"a contract file is a YAML mapping (contract:, description:, sources:, output:), "
                       f"not {_json_type(located.data)}")
        raise ContractInvalid(checker.problems)
    contract = read_contract(located.data, checker, (), bundled=bundled)
    if checker.problems or contract is None:
        raise ContractInvalid(checker.problems)
    return contract


def contract_from_mapping(doc: Mapping[str, Any], *, where: str | None = None) -> Contract:
    """A Contract declared in code: `doc` holds what a contract file holds (the same keys, read and
    checked by the same code). Problems are reported at `where`, by default the caller's file:line;
    raises ContractInvalid listing every problem."""
    import sys

    import yaml

    if where is None:
        caller = sys._getframe(1)
        where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    file, _, line = where.rpartition(":")
    place = Where(file, int(line), 1) if file and line.isdigit() else Where(where, 1, 1)
    if not isinstance(doc, Mapping):
        raise ContractInvalid([Problem(place.file, place.line, 1, f"a contract is a mapping (contract:, description:, "
                                                                 f"sources:, output:), not {_json_type(doc)}")])
    located = load_yaml(yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True))
    checker = Checker(place.file, located, relocate=lambda _line, _column: place)
    contract = read_contract(located.data, checker, ())
    if checker.problems or contract is None:
        raise ContractInvalid(checker.problems)
    return contract


def parse_columns(raw: Any) -> list[tuple[str, str]]:
    """Columns as (name, type) from a DDL list (`"page string, n bigint"`) or a mapping {name: type};
    raises ValueError saying what is wrong. Types are checked by `coltypes.parse_type`."""
    if isinstance(raw, dict):
        return [(str(k), v if isinstance(v, str) else repr(v)) for k, v in raw.items()]
    if not isinstance(raw, str):
        raise ValueError(f"columns are a DDL list ('page string, n bigint') or a mapping {{name: type}}, "
                         f"not {_json_type(raw)}")
    out = []
    for part in _split_top_level(raw):
        m = re.match(r"\s*(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\s*:?\s+(.+?)\s*$", part, re.S)
        if not m:
            raise ValueError(f"{part.strip()!r} is not 'name type'")
        name = m.group(1)
        name = name[1:-1].replace("``", "`") if name.startswith("`") else name
        out.append((name, m.group(2)))
    if not out:
        raise ValueError("no columns")
    return out


_COLUMN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_columns(raw: Any, path: tuple, report: Any, *, what: str | None = None,
                 duplicates: bool = False) -> tuple[Column, ...] | None:
    """Columns from a DDL list or a mapping, each type read by `coltypes`; every problem goes to
    `report(path, message, key=...)` at the column (prefixed with `what`), and then None. A mapping
    whose types are not all text is None without a report (the schema check said which).
    `duplicates`: an output may repeat a name (its rows are read by position), a source may not."""
    prefix = f"{what}: " if what else ""
    if isinstance(raw, dict) and not all(isinstance(v, str) for v in raw.values()):
        return None
    try:
        pairs = parse_columns(raw)
    except ValueError as exc:
        report(path, f"{prefix}{exc}")
        return None
    out: list[Column] = []
    ok = True
    for name, text in pairs:
        where = path + (name,) if isinstance(raw, dict) else path
        if not _COLUMN_NAME.match(name):
            report(where, f"{prefix}column name {name!r}: a word of letters, digits and '_'", key=isinstance(raw, dict))
            ok = False
            continue
        try:
            out.append(Column(name, parse_type(text).name))
        except TypeSyntaxError as exc:
            report(where, f"{prefix}column {name!r}: {exc}")
            ok = False
    names = [c.name for c in out]
    for name in sorted({n for n in names if names.count(n) > 1}) if not duplicates else ():
        report(path, f"{prefix}column {name!r} appears twice")
        ok = False
    return tuple(out) if ok else None


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current))
    return parts


class _Reader:
    def __init__(self, checker: Checker, prefix: tuple):
        self.c = checker
        self.prefix = prefix

    def at(self, path: tuple, message: str, *, key: bool = False) -> None:
        self.c.at(self.prefix + path, message, key=key)

    def bad_name(self, path: tuple, name: Any, what: str) -> bool:
        """Whether the name of `what` (a source, a parameter, ...) is not a word of letters, digits and '_';
        said at its key when it is not."""
        if _NAME.match(str(name)):
            return False
        self.at(path, f"{what}'s name is a word of letters, digits and '_', not {name!r}", key=True)
        return True

    def unknown_keys(self, path: tuple, spec: Mapping[str, Any], keys: Sequence[str], what: str) -> None:
        """Each key of `spec` not among `keys` is said at its place, with the keys there are."""
        for key in spec:
            if key not in keys:
                self.at(path + (key,), f"{what} has no key {key!r}{did_you_mean(str(key), keys)} "
                                       f"(keys: {', '.join(keys)})", key=True)

    def columns(self, raw: Any, path: tuple, what: str, *, duplicates: bool = False) -> tuple[Column, ...] | None:
        return read_columns(raw, path, self.at, what=what, duplicates=duplicates)

    def text(self, doc: dict, key: str, *, required: bool = False) -> str | None:
        value = doc.get(key)
        if value is None:
            if required:
                self.at((), f"a contract needs `{key}:`")
            return None
        if not isinstance(value, str) or not value.strip():
            self.at((key,), f"`{key}` is text, not {_json_type(value)}")
            return None
        return value.strip()

    def names(self, raw: Any, path: tuple, what: str) -> tuple[str, ...] | None:
        if raw is None:
            return ()
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            self.at(path, f"{what} is a list of names, not {_json_type(raw)}")
            return None
        return tuple(raw)


def read_contract(doc: dict, checker: Checker, prefix: tuple = (), *, name: str | None = None,
                  bundled: bool = False) -> Contract | None:
    """The Contract a mapping declares; problems go to `checker` at `prefix` + the key's path.
    `name` is the contract's name when the mapping does not say (an inline contract)."""
    r = _Reader(checker, prefix)
    before = len(checker.problems)
    contract_name = _contract_name(r, doc, name)
    description = r.text(doc, "description", required=True) or ""
    title = r.text(doc, "title") or contract_name

    sources = _sources(r, doc.get("sources"))
    params = _params(r, doc.get("params"))
    queries = _queries(r, doc.get("queries"))
    statics = _statics(r, doc.get("static"), sources or ())
    output: tuple[Column, ...] | None
    modes: tuple[str, ...]
    key: tuple[str, ...]
    if "queries" in doc and "output" not in doc:  # a job of several queries: each promises its own output
        output, modes, key = (), (), ()
    else:
        output, modes, key = _output(r, doc.get("output"))
    requires = _requires(r, doc)
    implementations = r.names(doc.get("implementations"), ("implementations",), "implementations") or ()
    model_only = doc.get("model_only")
    if model_only is not None and (not isinstance(model_only, str) or not model_only.strip()):
        r.at(("model_only",), "`model_only` says in words why no Spark run judges the contract's scenarios")
        model_only = None
    for i, target in enumerate(implementations):
        if not _TARGET.match(target):
            r.at(("implementations", i), f"an implementation is 'module:function', not {target!r}")
    if modes and any(p.name == "output_mode" for p in params):
        r.at(("params", "output_mode"), "declare output modes under `output: {modes: [...]}`, not as a parameter",
             key=True)
    if modes:
        params = params + (ParamSpec("output_mode", "choice", "Spark output mode the pipeline promises",
                                     required=False, default=modes[0], choices=modes),)
    invariants = _invariants(r, doc.get("invariants"), sources or (), params, queries or (), output or ())
    if len(checker.problems) > before or sources is None or output is None or queries is None:
        return None
    return Contract(name=contract_name, title=title, description=description, sources=sources, params=params,
                    output=output, reference=implementations[0] if implementations else "",
                    alternatives=tuple(implementations[1:]), requires=tuple(requires), key=key,
                    where=checker.where(prefix), output_where=checker.where(prefix + ("output", "columns")),
                    bundled=bundled, queries=queries, statics=statics, model_only=model_only,
                    invariants=invariants)


def _contract_name(r: _Reader, doc: dict, name: str | None) -> str:
    """The contract's name (`contract:`, or `name:`; else `name` given for an inline contract), after the
    top-level keys are checked."""
    r.unknown_keys((), doc, _TOP_KEYS, "a contract")
    given = doc.get("contract", doc.get("name"))
    if given is None and name is None:
        r.at((), "a contract needs `contract: NAME`")
    if given is not None and (not isinstance(given, str) or not _NAME.match(given)):
        r.at(("contract" if "contract" in doc else "name",),
             f"a contract's name is a word of letters, digits and '_', not {given!r}")
    return given if isinstance(given, str) else (name or "")


def _requires(r: _Reader, doc: dict) -> tuple[str, ...]:
    """`requires:`, the Spark features the contract needs (`eventtime.harness.features`)."""
    requires = r.names(doc.get("requires"), ("requires",), "requires") or ()
    if requires:
        from eventtime.harness.features import FEATURES

        for i, feature in enumerate(requires):
            if feature not in FEATURES:
                r.at(("requires", i), f"unknown Spark feature {feature!r}{did_you_mean(feature, FEATURES)} "
                                      f"(features: {', '.join(sorted(FEATURES))})")
    return requires


def _sources(r: _Reader, raw: Any) -> tuple[SourceSpec, ...] | None:
    if not isinstance(raw, dict) or not raw:
        r.at(("sources",) if raw is not None else (), "a contract needs `sources:`, a mapping of source name to "
                                                      "{columns: ..., event_time: COLUMN} or {kind: kafka, topic: ...}")
        return None
    out = []
    for name, spec in raw.items():
        path = ("sources", name)
        if r.bad_name(path, name, "a source"):
            continue
        if not isinstance(spec, dict):
            r.at(path, f"source {name!r} needs `columns:` (a DDL list or a mapping of name to type) or `kind:`")
            continue
        r.unknown_keys(path, spec, _SOURCE_KEYS, "a source")
        reads = _reads(r, spec.get("from"), path + ("from",), str(name))
        shape = source_shape(str(name), spec, path, r.at)
        if shape is None:
            continue
        kind, topic, headers = shape
        if kind == "rows":
            if "columns" not in spec:
                r.at(path, f"source {name!r} needs `columns:` (a DDL list or a mapping of name to type)")
                continue
            columns = r.columns(spec["columns"], path + ("columns",), f"source {name!r}")
        else:
            columns = source_columns(kind, headers=headers)
        payload = _payload(r, spec, path, str(name), kind)
        if columns is None or payload is None:
            continue
        event_time = spec.get("event_time")
        if not _event_time_ok(r, path, event_time, columns, ("column", f"a column of source {name!r}")):
            continue
        generated = payload[0] if kind in ("kafka", "text") else columns
        asked = spec.get("generate")
        if kind != "rows" and asked and not generated:
            r.at(path + ("generate",), f"`generate` of {kind} source {name!r} names its payload's fields: declare "
                                       "them first with `value: {columns: ..., event_time: ...}`", key=True)
            continue
        header_pool: tuple | None = ()
        if kind == "kafka" and isinstance(asked, dict) and "headers" in asked and \
                "headers" not in {c.name for c in generated}:
            asked = {k: v for k, v in asked.items() if k != "headers"} or None
            header_pool = _header_pool(r, spec["generate"]["headers"], path + ("generate", "headers"), headers,
                                       str(name))
        narrowed = _generate(r, asked, path + ("generate",), generated,
                             event_time if kind == "rows" else payload[1],
                             f"source {name!r}" if kind == "rows" else f"the value of source {name!r}")
        if narrowed is None or header_pool is None:
            continue
        narrowed += ((("headers", header_pool),) if header_pool else ())
        out.append(SourceSpec(str(name), columns, event_time, reads, kind=kind, topic=topic, headers=headers,
                              value=payload[0], value_event_time=payload[1], malformed=payload[2],
                              generate=narrowed))
    return tuple(out) if len(out) == len(raw) else None


_VALUE_KEYS = ("columns", "event_time", "malformed")
_NUMBERS = ("byte", "short", "int", "long", "float", "double", "decimal")
_GENERATE_FORMS = "a list of values (a pool) or {min: LOW, max: HIGH} (for a number column)"


def _header_pool(r: _Reader, raw: Any, path: tuple, headers: bool, name: str) -> tuple | None:
    """A kafka source's `generate: {headers: {KEY: [VALUE, ...]}}`: the header keys generated records carry and
    the values each is drawn from (text or null), as (key, values) pairs; None when it has a problem (said)."""
    if not headers:
        r.at(path, f"source {name!r} reads no headers: say `headers: true` on it (Spark's includeHeaders) to "
                   "generate them", key=True)
        return None
    said = ("`generate: {headers: ...}` maps a header's key to the values it is drawn from, e.g. {source: [web, "
            "app]} (text or null)")
    if not isinstance(raw, dict) or not raw:
        r.at(path, said)
        return None
    for key, values in raw.items():
        if not isinstance(values, list) or not values:
            r.at(path + (key,), f"{said}: header {key!r} needs a list of values")
            return None
        for i, v in enumerate(values):
            if not (v is None or isinstance(v, str)):
                r.at(path + (key, i), f"the value {v!r} of header {key!r} is not text (quote it) or null")
                return None
    return tuple((str(k), tuple(v)) for k, v in raw.items())


def _generate(r: _Reader, raw: Any, path: tuple, columns: Sequence[Column], event_time: str | None,
              what: str) -> tuple[tuple[str, Any], ...] | None:
    """`generate: {COLUMN: [v, ...] | {min: LOW, max: HIGH}}`: the values `check-properties` draws for a
    column in place of its type's (nulls still drawn where the column may be null), each value checked
    against the column's type; () when not given, None when it has a problem (said at its line)."""
    from .coltypes import ValueProblem
    from .contracts import ValueRange
    from .timeparse import parse_date, parse_time

    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        r.at(path, f"`generate` of {what} maps a column to the values generated for it: {_GENERATE_FORMS}")
        return None
    by_name = {c.name: c for c in columns}
    out: list[tuple[str, Any]] = []
    ok = True
    for name, form in raw.items():
        col = by_name.get(str(name))
        where = path + (name,)
        if col is None:
            hint = (" (headers are generated on a kafka source with `headers: true`)" if name == "headers" else
                    did_you_mean(str(name), list(by_name)))
            r.at(where, f"{name!r} is not a column of {what}{hint}", key=True)
            ok = False
            continue
        if col.name == event_time:
            r.at(where, f"{name!r} is the event time: its values are drawn around the watermark delay (`--delay`), "
                        "late and out of order, and are not narrowed here", key=True)
            ok = False
            continue
        ctype = col.ctype
        try:
            if isinstance(form, list) and form:
                for i, value in enumerate(form):
                    ctype.read(value, parse_time=parse_time, parse_date=parse_date, path=(i,))
                out.append((col.name, tuple(form)))
            elif isinstance(form, dict) and set(form) == {"min", "max"} and ctype.kind in _NUMBERS:
                low, high = (ctype.read(form[k], parse_time=parse_time, parse_date=parse_date, path=(k,))
                             for k in ("min", "max"))
                if low > high:
                    r.at(where, f"`min` {form['min']} is above `max` {form['max']}")
                    ok = False
                    continue
                out.append((col.name, ValueRange(form["min"], form["max"])))
            elif isinstance(form, list):
                r.at(where, f"`generate: {{{name}: []}}` is an empty pool: give at least one value")
                ok = False
            elif isinstance(form, dict) and ctype.kind in _NUMBERS and set(form) < {"min", "max"}:
                missing = ({"min", "max"} - set(form)).pop()
                r.at(where, f"a range of {name!r} needs both `min` and `max`: give `{missing}` too")
                ok = False
            else:
                number = f"a {ctype.kind} column" if ctype.kind in _NUMBERS else f"a {col.type} column (not a number)"
                r.at(where, f"`generate: {{{name}: ...}}` is {_GENERATE_FORMS}; {name!r} is {number}")
                ok = False
        except ValueProblem as exc:
            r.at(where + tuple(exc.path), f"a generated value of {col.name!r} ({col.type}): {exc.message}")
            ok = False
    return tuple(out) if ok else None


def _event_time_ok(r: Any, path: tuple, event_time: Any, columns: Sequence[Any], said: tuple[str, str]) -> bool:
    """Whether `event_time` (None: not declared) names a timestamp among `columns`, else said at its line;
    `said`: what a column is called there and where it must be (`field`, "a field of source 'x''s value")."""
    if event_time is None:
        return True
    col = next((c for c in columns if c.name == event_time), None)
    if col is None:
        r.at(path + ("event_time",), f"event_time {event_time!r} is not {said[1]}"
                                     f"{did_you_mean(str(event_time), [c.name for c in columns])}")
        return False
    if col.type not in ("timestamp", "timestamp_ntz"):
        r.at(path + ("event_time",), f"event_time {said[0]} {event_time!r} must be a timestamp, not {col.type}")
        return False
    return True


def _payload(r: _Reader, spec: dict, path: tuple, name: str, kind: str) -> tuple[tuple[Column, ...], str | None, bool] | None:
    """A kafka source's `value: {columns: DDL, event_time: FIELD, malformed: BOOL}`, or a text source's (each
    line): the JSON payload its job parses (its fields, its event-time field, whether generated payloads are
    sometimes not JSON); ((), None, True) when not given, None when it has a problem (said at its line)."""
    raw = spec.get("value")
    if raw is None:
        return (), None, True
    path = path + ("value",)
    if kind not in ("kafka", "text"):
        r.at(path, f"`value` is for a kafka or text source (`kind: kafka`, `kind: text`): the JSON payload its job "
                   f"parses, not a {kind} source's", key=True)
        return None
    if not isinstance(raw, dict) or "columns" not in raw:
        r.at(path, f"`value` of {kind} source {name!r} is the payload the job parses: {{columns: \"id string, ts "
                   "timestamp\", event_time: ts}}")
        return None
    r.unknown_keys(path, raw, _VALUE_KEYS, f"a {kind} source's `value`")
    fields = r.columns(raw["columns"], path + ("columns",), f"the value of source {name!r}")
    if fields is None:
        return None
    event_time = raw.get("event_time")
    if not _event_time_ok(r, path, event_time, fields, ("field", f"a field of source {name!r}'s value")):
        return None
    malformed = raw.get("malformed", True)
    if not isinstance(malformed, bool):
        r.at(path + ("malformed",), f"`malformed` is true (some generated payloads are not JSON, as a producer's "
                                    f"mistake sends) or false, not {malformed!r}")
        return None
    return fields, event_time, malformed


STATIC_FORMATS = ("parquet", "json", "csv", "orc", "text")
_STATIC_KEYS = ("columns", "table", "path", "format", "options", "generate")


def _statics(r: _Reader, raw: Any, sources: tuple[SourceSpec, ...]) -> tuple[StaticSpec, ...]:
    """`static: {NAME: {columns: ..., table: T}}` or `{columns: ..., path: P, format: F, options: {...}}`."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        r.at(("static",), "`static:` is a mapping of name to {columns: ..., table: NAME} or {columns: ..., path: "
                          "PATH, format: parquet}: the inputs the job reads with spark.read")
        return ()
    taken = {s.name for s in sources}
    out = []
    for name, spec in raw.items():
        path = ("static", name)
        if r.bad_name(path, name, "a static input"):
            continue
        if str(name) in taken:
            r.at(path, f"{name!r} is the name of a source too: give the static input another name", key=True)
            continue
        if not isinstance(spec, dict) or "columns" not in spec:
            r.at(path, f"static input {name!r} needs `columns:` and `table: NAME` or `path: PATH`")
            continue
        r.unknown_keys(path, spec, _STATIC_KEYS, "a static input")
        table, where_to = spec.get("table"), spec.get("path")
        if (table is None) == (where_to is None):
            r.at(path, f"static input {name!r} is a table (`table: NAME`) or a folder (`path: PATH`, as the job "
                       "names it): give one of them")
            continue
        fmt = spec.get("format", "parquet")
        if table is not None and "format" in spec:
            r.at(path + ("format",), "a static table is read by its name: its format is the table's (leave "
                                     "`format` out)", key=True)
        if fmt not in STATIC_FORMATS:
            r.at(path + ("format",), f"a static folder's format is one of {', '.join(STATIC_FORMATS)}, not {fmt!r}")
            continue
        options = spec.get("options") or {}
        if not isinstance(options, dict) or any(isinstance(v, (dict, list)) for v in options.values()):
            r.at(path + ("options",), "`options` is a mapping of writer option to text, e.g. {header: true}")
            continue
        columns = r.columns(spec["columns"], path + ("columns",), f"static input {name!r}")
        if columns is None:
            continue
        if where_to is not None:
            from eventtime.harness.jobpaths import PathOutside, kept_path

            try:
                kept_path(str(where_to), os.sep + "run", record=False)
            except PathOutside as exc:
                r.at(path + ("path",), f"static input {name!r}'s path would leave the scenario's run folder: {exc}")
                continue
        narrowed = _generate(r, spec.get("generate"), path + ("generate",), columns, None, f"static input {name!r}")
        if narrowed is None:
            continue
        text = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in options.items()}
        out.append(StaticSpec(str(name), columns, table=str(table) if table is not None else None,
                              path=str(where_to) if where_to is not None else None, format=str(fmt),
                              options=tuple(text.items()), where=r.c.where(r.prefix + path), generate=narrowed))
    return tuple(out)


def _reads(r: _Reader, raw: Any, path: tuple, name: str) -> tuple[tuple[str, str], ...]:
    """`from: {format: kafka, subscribe: clicks}`: what a job's reader names, as (key, text) pairs."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        r.at(path, f"`from` of source {name!r} is a mapping of what the job's reader names: format, path, table "
                   "or an option, e.g. {format: kafka, subscribe: clicks}")
        return ()
    out = []
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            r.at(path + (key,), f"`from: {{{key}: ...}}` is text (compared with what the job's reader says), "
                                f"not {_json_type(value)}")
            continue
        out.append((str(key), str(value)))
    if "table" in raw and ("path" in raw or "format" in raw):
        r.at(path + ("table",), "a reader of a table (`readStream.table(NAME)`) names no format or path: "
                                "give `table:` alone", key=True)
    return tuple(out)


_SOURCE_KEYS = ("columns", "event_time", "kind", "topic", "headers", "from", "value", "generate")


def source_shape(name: str, spec: Mapping[str, Any], path: tuple, at: Any) -> tuple[str, str | None, bool] | None:
    """A source's (kind, topic, headers) as a contract or scenario declares it (`sourcekinds`); None
    when they have a problem, said with `at(path, message, key=...)`. A kafka or text source's columns
    are fixed, so it gives no `columns`; only a kafka source has a topic and headers."""
    kind = spec.get("kind", "rows")
    if kind not in SOURCE_KINDS:
        at(path + ("kind",), f"a source's kind is one of {', '.join(SOURCE_KINDS)}, not {kind!r}"
                             f"{did_you_mean(str(kind), SOURCE_KINDS)}")
        return None
    ok = True
    if kind != "rows" and "columns" in spec:
        at(path + ("columns",), f"a {kind} source has Spark's {kind} columns "
                                f"({', '.join(c.name for c in source_columns(kind, headers=True))}); "
                                "leave `columns` out", key=True)
        ok = False
    for key in ("topic", "headers"):
        if key in spec and kind != "kafka":
            at(path + (key,), f"`{key}` is for a kafka source (`kind: kafka`), not a {kind} source", key=True)
            ok = False
    topic = spec.get("topic", name) if kind == "kafka" else None
    if kind == "kafka" and (not isinstance(topic, str) or not topic):
        at(path + ("topic",), f"a kafka source's topic is a name, not {topic!r}")
        ok = False
    headers = spec.get("headers", False)
    if not isinstance(headers, bool):
        at(path + ("headers",), f"`headers` is true or false, not {headers!r}")
        ok = False
    return (kind, topic, headers) if ok else None


def _param_profile(r: _Reader, path: tuple, spec: dict) -> tuple[str | None, str | None]:
    """A parameter's `profile` and `model_only`, each None where it is wrong (said at its line)."""
    profile = spec.get("profile")
    if profile is not None and profile != "dataflow":
        r.at(path + ("profile",), f"a parameter's `profile` is `dataflow` (a setting only the dataflow profile's "
                                  f"model takes), not {profile!r}")
        profile = None
    model_only = spec.get("model_only")
    if model_only is not None and (not isinstance(model_only, str) or not model_only.strip()):
        r.at(path + ("model_only",), "a parameter's `model_only` says in words why the contract's Spark "
                                     "implementations do not have it")
        model_only = None
    elif model_only is not None and profile is None:
        r.at(path + ("model_only",), "`model_only` is for a parameter with `profile: dataflow` (a setting "
                                     "the spark profile cannot state)", key=True)
        model_only = None
    return profile, model_only


def _params(r: _Reader, raw: Any) -> tuple[ParamSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        r.at(("params",), f"`params` is a mapping of parameter name to {{kind: ..., doc: ...}}, not {_json_type(raw)}")
        return ()
    out = []
    for name, spec in raw.items():
        path = ("params", name)
        if r.bad_name(path, name, "a parameter"):
            continue
        if isinstance(spec, str):
            spec = {"kind": spec}
        if not isinstance(spec, dict):
            r.at(path, f"parameter {name!r} is {{kind: {'|'.join(PARAM_KINDS)}, doc: ..., default: ...}}")
            continue
        for key in spec:
            if key not in ("kind", "doc", "default", "choices", "conf", "profile", "model_only"):
                r.at(path + (key,), f"a parameter has no key {key!r} (keys: kind, doc, default, choices, conf, profile, "
                                    "model_only)", key=True)
        profile, model_only = _param_profile(r, path, spec)
        kind = spec.get("kind")
        if kind not in PARAM_KINDS:
            r.at(path + ("kind",) if "kind" in spec else path,
                 f"parameter {name!r} needs a kind: one of {', '.join(PARAM_KINDS)}"
                 + (f", not {kind!r}{did_you_mean(str(kind), PARAM_KINDS)}" if kind is not None else ""))
            continue
        choices: tuple = ()
        if kind == "choice":
            raw_choices = spec.get("choices")
            if not isinstance(raw_choices, list) or not raw_choices or not all(
                    isinstance(c, (str, int, float, bool)) for c in raw_choices):
                r.at(path, f"choice parameter {name!r} needs `choices: [...]`")
                continue
            choices = tuple(raw_choices)
        elif "choices" in spec:
            r.at(path + ("choices",), f"`choices` is for choice parameters; {name!r} is a {kind}", key=True)
        conf = spec.get("conf")
        if conf is not None and not isinstance(conf, str):
            r.at(path + ("conf",), "`conf` names the Spark SQL setting the parameter sets")
            conf = None
        if kind == "path" and "default" in spec:
            r.at(path + ("default",), f"path parameter {name!r} takes no default: the kit makes a folder of "
                                      "the scenario's own for each run", key=True)
            continue
        required = "default" not in spec and kind != "path"
        default = param_value(kind, spec.get("default"), choices) if "default" in spec else None
        if not required and isinstance(default, _Bad):
            r.at(path + ("default",), f"default of {name!r}: {default.message}")
            continue
        doc = spec["doc"] if isinstance(spec.get("doc"), str) else str(name)
        out.append(ParamSpec(str(name), kind, doc, required=required, default=default, choices=choices, conf=conf,
                             profile=profile, model_only=model_only))
    return tuple(out)


class _Bad:
    def __init__(self, message: str):
        self.message = message


def param_value(kind: str, value: Any, choices: tuple = ()) -> Any:
    """A parameter value read for its kind, or a `_Bad` with the reason."""
    if kind == "duration":
        try:
            return parse_duration(value)
        except TimeFormatError as exc:
            return _Bad(str(exc))
    if kind == "choice":
        if value not in choices:
            return _Bad(f"must be one of {', '.join(map(str, choices))}, not {value!r}"
                        f"{did_you_mean(str(value), [str(c) for c in choices])}")
        return value
    if kind == "string":
        return value if isinstance(value, str) else _Bad(f"expected text, got {_json_type(value)}")
    if kind == "int":
        return value if isinstance(value, int) and not isinstance(value, bool) else _Bad(
            f"expected a whole number, got {_json_type(value)}")
    if kind == "double":
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else _Bad(
            f"expected a number, got {_json_type(value)}")
    if kind == "path":
        return _Bad("is a folder the kit makes for each run of a scenario: a scenario gives it no value")
    if kind == "bool":
        return value if isinstance(value, bool) else _Bad(f"expected true or false, got {_json_type(value)}")
    return _Bad(f"unknown kind {kind!r}")


def _queries(r: _Reader, raw: Any) -> tuple[QuerySpec, ...] | None:
    """`queries: {NAME: {columns: ..., key: [...]}}`: the queries a job starts and the output each promises."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        r.at(("queries",), "`queries` maps each query's name (its queryName, else the path, table or topic it "
                           f"writes) to {{columns: ...}}, not {_json_type(raw)}")
        return None
    out = []
    for name, spec in raw.items():
        path = ("queries", name)
        if not isinstance(spec, dict) or "columns" not in spec:
            r.at(path, f"query {name!r} needs `columns:` (its output, as `output: {{columns: ...}}`)")
            continue
        for key in spec:
            if key not in ("columns", "key"):
                r.at(path + (key,), f"a query has no key {key!r} (keys: columns, key); its output mode is the "
                                    "job's own", key=True)
        columns = r.columns(spec["columns"], path + ("columns",), f"query {name!r}", duplicates=True)
        key_names = r.names(spec.get("key"), path + ("key",), "a query's key") or ()
        if columns is None:
            continue
        names = [c.name for c in columns]
        for i, k in enumerate(key_names):
            if k not in names:
                r.at(path + ("key", i), f"key column {k!r} is not a column of query {name!r}{did_you_mean(k, names)}")
        out.append(QuerySpec(str(name), columns, tuple(key_names), r.c.where(r.prefix + path + ("columns",))))
    return tuple(out) if len(out) == len(raw) else None


def _output(r: _Reader, raw: Any) -> tuple[tuple[Column, ...] | None, tuple[str, ...], tuple[str, ...]]:
    if not isinstance(raw, dict) or "columns" not in raw:
        r.at(("output",) if raw is not None else (), "a contract needs `output: {columns: ..., modes: [...]}`")
        return None, (), ()
    for key in raw:
        if key not in ("columns", "modes", "key"):
            r.at(("output", key), f"`output` has no key {key!r} (keys: columns, modes, key)", key=True)
    columns = r.columns(raw["columns"], ("output", "columns"), "output", duplicates=True)
    modes = r.names(raw.get("modes", ["append"]), ("output", "modes"), "output modes") or ()
    for i, mode in enumerate(modes):
        if mode not in OUTPUT_MODES:
            r.at(("output", "modes", i), f"output mode {mode!r} is not one of {', '.join(OUTPUT_MODES)}"
                                         f"{did_you_mean(str(mode), OUTPUT_MODES)}")
    key = r.names(raw.get("key"), ("output", "key"), "output key") or ()
    if columns is not None:
        names = [c.name for c in columns]
        for i, k in enumerate(key):
            if k not in names:
                r.at(("output", "key", i), f"key column {k!r} is not an output column{did_you_mean(k, names)}")
    return columns, tuple(modes), tuple(key)


INVARIANT_FORMS = ("conserve", "disjoint", "not_null", "hook")
COUNT_RELATIONS = ("==", "<=", ">=")
_FORM_KEYS = {"conserve": ("from", "into", "count"), "disjoint": ("key", "outputs"), "not_null": ("output", "columns")}
_FORM_SHAPES = {"conserve": "{from: SOURCE or [SOURCES], into: [OUTPUTS], count: '==' | '<=' | '>=' (optional)}",
                "disjoint": "{key: [COLUMNS], outputs: [OUTPUTS]}", "not_null": "{output: OUTPUT, columns: [COLUMNS]}",
                "hook": "'module:function'"}


def sink_columns(contract_queries: tuple[QuerySpec, ...], output: tuple[Column, ...], sink: str) -> tuple[Column, ...]:
    """The columns an invariant reads a sink with: a declared query's (also for the folder or table it is
    named after), else the contract's output."""
    name = sink[len("table:"):] if sink.startswith("table:") else sink
    spec = next((q for q in contract_queries if q.name == name), None)
    return spec.output if spec is not None else output


def conserved_columns(sources: tuple[SourceSpec, ...], queries: tuple[QuerySpec, ...], output: tuple[Column, ...],
                      from_: tuple[str, ...], into: tuple[str, ...]) -> list[str]:
    """The columns a conservation follows a row by: the first source's that every source of `from_` and
    every output of `into` name."""
    named = [[c.name for c in s.columns] for s in sources if s.name in from_]
    named += [[c.name for c in sink_columns(queries, output, o)] for o in into]
    return [n for n in named[0] if all(n in other for other in named[1:])] if named else []


def _invariants(r: _Reader, raw: Any, sources: tuple[SourceSpec, ...], params: tuple[ParamSpec, ...],
                queries: tuple[QuerySpec, ...], output: tuple[Column, ...]) -> tuple[InvariantSpec, ...]:
    """`invariants: {NAME: {conserve | disjoint | not_null | hook: ..., doc: ...}}`: each checked, at its line."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        r.at(("invariants",), "`invariants` maps a name of your own to one invariant: {conserve: {...}}, "
                              "{disjoint: {...}}, {not_null: {...}} or {hook: 'module:function'}")
        return ()
    sinks = [q.name for q in queries] + [p.name for p in params if p.kind == "path"] + ([] if queries else ["output"])
    source_names = [s.name for s in sources]
    out = []
    for name, spec in raw.items():
        path = ("invariants", name)
        form = _invariant_form(r, path, name, spec)
        if form is None:
            continue
        body = spec[form]
        fpath = path + (form,)
        bad = len(r.c.problems)  # a problem from here on (`doc:` too) leaves the invariant out
        doc_text = spec.get("doc", "")
        if not isinstance(doc_text, str):
            r.at(path + ("doc",), f"`doc` is text, not {_json_type(doc_text)}")
        if form == "hook":
            if not isinstance(body, str) or not _TARGET.match(body):
                r.at(fpath, f"a hook is 'module:function' (a function over a run's observations), not {body!r}")
                continue
            out.append(InvariantSpec(str(name), form, hook=body, doc=str(doc_text or ""), where=r.c.where(r.prefix + fpath)))
            continue
        if not isinstance(body, dict):
            r.at(fpath, f"`{form}` is {_FORM_SHAPES[form]}, not {_json_type(body)}")
            continue
        sources_of, outs, cols, relation = _form_body(r, form, body, fpath, sinks, source_names)
        if len(r.c.problems) > bad:
            continue
        _invariant_columns(r, form, fpath, sources_of, outs, cols, relation, (sources, queries, output))
        if len(r.c.problems) > bad:
            continue
        out.append(InvariantSpec(str(name), form, outputs=outs, sources=sources_of, columns=cols,
                                 relation=relation, doc=str(doc_text or ""), where=r.c.where(r.prefix + fpath)))
    return tuple(out)


def _invariant_form(r: _Reader, path: tuple, name: Any, spec: Any) -> str | None:
    """The one form an invariant states (None: said why not); its keys are the forms and `doc`."""
    if r.bad_name(path, name, "an invariant"):
        return None
    if not isinstance(spec, dict):
        r.at(path, f"invariant {name!r} is one of {', '.join(f'{{{f}: ...}}' for f in INVARIANT_FORMS)}, "
                   f"not {_json_type(spec)}")
        return None
    forms = [k for k in spec if k in INVARIANT_FORMS]
    for key in spec:
        if key not in INVARIANT_FORMS and key != "doc":
            r.at(path + (key,), f"an invariant has no key {key!r}{did_you_mean(str(key), INVARIANT_FORMS)} "
                                f"(one of {', '.join(INVARIANT_FORMS)}, and doc)", key=True)
    if len(forms) != 1:
        if forms or all(k == "doc" for k in spec):
            r.at(path, f"invariant {name!r} states one form, " + (
                f"not {len(forms)} ({', '.join(forms)})" if forms else f"one of {', '.join(INVARIANT_FORMS)}"))
        return None
    return forms[0]


def _form_body(r: _Reader, form: str, body: dict, fpath: tuple, sinks: list[str], source_names: list[str]
               ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], Any]:
    """The body of a `conserve`, `disjoint` or `not_null` invariant, checked key by key: (the sources it
    reads from, its outputs, its columns, a conservation's count relation)."""
    for key in body:
        if key not in _FORM_KEYS[form]:
            r.at(fpath + (key,), f"`{form}` has no key {key!r}{did_you_mean(str(key), _FORM_KEYS[form])} "
                                 f"(it is {_FORM_SHAPES[form]})", key=True)
    for key in _FORM_KEYS[form]:
        if key not in body and key != "count":
            r.at(fpath, f"`{form}` needs `{key}:` (it is {_FORM_SHAPES[form]})")

    sources_of = _listed(r, body, fpath, "from", "source names", single=True)
    okey = "into" if form == "conserve" else ("outputs" if form == "disjoint" else "output")
    outs = _listed(r, body, fpath, okey, "outputs", single=form == "not_null")
    cols = _listed(r, body, fpath, "key" if form == "disjoint" else "columns", "column names") \
        if form != "conserve" else ()
    _known(r, body, fpath, sources_of, "from", source_names, "source")
    _known(r, body, fpath, outs, okey, sinks, "output")
    _distinct_outputs(r, body, form, fpath, okey, outs, sinks)
    if form == "not_null" and len(outs) > 1:
        r.at(fpath + ("output",), "`not_null` reads one output (state one invariant per output)")
    relation = body.get("count") if form == "conserve" else None
    if relation is not None and relation not in COUNT_RELATIONS:
        r.at(fpath + ("count",), f"a count relation is one of {', '.join(repr(c) for c in COUNT_RELATIONS)} "
                                 f"(rows in all of `into` against rows added to `from`), not {relation!r}")
    return sources_of, outs, cols, relation


def _distinct_outputs(r: _Reader, body: dict, form: str, fpath: tuple, okey: str, outs: tuple[str, ...],
                      sinks: list[str]) -> None:
    """An output named twice in one invariant is a mistake (a `disjoint` over [clean, clean] could never break,
    a conservation would count a row twice); a `disjoint` needs two different outputs, and says so where the
    contract has only one to give."""
    if form != "disjoint" or len(set(outs)) != 1:
        for i, o in enumerate(outs):
            if o in outs[:i]:
                r.at(fpath + (okey, i), f"`{okey}` names output {o!r} twice: name each output once")
        return
    if len(sinks) == 1:
        r.at(fpath + ("outputs",), f"`disjoint` (a key never in two outputs) needs two outputs or more, and the "
                                   f"contract has one ({sinks[0]!r}): declare another (a `kind: path` parameter, a "
                                   "query under `queries:`, or `table:NAME` for a table the job writes); for a key "
                                   "never twice in one output, write a hook")
    else:
        r.at(fpath + ("outputs",), f"`disjoint` (a key never in two outputs) needs two outputs or more, not one "
                                   f"({outs[0]!r}; outputs: {', '.join(sinks)})")


def _invariant_columns(r: _Reader, form: str, fpath: tuple, sources_of: tuple[str, ...], outs: tuple[str, ...],
                       cols: tuple[str, ...], relation: Any,
                       declared: tuple[tuple[SourceSpec, ...], tuple[QuerySpec, ...], tuple[Column, ...]]) -> None:
    """A well-formed invariant against the contract's columns (`declared`: its sources, queries and
    output): a conservation without a count follows rows by columns they share; the columns it reads
    are the sinks'."""
    sources, queries, output = declared
    if form == "conserve" and relation is None and not conserved_columns(sources, queries, output, sources_of, outs):
        r.at(fpath + ("into",), f"{', '.join(outs)} and {', '.join(sources_of)} share no column: a row is followed "
                                "by the columns every source and output of it name; state a count relation "
                                "instead (`count: '<='`)")
    for o in outs:  # the columns it reads must be the sink's
        names = [c.name for c in sink_columns(queries, output, o)]
        for i, col in enumerate(cols):
            if col not in names:
                key = "key" if form == "disjoint" else "columns"
                r.at(fpath + (key, i), f"column {col!r} is not a column of output {o!r}"
                                       f"{did_you_mean(col, names)} (its columns: {', '.join(names)})")


def _listed(r: _Reader, body: dict, fpath: tuple, key: str, what: str, single: bool = False) -> tuple[str, ...]:
    value = body.get(key)
    if value is None:
        return ()
    if single and isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        r.at(fpath + (key,), f"`{key}` is a list of {what}, not {_json_type(value)}")
        return ()
    return tuple(value)


def _known(r: _Reader, body: dict, fpath: tuple, names: tuple[str, ...], key: str, choices: list[str],
           what: str) -> None:
    """Each of `names` must be one of `choices` (an output may also be `table:NAME`), said at its place."""
    for i, n in enumerate(names):
        if n in choices or (what == "output" and n.startswith("table:") and len(n) > len("table:")):
            continue
        at = fpath + (key, i) if isinstance(body.get(key), list) else fpath + (key,)
        r.at(at, f"{n!r} is not {'an' if what[0] in 'aeiou' else 'a'} {what} of the contract"
                 f"{did_you_mean(n, choices)} ({what}s: {', '.join(choices) or 'none'}"
                 + ("; a table the job writes is `table:NAME`" if what == "output" else "") + ")")
