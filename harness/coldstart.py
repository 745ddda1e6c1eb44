"""What a cold start of the driver JVM does besides PySpark's own launch, each to make it shorter or
tidier; `session.get_session` calls them in this order:

- `numpy_converters_ask_only_with_numpy`: py4j's numpy converters answer "no" without importing
  pandas and pyarrow while numpy is not imported;
- `warehouse`: a warehouse folder of the process's own, removed at exit (not `spark-warehouse` in the
  user's project);
- `archive_plan`, `archive_launched`, `archive_launch_failed`: the JVM class-data archive the launch
  records or maps (`jvmarchive`);
- `first_use_imports_once_launched`: once the JVM's process is started, PySpark's first-use imports on a
  thread (`import_first_use_modules_meanwhile`) while the main thread waits for the JVM;
- `prepare_queries_meanwhile`: once the session is made, what the first query asks of the new JVM, on a
  thread (`PREPARING`).

None changes what a query computes; the cold start's figures are in BENCHMARKS.md ("Cold start")."""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator, Mapping

__all__ = ["warehouse", "PREPARING", "prepare_queries_meanwhile", "numpy_converters_ask_only_with_numpy",
           "first_use_imports_once_launched", "first_use_thread", "import_first_use_modules_meanwhile",
           "archive_plan", "archive_launched", "archive_launch_failed"]


def warehouse() -> str:
    """A warehouse folder of the process's own, removed when it exits: Spark's default is
    `spark-warehouse` in the working directory, which it creates at the session's start, so each run
    left one in the user's project. A scenario's tables live in a database of its own anyway."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="eventtime-warehouse-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


PREPARING = "eventtime-prepare-queries"  # the thread's name (tests wait for it before touching jvmclasses)


def prepare_queries_meanwhile(spark: Any) -> threading.Thread:
    """Make, on a thread, what the harness's first query on a new JVM asks of it once (`compat.query_conf`:
    loading the harness's compiled classes and the one-task job that checks an executor finds them,
    0.3-0.6 s of a cold start) while the caller goes on loading scenarios and building the pipeline's
    DataFrame. The first query's start takes what was made, waiting for it if it is not done (the
    classes are made once per SparkContext, under `jvmclasses`' lock); a failure here is met, and
    handled, again there. Concurrent with the caller's own calls: a plain one-task job, no query."""
    from .compat import compat_for

    def prepare() -> None:
        try:
            compat_for(spark).query_conf  # noqa: B018 - computed and kept for the first query
        except Exception:  # noqa: BLE001 - the first query asks again and meets it (a dead JVM: its caller says so)
            pass

    thread = threading.Thread(target=prepare, name=PREPARING, daemon=True)
    thread.start()
    return thread


def numpy_converters_ask_only_with_numpy() -> None:
    """PySpark's numpy argument converters answer "no" without importing anything while numpy is not
    imported in this process.

    PySpark 4's numpy converters import `pyspark.testing.utils` (pandas, pyarrow, protobuf: 0.4-0.9 s)
    on their first ask, whatever the argument, to learn whether numpy is installed. An object can only
    be a numpy array or scalar once numpy is imported, so until then "no" is their answer without the
    import: the same conversions, and the main thread's first py4j calls (a SparkConf, a warm attach)
    do not wait on that import while `import_first_use_modules_meanwhile` makes it. Once numpy is
    imported they ask as PySpark wrote them."""
    from py4j import protocol

    for converter in list(getattr(protocol, "INPUT_CONVERTER", [])):
        kind = type(converter)
        if (not kind.__module__.startswith("pyspark.") or not kind.__name__.startswith("Numpy")
                or getattr(converter, "_eventtime_numpy_guard", False)):
            continue
        asks = converter.can_convert

        def can_convert(obj: Any, asks: Any = asks) -> bool:
            return "numpy" in sys.modules and bool(asks(obj))

        converter.can_convert = can_convert
        converter._eventtime_numpy_guard = True


