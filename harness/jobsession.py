"""A job's own session, ending and process settings, kept to the kit while the job builds its queries.

A job as it ships makes its own session (`SparkSession.builder...getOrCreate()`, often in a helper
module), ends with `spark.stop()`, and may read `sys.argv` and `os.environ`. While `own_session(spark,
...)` is active in a thread, code run in that thread:

- gets the kit's session from `SparkSession.builder...getOrCreate()` (and `.create()`),
  `SparkSession.getActiveSession()` and `SparkSession.active()`; the builder's settings are recorded
  with the line that made each, and applied or noted by the setting rules below;
- has its `spark.stop()` and `SparkContext.stop()` recorded, not done: the kit's session runs the
  scenarios after this one;
- sees its own queries (the stand-ins of `jobio`) in `spark.streams.active`, never another scenario's;
- has its `spark.conf.set(key, value)` done as in production, except for a key the kit or the scenario
  sets (kept, and noted); every key it changed is restored when the scenario ends (`restore_session`).

Setting rules (docs/jobs.md, "The job's own session"). A builder setting is:
- applied when it is a runtime SQL setting (one `spark.conf.set` accepts) that neither the kit nor the
  scenario sets: it is what production runs the query with (Spark's own `getOrCreate()` applies such
  settings to a session that already exists);
- noted, not applied, when it is the application's (master, app name, jars and packages, driver and
  executor settings, catalog plugins: they decide what the session is, and the kit's is already made),
  static (Spark fixes it when a session is made), or a key the kit or the scenario sets (the kit's
  settings for tiny batches, the scenario's `conf:`, a conf-backed parameter's value).

`process_settings(argv, env)` sets `sys.argv` and `os.environ` for the job's call and restores them
after, so that nothing leaks into the next scenario.

Only classic PySpark is patched (Spark Connect's session is not substituted). Patches are installed
once per process while any thread uses them; other threads get pyspark's own methods (`threadpatch`).
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Any, Callable, Iterator, Mapping, MutableMapping, Sequence

from .jobio import Place, active_queries, caller_place
from .threadpatch import ThreadPatch

__all__ = ["SessionScope", "own_session", "restore_session", "process_settings", "APPLICATION_SETTINGS"]

# Settings that decide what the session is (where it runs, what it loads, how its processes are made):
# never applied to the kit's session, which is already made; each one the job sets is noted.
APPLICATION_SETTINGS = ("spark.master", "spark.app.name", "spark.remote", "spark.api.mode", "spark.jars",
                        "spark.submit.", "spark.driver.", "spark.executor.", "spark.files", "spark.archives",
                        "spark.sql.catalogImplementation", "spark.sql.catalog.", "spark.sql.extensions",
                        "spark.sql.warehouse.dir", "spark.local.dir", "spark.pyspark.")

_HERE = os.path.abspath(__file__)


def _is_application(key: str) -> bool:
    return any(key == s or (s.endswith(".") and key.startswith(s)) or key.startswith(s + ".")
               for s in APPLICATION_SETTINGS)


def _kit_settings(spark: Any) -> dict[str, str]:
    """The SQL settings the kit gives its session and its queries (`session.TEST_CONF`, `compat.query_conf`)."""
    from .compat import compat_for
    from .session import TEST_CONF

    out = {k: v for k, v in TEST_CONF.items() if k.startswith("spark.sql.")}
    out.update(compat_for(spark).query_conf)
    return out


class SessionScope:
    """One thread's job session: the kit's session, the keys the kit and the scenario set, what the job's
    settings did (notes), and the values of the keys it changed, as they were before (`before`)."""

    def __init__(self, spark: Any, scenario_conf: Mapping[str, str], before: MutableMapping[str, str | None]):
        self.spark = spark
        self.scenario_conf = dict(scenario_conf)
        self.kit_conf = _kit_settings(spark)
        self.before = before
        self.notes: list[str] = []
        self.stops: list[Place | None] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def owner(self, key: str) -> tuple[str, str] | None:
        """Who sets `key` for the run instead of the job, and to what: the scenario, else the kit."""
        for mine, whose in ((self.scenario_conf, "the scenario sets"), (self.kit_conf, "the kit's runs set")):
            if key in mine:
                return whose, mine[key]
        return None

    def set(self, key: str, value: str) -> None:
        """`spark.conf.set` on the kit's session, remembering the value it replaces for the restore."""
        conf = self.spark.conf
        previous = conf.get(key, None)
        _pyspark_own(conf, "set")(conf, key, value)
        self.before.setdefault(key, previous)

    def apply_builder(self, options: Mapping[str, Any], places: Mapping[str, Place | None],
                      default: Place | None) -> None:
        for key, raw in options.items():
            value = raw if isinstance(raw, str) else str(raw)
            place = places.get(key) or default
            said = f"{place}: builder setting {key}={value!r}"
            if _is_application(key):
                self.note(f"{said} is the application's (it decides what the session is): not applied, the kit "
                          "runs the job on its own session")
                continue
            owner = self.owner(key)
            if owner is not None:
                if owner[1] != value:
                    self.note(f"{said} is not applied: {owner[0]} {key}={owner[1]!r}")
                continue
            try:
                self.set(key, value)
            except Exception as exc:  # noqa: BLE001 - Spark refuses static and core settings on a live session
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                self.note(f"{said} is not applied: Spark fixes it when a session is made ({first[:160]})")


