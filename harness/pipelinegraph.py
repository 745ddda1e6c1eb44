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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .errors import EventtimeError
from .jobio import Place

__all__ = ["SPEC_FILE_NAMES", "Dataset", "FlowDef", "PipelineGraph", "PipelineLoadError", "RecordingRegistry",
           "NeedsSession", "SqlRead", "available", "check_definitions", "check_sql_sources", "definition_files", "find_spec", "load_graph", "load_spec",
           "sql_reads"]

_HERE = os.path.abspath(__file__)
# pyspark.pipelines.cli.PIPELINE_SPEC_FILE_NAMES, kept here so a folder can be resolved without it.
SPEC_FILE_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")


class PipelineLoadError(EventtimeError):
    """A pipeline's spec or definition files could not be loaded; the message names the file (and line)."""


class NeedsSession(PipelineLoadError):
    """A definition file uses `spark` while it is imported, which a graph loaded without a session cannot run."""


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
    sql_files: list[Path] = field(default_factory=list)  # parsed by the server; datasets and flows read from their CREATEs


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
            file = Path(file_path).resolve()  # named from the spec's folder, the working folder while registering
            graph.sql_files.append(file)
            datasets, flows = sql_definitions(file, sql_text)
            for dataset in datasets:  # one defined twice: the server's error, at the update
                graph.datasets.setdefault(dataset.name, dataset)
            graph.flows.extend(flows)
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
        raise NeedsSession(f"{place}: a definition file uses `spark.{name}` while it is imported; "
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
    with _definition_errors(spec_path, spec.name):
        cli.register_definitions(spec_path, RecordingRegistry(graph, inner), spec, session, graph_id)
    return graph


@contextlib.contextmanager
def _definition_errors(spec_path: Path, name: str) -> Iterator[None]:
    """An error raised while the definitions register (a module's top level, a flow function called for
    its plan, Spark refusing what it read) as a `PipelineLoadError` at the definition's own `file:line`:
    the innermost frame in the pipeline's folder; the kit's own errors (a read no source stands in for)
    already name theirs. Spark's message is cut before the server's stack trace."""
    try:
        yield
    except EventtimeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's definition code: any error is its verdict
        said = _first_lines(exc)
        raise PipelineLoadError(f"{_definition_place(exc, spec_path)}: a definition of pipeline "
                                f"{name!r} raised {type(exc).__name__}: {said}{_not_found_hint(said)}") from exc


# Spark's Connect server analyses `withWatermark` and `dropDuplicates...` where a flow function calls them,
# before the graph's tables exist: a Python flow reading a dataset of its own pipeline with a watermark fails
# on a first run, in `spark-pipelines run` and `dry-run` as under the kit (measured, pyspark 4.3.0)
_NOT_FOUND = re.compile(r"TABLE_OR_VIEW_NOT_FOUND\] The table or view `([^`]+)`")


def _not_found_hint(message: str) -> str:
    found = _NOT_FOUND.search(message)
    if found is None:
        return ""
    return (f"\n(if `{found.group(1)}` is a dataset of this pipeline: Spark's Connect server analyses `withWatermark` "
            "and `dropDuplicates...` when a flow is defined, before the pipeline's tables exist, so "
            "`spark-pipelines run` and `dry-run` fail the same way on a first run; read the source itself in this "
            "flow, or put the watermark in SQL: `FROM STREAM(name) WATERMARK col DELAY OF INTERVAL ...`, "
            "docs/pipelines.md, *The example project*)")


def _definition_place(exc: BaseException, spec_path: Path) -> str:
    """`file:line` of the innermost frame of `exc` in a file under the spec's folder (a SyntaxError: its
    own place); the spec itself when none is."""
    import traceback

    from .jobio import shown_file
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{shown_file(exc.filename)}:{exc.lineno or 0}"
    root = str(spec_path.parent) + os.sep
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename).startswith(root)]
    return f"{shown_file(frames[-1].filename)}:{frames[-1].lineno}" if frames else shown_file(str(spec_path))


def _first_lines(exc: BaseException) -> str:
    """An exception's message without the JVM's stack trace a Spark error carries after it."""
    lines: list[str] = []
    for line in str(exc).split("\n"):
        if line.startswith(("JVM stacktrace:", "org.apache.", "\tat ", "java.")):
            break
        lines.append(line)
    return "\n".join(lines).strip()


