"""Java classes the harness compiles into the driver JVM at run time, for speed only.

- `LocalCheckpointFileManager`: checkpoint files on a local disk written without a child process per
  file.
- `ClockFront`: the stepped clock's time answered in the JVM.

Without Hadoop's native library (PySpark's wheel has none), Hadoop's local file system sets the
permission of every file it creates by running `chmod` as a child process of the JVM, and writes a
checksum (`.crc`) file beside it, with a `chmod` of its own. Every micro-batch of a stateful query
creates three files this way (its offsets, its commit, a state store delta), so six child processes
per batch, twelve per harness step: about a fifth of a step on a tiny batch (BENCHMARKS.md,
"Checkpoint files without a chmod per file").

`LocalCheckpointFileManager` is Spark's FileSystem-based checkpoint file manager (the class the seam,
`compat`, found) with two methods changed, for paths on the local file system only: the temporary file
of an atomic write (when its folder exists) is created with `java.io`, so it gets the permission the
process's umask gives (what `chmod` applies with Hadoop's default umask: 0644 under umask 022) and no
checksum file; and folders are made with `java.io` (0755 under umask 022, as Hadoop's). The rename that
commits a file, reads, listings, deletes and every other file system (HDFS, object stores) go through
Spark's manager unchanged. Hadoop reads a file that has no checksum file unverified, and its rename
removes a stale checksum file of the target, so a checkpoint written either way is read by both.

`ClockFront` stands between Spark and the harness's stepped clock (`clock.SteppedClock`, a Python
object the JVM calls through py4j): Spark asks a trigger clock for the time about twenty times per
micro-batch (the progress's timings), each a call into Python; the front answers those from a field
the harness sets whenever it moves time, and passes `waitTillTime`, where the stream thread parks
between triggers, on to the stepped clock. What Spark reads is the same time.

The classes are compiled at run time by Janino, the Java compiler Spark ships for its own code
generation, against the Spark in the JVM, and kept as a jar of a few kilobytes in the per-user cache
folder of the class-data archive (`jvmarchive.cache_dir`), keyed by the sources, the Spark version and
the jar Spark's manager comes from: later runs on that Spark load the jar without compiling. Once per
SparkContext the jar is added to the driver's class loader and, with `addJar`, to the executors'. They are used only after a one-task job has loaded the
manager on an executor;
anything that keeps it from working leaves the queries on Spark's FileSystem-based manager (a debug
log line says why). `EVENTTIME_SPARK_TUNING=off` turns it off with the other settings for tiny
batches (`tuning`), and a session that sets `spark.sql.streaming.checkpointFileManagerClass` keeps
its own manager. A Spark Connect client has no JVM to compile into: its server keeps its manager.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import itertools
import logging
import os
import shutil
import threading
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from .jvmarchive import cache_dir

__all__ = ["MANAGER", "CLOCK", "checkpoint_manager", "clock_front"]

MANAGER = "eventtime.jvm.LocalCheckpointFileManager"
CLOCK = "eventtime.jvm.ClockFront"
_PROBE = MANAGER + "$ExecutorClassProbe"

_log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 30  # the one-task job that checks an executor finds the class

# The probe runs in a task: an executor's class loader must find the manager before a query names it.
_SOURCE = """
package eventtime.jvm;

public class LocalCheckpointFileManager extends {base} {{
    public LocalCheckpointFileManager(org.apache.hadoop.fs.Path path, org.apache.hadoop.conf.Configuration conf) {{
        super(path, conf);
    }}

    public org.apache.hadoop.fs.FSDataOutputStream createTempFile(org.apache.hadoop.fs.Path path)
            throws java.io.IOException {{
        org.apache.hadoop.fs.FileSystem fs = fs();
        if (fs instanceof org.apache.hadoop.fs.LocalFileSystem) {{
            java.io.File file = ((org.apache.hadoop.fs.LocalFileSystem) fs).pathToFile(path);
            java.io.File folder = file.getParentFile();
            if (folder != null && folder.isDirectory()) {{
                return new org.apache.hadoop.fs.FSDataOutputStream(
                    new java.io.BufferedOutputStream(new java.io.FileOutputStream(file), 65536), null);
            }}
        }}
        return super.createTempFile(path);
    }}