class SessionBefore(dict[str, "str | None"]):
    """What a scenario's job changed in the kit's session, to put back when the scenario ends: each
    setting's value before (key -> value, None: unset) and the query listeners it added."""

    def __init__(self) -> None:
        super().__init__()
        self.listeners: list[Any] = []


def restore_session(spark: Any, before: Mapping[str, str | None]) -> None:
    """Put back the session settings a job changed (`SessionScope.before`), at the end of its scenario,
    and remove the query listeners it added (another scenario's queries are not its to see)."""
    for listener in getattr(before, "listeners", ()):
        try:
            spark.streams.removeListener(listener)
        except Exception:  # noqa: BLE001 - a dead driver keeps no listeners
            pass
    for key, value in before.items():
        try:
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        except Exception:  # noqa: BLE001 - a dead driver keeps no settings
            pass


def _pyspark_own(obj: Any, name: str) -> Callable[..., Any]:
    """pyspark's own method `name` of `obj`'s class, patched or not (the kit's own calls in a job's thread)."""
    return _PATCH.original(obj, name)


def _scope() -> SessionScope | None:
    return _PATCH.current()


def _place() -> Place | None:
    return caller_place(lambda name: os.path.abspath(name) == _HERE)


@contextlib.contextmanager
def own_session(spark: Any, scenario_conf: Mapping[str, str],
                before: MutableMapping[str, str | None]) -> Iterator[SessionScope]:
    """Give the job run in this thread inside the block the kit's session (see the module's text)."""
    with _PATCH.entered(SessionScope(spark, scenario_conf, before)) as scope:
        yield scope


@contextlib.contextmanager
def process_settings(argv: Sequence[str], env: Mapping[str, str], path: Sequence[str] = ()) -> Iterator[None]:
    """`sys.argv` = `argv`, `os.environ` with `env`, and `path` first on `sys.path`, inside the block
    only: a job reads them as it starts, and the next scenario sees what was there before. They are the
    process's, so jobs built at once in several threads take turns (else one could restore another's)."""
    with _process_lock:
        with _process_settings(argv, env, path):
            yield


_process_lock = threading.RLock()


