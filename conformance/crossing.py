"""The one seam of a run across something (docs/upgrade.md): a new version of the job restarted from the
previous one's checkpoint (`upgrade.NewVersion`), or the steps before the restart run on an earlier Spark
line (`crossline`: `Resume` on this side, `Keep` on the earlier side), beside `drive.py`'s and
`querybuild.py`'s Protocols.

`Crossing` is what the runner asks of one scenario's run, never which kind it is: whether it can cross
here, what it leaves unjudged, its run folder, the driver and step handler the steps run on, what is
left when the steps end, and the outcome. `Straight` is the run that crosses nothing.

`Crossings` is what a face holds for the whole run (`eventtime run/certify/watch --previous...`, the
pytest options `--eventtime-previous...`): one object that gives each scenario its crossing and runs it,
the same call from either face, whatever the crossing is (`NoCrossing`: none)."""
from __future__ import annotations

import shutil
import tempfile
from typing import Any, Callable, Protocol, Sequence

from . import spec as m
from .drive import Driver, StepHandler
from .results import ScenarioResult

__all__ = ["Crossing", "Straight", "Crossings", "NoCrossing", "Runner"]

# runs one scenario: `runner.run_scenario`'s signature (a face's stand-in for it, in tests a recorder)
Runner = Callable[..., ScenarioResult]


class Crossing(Protocol):
    """One scenario's run across a change, as the runner asks it (`runner.run_scenario(crossing=...)`)."""

    @property
    def unjudged(self) -> frozenset[str]:
        """What the other side's implementation is not judged on, beside the current one's."""
        ...

    def refuses(self, result: ScenarioResult, job: bool, compat: Any) -> bool:
        """Whether the run cannot cross here, asked once the current implementation is prepared (`job`:
        it is a job); if so `result` says why (not applicable, or an error of the other side's version)."""
        ...

    def workdir(self) -> str:
        """The run folder, made or taken now (OSError: a temporary directory that takes no new file)."""
        ...

    def entered(self, database: Any) -> None:
        """The scenario's own database (`querybuild.JobDatabase`), made current before the first start."""
        ...

    def around(self, driver: Driver, steps: Any) -> tuple[Driver, StepHandler]:
        """The driver and step handler the scenario's steps run on, given the run's (`steps`: its
        `sparksteps.SparkSteps`, whose `build` and `query_run` the crossing may hand over to)."""
        ...

    def ended(self, steps: Any) -> None:
        """The steps ran to their end: what is judged only then (`SparkSteps.settle_written`), before the
        paths the job named are forgotten."""
        ...

    def leave(self, build: Any, workdir: str) -> None:
        """After the run, however it ended: the scenario's database and the run folder removed, or left
        for the side that goes on from them (`build`: its `querybuild.RunPlace`)."""
        ...

    def finish(self, result: ScenarioResult, steps: Any) -> None:
        """The scenario's verdict is concluded: the crossing's outcome set on it (`result.upgrade`)."""
        ...


class Straight:
    """The run that crosses nothing: one implementation, on its own run folder, removed at the end."""

    unjudged: frozenset[str] = frozenset()

    def refuses(self, result: ScenarioResult, job: bool, compat: Any) -> bool:
        return False

    def workdir(self) -> str:
        return tempfile.mkdtemp(prefix="eventtime-")

    def entered(self, database: Any) -> None:
        return None

    def around(self, driver: Driver, steps: Any) -> tuple[Driver, StepHandler]:
        return driver, steps

    def ended(self, steps: Any) -> None:
        steps.settle_written()

    def leave(self, build: Any, workdir: str) -> None:
        build.leave(drop=True)
        shutil.rmtree(workdir, ignore_errors=True)

    def finish(self, result: ScenarioResult, steps: Any) -> None:
        return None


class Crossings(Protocol):
    """What a face holds for a whole run across a change: each scenario's crossing, made and run."""

    def load(self, targets: Sequence[Any]) -> None:
        """Before any scenario runs, what must be loaded for these bindings (a git ref's versions: loading
        swaps modules in `sys.modules`, which must not happen while `--jobs` threads build queries)."""
        ...

    def run(self, scenario: m.Scenario, target: Any, run: Runner, **kwargs: Any) -> ScenarioResult:
        """`scenario` run against `target` (the binding, as the face has it) across the change, by `run`
        (`runner.run_scenario` or the face's wrapper of it, given `crossing=`; `kwargs` are its own).
        Raises PipelineError before anything runs when the other side's version cannot be had for this
        binding (each face words it)."""
        ...

    def close(self) -> None:
        """The run is over: what it made for the crossings removed (a git checkout, a child process)."""
        ...


class NoCrossing:
    """No run across anything: each scenario runs as it is."""

    def load(self, targets: Sequence[Any]) -> None:
        return None

    def run(self, scenario: m.Scenario, target: Any, run: Runner, **kwargs: Any) -> ScenarioResult:
        return run(scenario, target, **kwargs)

    def close(self) -> None:
        return None

