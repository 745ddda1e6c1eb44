"""Faults of the run's surroundings (not the pipeline's), told from Spark's error chain: a checkpoint that
cannot be written, a full file system, py4j's callback server gone.

Pure: it reads the (Java class, error class, message) chain a failed query left
(`eventtime.harness.stream.QueryFailed.chain`) or an OSError, and knows nothing of Spark itself. The
texts it matches were captured from Spark 3.4.4 and 4.3.0 (`tests/fast/test_survival.py` holds them).
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Sequence

__all__ = ["CHECKPOINT_UNWRITABLE", "NO_SPACE", "CALLBACK_SERVER_FAILED", "PYTHON_WORKER_LATE", "Fault",
           "classify_failure", "classify_os_error"]

# The causes of an `error` that is not the pipeline's making (beside `results.DRIVER_DIED`).
CHECKPOINT_UNWRITABLE = "checkpoint_unwritable"
NO_SPACE = "no_space"
CALLBACK_SERVER_FAILED = "callback_server_failed"
PYTHON_WORKER_LATE = "python_worker_late"

Chain = Sequence[tuple[str, "str | None", str]]  # (Java class, error class, message), outer to inner

_NO_SPACE_TEXT = "No space left on device"
# Hadoop's and Java's words for a path that cannot be written (a file where a directory must be, a
# directory that cannot be created, no permission). Matched only together with the checkpoint's path
# or a checkpoint error class: the same words about a user's own output are the pipeline's business.
_UNWRITABLE_CLASSES = ("FileAlreadyExistsException", "ParentNotDirectoryException", "AccessDeniedException",
                       "NotDirectoryException", "FileNotFoundException", "IOException", "FSError")
_UNWRITABLE_TEXTS = ("is not a directory", "Not a directory", "Permission denied", "Mkdirs failed",
                     "Failed to create", "Destination exists", "Read-only file system", "No such file or directory")
_CHECKPOINT_ERROR_CLASSES = ("CANNOT_WRITE_STATE_STORE", "CANNOT_LOAD_STATE_STORE", "STATE_STORE_",
                             "CHECKPOINT", "CANNOT_READ_CHECKPOINT")
# py4j's words when the JVM cannot reach Python's callback server, or loses it mid-call. A Python
# exception raised inside a callback (a foreachBatch function) reads differently ("An exception was
# raised by the Python Proxy"): that one is the pipeline's.
_CALLBACK_TEXTS = ("Error while obtaining a new communication channel", "Error while sending a command",
                   "Received empty command", "Cannot obtain a new communication channel")

# Spark's words when a Python worker it started outside its daemon (a Python data source's reader, a
# foreachBatch function Spark Connect runs) did not connect back within the driver's wait, which is a
# constant 10 s in Spark 3.4 to 4.3 (PythonWorkerFactory.createSimpleWorker; no setting lengthens it).
# The worker's imports alone take 8 s for a Connect foreachBatch on an idle two-core machine and 14 s at a
# load average of 26 (measured): a loaded machine, never the pipeline.
_WORKER_LATE_TEXTS = ("Python worker failed to connect back", "Timed out while waiting for the Python worker")


@dataclass(frozen=True)
class Fault:
    """A cause (one of the constants above) and the words a person acts on."""

    cause: str
    reason: str


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def classify_failure(chain: Chain, *, checkpoint: str | None, tempdir: str | None = None,
                     device_full: bool = False, callback_stopped: bool = False,
                     load: tuple[float, int] | None = None) -> Fault | None:
    """The fault behind a failed query, or None when it is (as far as the chain says) the pipeline's.

    `checkpoint`: the query's checkpoint directory; `tempdir`: the temporary directory (named as the
    place that is full when the checkpoint is in it); `device_full`: whether the checkpoint's file
    system was seen with no free block or file (Hadoop's `mkdirs` reports only "Mkdirs failed", so
    a checkpoint that cannot be written on a full device is told by this); `callback_stopped`: whether
    this process's py4j callback server is known to have stopped (what the harness sees of it); `load`:
    the machine's load average and its number of cores, named when a Python worker started late."""
    links = [(_short(cls), err or "", msg or "") for cls, err, msg in chain]
    late = next((link for link in links if any(t in link[2] for t in _WORKER_LATE_TEXTS)), None)
    if late is not None:
        busy = f" (load average {load[0]:.1f} on {load[1]} cores)" if load is not None else ""
        return Fault(PYTHON_WORKER_LATE,
                     f"Spark started a Python worker for the query (a Python data source's reader or a foreachBatch "
                     f"function run by the server) and it did not connect back within the driver's wait, a constant "
                     f"10 s in Spark ({_said(links, late)}): the machine is too busy to start Python in time{busy}. "
                     "An error of the run, not a verdict on the pipeline: run it where fewer processes compete "
                     "(fewer pytest-xdist workers or parallel jobs)")
    where = os.path.dirname(checkpoint.rstrip(os.sep)) if checkpoint else None
    if checkpoint and tempdir and os.path.commonpath([checkpoint, tempdir]) == os.path.normpath(tempdir):
        where = tempdir

    space = next((link for link in reversed(links) if _NO_SPACE_TEXT in link[2]), None)
    if space is not None:
        place = f"in {where}" if where else "on the device"
        held = f" (it holds the query's checkpoint {checkpoint})" if checkpoint else ""
        said = _said(links, space)
        return Fault(NO_SPACE, f"no space left {place}{held}: {said}; free space there, or point the "
                               "temporary directory (TMPDIR) at a larger file system")

    def names_checkpoint(link: tuple[str, str, str]) -> bool:
        return bool(checkpoint) and checkpoint.rstrip(os.sep) in link[2]  # type: ignore[union-attr]

    for link in reversed(links):  # the innermost says most precisely what could not be written
        cls, err, msg = link
        io_words = cls in _UNWRITABLE_CLASSES or any(t in msg for t in _UNWRITABLE_TEXTS)
        if io_words and (names_checkpoint(link) or any(err.startswith(c) for c in _CHECKPOINT_ERROR_CLASSES)):
            if device_full:
                return Fault(NO_SPACE, f"no space left in {where} (it holds the query's checkpoint {checkpoint}; "
                                       f"the file system has no free block or file left): {cls}: {_first_line(msg)}; "
                                       "free space there, or point the temporary directory (TMPDIR) at a larger "
                                       "file system")
            return Fault(CHECKPOINT_UNWRITABLE,
                         f"the checkpoint directory {checkpoint} could not be written: {cls}: {_first_line(msg)}")

    callback = next((link for link in links if link[0].startswith("Py4J")
                     and any(t in link[2] for t in _CALLBACK_TEXTS)), None)
    if callback is not None or (callback_stopped and any(link[0].startswith("Py4J") for link in links)):
        said = _said(links, callback or next(link for link in links if link[0].startswith("Py4J")))
        return Fault(CALLBACK_SERVER_FAILED,
                     f"the Python callback server stopped: the JVM could not call back into Python ({said}); "
                     "the harness's clock runs through it. It is restarted for the next scenario")
    return None


def _said(links: list[tuple[str, str, str]], link: tuple[str, str, str]) -> str:
    """A link of the chain in one line: its class, its error class when it has one, its first line;
    with the innermost link's first line when that one says more (a network cause, a device)."""
    cls, err, msg = link
    text = f"{cls}: {_first_line(msg)}"
    inner = links[-1]
    if inner is not link and _first_line(inner[2]) and _first_line(inner[2]) not in text:
        text += f" (caused by {inner[0]}: {_first_line(inner[2])})"
    return text


def classify_os_error(exc: OSError, *, directory: str) -> Fault | None:
    """A file-system error of the harness's own (making the scenario's work directory under the
    temporary `directory`) as a fault; None when it is none of the known ones."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return Fault(NO_SPACE, f"no space left in {directory}: {exc.strerror or exc}; free space there, or point "
                               "the temporary directory (TMPDIR) at a larger file system")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENOENT):
        return Fault(CHECKPOINT_UNWRITABLE, f"the temporary directory {directory} could not be written (the "
                                            f"query's checkpoint goes there): {exc.strerror or exc}; point the "
                                            "temporary directory (TMPDIR) at a writable one")
    return None
