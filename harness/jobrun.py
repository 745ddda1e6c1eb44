"""The streaming queries of one job run as one: on one clock time, started, stopped and stepped together.

A job's `main` may start several queries (a medallion job: raw records to bronze, valid ones to silver,
aggregates to gold, alerts to a topic). `QueryGroup` runs them as production does, on the kit's terms:
- `start` starts every query in the order the job started them; `stop` stops them all;
- `process` runs each query's triggers in that order; when a query reads what another writes (`chained`),
  it goes round again while any query ran a batch, so that the reader gets it in the same step;
- `advance` moves every query's manual clock by the same time and runs each one's trigger that came due;
- `uncommit_last` makes each query's last data batch run again at the next start (a crash of the job
  between those batches' writes and their commits);
- `start`, `stop` and `uncommit_last` take `only=NAME` for one query; `process` and `advance` then run
  the queries still running (a stopped one's clock moves all the same).
Each query has its own checkpoint, sink and sources: a MemoryStream drops what its reader committed, so
two queries cannot share one (`SourceCopies` gives each query its own copy of every scenario source,
each add going to all of them). Each batch it observes is tagged with its query's name.

It has the methods of a single `stream.StreamRun` that `driver.QueryDriver` calls, so the step driver
needs no second path.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from .observations import BatchObservation
from .stream import HarnessError, MemorySource, QueryFailed, StreamRun, apply_conf, restore_conf

__all__ = ["QueryGroup", "SourceCopies", "MAX_PASSES"]

# `process` goes round the queries while any of them ran a batch: a chain of N queries settles in N
# rounds, so this bound is only ever met by queries that feed each other in a loop.
MAX_PASSES = 100


class SourceCopies:
    """One scenario source read by several queries: a MemoryStream of its own for each query, each given
    every add in the same order (so each copy has the same offsets)."""

    def __init__(self, first: MemorySource):
        self.copies: list[MemorySource] = [first]

    @property
    def spark(self) -> Any:
        return self.copies[0].spark

    @property
    def name(self) -> str:
        return self.copies[0].name

    def copy(self, index: int) -> MemorySource:
        """Query `index`'s copy, made (with every add so far) on first use."""
        while len(self.copies) <= index:
            self.copies.append(self.copies[0].replayed_in(self.copies[0].spark))
        return self.copies[index]

    def dataframe(self) -> Any:
        return self.copies[0].dataframe()

    def add(self, rows: Sequence[Sequence[Any]]) -> None:
        for c in self.copies:
            c.add(rows)

    def add_partitions(self, parts: Sequence[Sequence[Sequence[Any]]]) -> None:
        for c in self.copies:
            c.add_partitions(parts)

    def restart_empty(self, index: int) -> None:
        """Query `index`'s copy made anew with nothing in it: a query that starts on a new checkpoint and
        reads Kafka from `latest` reads none of what was added before it started."""
        if index < len(self.copies):
            old = self.copies[index]
            self.copies[index] = MemorySource(old.spark, old.name, old.columns, old.num_partitions)

    def replay(self, index: int) -> None:
        """Query `index`'s copy made anew with every add so far, for it alone to read its input again."""
        if index < len(self.copies):
            self.copies[index] = self.copies[index].replayed_in(self.copies[index].spark)

    def replayed_in(self, spark: Any) -> "SourceCopies":
        out = SourceCopies(self.copies[0].replayed_in(spark))
        out.copies += [c.replayed_in(spark) for c in self.copies[1:]]
        return out


