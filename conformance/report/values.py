"""How the values of a results file read in a report: timestamps, watermarks, rows, steps."""
from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping, Sequence

from .. import coltypes
from ..timeparse import DEFAULT_DATE, format_time

__all__ = ["scenario_date", "format_ts", "format_wm", "format_value", "format_row", "output_types",
           "step_summary", "failure_lines"]


def scenario_date(definition: Mapping[str, Any] | None) -> _dt.date:
    """The scenario's date (times on it are shown as HH:MM:SS): the date its clock starts on."""
    ms = (definition or {}).get("clock_start_ms")
    if isinstance(ms, int):
        return (_dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ms)).date()
    return DEFAULT_DATE


def format_ts(micros: Any, date: _dt.date | None) -> str:
    return format_time(micros, date=date) if isinstance(micros, int) else str(micros)


def format_wm(ms: int | None, date: _dt.date | None) -> str:
    if ms is None:
        return "-"
    return "initial" if ms == 0 else format_time(ms * 1000, date=date)


def format_value(value: Any, column_type: str | None, date: _dt.date | None) -> str:
    return coltypes.format_value(value, column_type, lambda us: format_time(us, date=date), quote_text=False)


def output_types(definition: Mapping[str, Any] | None, columns: Sequence[str] | None = None) -> list[str | None]:
    """Column types of output rows (of `columns`, by name, when a failure names them)."""
    declared = [(c[0], c[1]) for c in (definition or {}).get("output_columns") or [] if len(c) >= 2]
    if columns:
        types = dict(declared)
        return [types.get(c) for c in columns]
    return [t for _, t in declared]


def format_row(row: Sequence[Any], types: Sequence[str | None], date: _dt.date | None) -> str:
    parts = [format_value(v, types[i] if i < len(types) else None, date) for i, v in enumerate(row)]
    return "(" + ", ".join(parts) + ")"


def _source_types(definition: Mapping[str, Any], source: str) -> list[str | None]:
    for s in definition.get("sources") or []:
        if s.get("name") == source:
            return [c[1] for c in s.get("columns") or [] if len(c) >= 2]
    return []


def step_summary(step: Mapping[str, Any], definition: Mapping[str, Any]) -> str:
    """One line for a scenario step: what is added, advanced, restarted or expected."""
    date = scenario_date(definition)
    kind = step.get("kind")
    if kind == "add":
        parts = []
        for source, rows in sorted((step.get("rows") or {}).items()):
            types = _source_types(definition, source)
            parts.append(f"{source}: " + " ".join(format_row(r, types, date) for r in rows))
        return "; ".join(parts)
    if kind == "generate":
        g = step.get("generate") or {}
        late = f", {g.get('late_fraction', 0):.2%} late" if g.get("late_fraction") else ""
        return f"{g.get('source')}: {g.get('rows')} generated rows in {g.get('batches')} batches (seed {g.get('seed')}{late})"
    if kind == "advance":
        ms = step.get("by_ms")
        return f"by {ms / 1000:g}s" if isinstance(ms, (int, float)) else ""
    if kind in ("start", "restart"):
        conf = step.get("conf") or {}
        return ", ".join(f"{k}={v}" for k, v in sorted(conf.items()))
    if kind == "expect":
        exp = step.get("expect") or {}
        types = output_types(definition)
        parts = []
        for check in exp.get("rows") or []:
            rows = check.get("rows") or []
            label = {"rows": "rows", "output": "whole output", "last_batch": "last batch"}.get(check.get("scope"),
                                                                                              check.get("scope"))
            parts.append(f"{label}: " + (" ".join(format_row(r, types, date) for r in rows) if rows else "none"))
        if "watermark_ms" in exp:
            parts.append(f"watermark {format_wm(exp['watermark_ms'], date)}")
        if "batch_watermark_ms" in exp:
            parts.append(f"last batch ran with watermark {format_wm(exp['batch_watermark_ms'], date)}")
        for key, label in (("dropped", "dropped"), ("state_rows", "state rows"), ("updated", "updated in state"),
                           ("batch_count", "batches")):
            if key in exp:
                parts.append(f"{label} {exp[key]}")
        if "batches" in exp:
            parts.append(f"{len(exp['batches'])} batch expectation(s)")
        if "operators" in exp:
            parts.append(f"{len(exp['operators'])} operator expectation(s)")
        if exp.get("event_time") == "none":
            parts.append("no event-time stats")
        elif "event_time" in exp:
            parts.append("event-time stats " + ", ".join(f"{k[:-3]} {format_wm(v, date)}"
                                                         for k, v in sorted(exp["event_time"].items())))
        if "failure" in exp:
            parts.append("query fails: " + ", ".join(f"{k} {v}" for k, v in sorted(exp["failure"].items())))
        return "; ".join(parts)
    return ""


def failure_lines(failure: Mapping[str, Any], definition: Mapping[str, Any] | None) -> list[str]:
    """A failed expectation as text: where, what, and the missing and unexpected rows."""
    date = scenario_date(definition)
    lines = [f"{failure.get('where') or ''}: {failure.get('message') or ''}".strip(": ")]
    lines += ["  " + line for line in (failure.get("explanation") or "").splitlines()]  # why, in event-time terms
    types = list(failure.get("types") or ()) or output_types(definition, failure.get("columns") or None)
    cols = failure.get("columns") or [c[0] for c in (definition or {}).get("output_columns") or []]
    for key, label in (("missing", "missing (expected, not produced)"), ("unexpected", "unexpected (produced, not expected)")):
        rows = failure.get(key) or []
        if rows:
            lines.append(f"  {label}" + (f" [{', '.join(cols)}]" if cols else "") + ":")
            lines += [f"    {format_row(r, types, date)}" for r in rows]
    return lines
