"""Judges an `expect: {state: ...}` check: the rows a stateful operator keeps, as Spark's state
reader gives them (`eventtime.harness.stateread`), against the rows the scenario states.

The expected values are read by the types Spark gives the fields (known only once the state is read),
then compared by the judge's row matching (a multiset, floats within the tolerance). Nothing of Spark
is imported here: the reader (the harness, or the model) hands over a `StateTable`.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

from . import coltypes
from .judge import match_rows
from .spec import Scenario, StateCheck
from .results import CheckFailure
from .timeparse import parse_date, parse_time

__all__ = ["StateRows", "judge_state", "judge_state_rows"]


class StateRows(Protocol):
    """What a reader gives: the operator's label, every leaf field's Spark type, the asked fields' rows."""

    operator: str
    fields: dict[str, str]
    rows: list[tuple]


def judge_state(check: StateCheck, table: StateRows | str, scenario: Scenario,
                tolerance: float | None = None) -> list[CheckFailure]:
    """The failures of `check` against `table` (or the reason the state could not be read)."""
    if isinstance(table, str):
        return [CheckFailure("state", check.where, f"cannot read the state: {table}")]
    try:
        types = [coltypes.parse_type(table.fields[c]) for c in check.columns]
    except (KeyError, coltypes.TypeSyntaxError) as exc:
        return [CheckFailure("state", check.where, f"cannot compare the state of {table.operator}: {exc}")]
    expected, problems = [], []
    for raw, where in zip(check.rows, check.row_wheres or (check.where,) * len(check.rows)):
        row, bad = _read_row(raw, check.columns, types, scenario)
        if bad:
            problems.append(CheckFailure("state", where, bad))
        else:
            expected.append(row)
    if problems:
        return problems
    return judge_state_rows(check, table, expected, types, tolerance)


def judge_state_rows(check: StateCheck, table: StateRows, expected: list[tuple],
                     types: Sequence[coltypes.ColumnType], tolerance: float | None = None) -> list[CheckFailure]:
    """The failure of `check` whose rows, read by the state's `types`, are `expected` (`eventtime.teeth`
    judges mutated rows through this too)."""
    missing, unexpected = match_rows(expected, table.rows, types=types, rel_tol=tolerance)
    if not missing and not unexpected:
        return []
    return [CheckFailure("state", check.where,
                         f"the state of {table.operator}: {len(missing)} missing, {len(unexpected)} unexpected",
                         expected=[list(r) for r in expected], actual=[list(r) for r in table.rows],
                         missing=missing, unexpected=unexpected, columns=check.columns,
                         types=tuple(t.name for t in types))]


def _read_row(raw: Sequence[Any], columns: Sequence[str], types: Sequence[coltypes.ColumnType],
              scenario: Scenario) -> tuple[tuple, str | None]:
    values = []
    for value, column, ctype in zip(raw, columns, types):
        try:
            values.append(ctype.read(value, parse_time=lambda v: parse_time(v, date=scenario.date, zone=scenario.timezone),
                                     parse_date=parse_date, float_text=lambda inner: None))
        except (coltypes.ValueProblem, ValueError) as exc:
            return (), f"state field {column!r} is {ctype.name}: {getattr(exc, 'message', exc)}"
    return tuple(values), None


def read_and_judge(check: StateCheck, spark: Any, checkpoint: str | None, scenario: Scenario,
                   tolerance: float | None = None, kept: Any = None) -> list[CheckFailure]:
    """Read the state `check` names from the query's checkpoint (`eventtime.harness.stateread`) and
    judge it; a state that cannot be read is a failure saying why, at the check. `kept`: an object
    (the step's `judge.Observed`) whose `state_judged` keeps what was read, for `eventtime.teeth`."""
    from eventtime.harness.stateread import StateReadError, read_state

    table: StateRows | str
    if checkpoint is None:
        table = "the query's checkpoint is not known here"
    else:
        try:
            table = read_state(spark, checkpoint, check.columns, operator=check.operator,
                               side=check.side, variable=check.variable)
        except StateReadError as exc:
            table = str(exc)
        except Exception as exc:  # noqa: BLE001 - Spark's reader refused (its message says why): the check says so
            table = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if kept is not None:
        kept.state_judged = table
    return judge_state(check, table, scenario, tolerance)
