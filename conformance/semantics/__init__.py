"""An executable reference model of the event-time semantics the scenarios assert (spark and dataflow profiles).

Pure Python and deterministic: given a scenario's steps and its contract's parameters, the model
computes what must be observed after each step (rows per batch, the watermark before and after
each batch, rows dropped as late as Spark's metric counts them, state rows, data and no-data
batches), in the harness's observation shape, so the judge that checks Spark runs checks the
model too (`check_scenario`, `eventtime check-model`).

One module per concern, each readable as a specification: `watermark` (global and per-input
watermarks), `state` (the two watermarks of a stateful operator, the no-data batch question),
`microbatch` (triggers, batches, restarts), `windows`, `aggregation`, `sessions`, `dedup`,
`joins`, `stateful` (timeouts and timers), `plans` (each contract as operators); `dataflow` is the
dataflow profile (Flink's / the Dataflow model's rules, for scenarios with `profile: dataflow`);
`fill` writes the model's observations into scenarios as `expect` checks (`expect --write`, the
Spark differential test).
"""
from .check import check_scenario
from .plans import NotCovered
from .simulate import PROFILES, ModelError, Simulation, StepObservation, simulate

__all__ = ["PROFILES", "ModelError", "NotCovered", "Simulation", "StepObservation", "check_scenario", "simulate"]


def _check_public_surface() -> None:
    missing = [name for name in __all__ if name not in globals()]
    if missing:  # pragma: no cover - guards refactors
        raise ImportError(f"eventtime.semantics.__all__ names missing objects: {missing}")


_check_public_surface()
