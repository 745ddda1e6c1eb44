"""A job's queries as one build (`querybuild.QueryBuild`): the job called as it ships, under the
substitution (`jobs.run_job`), at each start of each of its queries, on sources of the query's own
(`jobrun.SourceCopies`), run together as a `jobrun.QueryGroup`."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from eventtime.harness.jobio import starts_at_latest

from . import spec as m
from .contracts import Contract
from .querybuild import JobQuery, StreamRunMaker, _RunPlace, projection
from .topics import Topics
from .userpipeline import PipelineError

__all__ = ["JobBuild"]


class JobBuild(_RunPlace):
    """A job's queries, built at each start: the job called under the substitution on sources of the
    query's own (`jobrun.SourceCopies`: a MemoryStream has one reader), its `index`-th query taken. A
    query's output is checked against what the contract declares for it (`queries: {NAME: ...}`, or
    `output` for a job of one query) and put in those columns; an undeclared query's rows stay as its
    sink gets them (checked through what it wrote)."""

    def __init__(self, scenario: m.Scenario, call: Callable[..., Any], sources: Mapping[str, Any], impl_name: str,
                 *, workdir: str):
        from eventtime.harness.jobrun import SourceCopies

        from .jobs import JobTopics

        # a query's own copy of each source: a MemoryStream has one reader
        super().__init__(scenario, call, {name: SourceCopies(src) for name, src in sources.items()}, impl_name,
                         workdir, lambda: [q.writer for q in self.queries.values()], keeps_tables=True)
        self.queries: dict[str, JobQuery] = {}
        self.output_mode = scenario.params.get("output_mode", "append")  # of the query built last
        self.schema: list[tuple[str, str, bool]] | None = None
        self.topics = Topics()  # what the job's Kafka sinks published, across its restarts
        self.clock: Any = None  # the QueryGroup, whose clock stamps a published record
        self.output = JobTopics(self.topics, lambda: self.clock.now_ms if self.clock is not None else None,
                                self._topic_reader)
        self._index = 0  # the query being built
        self._first: list[Any] | None = None  # what discovering the queries built, for query 0
        self.reads_own = False  # a query reads a folder or table another query of the job writes

    def new_run(self, spark: Any, stream_run: StreamRunMaker) -> Any:
        from eventtime.harness.jobrun import QueryGroup

        checkpoint = Path(self.workdir) / "checkpoint"
        group = QueryGroup(spark, self.discover, lambda i, _name, session: stream_run(
            session, lambda: self.build_query(i), checkpoint / str(i)), checkpoint=str(checkpoint),
            chained=lambda: bool(self.topics.listeners) or self.reads_own, anew=self.anew)
        self.clock = group
        return group

    def sinks(self) -> list[Any]:
        return [q.sink for q in self.queries.values()]

    def _query_of(self, query: str | None) -> JobQuery | None:
        """The query named (None: the job's only query, if it has one)."""
        return self.queries.get(query) if query is not None else (
            next(iter(self.queries.values())) if len(self.queries) == 1 else None)

    def sink_of(self, query: str | None) -> Any:
        found = self._query_of(query)
        return found.sink if found is not None else None

    def writer_of(self, query: str | None) -> Any:
        found = self._query_of(query)
        return found.writer if found is not None else None

    def contract_of(self, name: str) -> Contract | None:
        """The contract as query `name` must keep it (None: the contract promises nothing of its output)."""
        contract = self.scenario.contract
        if contract.query(name) is not None:
            return contract.for_query(name)
        return contract if len(self.queries) == 1 and contract.output else None

    def _call(self, index: int) -> list[Any]:
        """The job called as it ships (`jobs.run_job`: its entry point, arguments, environment and own
        session), its readers given query `index`'s copies of the sources."""
        from eventtime.harness.jobsession import SessionBefore

        from .jobs import JobEntry, SubstitutionError, run_job

        frames = {name: src.copy(index).dataframe() for name, src in self.sources.items()
                  if name in self.scenario.sources}
        spark = next(iter(self.sources.values())).spark
        self._index = index
        assert isinstance(self.call, JobEntry)
        try:
            outs = run_job(self.call, spark, frames, self.scenario.contract, self.impl_name, self.workdir,
                           scenario_conf=self.run_conf, args=self.scenario.job_args, env=self.scenario.job_env,
                           before=self.session_before.setdefault(spark, SessionBefore()), output=self.output,
                           timeout=self.timeout)
        except SubstitutionError as exc:
            raise PipelineError(f"job {self.impl_name}: {exc}") from None
        for out in outs:
            self.notes.extend(n for n in out.notes if n not in self.notes)
        self.reads_own = self.reads_own or any(o.chained for o in outs)
        return outs

    def _topic_reader(self, topic: str, call: Any) -> Any:
        """The stream of an output topic, for a query of the job that reads it: a source of Kafka's
        columns (`headers` with includeHeaders) fed each record as the topic gets it, kept with the
        scenario's sources (so it is replayed like them at a restart that re-runs a batch)."""
        from eventtime.harness.jobrun import SourceCopies
        from eventtime.harness.stream import MemorySource

        from .sourcekinds import source_columns

        headers = (call.option("includeHeaders") or "").lower() == "true"
        key = f"topic {topic}"  # never a contract source's name, which is a word
        sources = self.sources  # the run's own mapping, shared with its driver (which replays it)
        assert isinstance(sources, dict)
        if key not in sources:
            spark = next(iter(sources.values())).spark
            columns = [(c.name, c.ctype.ddl) for c in source_columns("kafka", headers=headers)]
            sources[key] = SourceCopies(MemorySource(spark, key, columns))

            def feed(records: list[Any]) -> None:
                sources[key].add([(r.key, r.value, r.topic, r.partition, r.offset, (r.timestamp_ms or 0) * 1000, 0)
                                  + ((r.headers,) if headers else ()) for r in records])
            self.topics.subscribe(topic, feed)
        return sources[key].copy(self._index).dataframe()

    def anew(self, index: int) -> bool:
        """Before query `index` starts again: whether it starts anew (it has no checkpoint location, so
        Spark gives it a new checkpoint); if so its sources are given as a first start reads them: a Kafka
        reader from `latest` (its default) none of what was added so far, any other (files, a table,
        Kafka from `earliest`) all of it again."""
        query = list(self.queries.values())[index] if index < len(self.queries) else None
        if query is None or not query.anew:
            return False
        for name, source in self.sources.items():
            call = query.reads.get(name)
            if call is not None and starts_at_latest(call):
                source.restart_empty(index)
            else:
                source.replay(index)
        return True

    def discover(self) -> list[str]:
        """The queries the job starts, by name, in the order it starts them (at the first start)."""
        self._first = self._call(0)  # query 0's build at this start: the job need not be called again for it
        names = [o.name for o in self._first]
        contract = self.scenario.contract
        missing = [q.name for q in contract.queries if q.name not in names]
        if missing:
            raise PipelineError(f"job {self.impl_name} starts no query named {', '.join(map(repr, missing))}, which "
                                f"contract {contract.name!r} declares under `queries:`; it starts "
                                f"{', '.join(map(repr, names))} (a query is known by its queryName, else the path, "
                                "table or topic it writes)")
        self.queries = {n: JobQuery(n) for n in names}
        return names

    def build_query(self, index: int) -> tuple[Any, ...]:
        """Query `index` of the job, built anew (at every start)."""
        from eventtime.harness.stream import BatchFunctionSink, read_rows

        outs, self._first = (self._first, None) if index == 0 and self._first is not None else (self._call(index), None)
        names = [o.name for o in outs]
        if names != list(self.queries):
            raise PipelineError(f"job {self.impl_name} started the queries {', '.join(map(repr, names))} this time and "
                                f"{', '.join(map(repr, self.queries))} at its first start: the kit calls the job at "
                                "each start of each query, so it must start the same queries every time")
        out = outs[index]
        query = self.queries[out.name]
        query.writer, query.output_mode, query.anew, query.reads = out.writer, out.output_mode, out.anew, out.reads
        df = out.df
        if not hasattr(df, "isStreaming") or not df.isStreaming:
            raise PipelineError(f"job {self.impl_name} writes {type(df).__name__} in query {out.name!r}, not a "
                                "streaming DataFrame")
        query.schema = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
        self.schema, self.output_mode = query.schema, out.output_mode
        contract = self.contract_of(out.name)
        query.declared = contract is not None
        project: Callable[[Any], Any] = lambda frame: frame  # noqa: E731 - undeclared: as the sink gets it
        if contract is not None:
            project = projection(query.schema, contract)  # OutputMismatch: a failed verdict
        if out.sink is None:  # a memory or console sink: the kit's own memory sink observes it
            return project(df), out.output_mode
        query.sink = BatchFunctionSink(next(iter(self.sources.values())).spark, out.sink, lambda batch: read_rows(project(batch)))
        return df, out.output_mode, query.sink


if TYPE_CHECKING:  # mypy (./dev lint) checks that each build meets the protocol
    from .querybuild import PipelineBuild, QueryBuild

    def _implementations(pipeline: PipelineBuild, job: JobBuild) -> tuple[QueryBuild, QueryBuild]:
        return pipeline, job
