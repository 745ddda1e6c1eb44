"""What changed against a baseline: verdicts that flipped, rows added and removed, per Spark version."""
from __future__ import annotations

from dataclasses import dataclass

from ..textreport import verdict_mark
from .merge import Matrix

__all__ = ["Change", "compare"]


@dataclass(frozen=True)
class Change:
    kind: str  # flipped | added | removed
    contract: str
    scenario: str
    implementation: str
    column: str
    before: str | None  # verdict mark in the baseline
    after: str | None  # verdict mark now


def compare(baseline: Matrix, current: Matrix) -> list[Change]:
    """Cells (scenario × implementation × Spark version) whose verdict differs from the baseline's."""
    def cells(m: Matrix) -> dict[tuple[str, str, str, str], str]:
        return {(r.contract, r.scenario, r.implementation, col): cell.status
                for r in m.rows for col, cell in r.cells.items()}

    old, new = cells(baseline), cells(current)
    out = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        kind = "added" if before is None else "removed" if after is None else "flipped"
        out.append(Change(kind, *key, before=before and verdict_mark(before), after=after and verdict_mark(after)))
    return out
