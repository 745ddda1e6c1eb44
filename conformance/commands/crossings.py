"""The command line's side of a run across a change (docs/upgrade.md): `--previous`, `--previous-ref` and
`--previous-python` read into the run's one `crossing.Crossings` (a usage error printed), and the runner
`run`, `certify` and `watch` give each scenario to, whatever the crossing is."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..crossing import Crossing, Crossings, NoCrossing, Runner, Straight
from ..results import ERROR, ScenarioResult

__all__ = ["crossings_of", "across", "run_across"]


def crossings_of(args: Any, contract_dirs: Sequence[str] = ()) -> Crossings | None:
    """The run's crossings from the options (`NoCrossing` without them: each scenario runs as it is; an
    `crossline.EarlierSpark` for --previous-python, a `previous.Previous` for --previous or --previous-ref);
    None when they are not usable, the reason printed."""
    from ..crossline import CrossLineError, EarlierSpark
    from ..previous import from_options
    from ..projectconfig import SettingsError
    from ..userpipeline import PipelineError

    try:
        if getattr(args, "previous_python", None):
            return EarlierSpark(args.previous_python, contract_dirs=contract_dirs)
        previous = from_options(getattr(args, "previous", None) or [], getattr(args, "previous_ref", None))
        return previous if previous is not None else NoCrossing()
    except (SettingsError, PipelineError, CrossLineError) as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None


def across(crossings: Crossings, run: Runner | None = None) -> Runner:
    """The runner `parallel.run_pairs` takes: each scenario run by `crossings` with `run` (default
    `runner.run_scenario`); a previous version that cannot be had for its binding (a git ref's that does
    not load) is that scenario's error."""
    from ..userpipeline import PipelineError

    if run is None:
        from ..runner import run_scenario

        run = run_scenario

    def one(scenario: Any, implementation: Any, **kwargs: Any) -> ScenarioResult:
        try:
            return crossings.run(scenario, implementation, run, **kwargs)
        except PipelineError as exc:  # before anything ran: an error of this scenario
            result = ScenarioResult(scenario, str(implementation), ERROR, rerun=kwargs.get("rerun"))
            result.reason = str(exc)
            return result
    return one


def run_across(args: Any, contract_dirs: Sequence[str], targets: Sequence[Any], go: Callable[[Crossings], int]) -> int:
    """`go(crossings)` with the options' crossings (what `run` and `certify` share), their bindings loaded
    first and their checkout or earlier side closed afterwards; options that are not usable are exit 2."""
    from ..exitcodes import ExitCode

    crossings = crossings_of(args, contract_dirs)
    if crossings is None:
        return ExitCode.USAGE_ERROR
    try:
        crossings.load(targets)
        return go(crossings)
    finally:
        crossings.close()


if TYPE_CHECKING:  # mypy (./dev lint) checks that each implementation meets its protocol (here, where the
    # face meets them all, so that crossing.py imports none of them)
    from ..crossline import EarlierSpark, Keep, Resume
    from ..previous import Previous
    from ..upgrade import NewVersion

    def _implementations(straight: Straight, new: NewVersion, resume: Resume, keep: Keep, none: NoCrossing,
                         previous: Previous, earlier: EarlierSpark
                         ) -> tuple[Crossing, Crossing, Crossing, Crossing, Crossings, Crossings, Crossings]:
        return straight, new, resume, keep, none, previous, earlier
