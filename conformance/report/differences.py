"""Behaviour differences across Spark versions: the same scenario and implementation, observed differently."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..results import FAILED, PASSED
from .merge import Cell, VersionColumn, Matrix, Row
from .values import format_row, format_wm, output_types, scenario_date

__all__ = ["Difference", "find_differences", "VERDICT", "BEHAVIOUR", "AVAILABILITY"]

VERDICT, BEHAVIOUR, AVAILABILITY = "verdict", "behaviour", "feature availability"


@dataclass(frozen=True)
class Difference:
    """What differs for one row between columns: `kind` is verdict, behaviour or feature availability."""

    row: Row
    kind: str
    details: tuple[str, ...]


def _groups(values: Sequence[tuple[str, str]]) -> str:
    """[(value, column), ...] -> "1 on 3.5.9, 0 on 4.0.0/4.3.0" (in column order)."""
    order: list[str] = []
    by_value: dict[str, list[str]] = {}
    for value, column in values:
        if value not in by_value:
            order.append(value)
        by_value.setdefault(value, []).append(column)
    return ", ".join(f"{v} on {'/'.join(by_value[v])}" for v in order)


def _step_observations(step: Mapping[str, Any], row: Row) -> dict[str, str]:
    """The comparable facts of one step: batches run, rows written, watermark, dropped, state rows."""
    date = scenario_date(row.definition)
    types = output_types(row.definition)
    batches = step.get("batches") or []
    data = sum(1 for b in batches if b.get("data"))
    rows = sorted(format_row(r, types, date) for b in batches for r in b.get("rows") or [])
    state = [b.get("state_rows") for b in batches if b.get("state_rows") is not None]
    return {
        "batches": f"{len(batches)} ({data} data, {len(batches) - data} no-data)",
        "rows written": " ".join(rows) if rows else "none",
        "watermark after the step": format_wm(step.get("watermark_ms"), date),
        "dropped": str(sum(b.get("dropped") or 0 for b in batches)),
        "state rows": str(state[-1]) if state else "-",
    }


def _compared_steps(cells: Sequence[Cell]) -> list[int]:
    """Step indices every cell ran to a verdict (not skipped after an error) where some batch ran."""
    per = []
    for c in cells:
        per.append({s.get("index"): s for s in c.steps if s.get("status") in (PASSED, FAILED)})
    common = set(per[0]).intersection(*per[1:]) if per else set()
    return sorted(i for i in common
                  if isinstance(i, int) and any(p[i].get("batches") for p in per))


def _step_label(row: Row, index: int, cell: Cell) -> str:
    step = next(s for s in cell.steps if s.get("index") == index)
    line = None
    for d in (row.definition or {}).get("steps") or []:
        if d.get("index") == index:
            line = d.get("line")
    if line is None:
        where = str(step.get("where") or "")
        parts = where.rsplit(":", 2)
        line = parts[1] if len(parts) == 3 else None
    return f"step {index}" + (f" (line {line})" if line is not None else "")


def behaviour_details(row: Row, columns: Sequence[VersionColumn]) -> list[str]:
    """Each observation that differs between the applicable cells of `row`, with its value per column."""
    present = [c for c in columns if c.key in row.cells and row.cells[c.key].applicable]
    if len(present) < 2:
        return []
    cells = [row.cells[c.key] for c in present]
    out = []
    for index in _compared_steps(cells):
        observed = []
        for c, cell in zip(present, cells):
            step = next(s for s in cell.steps if s.get("index") == index)
            observed.append((c.key, _step_observations(step, row)))
        for aspect in observed[0][1]:
            values = [(obs[aspect], key) for key, obs in observed]
            if len({v for v, _ in values}) > 1:
                out.append(f"{aspect} at {_step_label(row, index, cells[0])}: {_groups(values)}")
    return out


def find_differences(matrix: Matrix) -> list[Difference]:
    """Every row whose columns differ: feature availability (not applicable on some versions only),
    verdict (pass on one, fail or error on another), behaviour (same verdict, different observations)."""
    out: list[Difference] = []
    for row in matrix.rows:
        present = [c for c in matrix.columns if c.key in row.cells]
        if len(present) < 2:
            continue
        cells = {c.key: row.cells[c.key] for c in present}
        applicable = [c for c in present if cells[c.key].applicable]
        if 0 < len(applicable) < len(present):
            details = [_groups([(cells[c.key].mark + (f" ({cells[c.key].reason})" if not cells[c.key].applicable
                                                     and cells[c.key].reason else ""), c.key) for c in present])]
            out.append(Difference(row, AVAILABILITY, tuple(details)))
        if len(applicable) < 2:
            continue
        behaviour = behaviour_details(row, applicable)
        if len({cells[c.key].status for c in applicable}) > 1:
            verdicts = _groups([(cells[c.key].mark, c.key) for c in applicable])
            reasons = [f"{c.key}: {cells[c.key].reason}" for c in applicable if cells[c.key].reason]
            out.append(Difference(row, VERDICT, tuple([f"verdict: {verdicts}"] + reasons + behaviour)))
        elif behaviour:
            out.append(Difference(row, BEHAVIOUR, tuple(behaviour)))
    return out
