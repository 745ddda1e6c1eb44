"""What a stateful operator keeps in its state store, read through Spark's state data source
(`spark.read.format("statestore")` and `format("state-metadata")`, Spark 4.0+, classic sessions).

A query's checkpoint holds one state store per stateful operator (a join: four, two per side);
`state-metadata` lists them by operatorId, the position the query's progress lists its operators in
(the operator nearest the sink first). The reader gives each state row as a `key` struct and a
`value` struct (a join side's rows; a transformWithState variable's with `stateVarName`), of the
latest committed batch. A check names the leaf fields it compares by their dotted paths,
`key.id` or `value.count`; only those are read, timestamps as epoch microseconds.

Nothing is read unless an expect asks: a scenario without a `state` check costs nothing here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

__all__ = ["StateTable", "StateReadError", "read_state"]


class StateReadError(Exception):
    """The state asked for cannot be read (no such operator, a join without its side, ...): the message says why."""


@dataclass
class StateTable:
    """The rows of one state store: `fields` every leaf path -> its Spark type (simpleString), `rows`
    the values of the asked paths, in their order (the kit's plain values)."""

    operator: str  # e.g. "dedupe (operator 0)"
    fields: dict[str, str]
    rows: list[tuple]
    paths: tuple[str, ...] = ()  # the fields `rows` hold, in order


def _leaves(dt: Any, prefix: str) -> list[tuple[str, Any]]:
    from pyspark.sql import types as T

    if isinstance(dt, T.StructType):
        return [leaf for f in dt.fields for leaf in _leaves(f.dataType, f"{prefix}.{f.name}")]
    return [(prefix, dt)]


def read_state(spark: Any, checkpoint: str, paths: Sequence[str] | None, *, operator: str | int | None = None,
               side: str | None = None, variable: str | None = None) -> StateTable:
    """The values at `paths` of every row in the state of `operator` (its name or operatorId; None:
    the query's only stateful operator). `paths` None: every leaf field that can hold a value (a
    snapshot writes them all; a `NullType` placeholder field holds none)."""
    from .sparkvalues import _micros, from_spark_python

    metadata = spark.read.format("state-metadata").load(checkpoint).collect()
    operators: dict[int, str] = {}
    for row in sorted(metadata, key=lambda r: r["operatorId"]):
        operators.setdefault(int(row["operatorId"]), str(row["operatorName"]))
    listed = ", ".join(f"{i} {n}" for i, n in operators.items()) or "none"
    if isinstance(operator, int) and not isinstance(operator, bool):
        chosen = [operator] if operator in operators else []
    elif operator is None:
        chosen = list(operators) if len(operators) == 1 else []
        if len(operators) > 1:
            raise StateReadError(f"the query has {len(operators)} stateful operators ({listed}): say which with "
                                 "`operator: NAME` or its number")
    else:
        chosen = [i for i, n in operators.items() if n == operator]
        if len(chosen) > 1:
            raise StateReadError(f"the query has {len(chosen)} operators named {operator!r} ({listed}): say which "
                                 "with `operator: N`, its number")
    if not chosen:
        raise StateReadError(f"the query's checkpoint has no stateful operator {operator!r} (operators: {listed})"
                             if operators else "the query's checkpoint holds no state yet (no stateful batch has "
                                               "been committed)")
    op_id = chosen[0]
    name = operators[op_id]
    if name == "symmetricHashJoin" and side is None:
        raise StateReadError("a stream-stream join keeps a state per side: say `side: left` or `side: right`")
    reader = spark.read.format("statestore").option("operatorId", op_id)
    if side is not None:
        reader = reader.option("joinSide", side)
    if variable is not None:
        reader = reader.option("stateVarName", variable)
    df = reader.load(checkpoint)
    leaves = dict(_leaves(df.schema["key"].dataType, "key") + _leaves(df.schema["value"].dataType, "value"))
    fields = {p: dt.simpleString() for p, dt in leaves.items()}
    if paths is None:
        paths = [p for p, dt in leaves.items() if dt.simpleString() != "void"]
    label = f"{name} (operator {op_id}{', ' + side + ' side' if side else ''}"
    label += f", variable {variable!r})" if variable else ")"
    missing = [p for p in paths if p not in leaves]
    if missing:
        raise StateReadError(f"the state of {label} has no field {missing[0]!r} (fields: {', '.join(fields)})")
    exprs = [_micros("`" + "`.`".join(p.split(".")) + "`", leaves[p]) + f" AS `_{i}`" for i, p in enumerate(paths)]
    rows = [tuple(from_spark_python(r[i], leaves[p]) for i, p in enumerate(paths))
            for r in df.selectExpr(*exprs).collect()] if paths else [() for _ in range(df.count())]
    return StateTable(label, fields, rows, tuple(paths))
