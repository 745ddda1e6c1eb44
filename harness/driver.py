"""The Spark side of the step driver: a scenario's start/add/process/advance/stop on a query run and its sources.

`QueryDriver` has the methods of the kit's step-driver protocol (`eventtime.drive.Driver`), which the
step interpreter calls; the run is a `stream.StreamRun` (classic) or a `connect.ConnectStreamRun`
(Spark Connect), the sources their MemorySource or ConnectSource.
"""
from __future__ import annotations

from typing import Any, Mapping, MutableMapping, Sequence

from .observations import BatchObservation

__all__ = ["QueryDriver"]


class QueryDriver:
    """Drives one query run. `sources` is the mapping the query's build reads at each start: a start
    in a new session replaces its entries with the same sources replayed there."""

    def __init__(self, run: Any, sources: MutableMapping[str, Any]):
        self.run = run
        self.sources = sources

    def start(self, conf: Mapping[str, str], *, new_session: bool = False) -> list[BatchObservation]:
        if new_session:
            from .session import other_session

            spark = other_session(self.run.spark)
            for name in list(self.sources):
                self.sources[name] = self.sources[name].replayed_in(spark)
            self.run.move_to(spark)
        return list(self.run.start(conf))

    def add(self, source: str, rows: Sequence[Sequence[Any]], partitions: Sequence[Sequence[Sequence[Any]]] | None
            ) -> None:
        if partitions is None:
            self.sources[source].add(rows)
        else:
            self.sources[source].add_partitions(partitions)

    def process(self) -> list[BatchObservation]:
        return list(self.run.process())

    def advance(self, ms: int) -> list[BatchObservation]:
        if self.run.running:
            return list(self.run.advance(ms))
        self.run.advance_stopped(ms)
        return []

    def stop(self) -> None:
        self.run.stop()

    def uncommit_last(self) -> None:
        """The last data batch runs again at the next start; a MemoryStream drops what a query committed,
        so the sources are replayed (every add re-added, same offsets) for it to read its input again."""
        self.run.uncommit_last()
        for name in list(self.sources):
            self.sources[name] = self.sources[name].replayed_in(self.run.spark)