@contextlib.contextmanager
def _process_settings(argv: Sequence[str], env: Mapping[str, str], path: Sequence[str]) -> Iterator[None]:
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_env = {k: os.environ.get(k) for k in env}
    sys.argv = list(argv)
    os.environ.update(env)
    sys.path[:0] = [p for p in path if p not in sys.path]
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# -- the patches ------------------------------------------------------------------------------------
def _builder_config(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Builder.config` as pyspark's, also remembering the job's line that set each key."""
    def config(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _scope() is None:
            return original(self, *args, **kwargs)
        options = getattr(self, "_options", {})
        before = dict(options)
        out = original(self, *args, **kwargs)
        places = self.__dict__.setdefault("_eventtime_places", {})
        place = _place()
        for key, value in options.items():
            if key not in before or before[key] != value or key not in places:
                places[key] = place
        return out
    config.__name__ = "config"
    return config


def _get_or_create(scope: SessionScope, builder: Any) -> Any:
    scope.apply_builder(dict(getattr(builder, "_options", {})), getattr(builder, "_eventtime_places", {}), _place())
    return scope.spark


def _stop_session(scope: SessionScope, session: Any) -> None:
    place = _place()
    scope.stops.append(place)
    scope.note(f"{place}: spark.stop() ends the job's session in production; under test it is recorded, not done "
               "(the kit's session runs the scenarios after this one)")


def _stop_context(scope: SessionScope, context: Any) -> None:
    place = _place()
    scope.stops.append(place)
    scope.note(f"{place}: SparkContext.stop() ends the job's Spark application in production; under test it is "
               "recorded, not done (the kit's session runs the scenarios after this one)")


def _add_listener(scope: SessionScope, manager: Any, listener: Any) -> None:
    """`spark.streams.addListener(l)`: added, and removed when the scenario ends (`restore_session`)."""
    _pyspark_own(manager, "addListener")(manager, listener)
    listeners = getattr(scope.before, "listeners", None)
    if listeners is not None:
        listeners.append(listener)


def _conf_set(scope: SessionScope, conf: Any, key: str, value: Any) -> None:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    owner = scope.owner(key)
    if owner is not None:
        if owner[1] != text:
            scope.note(f"{_place()}: spark.conf.set({key!r}, {text!r}) is not applied: {owner[0]} {key}={owner[1]!r}")
        return
    scope.set(key, text)


def _patches() -> list[tuple[type, str, Callable[[Any], Any]]]:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql.conf import RuntimeConfig
    from pyspark.sql.streaming.query import StreamingQueryManager

    builder = SparkSession.Builder
    out: list[tuple[type, str, Callable[[Any], Any]]] = []

    def patch(cls: Any, name: str, wrap: Callable[[Any], Any]) -> None:
        if name in cls.__dict__:
            out.append((cls, name, wrap))

    patch(builder, "config", _builder_config)
    patch(builder, "getOrCreate", _PATCH.instead("getOrCreate", _get_or_create))
    patch(builder, "create", _PATCH.instead("create", _get_or_create))
    patch(SparkSession, "stop", _PATCH.instead("stop", _stop_session))
    patch(SparkContext, "stop", _PATCH.instead("stop", _stop_context))
    patch(RuntimeConfig, "set", _PATCH.instead("set", _conf_set))
    for name in ("getActiveSession", "active"):  # classmethods: the kit's session in a job's thread
        patch(SparkSession, name, _active_session)
    patch(StreamingQueryManager, "active", _active_queries)
    patch(StreamingQueryManager, "addListener", _PATCH.instead("addListener", _add_listener))
    return out


def _active_session(original: Any) -> classmethod:
    def active(cls: Any) -> Any:
        scope = _scope()
        return scope.spark if scope is not None else original.__get__(None, cls)()
    return classmethod(active)


def _active_queries(original: property) -> property:
    def queries(self: Any) -> Any:  # the job's own stand-ins, never the queries of another scenario
        if _scope() is None:
            return original.fget(self)  # type: ignore[misc]
        return active_queries()
    return property(queries, doc=original.__doc__)


_PATCH: ThreadPatch[SessionScope] = ThreadPatch("a job session", _patches)
