"""A job's paths kept to its scenario's run folder.

`kept_path` is the one rule: every path a job names (relative, absolute, a `file:` URI or any other
URI such as `s3a://bucket/key`) lands inside the run folder's `files/` folder, keeping its name:

    data/gold/revenue         -> RUN/files/data/gold/revenue
    /data/gold/revenue        -> RUN/files/data/gold/revenue      (absolute: from the root)
    CWD/data/gold/revenue     -> RUN/files/data/gold/revenue      (under the working directory: from it,
                                                                   so a path built from `__file__` in
                                                                   the project lands where its relative
                                                                   form does)
    file:/data/x, file:///data/x -> RUN/files/data/x
    s3a://bucket/a/b          -> RUN/files/s3a/bucket/a/b
    hdfs://namenode:8020/a    -> RUN/files/hdfs/namenode_8020/a

A path already inside the run folder (a `kind: path` parameter's folder, given to the job through its
conf) is kept as it is. A path whose `..` climbs above the start of its name (`../x`, `s3a://b/../../x`)
or that reaches outside the run folder through a symbolic link is refused (`PathOutside`).

While `kept_to(run_folder)` is active in a thread, the batch readers and writers the code of that
thread calls (`spark.read...load/parquet/json/csv/orc/text/xml`, `df.write...save/parquet/...`,
their `option("path", ...)`, `saveAsTable(..., path=...)`) get their paths kept; a path that cannot be
kept raises `SubstitutionError` naming the job's line. Only classic PySpark's `DataFrameReader` and
`DataFrameWriter` are patched, installed while any thread uses them (`threadpatch`, as `jobio` does for
streams).
"""
from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .errors import EventtimeError
from .jobio import SubstitutionError, caller_place
from .threadpatch import ThreadPatch

__all__ = ["FILES", "PathOutside", "kept_path", "kept_to", "keeping", "named_paths", "written_paths", "forget_paths",
           "WrittenWith", "record_written", "written_with"]

FILES = "files"  # the run folder's folder where a job's paths land
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(.*)$", re.S)  # two letters at least: not a drive letter


_lock = threading.Lock()
_named: dict[str, set[str]] = {}  # run folder -> the paths its job named, as kept
_written: dict[str, set[str]] = {}  # run folder -> the paths its job writes (a sink, a batch write), as kept
_written_how: dict[str, dict[str, "WrittenWith"]] = {}  # run folder -> kept folder -> how the job last wrote it


@dataclass
class WrittenWith:
    """How a job writes a folder, so that a check reads it back as it was written: the format, the
    writer's options (`header`, `sep`, `timestampFormat`, `compression`...), its `partitionBy` columns and
    the schema of the DataFrame it writes (a StructType: the written columns' order and types). `handed`
    is, for a folder a streaming file sink writes, the rows (in `schema`'s order) of each batch id the
    sink wrote, as the kit handed them to it (None: a batch write, whose rows the kit does not see)."""

    format: str
    options: dict[str, str]
    partition_by: tuple[str, ...]
    schema: Any
    handed: dict[int, list[tuple]] | None = None


def record_written(run_folder: str, folder: str, how: WrittenWith) -> WrittenWith:
    """Remember how the run's job writes `folder` (as kept); a streaming sink's rows handed so far are kept
    when the query starts again. Returns the record in force."""
    with _lock:
        known = _written_how.setdefault(os.path.abspath(run_folder), {})
        before = known.get(folder)
        if how.handed is not None and before is not None and before.handed is not None:
            how.handed = before.handed
        known[folder] = how
        return how


def written_with(run_folder: str, folder: str) -> WrittenWith | None:
    """How the run's job last wrote `folder` (as kept), None when the kit saw no write of it."""
    with _lock:
        return _written_how.get(os.path.abspath(run_folder), {}).get(folder)