# -- SQL definition files ----------------------------------------------------------------------------------
# A SQL file is sent whole to the server, which parses it (`DefineSqlGraphElements`): the client cannot put
# the kit's sources in place of what it reads. So a SQL file's read of anything outside the pipeline is
# refused at its line before a run; reads of the pipeline's own datasets are resolved by the server.
def definition_files(path: str | Path) -> list[Path]:
    """The definition files of the pipeline at `path`, found as `register_definitions` finds them (each
    glob of the spec's `libraries` from the spec's folder, in `Path.glob` order, `__pycache__` skipped)."""
    spec_path, spec = load_spec(path)
    root = spec_path.parent
    return [p for lib in spec.libraries for p in root.glob(lib.include)
            if p.is_file() and "__pycache__" not in p.parts]


@dataclass(frozen=True)
class SqlRead:
    """What a SQL definition reads at `place`: a table (`name`) or a source function (`function`)."""

    place: Place
    text: str
    name: str | None = None
    function: str | None = None


_SQL_IDENT = r"(?:`[^`]+`|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:`[^`]+`|[A-Za-z_][\w$]*))*"
_SQL_DEFINES = re.compile(r"\bCREATE\s+(?:OR\s+(?:REFRESH|REPLACE)\s+)?(?:(?:STREAMING|TEMPORARY|TEMP)\s+)?"
                          r"(?:MATERIALIZED\s+)?(?:TABLE|VIEW|FLOW)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                          rf"(?P<name>{_SQL_IDENT})", re.I)
# what a SQL file defines, statement by statement (a statement ends at `;`, comments and literals blanked)
_SQL_DEFINITION = re.compile(r"\bCREATE\s+(?:OR\s+(?:REFRESH|REPLACE)\s+)?(?P<kind>STREAMING\s+TABLE|MATERIALIZED\s+VIEW|"
                             r"(?:(?:TEMPORARY|TEMP)\s+)?VIEW|FLOW)\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                             rf"(?P<name>{_SQL_IDENT})(?P<rest>[^;]*)", re.I)
_SQL_QUERY = re.compile(r"\bAS\s*\(?\s*(?:SELECT|WITH|FROM|TABLE|VALUES)\b", re.I)  # CREATE ... AS query
_SQL_INTO = re.compile(rf"\bINSERT\s+INTO\s+(?:TABLE\s+)?(?P<target>{_SQL_IDENT})", re.I)
_SQL_KINDS = {"STREAMING TABLE": "streaming_table", "MATERIALIZED VIEW": "materialized_view"}
_SQL_CTE = re.compile(rf"(?:\bWITH|,)\s*(?:RECURSIVE\s+)?(?P<name>{_SQL_IDENT})\s+AS\s*\(", re.I)
# a read: FROM/JOIN a name, STREAM(name) or STREAM name, or a table-valued function call
_SQL_READ = re.compile(rf"\b(?P<kw>(?:FROM|JOIN)(?:\s+STREAM\b)?|STREAM)\b\s*(?P<paren>\(\s*)?(?P<name>{_SQL_IDENT})\s*(?P<call>\()?",
                       re.I)
# keywords a name position can hold that are no table (FROM (subquery), FROM STREAM ..., JOIN LATERAL ...)
_SQL_NOT_TABLES = {"select", "stream", "lateral", "values", "with", "table"}
# functions whose argument list holds FROM (EXTRACT(YEAR FROM ts)): no read
_SQL_FROM_FUNCTIONS = {"extract", "trim", "substring", "substr", "overlay", "position", "date_part", "datepart"}


def _sql_code(text: str) -> str:
    """`text` with comments and string literals blanked (newlines kept, so offsets keep their lines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else c)
            i = j
            continue
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def _bare_sql(name: str) -> str:
    return re.sub(r"\s", "", name).rsplit(".", 1)[-1].strip("`").lower()


def _inside_from_function(code: str, at: int) -> bool:
    """Whether offset `at` is inside the parentheses of a function whose arguments use FROM."""
    depth = 0
    for i in range(at - 1, -1, -1):
        if code[i] == ")":
            depth += 1
        elif code[i] == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_]\w*)\s*$", code[:i])
                return bool(m and m.group(1).lower() in _SQL_FROM_FUNCTIONS)
            depth -= 1
    return False


def sql_reads(file: Path, shown: str | None = None) -> tuple[set[str], list[SqlRead]]:
    """The datasets a SQL definition file defines (bare lower-case names) and what it reads, at its lines."""
    text = file.read_text(encoding="utf-8")
    code = _sql_code(text)
    where = shown or str(file)

    def place(offset: int) -> Place:
        return Place(where, code.count("\n", 0, offset) + 1)

    defined = {_bare_sql(m.group("name")) for m in _SQL_DEFINES.finditer(code)}
    ctes = {_bare_sql(m.group("name")) for m in _SQL_CTE.finditer(code)}
    reads = []
    for m in _SQL_READ.finditer(code):
        name = m.group("name")
        bare = _bare_sql(name)
        if bare in _SQL_NOT_TABLES or (m.group("kw").lower().startswith("from") and _inside_from_function(code, m.start())):
            continue
        snippet = " ".join(text[m.start():m.end()].split())
        if m.group("call"):
            if bare.startswith("read_") or bare in {"cloud_files"}:  # a source function: files, Kafka, ...
                reads.append(SqlRead(place(m.start("name")), snippet, function=bare))
            continue  # another table-valued function (range, explode, ...): no external source
        if bare not in ctes:
            reads.append(SqlRead(place(m.start("name")), snippet, name=name))
    return defined, reads


def sql_definitions(file: Path, text: str | None = None) -> tuple[list[Dataset], list[FlowDef]]:
    """The datasets and flows a SQL definition file defines, at their lines, as the server registers them: a
    `CREATE STREAMING TABLE t AS query` (or a materialized view, a view) is dataset `t` and its flow `t`; a
    streaming table without a query has no flow; `CREATE FLOW f AS INSERT INTO t ...` is flow `f` writing `t`.
    Names as written, without quotes or qualifier (the server's flows and checkpoints are named so)."""
    code = _sql_code(text if text is not None else file.read_text(encoding="utf-8"))
    datasets: list[Dataset] = []
    flows: list[FlowDef] = []
    for m in _SQL_DEFINITION.finditer(code):
        name = re.sub(r"\s", "", m.group("name")).rsplit(".", 1)[-1].strip("`")
        place = Place(str(file), code.count("\n", 0, m.start()) + 1)
        kind = " ".join(m.group("kind").upper().split())
        if kind == "FLOW":
            into = _SQL_INTO.search(m.group("rest"))
            if into is not None:
                target = re.sub(r"\s", "", into.group("target")).rsplit(".", 1)[-1].strip("`")
                flows.append(FlowDef(name, target, "flow", place))
            continue
        datasets.append(Dataset(name, _SQL_KINDS.get(kind, "temporary_view"), place))
        if _SQL_QUERY.search(m.group("rest")):
            flows.append(FlowDef(name, name, "flow", place))
    return datasets, flows


def check_sql_sources(graph: PipelineGraph, files: list[Path] | None = None, *, tables: bool = True) -> None:
    """Refuse, at the SQL file's line, a read of anything that is not a dataset of the pipeline: a source
    function (`read_files(...)`, `read_kafka(...)`) or (with `tables`) a table no definition file defines.
    `graph` gives the datasets the Python files define (a graph loaded without a session is enough)."""
    files = files if files is not None else definition_files(graph.spec_path)
    sql = [f for f in files if f.suffix == ".sql"]
    found = [(f, *sql_reads(f)) for f in sql]
    datasets = {_bare_sql(n) for n in graph.datasets} | {d for _, defined, _ in found for d in defined}
    for _, _, reads in found:
        for read in reads:
            if read.function:
                raise PipelineLoadError(
                    f"{read.place}: `{read.text}` reads a source in a SQL definition "
                    f"file ({read.function}); SQL files are parsed by the server, so the kit cannot put a "
                    "scenario's source in its place: read it in a Python definition (spark.readStream), or "
                    "from a dataset of the pipeline")
            if tables and read.name is not None and _bare_sql(read.name) not in datasets:
                raise PipelineLoadError(
                    f"{read.place}: `{read.text}` reads {read.name!r}, which no "
                    f"definition file of pipeline {graph.name!r} defines (datasets: "
                    f"{', '.join(sorted(datasets)) or 'none'}); SQL files are parsed by the server, so the kit "
                    "cannot put a scenario's source in place of a table outside the pipeline")


def check_definitions(path: str | Path) -> PipelineGraph:
    """What can be refused of a pipeline before any session: its spec (PySpark's own errors), its Python
    definition files as imported (each flow function not called), and its SQL files' reads (at their
    lines). When a Python file needs `spark` while it is imported, its datasets are not known here and
    only the SQL files' source functions are judged (their table reads are, once registered, by `run_update`)."""
    spec_path, spec = load_spec(path)
    try:
        graph, tables = load_graph(spec_path), True
    except NeedsSession:
        graph, tables = PipelineGraph(spec_path, spec.name, spec.storage), False
    check_sql_sources(graph, tables=tables)
    return graph
