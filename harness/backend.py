"""The one seam between classic Spark and Spark Connect for running a scenario: what a source and a
query run offer (`Source`, `QueryRun`: the methods `MemorySource`/`ConnectSource` and
`StreamRun`/`ConnectStreamRun` share), and the `Backend` that makes them for one scenario's run,
chosen once from the session (`backend_for`: compat's feature detection, `SparkCompat.connect`).

A classic session drives a query in this process's JVM on the manual clock; over Spark Connect the
rows are staged on the server and there is no clock (`advance` raises HarnessError), no second
session and no checkpoint on this machine: which scenarios can run there is the runner's
applicability, not this seam's."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from .observations import BatchObservation

__all__ = ["Source", "QueryRun", "Backend", "backend_for"]

Columns = Sequence[tuple[str, str]]  # (name, Spark SQL type)


class Source(Protocol):
    """A scenario's input stream: rows added between triggers, read as one streaming DataFrame."""

    name: str

    def dataframe(self) -> Any: ...

    def add(self, given: Sequence[Sequence[Any]]) -> None: ...

    def add_partitions(self, parts: Sequence[Sequence[Sequence[Any]]]) -> None: ...

    def replayed_in(self, spark: Any) -> Any: ...


class QueryRun(Protocol):
    """One query over its lifetime: start (or restart from its checkpoint), trigger, stop, observe."""

    spark: Any
    checkpoint: str
    history: dict[int, BatchObservation]
    runs: int

    @property
    def running(self) -> bool: ...

    @property
    def output_columns(self) -> list[tuple[str, str]]: ...

    def start(self, conf: Mapping[str, str] | None = None) -> list[BatchObservation]: ...

    def process(self) -> list[BatchObservation]: ...

    def advance(self, ms: int) -> list[BatchObservation]: ...

    def advance_stopped(self, ms: int) -> None: ...

    def move_to(self, spark: Any) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


class Backend(Protocol):
    """Makes the sources and query runs of one scenario's run on one kind of session."""

    def runtime(self) -> dict[str, str]:
        """What the session runs on, for the results: versions and master."""
        ...

    def prepare(self) -> str | None:
        """Make the session ready for the next scenario; a note for its results when something was mended."""
        ...

    def source(self, name: str, columns: Columns) -> Source: ...

    def query_run(self, session: Any, build: Callable[[], tuple[Any, ...]], *, checkpoint: str, clock_start_ms: int,
                  trigger_ms: int | None, timeout: float) -> QueryRun: ...


class _Classic:
    """A session with its JVM reached through py4j: MemoryStream sources, StreamRun on the manual clock."""

    def __init__(self, spark: Any):
        self.spark = spark

    def runtime(self) -> dict[str, str]:
        from .session import runtime_info

        return runtime_info(self.spark)

    def prepare(self) -> str | None:
        from .session import revive_callback_server

        if revive_callback_server(self.spark):
            return "py4j's callback server had stopped; it was started again before this scenario"
        return None

    def source(self, name: str, columns: Columns) -> Source:
        from .stream import MemorySource

        return MemorySource(self.spark, name, columns)

    def query_run(self, session: Any, build: Callable[[], tuple[Any, ...]], *, checkpoint: str, clock_start_ms: int,
                  trigger_ms: int | None, timeout: float) -> QueryRun:
        from .stream import StreamRun

        return StreamRun(session, build, checkpoint=checkpoint, clock_start_ms=clock_start_ms, trigger_ms=trigger_ms,
                         timeout=timeout, name=None)


class _Connect:
    """A Spark Connect session: rows staged on the server for each run (its own staging folder, its own
    checkpoint there), ConnectStreamRun without a clock."""

    def __init__(self, spark: Any):
        self.spark = spark
        self._staging: Any = None

    @property
    def staging(self) -> Any:
        """Made at the first source: a scenario that does not run here stages nothing."""
        if self._staging is None:
            from .connect import ConnectStaging

            self._staging = ConnectStaging(self.spark)
        return self._staging

    def runtime(self) -> dict[str, str]:
        import pyspark

        return {"spark_version": self.spark.version, "pyspark_version": pyspark.__version__,
                "master": "spark connect (client has no JVM)"}

    def prepare(self) -> str | None:
        return None  # no py4j callback server to mend

    def source(self, name: str, columns: Columns) -> Source:
        from .connect import ConnectSource

        return ConnectSource(self.staging, name, columns)

    def query_run(self, session: Any, build: Callable[[], tuple[Any, ...]], *, checkpoint: str, clock_start_ms: int,
                  trigger_ms: int | None, timeout: float) -> QueryRun:
        from .connect import ConnectStreamRun

        return ConnectStreamRun(session, build, self.staging, timeout=timeout)  # its checkpoint is the staging's


def backend_for(spark: Any) -> Backend:
    """The backend of one scenario's run on `spark`: Connect or classic, as the session is."""
    from .compat import compat_for

    return _Connect(spark) if compat_for(spark).connect else _Classic(spark)


if TYPE_CHECKING:  # mypy (./dev lint) checks that each implementation meets its protocol
    from .connect import ConnectSource, ConnectStreamRun
    from .stream import MemorySource, StreamRun

    def _implementations(classic: StreamRun, connect: ConnectStreamRun, memory: MemorySource,
                         staged: ConnectSource) -> tuple[QueryRun, QueryRun, Source, Source]:
        return classic, connect, memory, staged
