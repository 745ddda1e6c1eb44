"""Rows a scenario does not list: seeded generated rows (`generate` steps) and rows placed in input partitions.

Both the harness (on Spark) and the model of the semantics read rows from here, so a generated
scenario feeds exactly the same rows to both. Generation uses `random.Random(seed)` and only its
`random()` stream, whose sequence Python keeps stable across versions for a given integer seed;
nothing depends on `hash()`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from .contracts import Column

__all__ = ["GenerateSpec", "generate_batches", "round_robin", "MAX_GENERATED_ROWS", "MAX_PARTITIONS"]

MAX_GENERATED_ROWS = 1_000_000  # per `generate` step: a scenario file stays a test, not a load generator
MAX_PARTITIONS = 64  # per source


@dataclass(frozen=True)
class GenerateSpec:
    """What a `generate` step asks for. Times are epoch microseconds, durations microseconds.

    Row `i` (0-based over the whole step) has event time `start + i * step`; with probability
    `late_fraction` it is moved `late_by` into the past. Its key is `k0` .. `k{keys-1}`, drawn
    uniformly. The rows are cut into `batches` consecutive runs of near-equal size (the first
    `rows % batches` runs have one row more), one `add` and one `process` each.
    """

    rows: int
    batches: int
    start: int
    step: int
    seed: int = 0
    keys: int = 1
    late_fraction: float = 0.0
    late_by: int = 0

    def batch_sizes(self) -> list[int]:
        base, extra = divmod(self.rows, self.batches)
        return [base + (1 if b < extra else 0) for b in range(self.batches)]


def _value(column: Column, i: int, key: str, ts: int, late: bool) -> Any:
    """The value of one column of generated row `i`: the event time for timestamp columns, the key
    for text, the row number for whole numbers, 1.0 for doubles (a sum equals the count), and
    whether the row was made late for booleans."""
    if column.type == "timestamp":
        return ts
    if column.type == "string":
        return key
    if column.type in ("int", "long"):
        return i if column.type == "long" else i % (2 ** 31)
    if column.type == "double":
        return 1.0
    return late  # boolean


@lru_cache(maxsize=8)
def generate_batches(spec: GenerateSpec, columns: tuple[Column, ...]) -> tuple[tuple[tuple[Any, ...], ...], ...]:
    """The rows of each batch of `spec` for a source with `columns`, in column order (timestamps as
    epoch microseconds, as the loader gives listed rows)."""
    rng = random.Random(spec.seed)
    rows: list[tuple[Any, ...]] = []
    for i in range(spec.rows):
        key_draw, late_draw = rng.random(), rng.random()  # always two draws: the sequence never shifts
        late = late_draw < spec.late_fraction
        ts = spec.start + i * spec.step - (spec.late_by if late else 0)
        key = f"k{min(int(key_draw * spec.keys), spec.keys - 1)}"
        rows.append(tuple(_value(c, i, key, ts, late) for c in columns))
    out = []
    at = 0
    for size in spec.batch_sizes():
        out.append(tuple(rows[at:at + size]))
        at += size
    return tuple(out)


def round_robin(rows: Sequence[Any], partitions: int) -> tuple[tuple[Any, ...], ...]:
    """Rows spread over `partitions` input partitions: row i goes to partition i % partitions (how
    Spark's MemoryStream spreads a batch's rows when it is given a partition count)."""
    return tuple(tuple(rows[p::partitions]) for p in range(partitions))
