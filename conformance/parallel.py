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
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from . import model as m
from .results import ScenarioResult

__all__ = ["Pair", "Sessions", "run_pairs", "parse_jobs", "observable", "suite_pairs", "MAX_JOBS"]

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


def run_pairs(pairs: Sequence[Pair], *, jobs: int = 1, session: Any = None, timeout: float | None = None,
              conf: Mapping[str, str] | None = None, runner: Runner | None = None,
              sessions: Sessions | None = None) -> Iterator[ScenarioResult]:
    """Run every pair, `jobs` at a time, and yield the results in the order of `pairs`.

    `runner` (default `eventtime.runner.run_scenario`) and `sessions` (default: isolated
    sessions from `eventtime.harness.isolation`) are what each worker uses; tests pass stand-ins.
    Stopping the iteration early cancels the pairs not yet started and waits for those running
    (each bounded by `timeout` per wait on Spark).
    """
    jobs = parse_jobs(jobs)
    if runner is None:
        from .runner import run_scenario

        runner = run_scenario
    kwargs: dict[str, Any] = {"conf": conf}
    if timeout is not None:
        kwargs["timeout"] = timeout

    if jobs == 1 or len(pairs) <= 1:
        for pair in pairs:
            yield runner(pair.scenario, pair.implementation, session=session, rerun=pair.rerun, **kwargs)
        return

    if session is None:
        from eventtime.harness.session import get_session

        session = get_session()
    pool_sessions: Sessions = sessions or _SparkSessions()
    local = threading.local()

    def worker_session() -> Any:
        if getattr(local, "session", None) is None:
            local.session = pool_sessions.isolated(session)
        pool_sessions.activate(local.session)  # PySpark's "active session" is shared by all Python threads
        return local.session

    def run(pair: Pair) -> ScenarioResult:
        return runner(pair.scenario, pair.implementation, session=worker_session(), rerun=pair.rerun, **kwargs)

    pool = ThreadPoolExecutor(max_workers=min(jobs, len(pairs)), thread_name_prefix="eventtime-job")
    try:
        futures: list[Future[ScenarioResult]] = [pool.submit(run, pair) for pair in pairs]
        for future in futures:
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        pool_sessions.activate(session)  # get_session() returns the caller's session again


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
