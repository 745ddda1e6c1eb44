"""A Spark Declarative Pipeline's spec and definition files, loaded as `spark-pipelines run` loads them.

The spec is read by PySpark's own `pyspark.pipelines.cli.load_pipeline_spec` and the definition files
are found and run by its own `register_definitions` (same globs, same order, same `spark` global, same
`block_session_mutations`), so what the kit loads is what the command loads, unchanged. The kit only
supplies the registry that the definitions' decorators call: `RecordingRegistry` records every dataset
and flow with the `file:line` PySpark gives it, and forwards each call to a real registry when it is
given one (`SparkConnectGraphElementRegistry` of a Connect session, for a run).

Without a real registry nothing reaches Spark and no flow function is called (PySpark's Connect registry
calls it when the flow is registered; the recording registry does not), so a pipeline's datasets can be
listed and a scenario's names checked with no JVM. SQL definition files are parsed by the server
(`DefineSqlGraphElements`), so without one their datasets are not known: they are recorded as files.
The API exists from Spark 4.1 (`pyspark.pipelines`); `available()` says whether this pyspark has it.
See docs/pipelines.md (a draft: no scenario runs against a pipeline yet).
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .errors import EventtimeError
from .jobio import Place

__all__ = ["SPEC_FILE_NAMES", "Dataset", "FlowDef", "PipelineGraph", "PipelineLoadError", "RecordingRegistry",
           "available", "find_spec", "load_graph", "load_spec"]

_HERE = os.path.abspath(__file__)
# pyspark.pipelines.cli.PIPELINE_SPEC_FILE_NAMES, kept here so a folder can be resolved without it.
SPEC_FILE_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")


class PipelineLoadError(EventtimeError):
    """A pipeline's spec or definition files could not be loaded; the message names the file (and line)."""


def available() -> bool:
    """Whether this pyspark ships Spark Declarative Pipelines (4.1 and later)."""
    try:
        return importlib.util.find_spec("pyspark.pipelines") is not None
    except ModuleNotFoundError:  # no pyspark at all (find_spec imports the parent package)
        return False


@dataclass(frozen=True)
class Dataset:
    """A dataset a pipeline defines: `streaming_table`, `materialized_view`, `temporary_view` or `sink`."""

    name: str
    kind: str
    place: Place


@dataclass(frozen=True)
class FlowDef:
    """A flow writing `target`; `kind` is `flow` (a query function) or `auto_cdc`."""

    name: str
    target: str
    kind: str
    place: Place


@dataclass
class PipelineGraph:
    """What a pipeline's definition files register, in registration order."""

    spec_path: Path
    name: str
    storage: str
    datasets: dict[str, Dataset] = field(default_factory=dict)
    flows: list[FlowDef] = field(default_factory=list)
    sql_files: list[Path] = field(default_factory=list)  # parsed by the server; their datasets unknown here


def _place(location: Any) -> Place:
    return Place(str(location.filename), int(location.line_number or 0))


def _kind(output: Any) -> str:
    from pyspark.pipelines import output as out
    # MaterializedView and StreamingTable are both `Table`s: test the specific classes first.
    for cls, kind in ((out.MaterializedView, "materialized_view"), (out.StreamingTable, "streaming_table"),
                      (out.TemporaryView, "temporary_view"), (out.Sink, "sink")):
        if isinstance(output, cls):
            return kind
    return type(output).__name__


def _registry_base() -> type:
    from pyspark.pipelines.graph_element_registry import GraphElementRegistry
    return GraphElementRegistry


