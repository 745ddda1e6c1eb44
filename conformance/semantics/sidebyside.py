"""One scenario's events under both profiles, expect step by expect step: where Spark and the Dataflow model differ.

The teaching view the seed texts call for: the same steps run on the model under the spark profile
(what Spark does: one global watermark from the data, no stream status) and the dataflow profile
(Flink's rules). The scenario's own checks are left aside (each states one profile's expectations);
at every `expect` step both sides show the rows written since the previous one and the watermark
after it, and the dataflow side the watermarks its window operator forwarded and the stream statuses
it emitted (where it emitted some). A side that cannot run the steps says why (a watermark or stream
status given as input, or a dataflow-only source setting such as `generator: time_lag`, `subtasks`
or `ignore_watermarks`, has no Spark counterpart; a contract the dataflow profile does not model).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import spec as m
from ..scenariotext import rows_text, watermark_text
from .simulate import ModelError, NotCovered, Simulation, simulate

__all__ = ["ProfileView", "SideBySide", "side_by_side", "render"]


@dataclass
class ProfileView:
    """What one profile observes at one expect step."""

    rows: list[tuple]
    watermark_ms: int
    forwarded: list[int] | None  # the dataflow side's forwarded watermarks; None under the spark profile
    statuses: list[str] | None = None  # the dataflow side's emitted stream statuses; None under the spark profile


@dataclass
class SideBySide:
    scenario: m.Scenario
    steps: list[m.ExpectStep]
    views: dict[str, list[ProfileView] | str]  # profile -> one view per expect step, or why it cannot run

    def differences(self, index: int) -> list[str]:
        """What differs at the index-th expect step: `rows`, `watermark` (empty when both agree)."""
        spark, dataflow = self.views["spark"], self.views["dataflow"]
        if isinstance(spark, str) or isinstance(dataflow, str):
            return []
        a, b = spark[index], dataflow[index]
        return ([] if sorted(map(repr, a.rows)) == sorted(map(repr, b.rows)) else ["rows"]) + (
            [] if a.watermark_ms == b.watermark_ms else ["watermark"])


def _without_checks(scenario: m.Scenario) -> m.Scenario:
    """The scenario's steps with every expect emptied: each side runs the events, none judges."""
    steps: list[m.Step] = []
    for s in scenario.steps:
        if isinstance(s, m.ExpectStep):
            bare = m.ExpectStep(where=s.where)
            object.__setattr__(bare, "_index", s.index)
            steps.append(bare)
        else:
            steps.append(s)
    return dataclasses.replace(scenario, steps=tuple(steps))


def _views(sim: Simulation) -> list[ProfileView]:
    out = []
    for (_step, since, _history), now in zip(sim.observed_by_expects(), sim.expect_watermarks()):
        forwarded = statuses = None
        if sim.profile == "dataflow":
            forwarded = [w for b in since for w in getattr(b, "forwarded", [])]
            statuses = [st for b in since for st in getattr(b, "statuses", [])]
        out.append(ProfileView([r for b in since for r in b.rows], now, forwarded, statuses))
    return out


def side_by_side(scenario: m.Scenario) -> SideBySide:
    """Run `scenario`'s steps under both profiles of the model."""
    plain = _without_checks(scenario)
    views: dict[str, Any] = {}
    for profile in ("spark", "dataflow"):
        try:
            views[profile] = _views(simulate(plain, profile))
        except (NotCovered, ModelError) as exc:
            views[profile] = str(exc)
    return SideBySide(scenario, [s for s in scenario.steps if isinstance(s, m.ExpectStep)], views)


def render(view: SideBySide) -> str:
    """The side-by-side view as text: per expect step, each profile's rows and watermark, and what differs."""
    sc = view.scenario
    lines = [f"{sc.name} ({sc.path}): the same steps under the spark and dataflow profiles of the model"]
    for profile in ("spark", "dataflow"):
        if isinstance(view.views[profile], str):
            lines.append(f"  {profile}: cannot run these steps: {view.views[profile]}")
    differ = 0
    for i, step in enumerate(view.steps):
        lines.append(f"step {step.index} expect ({step.where})")
        for profile in ("spark", "dataflow"):
            v = view.views[profile]
            if isinstance(v, str):
                continue
            p = v[i]
            extra = (f"  forwarded [{', '.join(watermark_text(w, sc) for w in p.forwarded)}]"
                     if p.forwarded is not None else "")
            if p.statuses:  # the stream statuses the operator emitted, where it emitted some
                extra += f"  statuses [{', '.join(p.statuses)}]"
            lines.append(f"  {profile:9} watermark {watermark_text(p.watermark_ms, sc)}{extra}  rows {rows_text(p.rows, [c.ctype for c in sc.contract.output], sc)}")
        diff = view.differences(i)
        if diff:
            differ += 1
            lines.append(f"  -> they differ: {', '.join(diff)}")
    if not any(isinstance(v, str) for v in view.views.values()):
        lines.append(f"{differ} of {len(view.steps)} expect steps differ between Spark and the Dataflow model")
    return "\n".join(lines) + "\n"
