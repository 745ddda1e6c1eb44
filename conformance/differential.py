"""Differential testing: a generated scenario judged on Spark against the model's own observations of it.

    from conformance.differential import differential_case, compare_on_spark

    case = differential_case(scenario)               # the model fills an expect after every batch step
    outcome = compare_on_spark(case, session=spark)  # run on Spark with the reference implementation
    if not outcome.agrees:
        path = outcome.write(out_dir)                # a scenario file that reproduces it with `eventtime run`

The model (`conformance.semantics`, spark profile) runs the generated scenario; an `expect` with
what it observed (rows, watermark, dropped, state rows, event-time statistics, every batch) is
inserted after each step that can run batches, and the resulting text is loaded back through the
loader: the scenario that runs on Spark is the file that gets written, byte for byte. Any
failed check is a disagreement between Spark and the model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .contracts import CONTRACTS
from .loader import load_scenario_text
from .model import Scenario
from .results import ERROR, FAILED, NOT_APPLICABLE, ScenarioResult

__all__ = ["DifferentialCase", "Outcome", "FAMILIES", "differential_case", "compare_on_spark", "strategy_for"]

# Every contract the model covers. Per family, strategy keywords: few enough events that a run
# stays a handful of micro-batches, disorder that reaches past the smallest watermark delays.
FAMILIES: Mapping[str, Mapping[str, Any]] = {name: {} for name in sorted(CONTRACTS)}


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
                     timeout: float = 60.0) -> Outcome:
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
