"""One update of a Spark Declarative Pipeline on the kit's Spark Connect session, as `spark-pipelines run`
runs one (`pyspark.pipelines.cli.run`): a dataflow graph created with the spec's catalog, database and
configuration, the definition files registered by PySpark's own loader (`pipelinegraph.load_graph`,
recording what they define), then `start_run` with the refresh selection, read to its end.

Where it differs from the command, on purpose:
- the storage root (checkpoints) is the caller's, never the spec's `storage`, so a test never touches
  the pipeline's production storage; updates given the same root carry their flows' offsets, state
  and watermark over, as successive `spark-pipelines run`s on one storage do;
- the session is the kit's (the command builds its own with the spec's `configuration` as builder
  settings); the configuration still reaches every flow as the graph's SQL settings;
- the wait is bounded: the update not ended after `timeout` seconds is a `HarnessTimeout` saying so
  (the session's operations are interrupted).
Not yet (docs/pipelines.md): the scenario's sources in place of what the definitions read, steps and
checks; this runs the definitions as they are, reading what they name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .bounded import bounded_call
from .pipelinegraph import PipelineGraph, PipelineLoadError, load_graph, load_spec
from .stream import HarnessError, HarnessTimeout

__all__ = ["UpdateFailed", "UpdateResult", "run_update"]

_COMPLETED = "Run is COMPLETED."


class UpdateFailed(HarnessError):
    """A pipeline update ended other than completed; the message holds the update's last events."""


@dataclass
class UpdateResult:
    graph: PipelineGraph
    graph_id: str
    events: list[str] = field(default_factory=list)  # the update's event messages, in order


def run_update(spark: Any, path: str | Path, storage: str, *, refresh: Sequence[str] = (),
               full_refresh: Sequence[str] = (), full_refresh_all: bool = False,
               conf: Mapping[str, str] | None = None, timeout: float = 600.0) -> UpdateResult:
    """Load the pipeline at `path` (spec file or folder) into a new graph on `spark` (a Spark Connect
    session) and run one update with checkpoints under `storage`. `conf` is added to the spec's
    `configuration` (the kit's test settings); the spec's own value of a key wins nowhere: `conf` does."""
    from pyspark.pipelines.spark_connect_graph_element_registry import SparkConnectGraphElementRegistry
    from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph, start_run

    if not hasattr(spark, "client"):
        raise PipelineLoadError(f"{path}: a pipeline runs on a Spark Connect session only (its definitions "
                                "are registered as Connect plans); this session is classic")
    spec_path, spec = load_spec(path)
    sql_conf = {**spec.configuration, **(conf or {})}
    graph_id = create_dataflow_graph(spark, default_catalog=spec.catalog, default_database=spec.database,
                                     sql_conf=sql_conf)
    graph = load_graph(spec_path, spark=spark, inner=SparkConnectGraphElementRegistry(spark, graph_id),
                       graph_id=graph_id)
    result = UpdateResult(graph, graph_id)

    def update() -> None:
        for response in start_run(spark, graph_id, full_refresh=list(full_refresh), full_refresh_all=full_refresh_all,
                                  refresh=list(refresh), dry=False, storage=storage):
            if "pipeline_event_result" in response:
                result.events.append(response["pipeline_event_result"].event.message)

    try:
        bounded_call(update, timeout, lambda: f"the update of pipeline {spec.name!r} ({spec_path}); its last events: "
                     f"{result.events[-5:]}", name=f"eventtime-pipeline-update-{spec.name}", on_timeout=spark.interruptAll)
    except HarnessTimeout:
        raise
    except Exception as exc:  # the update's own error (a Ctrl-C in this thread is no failure of it)
        # the server's message says to look at the flow failures before it: they are the update's events
        message = str(exc).split("\n\nJVM stacktrace:")[0].strip()
        events = "\n".join(result.events[-8:])
        raise UpdateFailed(f"the update of pipeline {spec.name!r} ({spec_path}) failed: {message}\n"
                           f"its last events:\n{events}") from exc
    if not result.events or result.events[-1] != _COMPLETED:
        raise UpdateFailed(f"the update of pipeline {spec.name!r} ({spec_path}) did not complete; its last "
                           f"events: {result.events[-8:]}")
    return result
