"""Differential testing: a generated scenario judged on Spark against the model's own observations of it.

    from eventtime.differential import differential_case, compare_on_spark

    case = differential_case(scenario)               # the model fills an expect after every batch step
    outcome = compare_on_spark(case, session=spark)  # run on Spark with the reference implementation
    if not outcome.agrees:
        path = outcome.write(out_dir)                # a scenario file that reproduces it with `eventtime run`

The model (`eventtime.semantics`, spark profile) runs the generated scenario; an `expect` with
what it observed (rows, watermark, dropped, state rows, event-time statistics, every batch) is
inserted after each step that can run batches, and the resulting text is loaded back through the
loader: the scenario that runs on Spark is the file that gets written, byte for byte. Any
failed check is a disagreement between Spark and the model.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from eventtime.harness.waits import DEFAULT_TIMEOUT

from .drive import rows_seen
from .registry import CONTRACTS
from .loader import load_scenario_text
from .spec import Scenario
from .results import ERROR, FAILED, NOT_APPLICABLE, PASSED, ScenarioResult

__all__ = ["DifferentialCase", "Outcome", "FAMILIES", "differential_case", "compare_on_spark", "strategy_for",
           "restart_variants", "RestartCheck", "check_restarts", "whole_output"]

# Every contract the model covers that Spark runs (not a `model_only` one: there is no Spark side to
# compare). Per family, strategy keywords: few enough events that a run stays a handful of
# micro-batches, disorder that reaches past the smallest watermark delays.
FAMILIES: Mapping[str, Mapping[str, Any]] = {name: {} for name in sorted(CONTRACTS) if not CONTRACTS[name].model_only}


def strategy_for(family: str, *, max_events: int = 8) -> Any:
    """The Hypothesis strategy of generated scenarios for one contract family."""
    from .strategies import scenarios

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r} (families: {', '.join(FAMILIES)})")
    return scenarios(family, max_events=max_events, out_of_orderness=None, **FAMILIES[family])


@dataclass(frozen=True)
class DifferentialCase:
    """A generated scenario with the model's expectations written in: its text and the loaded scenario."""

    text: str
    scenario: Scenario

    @property
    def family(self) -> str:
        return self.scenario.contract.name


def differential_case(scenario: Scenario, profile: str = "spark") -> DifferentialCase:
    """Simulate `scenario` and insert the model's expectations after every step that can run batches."""
    from .semantics import simulate
    from .semantics.fill import insert_expectations

    text = insert_expectations(simulate(scenario, profile))
    return DifferentialCase(text, load_scenario_text(text, path=f"<differential {scenario.contract.name}>"))


@dataclass
class Outcome:
    """What Spark made of a differential case."""

    case: DifferentialCase
    result: ScenarioResult
    written: list[Path] = field(default_factory=list)

    @property
    def applicable(self) -> bool:
        return self.result.status != NOT_APPLICABLE

    @property
    def agrees(self) -> bool:
        return self.result.status not in (FAILED, ERROR)

    def write(self, out_dir: str | Path, name: str | None = None) -> Path:
        """Write the case as `<name>.scenario.yaml` under `out_dir` (default name: the family's), with a
        comment that says what disagreed; returns the path."""
        from .textreport import describe_failure

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name or 'differential-' + self.case.family.replace('_', '-')}.scenario.yaml"
        summary = describe_failure(self.result).splitlines()[:12]
        header = ["# Spark and the model (spark profile) disagree on this generated scenario; its expect",
                  "# steps are the model's. Reproduce: eventtime run " + str(path), "#"]
        header += ["# " + re.sub(r"\s+$", "", line) for line in summary]
        path.write_text("\n".join(header) + "\n" + self.case.text, encoding="utf-8")
        load_scenario_text(path.read_text(encoding="utf-8"), path=str(path))  # the file must load as written
        self.written.append(path)
        return path


def compare_on_spark(case: DifferentialCase, *, session: Any = None, pipeline: Any = None,
                     timeout: float = DEFAULT_TIMEOUT) -> Outcome:
    """Run the case on Spark (the contract's reference implementation unless `pipeline`).

    A run that ends in an error (not a failed check) is run once more: on a loaded machine Spark
    can time out starting a Python worker, which says nothing about the semantics. An error that
    happens twice counts."""
    from .runner import run_scenario

    result = run_scenario(case.scenario, pipeline, session=session, timeout=timeout,
                          rerun="eventtime run <the written file>")
    if result.status == ERROR:
        result = run_scenario(case.scenario, pipeline, session=session, timeout=timeout,
                              rerun="eventtime run <the written file>")
    return Outcome(case, result)