class QueryGroup:
    """A job's queries as one run. `discover()` says which queries the job starts (their names, in the
    order it starts them), called at the first start; `make_run(index, name, spark)` makes the StreamRun
    of one of them (its build calls the job and takes its `index`-th query)."""

    def __init__(self, spark: Any, discover: Callable[[], Sequence[str]],
                 make_run: Callable[[int, str, Any], StreamRun], *, checkpoint: str,
                 chained: Callable[[], bool] = lambda: True, anew: Callable[[int], bool] = lambda index: False):
        self.spark = spark
        self.checkpoint = checkpoint  # the folder holding each query's checkpoint
        self._discover, self._make_run = discover, make_run
        self._chained = chained  # whether a query reads what another writes (else one round is enough)
        # called before query `index` starts again: True when it starts anew, on a new checkpoint (a query
        # with no checkpoint location, which Spark gives a new temporary one at every start); the callable
        # has then given it its sources as such a start reads them
        self._anew = anew
        self.query_runs: dict[str, StreamRun] = {}  # query name -> its run, in the order the job starts them
        # what an earlier run of the same queries in the same folder did (a run across Spark lines, whose
        # steps before the restart ran in another process): query -> (its batches, its starts), given to
        # each query's run when it is made at the restart, with its last batch forgotten first if asked
        self.handed_over: dict[str, tuple[list[BatchObservation], int]] = {}
        self._uncommit_at_start = False

    @property
    def names(self) -> list[str]:
        return list(self.query_runs)

    def query(self, name: str) -> StreamRun:
        if name not in self.query_runs:
            import difflib

            close = difflib.get_close_matches(name, list(self.query_runs), n=1)
            raise HarnessError(f"the job started no query named {name!r}"
                               + (f" (did you mean {close[0]!r}?)" if close else "") + "; it started "
                               f"{', '.join(map(repr, self.query_runs))} (a query is known by its queryName, else the "
                               "path, table or topic it writes)")
        return self.query_runs[name]

    @property
    def now_ms(self) -> int | None:
        """Processing time on the queries' clocks (each query has its own, all moved alike)."""
        return next(iter(self.query_runs.values())).clock.now_ms if self.query_runs else None

    @property
    def running(self) -> bool:
        return any(r.running for r in self.query_runs.values())

    @property
    def history(self) -> dict[int, BatchObservation]:
        """The batches of the only query (a group of one is a single query); {} with several, whose
        batch ids each count from 0: ask `query(name).history`."""
        return next(iter(self.query_runs.values())).history if len(self.query_runs) == 1 else {}

    @property
    def earlier(self) -> list[BatchObservation]:
        """The only query's batches of its checkpoints before the current one (`StreamRun.new_checkpoint`)."""
        return next(iter(self.query_runs.values())).earlier if len(self.query_runs) == 1 else []

    def start(self, conf: Mapping[str, str] | None = None, *, only: str | None = None) -> list[BatchObservation]:
        """Start every query (or the one named `only`), in the order the job started them."""
        if only is not None:
            run = self.query(only)
            self._renew(list(self.query_runs).index(only), run)
            return self._each(only, lambda: run.start(conf))
        if not self.query_runs:  # the job is called with the settings each query is built with
            previous = apply_conf(self.spark, conf or {})
            try:
                names = list(self._discover())
            finally:
                restore_conf(self.spark, previous)
            self.query_runs = {name: self._make_run(i, name, self.spark) for i, name in enumerate(names)}
            for name, run in self.query_runs.items():
                if name in self.handed_over:
                    batches, starts = self.handed_over[name]
                    run.history.update({b.batch_id: b for b in batches})
                    run.runs = starts
            if self._uncommit_at_start:
                self._uncommit_at_start = False
                self.uncommit_last()
        out: list[BatchObservation] = []
        for index, (name, run) in enumerate(self.query_runs.items()):
            self._renew(index, run)
            out += self._each(name, lambda r=run: r.start(conf))  # type: ignore[misc]
        return out

    def _renew(self, index: int, run: StreamRun) -> None:
        """A query started again that has no checkpoint location of its own starts on a new checkpoint."""
        if run.runs and not run.running and self._anew(index):
            run.new_checkpoint()

    def process(self) -> list[BatchObservation]:
        out: list[BatchObservation] = []
        for _ in range(MAX_PASSES):
            ran: list[BatchObservation] = []
            for name, run in self.query_runs.items():
                if run.running:  # a query stopped on its own (`stop: {query: ...}`) runs nothing
                    ran += self._each(name, run.process)
            out += ran
            if not ran or not self._chained():  # queries that read only the scenario's sources are done
                return out
        raise HarnessError(f"process went round the job's {len(self.query_runs)} queries {MAX_PASSES} times and they still "
                           "had work: do they feed each other in a loop?")

    def advance(self, ms: int) -> list[BatchObservation]:
        out: list[BatchObservation] = []
        for name, run in self.query_runs.items():
            if run.running:
                out += self._each(name, lambda r=run: r.advance(ms))  # type: ignore[misc]
            else:  # stopped on its own: its clock moves all the same
                run.advance_stopped(ms)
        return out

    def advance_stopped(self, ms: int) -> None:
        for run in self.query_runs.values():
            run.advance_stopped(ms)

    def stop(self, *, only: str | None = None) -> None:
        """Stop every query (or the one named `only`); the first error is raised once all were asked."""
        if only is not None:
            self.query(only).stop()
            return
        self._all(lambda r: r.stop())

    def close(self) -> None:
        self._all(lambda r: r.close())

    def uncommit_last(self, *, only: str | None = None) -> None:
        """Each query (or the one named `only`) that has committed a data batch runs its last one again
        at the next start."""
        if only is not None:
            self.query(only).uncommit_last()
            return
        if not self.query_runs and self.handed_over:  # made at the next start, from the earlier run's checkpoints
            self._uncommit_at_start = True
            return
        done = 0
        for run in self.query_runs.values():
            try:
                run.uncommit_last()
                done += 1
            except HarnessError:
                continue  # this query read nothing yet: it has no batch to run again
        if not done:
            raise HarnessError("no query of the job has read data and committed yet, so none can run again")

    def move_to(self, spark: Any) -> None:
        for run in self.query_runs.values():
            run.move_to(spark)
        self.spark = spark

    def _all(self, action: Callable[[StreamRun], None]) -> None:
        first: BaseException | None = None
        for run in self.query_runs.values():
            try:
                action(run)
            except Exception as exc:  # noqa: BLE001 - raised below, once every query was asked
                first = first or exc
        if first is not None:
            raise first

    def _each(self, name: str, action: Callable[[], list[BatchObservation]]) -> list[BatchObservation]:
        """One query's action, its batches tagged with its name; a failure says which query failed."""
        try:
            batches = action()
        except QueryFailed as exc:
            exc.query = name
            exc.args = (f"query {name!r}: {exc}",)
            raise
        except HarnessError as exc:
            raise type(exc)(f"query {name!r}: {exc}") from exc
        except Exception as exc:  # Spark's own error at the query's start, its pipeline's: the verdict names the query
            if getattr(exc, "eventtime_query", None) is None:
                try:
                    exc.eventtime_query = name  # type: ignore[attr-defined]
                except AttributeError:  # an exception without a __dict__
                    pass
            raise
        return [replace(b, query=name) for b in batches]
