"""What a failed step says: the failure of an exception (its error classes, Java's chain included), the
fault of the run's surroundings behind it (`faults`), the query of a job it is about, and hints where
Spark's message leaves out what the kit knows (a static input replaced under a running query, a path the
kit kept to the run folder)."""
from __future__ import annotations

import os
import re
import tempfile
from typing import Any

from eventtime.harness.jobpaths import FILES

from .faults import Fault, classify_failure
from .results import FailureInfo

__all__ = ["failure_from", "fault_of", "in_query", "started_at", "replaced_hint", "paths_hint"]


def failure_from(exc: BaseException, compat: Any, step_index: int) -> FailureInfo:
    from eventtime.harness.stream import QueryFailed

    if isinstance(exc, QueryFailed):
        classes = [c for _, c, _ in exc.chain if c]
        names = [n for n, _, _ in exc.chain]
        text = "\n".join(msg for _, _, msg in exc.chain)
        return FailureInfo(str(exc), classes, names, text, step_index)
    names = [type(exc).__module__ + "." + type(exc).__name__]
    classes = []
    err = compat.error_class(exc) if compat is not None else None
    if err:
        classes.append(err)
    java = getattr(exc, "java_exception", None)
    if java is not None and compat is not None:
        chain = compat.java_error_classes(java)
        names += [n for n, _, _ in chain]
        classes += [c for _, c, _ in chain if c and c not in classes]
    text = str(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return FailureInfo(f"{type(exc).__name__}: {first}", classes, names, text, step_index)


def fault_of(chain: Any, spark: Any, checkpoint: str) -> Fault | None:
    """The fault of the run's surroundings behind a failed query (`eventtime.faults`), if any."""
    from eventtime.harness.session import callback_server_stopped

    return classify_failure(chain, checkpoint=checkpoint, tempdir=tempfile.gettempdir(),
                            device_full=_device_full(checkpoint), callback_stopped=callback_server_stopped(spark),
                            load=_load())


def _load() -> tuple[float, int] | None:
    """This machine's load average over the last minute and its cores (None where the system has none)."""
    try:
        return os.getloadavg()[0], os.cpu_count() or 1
    except OSError:
        return None


def _device_full(path: str) -> bool:
    """Whether the file system holding `path` (or its nearest existing parent) has no free block or file."""
    while path and not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        stat = os.statvfs(path)
    except OSError:
        return False
    return stat.f_bavail == 0 or (stat.f_files > 0 and stat.f_favail == 0)


_MISSING_PATH = re.compile(r"Path does not exist: (\S+?)\.?(?:\s|$)")


def in_query(exc: BaseException, message: str) -> str:
    """`message` with the job's query it is about first (`jobrun.QueryGroup` notes it on the exception),
    unless it names it already."""
    name = getattr(exc, "eventtime_query", None) or getattr(exc, "query", None)
    if not isinstance(name, str) or f"query {name!r}" in message:
        return message
    return f"query {name!r}: {message}"


def started_at(message: str, query: str | None, writer: Any) -> str:
    """`message` with the job's line that started the query it is about (`query 'q' (started at job.py:35):
    ...`): Spark's own message names the failing expression's place only for some Column methods, and
    never the job's file for a function of `pyspark.sql.functions` (element_at) or a cast that overflows."""
    place = getattr(writer, "place", None)
    if query is None or place is None:
        return message
    from eventtime.harness.jobio import shown_file

    said = f"query {query!r}: "
    at = f"query {query!r} (started at {shown_file(place.file)}:{place.line}): "
    return message.replace(said, at, 1) if message.startswith(said) else at + message


def replaced_hint(replaced: list[tuple[str, int]], message: str) -> str:
    """Why a query that reads a static input replaced while it ran finds its files gone."""
    if not replaced or not any(k in message for k in ("FILE_NOT_EXIST", "FileNotFoundException")):
        return ""
    which = ", ".join(f"{name!r} (line {line})" for name, line in replaced)
    were = "inputs " + which + " were" if len(replaced) > 1 else "input " + which + " was"
    return (f" (the static {were} written anew while the query ran: Spark lists a static table's "
            "or folder's files when the query starts and a stream-static join keeps that listing, so the files "
            "it listed are gone, as when a batch job overwrites them under a running stream in production; "
            "stop the query before the `static` step and start it after, or read the input in foreachBatch; "
            "docs/jobs.md, *Static inputs*)")

def paths_hint(workdir: str, message: str) -> str:
    """Where a path Spark did not find came from, when it is one of the job's paths kept to the run
    folder (`jobpaths.kept_path`): the name the job gave it, the working directory a relative one
    starts at, and where it landed; the message of Spark's PATH_NOT_FOUND says none of that."""
    if "PATH_NOT_FOUND" not in message and "Path does not exist" not in message:
        return ""
    files = os.path.join(os.path.realpath(workdir), FILES)
    found = []
    for match in _MISSING_PATH.finditer(message):
        path = os.path.realpath(match.group(1).removeprefix("file://").removeprefix("file:"))
        if path.startswith(files + os.sep):
            found.append((os.path.relpath(path, files), path))
    if not found:
        return ""
    name, path = found[0]
    return (f" (the kit keeps every path a job names inside the scenario's own run folder, keeping its name: "
            f"{name!r} is kept at {path}; a relative path is named from the working directory, {os.getcwd()}, "
            "an absolute one from the root. Neither the job nor the scenario put anything there: an input the "
            "job reads is a contract `static:` input the scenario gives rows (docs/jobs.md, *Static inputs*), "
            "or what the job's own queries write before it reads it (docs/jobs.md, *Where the job writes*))")