_first_use: threading.Thread | None = None  # the thread `first_use_imports_once_launched` started last


def first_use_thread() -> threading.Thread | None:
    """The thread of first-use imports the last launch started (None: none started in this process)."""
    return _first_use


@contextlib.contextmanager
def first_use_imports_once_launched() -> Iterator[None]:
    """While PySpark launches the driver JVM: once its process is started, PySpark's first-use imports
    begin on a thread (`import_first_use_modules_meanwhile`), while the main thread waits for the JVM.

    Not before: PySpark starts the JVM with a `preexec_fn`, and a fork with one takes the locks of the
    import system and of `logging` first; a thread importing at that moment can hold one and wait for
    the other (seen: setuptools' distutils hook importing, under the import lock, a module that asks
    logging for a logger, while the fork held logging's lock and waited for the import lock: the run
    hung for good). Found by the name PySpark launches with; a PySpark without it gets no thread."""
    from pyspark import java_gateway

    launch = getattr(java_gateway, "Popen", None)
    if launch is None or getattr(java_gateway, "_eventtime_launching", False):
        yield
        return

    def started(*args: Any, **kwargs: Any) -> Any:
        global _first_use
        earlier = _first_use
        if earlier is not None:  # a launch again (the last JVM died starting): its imports end first
            earlier.join(120)
        proc = launch(*args, **kwargs)
        _first_use = import_first_use_modules_meanwhile()
        return proc

    setattr(java_gateway, "Popen", started)  # noqa: B010 - a module's name, replaced for this launch only
    setattr(java_gateway, "_eventtime_launching", True)  # noqa: B010
    try:
        yield
    finally:
        setattr(java_gateway, "Popen", launch)  # noqa: B010
        setattr(java_gateway, "_eventtime_launching", False)  # noqa: B010


def import_first_use_modules_meanwhile() -> threading.Thread | None:
    """Import, on a thread, what PySpark imports on its first use of common calls, while the driver JVM
    starts (`first_use_imports_once_launched`: never while a fork is to come).

    PySpark 4 imports `pyspark.testing.utils` (pandas, pyarrow, protobuf: 0.4-0.9 s measured) the
    first time a process calls `F.lit`, converts a numpy value or makes a pandas UDF: in nearly every
    user's transform. Imported here, the main thread meets it done, or part done, when it gets there,
    instead of paying it after the launch. A module that fails to import fails again on the main
    thread, where the user's call meets it, as it would have."""
    if "pyspark.testing.utils" in sys.modules:
        return None

    def load() -> None:
        import importlib

        try:
            importlib.import_module("pyspark.testing.utils")
        except Exception:  # noqa: BLE001 - the main thread's import meets it again and says it
            pass

    thread = threading.Thread(target=load, name="eventtime-first-use-imports", daemon=True)
    thread.start()
    return thread


def archive_plan(settings: Mapping[str, str]) -> Any:
    """The class-data archive plan of the driver JVM `get_session` is about to launch (`jvmarchive`);
    none when PySpark already has a JVM (its options are fixed)."""
    from pyspark import SparkContext

    from .jvmarchive import ArchivePlan, plan_archive

    if getattr(SparkContext, "_gateway", None) is not None:
        return ArchivePlan("none")
    plan = plan_archive(settings)
    if plan.note:
        print(f"eventtime: {plan.note}", file=sys.stderr, flush=True)
    return plan


def archive_launched(plan: Any, lines: list[str]) -> None:
    from pyspark import SparkContext

    from .jvmarchive import after_launch

    if plan.action == "none":
        return
    proc = getattr(getattr(SparkContext, "_gateway", None), "proc", None)  # spark-submit execs the JVM: its pid
    after_launch(plan, lines, getattr(proc, "pid", None))


def archive_launch_failed(plan: Any, lines: list[str]) -> None:
    from .jvmarchive import launch_failed

    launch_failed(plan, lines)
