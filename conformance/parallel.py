"""Runs scenario × implementation pairs several at a time in one JVM; results come back in the order given.

Each worker thread runs its pairs on its own isolated SparkSession (`eventtime.harness.isolation`): one
SparkContext, separate SQL conf and streaming query manager per thread. With `jobs=1` the pairs run
one after another in the calling thread on the session given, exactly as a serial loop would.
Results are yielded in the order of the pairs, each as soon as it and every pair before it are
done, so a caller prints the same lines in the same order as a serial run.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from . import spec as m
from .results import DRIVER_DIED, ScenarioResult

__all__ = ["Pair", "Recovery", "Sessions", "run_pairs", "parse_jobs", "observable", "suite_pairs", "MAX_JOBS"]

MAX_JOBS = 16  # queries at once in one JVM; beyond a few per core they only wait on each other


@dataclass(frozen=True)
class Pair:
    """One scenario run against one implementation (a `module:function` or a callable)."""

    scenario: m.Scenario
    implementation: Any
    rerun: str | None = None


def parse_jobs(text: str | int) -> int:
    """A `--jobs` value: a whole number from 1 to MAX_JOBS; raises ValueError saying what is accepted."""
    try:
        jobs = int(str(text).strip())
    except ValueError:
        raise ValueError(f"--jobs takes a whole number from 1 to {MAX_JOBS}, got {text!r}") from None
    if not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"--jobs takes a whole number from 1 to {MAX_JOBS}, got {jobs}")
    return jobs


def suite_pairs(scenarios: Iterable[m.Scenario]) -> list[Pair]:
    """Every scenario against every bundled implementation of its contract, in the suite's order."""
    return [Pair(sc, impl) for sc in scenarios for impl in sc.contract.implementations]


Runner = Callable[..., ScenarioResult]


class Sessions(Protocol):
    """How worker threads get their sessions (`eventtime.harness.isolation` on Spark; stand-ins in tests)."""

    def isolated(self, base: Any) -> Any:
        """A session of its own for one worker thread, on `base`'s SparkContext."""

    def activate(self, session: Any) -> None:
        """Make `session` the active one for the calling thread."""


class _SparkSessions:
    def isolated(self, base: Any) -> Any:
        from eventtime.harness.isolation import isolated_session

        return isolated_session(base)

    def activate(self, session: Any) -> None:
        from eventtime.harness.isolation import activate

        activate(session)


class _NotStarted(Exception):
    """A pair a worker did not start because the driver had died: it goes to the next round."""


@dataclass
class Recovery:
    """What `run_pairs` does when the Spark driver dies under it.

    After a death it asks `fresh()` for a new base session (a new JVM) and goes on with the pairs
    not run yet, until `limit` driver sessions in a row died before a single pair completed on them:
    then it gives up, and the pairs left are in `not_run` with the reason in `gave_up`. `limit=0`
    means no recovery: the first death ends the run. Results of the pairs that were running when
    the driver died are yielded as they are (an `error` with cause DRIVER_DIED)."""

    fresh: Callable[[], Any] | None = None
    limit: int = 3
    deaths: int = 0  # driver deaths seen in all
    in_a_row: int = 0  # sessions in a row that died before a pair completed on them
    not_run: list[Pair] = field(default_factory=list)
    gave_up: str | None = None

    def died(self, completed_on_session: bool, result: ScenarioResult, left: Sequence[Pair]) -> bool:
        """Note a death; True when the run goes on (and `fresh()` should be called)."""
        self.deaths += 1
        self.in_a_row = 1 if completed_on_session else self.in_a_row + 1
        if self.fresh is not None and self.in_a_row < self.limit:
            return True
        if not left:
            return False
        self.not_run = list(left)
        first = (result.reason or "").splitlines()[0]
        if self.fresh is None or self.limit <= 0:
            self.gave_up = f"the Spark driver died and this run does not recover ({first})"
        else:
            self.gave_up = (f"the Spark driver died {self.in_a_row} times in a row without a "
                            f"scenario completing in between (last: {first})")
        return False


def _died(result: ScenarioResult) -> bool:
    return getattr(result, "cause", None) == DRIVER_DIED  # a stand-in runner's results may lack it


class _Round:
    """The worker side of one round of `run_pairs`: the pairs run on sessions of one driver."""

    def __init__(self, base: Any, sessions: Sessions, runner: Runner, kwargs: Mapping[str, Any]):
        self.base, self.sessions, self.runner, self.kwargs = base, sessions, runner, kwargs
        self.dead = threading.Event()  # a pair saw the driver die: start no more on it
        self.local = threading.local()

    def session(self) -> Any:
        if getattr(self.local, "session", None) is None:
            self.local.session = self.sessions.isolated(self.base)
        self.sessions.activate(self.local.session)  # PySpark's "active session" is shared by all Python threads
        return self.local.session

    def run(self, pair: Pair) -> ScenarioResult:
        if self.dead.is_set():
            raise _NotStarted()
        result = self.runner(pair.scenario, pair.implementation, session=self.session(), rerun=pair.rerun,
                             **self.kwargs)
        if _died(result):
            self.dead.set()
        return result


