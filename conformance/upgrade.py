"""A new version of the job, restarted from the previous version's checkpoint (docs/upgrade.md).

The steps of a scenario up to its first `start`/`restart` step run with the *previous* implementation
of its contract; from that step on, on the same checkpoint, run folder and sink history, the query is
built with the *current* one. The verdict says which of these happened:

- `restarts`: the new code restarts from the checkpoint and its outputs match the scenario;
- `differs`: it restarts, but an expectation after the restart does not hold (the usual diff);
- `cannot_restart`: the query fails at the restart, or in the first batch it runs after it (Spark
  refuses the checkpoint: a state schema incompatibility, a changed source), with Spark's error class;
- `previous_differs`: an expectation before the restart failed, so the scenario does not describe the
  previous version and says nothing of the change.

This module decides the restart step and the outcome, and is the run's crossing (`NewVersion`, a
`crossing.Crossing`: `runner.run_scenario(crossing=NewVersion(previous))` swaps the implementation at the
restart); `eventtime.previous` finds the previous version for the command and the pytest plugin (a
binding, or the same binding at a git ref).
"""
from __future__ import annotations

from typing import Any, Callable

from . import spec as m
from .crossing import Straight
from .results import ERROR, FAILED, NOT_APPLICABLE, PASSED, FailureInfo, ScenarioResult

__all__ = ["RESTARTS", "DIFFERS", "CANNOT_RESTART", "PREVIOUS_DIFFERS", "OUTCOMES", "restart_step",
           "NO_RESTART", "upgrade_verdict", "spark_message", "NewVersion"]

RESTARTS, DIFFERS, CANNOT_RESTART, PREVIOUS_DIFFERS = "restarts", "differs", "cannot_restart", "previous_differs"
OUTCOMES = (RESTARTS, DIFFERS, CANNOT_RESTART, PREVIOUS_DIFFERS)
NO_RESTART = ("has no `start` or `restart` step of the whole query, so no point where a new version "
              "picks up the previous one's checkpoint")


def restart_step(scenario: m.Scenario) -> m.StartStep | None:
    """The step at which the current version takes over: the first `start` or `restart` of the whole
    query (a start of one query of a job, `query: NAME`, leaves the others running the previous code,
    so it is not one). None: the scenario has no such step."""
    return next((s for s in scenario.steps if isinstance(s, m.StartStep) and s.query is None), None)


class NewVersion(Straight):
    """A run across a change of the job (a `crossing.Crossing`): the previous version (a binding or a
    callable; `name`: how the result names it) builds the query up to the scenario's first `start`/
    `restart` of the whole query, the current one from that step on, on the same checkpoint, run folder
    and sink history; the outcome is `upgrade_verdict`'s."""

    def __init__(self, previous: Any, name: str | None = None):
        self.previous = previous
        self.name = name or (previous if isinstance(previous, str) else (
            getattr(previous, "__module__", "") + ":" + getattr(previous, "__qualname__", "")))
        self.call: Callable[..., Any] | None = None
        self.restart: m.StartStep | None = None
        self.unjudged: frozenset[str] = frozenset()

    def refuses(self, result: ScenarioResult, job: bool, compat: Any) -> bool:
        """The previous version prepared as the current one is; refused (the result says why) with no
        restart step, a previous version whose binding does not prepare, or a job against a pipeline."""
        from .binding import prepare

        self.restart = restart_step(result.scenario)
        if self.restart is None:
            result.status, result.reason = NOT_APPLICABLE, f"a run across a change {NO_RESTART}"
            return True
        current = result.implementation
        result.implementation = self.name  # errors in preparing it name the previous version
        prepared = prepare(result, self.previous, compat)
        result.implementation = current
        if prepared is None:
            result.reason = f"the previous version {self.name}: {result.reason}"
            return True
        self.call, info, previous_job = prepared
        if info is None:  # a Spark Declarative Pipeline (`binding.prepare`): it runs as updates, not as a query
            result.status = ERROR
            result.reason = (f"the previous version {self.name} is a Spark Declarative Pipeline and the current "
                             f"{current} is {'a job' if job else 'a pipeline function'}: both must be of one kind")
            return True
        if previous_job != job:
            result.status = ERROR
            result.reason = (f"the previous version {self.name} is {'a job' if previous_job else 'a pipeline'} and "
                             f"the current {current} is {'a job' if job else 'a pipeline'}: both must be of one kind")
            return True
        self.unjudged = frozenset(info.unjudged)
        return False

    def previous_pipeline(self, result: ScenarioResult, compat: Any) -> str | None:
        """For a Spark Declarative Pipeline's run (`sdpsteps`): the previous version's spec, prepared as the
        current pipeline is; None (the result says why) with no restart step, a previous version that does
        not prepare, or one that is not a pipeline."""
        from .binding import prepare
        from .userpipeline import DeclarativePipeline

        self.restart = restart_step(result.scenario)
        if self.restart is None:
            result.status, result.reason = NOT_APPLICABLE, f"a run across a change {NO_RESTART}"
            return None
        current = result.implementation
        result.implementation = self.name
        prepared = prepare(result, self.previous, compat)
        result.implementation = current
        if prepared is None:
            result.reason = f"the previous version {self.name}: {result.reason}"
            return None
        if not isinstance(prepared[0], DeclarativePipeline):
            result.status = ERROR
            result.reason = (f"the previous version {self.name} is {'a job' if prepared[2] else 'a pipeline function'} "
                             f"and the current {current} is a Spark Declarative Pipeline: both must be of one kind")
            return None
        return prepared[0].spec

    def around(self, driver: Any, steps: Any) -> tuple[Any, Any]:
        """The previous version builds the query until the restart step, where the current one takes over."""
        build, restart = steps.build, self.restart
        assert restart is not None and self.call is not None
        current = (build.call, build.impl_name)

        def take_over() -> None:  # the current version builds the query from this start on
            build.call, build.impl_name = current
            steps.impl_name = current[1]

        build.call, build.impl_name, steps.impl_name = self.call, self.name, self.name
        steps.switch = (restart.index, take_over)
        return driver, steps

    def finish(self, result: ScenarioResult, steps: Any) -> None:
        assert self.restart is not None
        upgrade_verdict(result, self.name, self.restart, steps.failure, steps.failure_consumed)