    public void mkdirs(org.apache.hadoop.fs.Path path) {{
        org.apache.hadoop.fs.FileSystem fs = fs();
        if (fs instanceof org.apache.hadoop.fs.LocalFileSystem) {{
            java.io.File folder = ((org.apache.hadoop.fs.LocalFileSystem) fs).pathToFile(path);
            if (folder.mkdirs() || folder.isDirectory()) {{
                return;
            }}
        }}
        super.mkdirs(path);
    }}

    public static class ExecutorClassProbe implements org.apache.spark.api.java.function.Function {{
        public Object call(Object ignored) throws Exception {{
            return Class.forName("{manager}", true, Thread.currentThread().getContextClassLoader()).getName();
        }}
    }}
}}
"""


_CLOCK_SOURCE = """
package eventtime.jvm;

public class ClockFront implements org.apache.spark.util.Clock {
    private final org.apache.spark.util.Clock stepped;
    private volatile long now;

    public ClockFront(org.apache.spark.util.Clock stepped, long now) {
        this.stepped = stepped;
        this.now = now;
    }

    public long getTimeMillis() {
        return now;
    }

    public long nanoTime() {
        return now * 1000000L;
    }

    public long waitTillTime(long targetTime) {
        long time = stepped.waitTillTime(targetTime);
        now = time;
        return time;
    }

    public void setTime(long time) {
        now = time;
    }
}
"""


# per SparkContext (one JVM's class loaders; every session of it shares them): (its JavaSparkContext, result)
_INSTALLED: dict[int, tuple[Any, str | None]] = {}
_LOCK = threading.Lock()
_JARS = itertools.count(1)


def checkpoint_manager(compat: Any, base: str) -> str | None:
    """The class name of `LocalCheckpointFileManager` over Spark's FileSystem-based manager `base`, made
    in this session's JVM, or None when the classes cannot be made there."""
    return MANAGER if _installed(compat, base) else None


def clock_front(compat: Any, clock: Any) -> Any | None:
    """A `ClockFront` in the JVM for the stepped `clock` (which it tells on every move of time), or None
    when the classes were not made in this session's JVM (`checkpoint_manager` makes them: the
    harness asks for both when a query starts)."""
    jsc = compat.spark.sparkContext._jsc
    with _LOCK:
        found = _INSTALLED.get(id(jsc))
    if found is None or found[0] is not jsc or found[1] is None:
        return None
    front = compat.java(CLOCK)(clock, clock.now_ms)
    clock.attach_front(front)
    return front


def _installed(compat: Any, base: str) -> str | None:
    """Load the classes (the manager over `base`) into the JVM of this session once per SparkContext;
    the manager's name, or None (the reason logged) when they cannot be used."""
    jsc = compat.spark.sparkContext._jsc
    with _LOCK:
        found = _INSTALLED.get(id(jsc))
        if found is None or found[0] is not jsc:
            try:
                result: str | None = _install(compat, base)
            except Exception as exc:  # a speed-up only: any failure keeps Spark's own manager
                _log.debug("checkpoint files keep %s: %s: %s", base, type(exc).__name__, exc)
                result = None
            found = _INSTALLED[id(jsc)] = (jsc, result)
        return found[1]