class PathOutside(EventtimeError, ValueError):
    """A path that would leave the run folder; the message says why (the caller names the line)."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _name_of(path: str) -> str:
    """The name a path keeps under `files/`: relative, or for a local path absolute (`kept_path` then
    keeps it where it is, or names it from the working directory or the root)."""
    found = _URI.match(path)
    if found is not None and found.group(1).lower() != "file":
        scheme, rest = found.group(1).lower(), found.group(2)
        authority = ""
        if rest.startswith("//"):
            authority, _, rest = rest[2:].partition("/")
        name = posixpath.normpath(rest.lstrip("/") or ".")
        if name.startswith(".."):
            raise PathOutside(f"its `..` climbs above {scheme}://{authority}")
        parts = [scheme] + ([authority.replace(":", "_")] if authority else []) + ([] if name == "." else [name])
        return posixpath.join(*parts)
    local = path
    if found is not None:  # file:/x, file:///x, file://host/x: a local absolute path
        rest = found.group(2)
        local = "/" + (rest[2:].partition("/")[2] if rest.startswith("//") and not rest.startswith("///")
                       else rest.lstrip("/"))
    if not os.path.isabs(local):
        name = os.path.normpath(local)
        if name == ".." or name.startswith(".." + os.sep):
            raise PathOutside("its `..` climbs above the working directory, where a relative path starts")
        return name
    return os.path.normpath(local)


def kept_path(path: str, run_folder: str, *, record: bool = True, writes: bool = False) -> str:
    """Where `path`, as a job names it, lands inside `run_folder` (see the module's text); raises
    PathOutside for a path that would leave it. `record`: remember it among the paths the run's job
    named (`named_paths`), as the job's own calls do; a check that reads a path does not. `writes`: the job
    writes there (its sink, a batch write), remembered among `written_paths` too."""
    run = os.path.abspath(run_folder)
    name = _name_of(str(path))
    if os.path.isabs(name) and _inside(name, run):
        target = name  # a folder of the run's own already (a `kind: path` parameter's)
    else:
        if os.path.isabs(name):
            cwd = os.getcwd()
            name = os.path.relpath(name, cwd) if _inside(name, cwd) else name.lstrip(os.sep) or "."
        target = os.path.normpath(os.path.join(run, FILES, name))
    real = os.path.realpath(target)
    if not _inside(real, os.path.realpath(run)):
        raise PathOutside(f"it reaches {real} through a symbolic link, outside the run folder")
    if record:
        with _lock:
            _named.setdefault(run, set()).add(target)
            if writes:
                _written.setdefault(run, set()).add(target)
    return target


def named_paths(run_folder: str) -> set[str]:
    """The folders (as kept) that the job of the run has named so far, for a check's hint."""
    with _lock:
        return set(_named.get(os.path.abspath(run_folder), ()))


def written_paths(run_folder: str) -> set[str]:
    """The folders (as kept) that the job of the run has written to so far: its sinks and batch writes."""
    with _lock:
        return set(_written.get(os.path.abspath(run_folder), ()))


def forget_paths(run_folder: str) -> None:
    """Drop what the run's job named (the run is over)."""
    with _lock:
        _named.pop(os.path.abspath(run_folder), None)
        _written.pop(os.path.abspath(run_folder), None)
        _written_how.pop(os.path.abspath(run_folder), None)


# -- the patches ------------------------------------------------------------------------------------
_HERE = os.path.abspath(__file__)


def _root() -> str | None:
    return _PATCH.current()


@contextlib.contextmanager
def kept_to(run_folder: str) -> Iterator[None]:
    """Keep the paths of the batch reads and writes this thread makes inside the block to `run_folder`
    (inside an outer `kept_to`, this one's folder until the block ends)."""
    with _PATCH.entered(run_folder):
        yield


def keeping(function: Callable[..., Any], run_folder: str) -> Callable[..., Any]:
    """`function` with its batch reads and writes kept to `run_folder` in whatever thread calls it
    (a job's foreachBatch function runs in the stream's callback thread, not the one that built it)."""
    def kept(*args: Any, **kwargs: Any) -> Any:
        with kept_to(run_folder):
            return function(*args, **kwargs)
    kept.__qualname__ = getattr(function, "__qualname__", "kept")
    return kept


def _keep(value: Any, root: str, what: str, writes: bool = False) -> Any:
    """A path argument (a string or a list of strings) kept; anything else (an RDD of lines) as it is."""
    try:
        if isinstance(value, str):
            return kept_path(value, root, writes=writes)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return type(value)(kept_path(v, root, writes=writes) for v in value)
    except PathOutside as exc:
        place = caller_place(lambda name: os.path.abspath(name) == _HERE)
        raise SubstitutionError(place, f"{what} {value!r} would leave the scenario's run folder: {exc}; a job's "
                                       "paths are kept inside it (docs/jobs.md, *Where the job writes*)") from None
    return value


def _patched(key: str, original: Callable[..., Any], *, first: bool, every: bool = False,
             option: bool = False) -> Callable[..., Any]:
    """pyspark's method `key`, its path arguments kept while a thread keeps its paths: the first
    positional (or `path`/`paths` keyword), every positional (`parquet(*paths)`), the value of
    `option("path", v)`, and always a `path` among its keyword options."""
    verb = key.rpartition(".")[2]
    writes = key.startswith("DataFrameWriter.")

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        root = _root()
        if root is not None:
            what = f"the path of {verb}(...)"
            if option and len(args) >= 2 and str(args[0]).lower() == "path":
                args = (args[0], _keep(args[1], root, what, writes)) + tuple(args[2:])
            elif every:
                args = tuple(_keep(a, root, what, writes) for a in args)
            elif first and args:
                args = (_keep(args[0], root, what, writes),) + tuple(args[1:])
            for name in list(kwargs):
                if name.lower() in ("path", "paths"):
                    kwargs[name] = _keep(kwargs[name], root, what, writes)
        out = original(self, *args, **kwargs)  # held here: a call under way outlives an uninstall
        if root is not None and writes:
            _remember_write(self, verb, original, args, kwargs, root)
        return out
    method.__name__ = verb
    return method


def _text(value: Any) -> str:
    """An option's value as Spark gets it from pyspark (`True` -> "true")."""
    return str(value).lower() if isinstance(value, bool) else str(value)


_WRITES = ("save", "csv", "json", "parquet", "orc", "text", "xml")
_NOT_OPTIONS = ("self", "path", "mode", "partitionBy", "format", "options")


def _remember_write(writer: Any, verb: str, original: Callable[..., Any], args: tuple, kwargs: dict, root: str
                    ) -> None:
    """Record on a DataFrameWriter what a later read of its folder needs (its options and `partitionBy`),
    and at a write of a folder inside the run (`save`, `csv`, ...) how that folder was written
    (`record_written`)."""
    import inspect

    options: dict[str, str] = writer.__dict__.setdefault("_eventtime_options", {})
    if verb == "option" and len(args) >= 2:
        if str(args[0]).lower() == "path":
            writer._eventtime_path = args[1]
        else:
            options[str(args[0])] = _text(args[1])
        return
    if verb == "options":
        for k, v in kwargs.items():
            if k.lower() == "path":
                writer._eventtime_path = v
            elif v is not None:
                options[k] = _text(v)
        return
    if verb == "partitionBy":
        cols = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
        writer._eventtime_partition_by = tuple(str(c) for c in cols)
        return
    if verb not in _WRITES:
        return
    try:
        given = inspect.signature(original).bind(writer, *args, **kwargs).arguments
    except TypeError:
        return
    path = given.get("path") or getattr(writer, "_eventtime_path", None)
    if not isinstance(path, str):
        return
    fmt = verb if verb != "save" else (given.get("format") or getattr(writer, "_eventtime_format", None)
                                       or writer._spark.conf.get("spark.sql.sources.default"))
    named = {k: _text(v) for k, v in given.items() if k not in _NOT_OPTIONS and v is not None}
    named.update({k: _text(v) for k, v in (given.get("options") or {}).items() if k.lower() != "path" and v is not None})
    partition = given.get("partitionBy")
    partition_by = ((partition,) if isinstance(partition, str) else tuple(partition)) if partition else \
        getattr(writer, "_eventtime_partition_by", ())
    record_written(root, os.path.normpath(path), WrittenWith(str(fmt).lower(), {**options, **named}, partition_by,
                                                             writer._df.schema))


# Batch connectors the kit cannot stand in for: a call of the job's that reads or writes through one
# is refused at its line while its paths are kept (never a connection attempt that hangs or fails deep
# in Spark), with what to do instead.
_CONNECTORS = ("jdbc",)
_INSTEAD = {
    "DataFrameReader": "read a table instead (`spark.read.table`, given by the scenario as a `static:` input) or "
                       "make the reader a parameter of the job",
    "DataFrameWriter": "write a table or a folder instead, or make the writer a parameter of the job (a function "
                       "the job takes), so the test passes one that writes a table",
}


def _refused(cls_name: str, verb: str, connector: str) -> SubstitutionError:
    place = caller_place(lambda name: os.path.abspath(name) == _HERE)
    action = "reads from" if cls_name == "DataFrameReader" else "writes to"
    return SubstitutionError(place, f"{verb}(...) {action} a database over {connector.upper()}, which the kit cannot "
                                    f"stand in for: {_INSTEAD[cls_name]} (docs/jobs.md, *What it cannot do*)")


def _connector_guard(cls_name: str, verb: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """`format(f)` remembered, and `load`/`save` of a connector format or `jdbc(...)` refused, while a
    thread keeps its paths."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _root() is not None:
            if verb == "format" and args:
                self._eventtime_format = str(args[0]).lower()
            elif verb == "jdbc":
                raise _refused(cls_name, verb, "jdbc")
            elif getattr(self, "_eventtime_format", None) in _CONNECTORS or str(kwargs.get("format", "")).lower() \
                    in _CONNECTORS:
                raise _refused(cls_name, verb, getattr(self, "_eventtime_format", None) or kwargs["format"])
        return original(self, *args, **kwargs)
    method.__name__ = verb
    return method


def _patches() -> list[tuple[type, str, Callable[[Any], Any]]]:
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

    out: list[tuple[type, str, Callable[[Any], Any]]] = []
    for cls in (DataFrameReader, DataFrameWriter):
        for name in ("format", "jdbc"):
            out.append((cls, name, functools.partial(_connector_guard, cls.__name__, name)))
    for cls in (DataFrameReader, DataFrameWriter):
        for name in ("load", "save", "json", "csv", "orc", "text", "xml", "parquet", "option", "options",
                     "saveAsTable", "partitionBy"):
            if name not in cls.__dict__:
                continue
            out.append((cls, name, functools.partial(_path_patch, f"{cls.__name__}.{name}", cls is DataFrameReader)))
    return out


def _path_patch(key: str, reader: bool, original: Callable[..., Any]) -> Callable[..., Any]:
    """pyspark's `key` (a path-taking method of DataFrameReader, `reader`, or DataFrameWriter) with its paths kept."""
    cls_name, _, name = key.partition(".")
    if name in ("load", "save"):  # a connector's load or save is refused before its path is looked at
        original = _connector_guard(cls_name, name, original)
    return _patched(key, original, first=name not in ("options", "saveAsTable", "option", "partitionBy"),
                    every=reader and name == "parquet", option=name == "option")


_PATCH: ThreadPatch[str] = ThreadPatch("kept paths", _patches, nested=True)