def RecordingRegistry(graph: PipelineGraph, inner: Any = None) -> Any:  # noqa: N802 - a class factory
    """A `GraphElementRegistry` that records into `graph` and forwards to `inner` when given. Built on
    first use so that importing this module needs no `pyspark.pipelines` (absent before Spark 4.1)."""

    class _Recording(_registry_base()):  # type: ignore[misc]
        def register_output(self, output: Any) -> None:
            place = _place(output.source_code_location)
            seen = graph.datasets.get(output.name)
            if seen is not None:
                raise PipelineLoadError(f"{place}: dataset {output.name!r} is defined twice (first at {seen.place})")
            graph.datasets[output.name] = Dataset(output.name, _kind(output), place)
            if inner is not None:
                inner.register_output(output)

        def register_flow(self, flow: Any) -> None:
            graph.flows.append(FlowDef(flow.name, flow.target, "flow", _place(flow.source_code_location)))
            if inner is not None:
                inner.register_flow(flow)

        def register_auto_cdc_flow(self, flow: Any) -> None:
            name = flow.name if flow.name is not None else flow.target
            graph.flows.append(FlowDef(name, flow.target, "auto_cdc", _place(flow.source_code_location)))
            if inner is not None:
                inner.register_auto_cdc_flow(flow)

        def register_sql(self, sql_text: str, file_path: Path) -> None:
            graph.sql_files.append(Path(file_path))
            if inner is not None:
                inner.register_sql(sql_text, file_path)

    return _Recording()


def find_spec(path: str | Path) -> Path:
    """The spec a binding names: the file itself, or the one spec file in the folder (not its ancestors:
    a binding names its pipeline, where `spark-pipelines run` searches upwards from where it is run)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        found = [p / n for n in SPEC_FILE_NAMES if (p / n).is_file()]
        if len(found) == 1:
            return found[0]
        if found:
            raise PipelineLoadError(f"{p}: holds both {' and '.join(SPEC_FILE_NAMES)}; name one of them")
        raise PipelineLoadError(f"{p}: no pipeline spec here (looked for {' or '.join(SPEC_FILE_NAMES)})")
    raise PipelineLoadError(f"{p}: no such pipeline spec file or folder")


class _NoSession:
    """The `spark` a definition file's module-level code sees when the graph is loaded without a session.
    PySpark's loader needs only `client.add/remove_user_context_extension` of it; anything else is an
    error at the definition's line."""

    class _Client:
        def add_threadlocal_user_context_extension(self, extension: Any) -> str:
            return "eventtime-recording"

        def remove_user_context_extension(self, extension_id: str) -> None:
            return None

    client = _Client()

    def __getattr__(self, name: str) -> Any:
        from .jobio import caller_place
        place = caller_place(skip=lambda name: os.path.abspath(name) == _HERE)
        raise PipelineLoadError(f"{place}: a definition file uses `spark.{name}` while it is imported; "
                                "loading a pipeline's graph without a session cannot run that (a flow's own "
                                "function is not called here)")


@contextlib.contextmanager
def _pyspark_errors(spec_path: Path) -> Iterator[None]:
    from pyspark.errors import PySparkException
    try:
        yield
    except PySparkException as exc:
        raise PipelineLoadError(f"{spec_path}: {exc}") from exc


def load_spec(path: str | Path) -> tuple[Path, Any]:
    """The spec file a binding names, resolved, and PySpark's own `PipelineSpec` read from it."""
    if not available():
        raise PipelineLoadError(f"{path}: this pyspark has no Spark Declarative Pipelines (pyspark.pipelines, "
                                "Spark 4.1 and later)")
    from pyspark.pipelines import cli
    spec_path = find_spec(path).resolve()
    with _pyspark_errors(spec_path):
        return spec_path, cli.load_pipeline_spec(spec_path)


def load_graph(path: str | Path, spark: Any = None, inner: Any = None, graph_id: str = "eventtime-recording"
               ) -> PipelineGraph:
    """Load the pipeline at `path` (a spec file or its folder) as `spark-pipelines run` does, recording what
    its definition files register. With `spark` and `inner` (a Connect session and its graph registry)
    the definitions are registered for real as well; without them nothing reaches Spark."""
    from pyspark.pipelines import cli
    spec_path, spec = load_spec(path)
    graph = PipelineGraph(spec_path, spec.name, spec.storage)
    session: Any = spark if spark is not None else _NoSession()
    with _pyspark_errors(spec_path):
        cli.register_definitions(spec_path, RecordingRegistry(graph, inner), spec, session, graph_id)
    return graph