def restart_variants(scenario: Scenario, *, sessions: tuple[str, ...] = ("same", "new")) -> list[tuple[str, str]]:
    """The scenario with a restart inserted at every point where the query runs, one variant per
    point and session kind: `(label, text)`, expect steps removed (the model writes its own with
    `differential_case`). A point is the gap after any step that leaves the query running: before
    and after each batch, after each add, i.e. with state pending, after a watermark advance,
    after a late row. `sessions`: `same` inserts `- restart`, `new` inserts
    `- restart: {session: new}` (another SparkSession, inputs replayed, only the checkpoint carries
    the query)."""
    from . import spec as m

    lines = list(scenario.lines)
    steps = [s for s in scenario.steps if not isinstance(s, m.ExpectStep)]
    if not steps:
        return []
    head = lines[: min(s.where.line for s in scenario.steps) - 1]
    blocks = [[text for _, text in scenario.step_text(s)] for s in steps]
    running, points = True, []
    for i, step in enumerate(steps):
        if isinstance(step, (m.StopStep, m.RunStep)):
            running = False
        elif isinstance(step, m.StartStep):
            running = True
        if running and i + 1 < len(steps) and not isinstance(steps[i + 1], m.StartStep):
            points.append(i)
    out = []
    for i in points:
        first = blocks[i][0]
        pad = " " * (len(first) - len(first.lstrip()))
        for kind in sessions:
            inserted = pad + ("- restart" if kind == "same" else "- restart: {session: new}")
            body = [line for b in blocks[: i + 1] for line in b] + [inserted] + [
                line for b in blocks[i + 1:] for line in b]
            out.append((f"restart ({kind} session) after step {steps[i].index} ({steps[i].kind}, line "
                        f"{steps[i].where.line})", "\n".join(head + body) + "\n"))
    return out


def whole_output(batches: Any, output_mode: str) -> Counter:
    """Everything a run's sink shows at its end, as a multiset of rows (`rows_seen`'s `output`):
    every batch's rows (append, update), or the latest batch's table (complete)."""
    return Counter(tuple(r) for r in rows_seen("output", output_mode, [], list(batches)))


@dataclass
class RestartCheck:
    """One restart variant of a scenario on Spark: judged against the model, and its whole output
    compared with the uninterrupted run's."""

    label: str
    outcome: Outcome
    output: Counter  # Spark's whole output with the restart
    baseline: Counter  # Spark's whole output without it
    predicted: Counter  # the model's whole output with the restart
    predicted_baseline: Counter  # the model's whole output without it

    @property
    def lost(self) -> Counter:
        return self.baseline - self.output

    @property
    def duplicated(self) -> Counter:
        return self.output - self.baseline

    @property
    def holds(self) -> bool:
        """Spark agrees with the model at every step, and the whole output equals the
        uninterrupted run's, except where the model itself predicts the restart changes it."""
        if not self.outcome.agrees:
            return False
        if self.output == self.baseline:
            return True
        return self.output == self.predicted and self.predicted != self.predicted_baseline

    def describe(self) -> str:
        if self.holds:
            return f"ok: {self.label}"
        parts = [f"{self.label}:"]
        if not self.outcome.agrees:
            from .textreport import describe_failure

            parts.append(describe_failure(self.outcome.result))
        if self.lost:
            parts.append(f"lost rows {dict(self.lost)}")
        if self.duplicated:
            parts.append(f"duplicated rows {dict(self.duplicated)}")
        return "\n".join(parts)


def check_restarts(scenario: Scenario, *, session: Any = None, pipeline: Any = None,
                   sessions: tuple[str, ...] = ("same", "new"), timeout: float = DEFAULT_TIMEOUT,
                   progress: Any = None) -> list[RestartCheck]:
    """Run `scenario` uninterrupted, then every restart variant of it (`restart_variants`), on Spark;
    each variant is judged by the model step by step and by its whole output."""
    from .runner import run_scenario
    from .semantics import simulate

    mode = scenario.params.get("output_mode", "append")
    base = run_scenario(scenario, pipeline, session=session, timeout=timeout)
    if base.status not in (PASSED, FAILED):
        raise RuntimeError(f"{scenario.path}: the uninterrupted run did not complete: {base.reason}")
    baseline = whole_output([b for s in base.steps for b in s.batches], mode)
    predicted_baseline = whole_output(simulate(scenario, "spark").history, mode)
    out = []
    for label, text in restart_variants(scenario, sessions=sessions):
        case = differential_case(load_scenario_text(text, path=f"<{scenario.name}: {label}>"))
        outcome = compare_on_spark(case, session=session, pipeline=pipeline, timeout=timeout)
        spark_batches = [b for s in outcome.result.steps for b in s.batches]
        check = RestartCheck(label, outcome, whole_output(spark_batches, mode), baseline,
                             whole_output(simulate(case.scenario, "spark").history, mode), predicted_baseline)
        out.append(check)
        if progress is not None:
            progress(check)
    return out