def _jar(compat: Any, loader: Any, base: str) -> Path:
    """The jar of the classes over `base`: the one an earlier run left in the per-user cache
    (`jvmarchive.cache_dir`) for the same sources and the same Spark classes, else compiled now and
    left there. Janino's first compilation in a JVM takes about a quarter of a second, on every
    cold start otherwise (BENCHMARKS.md, "Compiled classes kept"). A cache folder that cannot be
    written gets the jar in a temporary folder of this process instead."""
    sources = (_SOURCE.format(base=base, manager=MANAGER), _CLOCK_SOURCE)
    name = f"eventtime-jvm-{_jar_key(compat, base, sources)}.jar"
    cached = cache_dir() / name
    if _whole(cached):
        return cached
    bytecodes = _compile(compat, loader, sources)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        part = cached.with_name(f".{name}.{os.getpid()}.{next(_JARS)}.part")
        _write_jar(part, bytecodes)
        os.replace(part, cached)  # whole or absent: a concurrent run writes the same bytes
        return cached
    except OSError as exc:
        _log.debug("compiled classes not cached in %s: %s", cached.parent, exc)
    folder = tempfile.mkdtemp(prefix="eventtime-jvm-")
    atexit.register(shutil.rmtree, folder, True)
    # named apart: Spark's file server refuses a second jar of one name from another path
    jar = Path(folder) / f"eventtime-jvm-{os.getpid()}-{next(_JARS)}.jar"
    _write_jar(jar, bytecodes)
    return jar


def _jar_key(compat: Any, base: str, sources: tuple[str, ...]) -> str:
    """What the compiled classes depend on, hashed: the sources, the Spark version, and the jar `base`
    comes from (its path, size and modification time: a rebuilt Spark of the same version)."""
    digest = hashlib.sha256()
    url = compat.java("java.lang.Class").forName(base).getProtectionDomain().getCodeSource().getLocation()
    location = str(compat.java("java.io.File")(url.toURI()).getPath())
    parts = [*sources, str(compat.spark.version), location]
    with contextlib.suppress(OSError):
        stat = os.stat(location)
        parts.append(f"{stat.st_size}:{stat.st_mtime_ns}")
    for part in parts:
        digest.update(part.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()[:20]


def _whole(jar: Path) -> bool:
    """A readable jar with every class `_install` needs (a damaged one is compiled and written again)."""
    try:
        with zipfile.ZipFile(jar) as found:
            names = set(found.namelist())
            return found.testzip() is None and all(
                c.replace(".", "/") + ".class" in names for c in (MANAGER, CLOCK, _PROBE))
    except (OSError, zipfile.BadZipFile):
        return False


def _compile(compat: Any, loader: Any, sources: tuple[str, ...]) -> dict[str, bytes]:
    bytecodes: dict[str, bytes] = {}
    for source in sources:
        compiler = compat.java("org.codehaus.janino.SimpleCompiler")()
        compiler.setParentClassLoader(loader)
        compiler.cook(source)
        made = compiler.getBytecodes()
        bytecodes.update({str(name): bytes(made.get(name)) for name in made.keySet()})
    return bytecodes


def _write_jar(path: Path, bytecodes: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as out:
        for name, code in bytecodes.items():
            out.writestr(name.replace(".", "/") + ".class", code)


def _install(compat: Any, base: str) -> str:
    loader = compat.java("java.lang.Thread").currentThread().getContextClassLoader()
    if not compat.java("java.lang.Class").forName("org.apache.spark.util.MutableURLClassLoader").isInstance(loader):
        raise RuntimeError(f"the driver's class loader is a {loader.getClass().getName()}, not Spark's "
                           "MutableURLClassLoader")
    jar = _jar(compat, loader, base)
    loader.addURL(compat.java("java.io.File")(str(jar)).toURI().toURL())
    jsc = compat.spark.sparkContext._jsc
    jsc.addJar(str(jar))  # for executors of other JVMs (a cluster); in local mode they find it through the driver's
    one = compat.java("java.util.ArrayList")()
    one.add(1)
    probe = compat.java(_PROBE)()  # py4j finds classes with its thread's loader: the one just extended
    job = jsc.parallelize(one, 1).map(probe).collectAsync()
    try:
        found = list(job.get(PROBE_TIMEOUT_S, compat.java("java.util.concurrent.TimeUnit").SECONDS))
    except Exception:
        job.cancel(True)  # e.g. no executor free within the bound: the queries keep Spark's manager
        raise
    if found != [MANAGER]:
        raise RuntimeError(f"an executor task found {found!r}")
    return MANAGER