def run_pairs(pairs: Sequence[Pair], *, jobs: int = 1, session: Any = None, timeout: float | None = None,
              conf: Mapping[str, str] | None = None, runner: Runner | None = None,
              sessions: Sessions | None = None, recovery: Recovery | None = None) -> Iterator[ScenarioResult]:
    """Run every pair, `jobs` at a time, and yield the results in the order of `pairs`.

    `runner` (default `eventtime.runner.run_scenario`) and `sessions` (default: isolated
    sessions from `eventtime.harness.isolation`) are what each worker uses; tests pass stand-ins.
    Stopping the iteration early cancels the pairs not yet started and waits for those running
    (each bounded by `timeout` per wait on Spark). When the driver dies, `recovery` says whether
    and how the run goes on (default: it does not; the pairs left are then in `recovery.not_run`).
    """
    jobs = parse_jobs(jobs)
    if runner is None:
        from .runner import run_scenario

        runner = run_scenario
    recovery = recovery if recovery is not None else Recovery(limit=0)
    kwargs: dict[str, Any] = {"conf": conf}
    if timeout is not None:
        kwargs["timeout"] = timeout

    if jobs == 1 or len(pairs) <= 1:
        yield from _one_at_a_time(pairs, runner, session, kwargs, recovery)
    else:
        yield from _in_rounds(pairs, jobs, runner, session, sessions, kwargs, recovery)


def _one_at_a_time(pairs: Sequence[Pair], runner: Runner, session: Any, kwargs: dict[str, Any],
                   recovery: Recovery) -> Iterator[ScenarioResult]:
    """`jobs` 1: each pair in turn on `session`; after a driver death, on the session `recovery` gives."""
    completed = False
    for i, pair in enumerate(pairs):
        result = runner(pair.scenario, pair.implementation, session=session, rerun=pair.rerun, **kwargs)
        yield result
        if not _died(result):
            completed = True
            continue
        if not recovery.died(completed, result, pairs[i + 1:]):
            return
        session, completed = recovery.fresh() if recovery.fresh else session, False


def _in_rounds(pairs: Sequence[Pair], jobs: int, runner: Runner, session: Any, sessions: Sessions | None,
               kwargs: dict[str, Any], recovery: Recovery) -> Iterator[ScenarioResult]:
    """`jobs` at a time on isolated sessions of one driver, in rounds: a driver death ends the round,
    and the pairs it did not start go to the next round, on the driver `recovery` gives."""
    if session is None:
        from eventtime.harness.session import get_session

        session = get_session()
    pool_sessions: Sessions = sessions or _SparkSessions()
    left = list(pairs)
    while left:
        round_pairs, left = left, []
        worker = _Round(session, pool_sessions, runner, kwargs)
        pool = ThreadPoolExecutor(max_workers=min(jobs, len(round_pairs)), thread_name_prefix="eventtime-job")
        completed, death = False, None
        try:
            futures: list[Future[ScenarioResult]] = [pool.submit(worker.run, pair) for pair in round_pairs]
            for pair, future in zip(round_pairs, futures):
                if death is not None and future.cancel():
                    left.append(pair)
                    continue
                try:
                    result = future.result()
                except _NotStarted:
                    left.append(pair)
                    continue
                yield result
                if _died(result):
                    if death is None:
                        death = result
                        for later in futures:
                            later.cancel()
                else:
                    completed = True
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if death is None:  # get_session() returns the caller's session again (a dead one: no)
                pool_sessions.activate(session)
        if death is None:
            return
        if not recovery.died(completed, death, left):
            return
        session = recovery.fresh() if recovery.fresh else session
        pool_sessions.activate(session)


# Keys whose values are timings or where the run came from, not what Spark did.
_UNOBSERVED = frozenset({"seconds", "duration_ms", "rerun", "runtime", "definition", "started_at",
                         "finished_at"})


def observable(record: Mapping[str, Any]) -> Any:
    """A result record (`resultsfile.result_record` or `ScenarioResult.to_dict()`) without its timings:
    verdicts, step statuses and messages, and every batch observation (rows sorted, as the judge
    compares them as a multiset unless a scenario asks for order). Equal for equal runs."""

    def strip(value: Any, key: str = "") -> Any:
        if isinstance(value, Mapping):
            return {k: strip(v, k) for k, v in value.items() if k not in _UNOBSERVED}
        if isinstance(value, list):
            items = [strip(v) for v in value]
            return sorted(items, key=repr) if key == "rows" else items
        return value

    return strip(record)
