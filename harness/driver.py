"""The Spark side of the step driver: a scenario's start/add/process/advance/stop on a query run and its sources.

`QueryDriver` has the methods of the kit's step-driver protocol (`eventtime.drive.Driver`), which the
step interpreter calls; the run is a `stream.StreamRun` (classic) or a `connect.ConnectStreamRun`
(Spark Connect), the sources their MemorySource or ConnectSource.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, MutableMapping, Sequence

from .observations import BatchObservation

__all__ = ["QueryDriver"]


class QueryDriver:
    """Drives one query run. `sources` is the mapping the query's build reads at each start: a start
    in a new session replaces its entries with the same sources replayed there."""

    def __init__(self, run: Any, sources: MutableMapping[str, Any],
                 statics: Mapping[str, tuple[Any, Sequence[Sequence[Any]]]] | None = None,
                 on_new_session: Callable[[Any], None] | None = None):
        self.run = run
        self.sources = sources
        self.on_new_session = on_new_session  # what a new session needs before the query is built in it
        # static input name -> (its `statics.StaticInput`, the rows it holds when the query first starts)
        self.statics = dict(statics or {})
        self._started = False

    def _only(self, query: str | None) -> dict[str, str]:
        """`only=query` for a run of several queries (a job's `QueryGroup`); {} when no query is named."""
        if query is None:
            return {}
        if not hasattr(self.run, "query_runs"):  # a single query's run (`StreamRun.runs` counts its starts)
            from .stream import HarnessError

            raise HarnessError(f"`query: {query}` names one query of a job that starts several; this pipeline "
                               "runs one query")
        return {"only": query}

    def start(self, conf: Mapping[str, str], *, new_session: bool = False, query: str | None = None
              ) -> list[BatchObservation]:
        if query is not None:
            return list(self.run.start(conf, **self._only(query)))
        self.write_statics()
        if new_session:
            from .session import other_session

            spark = other_session(self.run.spark)
            if self.on_new_session is not None:
                self.on_new_session(spark)
            for name in list(self.sources):
                self.sources[name] = self.sources[name].replayed_in(spark)
            self.run.move_to(spark)
        return list(self.run.start(conf))

    def write_statics(self) -> None:
        """The static inputs written with their first rows, once: they are there before the job first
        reads them (at the first start)."""
        if not self._started:
            for static, rows in self.statics.values():
                static.replace(rows)
            self._started = True

    def add(self, source: str, rows: Sequence[Sequence[Any]], partitions: Sequence[Sequence[Sequence[Any]]] | None
            ) -> None:
        if partitions is None:
            self.sources[source].add(rows)
        else:
            self.sources[source].add_partitions(partitions)

    def replace_static(self, name: str, rows: Sequence[Sequence[Any]]) -> None:
        self.statics[name][0].replace(rows)

    def process(self) -> list[BatchObservation]:
        return list(self.run.process())

    def advance(self, ms: int) -> list[BatchObservation]:
        if self.run.running:
            return list(self.run.advance(ms))
        self.run.advance_stopped(ms)
        return []

    def stop(self, query: str | None = None) -> None:
        self.run.stop(**self._only(query))

    def uncommit_last(self, query: str | None = None) -> None:
        """The last data batch runs again at the next start; a MemoryStream drops what a query committed,
        so the sources are replayed (every add re-added, same offsets) for it to read its input again."""
        self.run.uncommit_last(**self._only(query))
        if query is not None:  # that query alone reads its input again; the others read on from theirs
            index = list(self.run.query_runs).index(query)
            for source in self.sources.values():
                source.replay(index)
            return
        for name in list(self.sources):
            self.sources[name] = self.sources[name].replayed_in(self.run.spark)