def upgrade_verdict(result: ScenarioResult, previous: str, restart: m.StartStep,
                    failure: FailureInfo | None, consumed: bool) -> None:
    """Set `result.upgrade` (and the verdict's reason) from its steps once the scenario has run: which
    of the four outcomes happened. `failure`: the query's failure, if any; `consumed`: a `failure`
    expectation expected it."""
    at = restart.index
    record: dict[str, Any] = {"previous": previous, "restart_step": at, "restart_where": str(restart.where)}
    result.upgrade = record
    if result.cause is not None:  # the driver died, or the run's surroundings failed: no outcome
        record["outcome"] = None
        return
    before = next((s for s in result.steps if s.index < at and s.status in (FAILED, ERROR)), None)
    if before is not None:
        record["outcome"] = PREVIOUS_DIFFERS
        result.status = FAILED if before.status == FAILED else ERROR
        result.reason = (f"the scenario does not describe the previous version ({previous}): step {before.index} "
                         f"({before.kind}) {'failed' if before.status == FAILED else 'erred'} before the restart at "
                         f"step {at}, so it says nothing of the change"
                         + (f": {before.message}" if before.message else ""))
        return
    if failure is not None and not consumed and failure.step >= at and not any(
            s.batches for s in result.steps if at <= s.index < failure.step):
        record["outcome"] = CANNOT_RESTART
        # the class of what failed, not of the wrapper every query failure comes in (as the harness names it)
        record["error_class"] = next((c for c in failure.error_classes if c != "STREAM_FAILED"), None)
        # Spark before 4.0 raises some refusals with no error class (3.4, 3.5: StateSchemaNotCompatible,
        # a Java exception in the batch's task): the innermost exception's class names it then
        record["exception"] = failure.exception_names[-1] if failure.exception_names else None
        record["message"] = (spark_message(failure.text, record["error_class"])
                             or _root_message(failure.text, record["exception"]) or failure.summary)
        where = "at the restart" if failure.step == at else f"in the first batch after it (step {failure.step})"
        named = f"[{record['error_class']}] " if record["error_class"] else ""
        named = "" if record["message"].startswith(named) else named
        result.status = ERROR
        result.reason = (f"cannot restart from the previous version's checkpoint ({previous}): the query failed "
                         f"{where}, restart at step {at}: {named}{record['message']}")
        return
    if result.status == PASSED:
        record["outcome"] = RESTARTS
        return
    record["outcome"] = DIFFERS
    after = next((s for s in result.steps if s.status in (FAILED, ERROR)), None)
    said = f": step {after.index} ({after.kind})" if after is not None else ""
    result.reason = (f"restarts from the previous version's checkpoint ({previous}) at step {at}, but its outputs "
                     f"differ from the scenario after the restart{said}"
                     + (f": {result.reason}" if result.status == ERROR and result.reason else ""))


def _root_message(text: str, exception: str | None) -> str:
    """The message of the exception `exception` (a Java class name) in a failure's text: from its name on,
    up to the query's plan or a stack frame; "" when the text does not name it."""
    lines = (text or "").splitlines()
    at = [i for i, line in enumerate(lines) if exception and exception in line]
    if not at:
        return ""
    first = lines[at[-1]]
    block = [first[first.index(str(exception)):]]
    for line in lines[at[-1] + 1:]:
        if not line.strip() or line.startswith("=== ") or line.lstrip().startswith("at "):
            break
        block.append(line.rstrip())
    return "\n".join(block)


def spark_message(text: str, error_class: str | None) -> str:
    """Spark's own message of `error_class` in a failure's text (its lines, which for a state schema
    error say the existing and the new schema), without the query's plan Spark prints after it; ""
    when the text has no line starting with that class."""
    lines = (text or "").splitlines()
    starts = [i for i, line in enumerate(lines) if error_class and line.startswith(f"[{error_class}]")]
    if not starts:
        return ""
    block: list[str] = []
    for line in lines[starts[-1]:]:  # the innermost: the error as raised, not a wrapper's copy
        if not line.strip() or line.startswith("=== ") or line.lstrip().startswith("at "):
            break
        block.append(line.rstrip())
    return "\n".join(block)


def outcome_words(result: ScenarioResult) -> str:
    """The outcome of a run across a change in a few words, for the line a scenario's verdict prints;
    "" when the result is not of one."""
    record = result.upgrade
    if not record or not record.get("outcome"):
        return ""
    previous, outcome = record["previous"], record["outcome"]
    if outcome == RESTARTS:
        return f"restarts from the checkpoint of {previous} and matches the scenario"
    if outcome == DIFFERS:
        return f"restarts from the checkpoint of {previous}, but its outputs differ after the restart"
    if outcome == CANNOT_RESTART:
        what = record.get("error_class") or record.get("exception")
        named = f": {what}" if what else ""
        return f"cannot restart from the checkpoint of {previous}{named}"
    if record.get("across") == "spark":
        return f"its steps before the restart do not hold on the earlier side, {previous}"
    return f"the scenario does not describe the previous version {previous}"
