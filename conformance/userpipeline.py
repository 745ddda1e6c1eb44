"""The user's pipeline, in one place: how a reference to it is resolved (`module:function`, a script
job), what it declares about itself (`@implementation`), how the kit calls it, and what it checks of
the DataFrame it returns. The plugin, the CLI, `watch` and the runner all come here for it.

A pipeline may be written in any of three ways; the kit reads the function's signature:
- `fn(df)` for a contract with one source: the source's streaming DataFrame;
- parameters named after the contract's sources and parameters, in any order
  (`def transform(clicks, window, watermark_delay)`): sources as streaming DataFrames, durations as
  Spark interval strings (`"5 minutes"`), other parameters as their values; a function parameter with
  a default that the contract does not supply keeps its default;
- `fn(sources, params)`: a mapping of source name to DataFrame and the `Params` (durations have
  `.interval`).
A job builds its own queries from `spark.readStream` to `writeStream`; the kit substitutes its readers
and writers (`eventtime.jobs`). It is `build(spark)` or `main(spark)` (one required parameter, named
`spark`), or `main()`: a function that asks for nothing the contract supplies (no required parameter,
none named after a source or parameter) builds its own session, so it can only be a job. A script run
as `__main__` is bound by its path (`jobs/medallion.py`) or as `package.module:__main__`.
A function that fits none of these is an error naming it, its signature, its file and line, every
shape the kit accepts, and what the contract supplies.
The returned DataFrame must have exactly the contract's output columns, with the contract's types.
"""
from __future__ import annotations

import importlib
import inspect
import os
import runpy
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from eventtime import harness as _harness
from eventtime.harness.errors import EventtimeError
from eventtime.harness.jobio import shown_file

from .contracts import Column, Contract

__all__ = ["SignatureError", "OutputMismatch", "PipelineRaised", "PipelineError", "PipelineImportError",
           "ImplementationError", "Pipeline", "pipeline_caller",
           "check_output", "user_frames", "is_job", "resolve_pipeline", "implementation", "implementation_info",
           "ImplementationInfo", "UNJUDGEABLE", "ScriptJob", "DeclarativePipeline"]

# what the runner calls: `fn(sources, params)` after `pipeline_caller` adapted the user's signature
Pipeline = Callable[..., Any]


# Checks an implementation may declare it cannot be judged on: they read the metrics of Spark's
# built-in stateful operators, which a hand-written operator does not have in the same shape.
UNJUDGEABLE = ("dropped", "state_rows")


@dataclass(frozen=True)
class ImplementationInfo:
    """What an implementation declares about itself with `@implementation(...)`."""

    requires: tuple[str, ...] = ()  # Spark features (eventtime.harness.features) it needs
    supports: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)  # param -> values it handles
    unjudged: tuple[str, ...] = ()  # checks of UNJUDGEABLE that do not apply to it
    note: str = ""  # why, shown next to its verdicts
    conf: Mapping[str, str] = field(default_factory=dict)  # Spark SQL settings its queries need

    def not_applicable(self, params: Mapping[str, Any], features: frozenset[str]) -> str | None:
        """Why a scenario with `params` is outside what this implementation handles (None if inside)."""
        missing = [f for f in self.requires if f not in features]
        if missing:
            return f"the implementation needs Spark feature(s) {', '.join(missing)}"
        for name, allowed in self.supports.items():
            if name in params and params[name] not in allowed:
                return (f"the implementation supports {name} {', '.join(map(str, allowed))}, "
                        f"the scenario uses {params[name]}")
        return None


def implementation(*, requires: tuple[str, ...] | list[str] = (), supports: Mapping[str, Any] | None = None,
                   unjudged: tuple[str, ...] | list[str] = (), note: str = "",
                   conf: Mapping[str, str] | None = None):
    """Decorate a pipeline function to declare the features it needs, the parameter values it handles
    (scenarios outside them are *not applicable* to it, never failures) and the operator-metric
    checks (`dropped`, `state_rows`) that do not apply to it, with a note saying why. `conf` holds
    Spark SQL settings its queries need (a scenario's own `conf` still wins)."""
    from eventtime.harness.features import FEATURES

    for f in requires:
        if f not in FEATURES:
            from .problems import did_you_mean

            raise ImplementationError(f"@implementation(requires=...): unknown Spark feature {f!r}"
                                      f"{did_you_mean(f, sorted(FEATURES))} (known: {', '.join(sorted(FEATURES))})")
    for c in unjudged:
        if c not in UNJUDGEABLE:
            raise ImplementationError(f"@implementation(...): unjudged takes {', '.join(UNJUDGEABLE)}, not {c!r}")
    if unjudged and not note:
        raise ImplementationError("@implementation(unjudged=...): say in `note` why the checks do not apply to this "
                                  "implementation")
    info = ImplementationInfo(tuple(requires), {k: tuple(v) for k, v in (supports or {}).items()},
                              tuple(unjudged), note, dict(conf or {}))

    def mark(fn):
        fn.__eventtime_implementation__ = info
        return fn

    return mark


def implementation_info(fn: Any) -> ImplementationInfo:
    return getattr(fn, "__eventtime_implementation__", None) or ImplementationInfo()


class PipelineError(EventtimeError):
    """A pipeline reference that cannot be resolved, or a pipeline that breaks its contract."""


class ImplementationError(PipelineError, ValueError):
    """An `@implementation(...)` declaration the kit cannot honour (an unknown feature, a check that
    cannot be left unjudged, no note saying why)."""


def resolve_pipeline(ref: str) -> Pipeline:
    """`module:function` (or `module.function`) -> the callable; a script run as `__main__`, bound by its
    path (`jobs/medallion.py`, from the current folder) or as `module:__main__` -> a `ScriptJob`;
    raises PipelineError saying why not."""
    if ref.endswith(".py") or ref.endswith(":__main__"):
        return _resolve_script(ref)
    if _is_pipeline_ref(ref):
        return _resolve_declarative(ref)
    module_name, sep, attr = ref.partition(":")
    if not sep:
        module_name, _, attr = ref.rpartition(".")
    if not module_name or not attr:
        raise PipelineError(f"pipeline {ref!r} is not of the form 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if not _is_module_of(module_name, exc.name):  # a module the user's module imports is missing
            raise PipelineImportError(ref, module_name, exc) from None
        raise PipelineError(f"cannot import module {module_name!r} for pipeline {ref!r}: {exc} (is the project "
                            "installed, `pip install -e .`, or its folder on PYTHONPATH?)") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the module's own code raised while it was imported
        raise PipelineImportError(ref, module_name, exc) from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            from .problems import did_you_mean

            names = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None))]
            raise PipelineError(f"module {module_name!r} has no {attr!r}{did_you_mean(attr, names)} (pipeline {ref!r})")
    if not callable(fn):
        raise PipelineError(f"pipeline {ref!r} is not callable")
    return fn


def _is_module_of(module_name: str, missing: str | None) -> bool:
    """Whether the module not found is `module_name` itself or a package it is in (the binding names a
    module that is not there), rather than one the user's module imports."""
    return missing is None or module_name == missing or module_name.startswith(missing + ".")


class PipelineImportError(PipelineError):
    """The user's module raised while it was imported (a SyntaxError, a KeyError of a module-level
    `os.environ[...]`, a bad `@implementation(...)`, a module it imports that is missing): said at the
    user's file:line with the user's own frames, never the kit's. `original` is the exception."""

    def __init__(self, ref: str, module: str, exc: BaseException):
        self.original = exc
        self.place = _raised_at(exc)
        text = str(exc.msg if isinstance(exc, SyntaxError) else exc) if not isinstance(exc, SystemExit) else (
            f"sys.exit({exc.code!r})")
        frames = _import_frames(exc)
        super().__init__(f"{self.place + ': ' if self.place else ''}importing module {module!r} (pipeline {ref!r}) "
                         f"raised {type(exc).__name__}: {text}{_import_hint(exc)}" + (f"\n{frames}" if frames else ""))


def _kits_or_libraries(filename: str) -> bool:
    """Frames that are not the user's: the kit's, PySpark's and py4j's, Python's own import machinery."""
    return (filename.startswith(_OWN) or filename.startswith(("<frozen", _IMPORTLIB))
            or any(part in filename for part in (f"{os.sep}pyspark{os.sep}", f"{os.sep}py4j{os.sep}")))


def _raised_at(exc: BaseException) -> str:
    """`file:line` of the user's code where `exc` was raised while importing: a SyntaxError's own place,
    else the innermost frame that is not the kit's, PySpark's or Python's import machinery."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{shown_file(exc.filename)}:{exc.lineno or 0}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _kits_or_libraries(f.filename)]
    return f"{shown_file(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def _import_frames(exc: BaseException, limit: int = 8) -> str:
    """The user's frames of an error raised while importing (a SyntaxError: its line and caret)."""
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc)[:-1]).rstrip()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _kits_or_libraries(f.filename)]
    return "".join(traceback.format_list(frames[-limit:])).rstrip()


def _import_hint(exc: BaseException) -> str:
    """What the kit knows of a module that reads the environment at import: a scenario's `job: {env: ...}`
    applies while a job runs, after its module was imported."""
    if isinstance(exc, KeyError) and any("environ" in (f.line or "") for f in traceback.extract_tb(exc.__traceback__)):
        return (f" (the module reads environment variable {exc.args[0] if exc.args else ''} when it is imported, "
                "before any scenario runs: set it in the environment of the run, or read it inside the function; "
                "a scenario's `job: {env: ...}` applies while a job runs, and to the module's own top level "
                "when the job is bound as a script, `CONTRACT=path/to/job.py`: docs/jobs.md, *Entry points*)")
    return ""


def _resolve_script(ref: str) -> Pipeline:
    import importlib.util

    if ref.endswith(".py"):
        path = os.path.abspath(ref)
        if not os.path.isfile(path):
            raise PipelineError(f"script {ref!r} does not exist (looked for {path}); a script job is bound by its "
                                "path (in the project's settings file: from the project's root; on the command "
                                "line: from the folder the run starts in), or as 'package.module:__main__'")
        return ScriptJob(ref, path=path)
    module = ref.removesuffix(":__main__")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        spec, why = None, f": {exc}"
    else:
        why = ""
    if spec is None:
        raise PipelineError(f"cannot find module {module!r} for script job {ref!r}{why} (is the project installed, "
                            "`pip install -e .`, or its folder on PYTHONPATH?)")
    return ScriptJob(ref, module=module)

def _is_pipeline_ref(ref: str) -> bool:
    from eventtime.harness.pipelinegraph import SPEC_FILE_NAMES

    return ref.endswith(SPEC_FILE_NAMES) or ref.endswith(("/", os.sep)) or (":" not in ref and os.path.isdir(ref))


def _resolve_declarative(ref: str) -> "DeclarativePipeline":
    from eventtime.harness.pipelinegraph import PipelineLoadError, find_spec

    try:
        spec = find_spec(os.path.abspath(ref))
    except PipelineLoadError as exc:
        raise PipelineError(f"Spark Declarative Pipeline {ref!r}: {exc} (a pipeline is bound by its spec's path or "
                            "its folder's: in the project's settings file from the project's root, on the command "
                            "line from the folder the run starts in)") from None
    return DeclarativePipeline(ref, str(spec))


class DeclarativePipeline:
    """A Spark Declarative Pipeline bound by its spec (`pipelines/clicks/spark-pipeline.yml`) or its folder:
    its definition files are loaded and run as `spark-pipelines run` runs them (docs/pipelines.md), on a
    Spark Connect session only; the kit never calls it as a function."""

    def __init__(self, ref: str, spec: str):
        self.ref, self.spec = ref, spec
        self.__module__ = ref  # the run's name for it: the binding as written
        self.__qualname__ = "spark-pipeline"

    def __repr__(self) -> str:
        return f"DeclarativePipeline({self.ref!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise PipelineError(f"pipeline {self.ref!r} is a Spark Declarative Pipeline: it runs in updates, not as "
                            "a function")


class ScriptJob:
    """A job whose only entry is its script run as `__main__`, as `spark-submit job.py --arg x` runs it:
    bound as `path/to/job.py` or `package.module:__main__`, run with `runpy` (its `if __name__ ==
    "__main__":` block, a bare `main()` at the bottom, module-level code reading `sys.argv`)."""

    def __init__(self, ref: str, *, path: str | None = None, module: str | None = None):
        self.ref, self.path, self.module = ref, path, module
        self.__module__ = path or module or ref  # the run's name for it: `path/to/job.py:__main__`
        self.__qualname__ = "__main__"

    def __repr__(self) -> str:
        return f"ScriptJob({self.ref!r})"

    def __call__(self) -> None:
        import warnings

        if self.path is not None:
            runpy.run_path(self.path, run_name="__main__")
            return
        assert self.module is not None
        with warnings.catch_warnings():  # a module its package imported already runs again as __main__, as -m does
            warnings.simplefilter("ignore", RuntimeWarning)
            runpy.run_module(self.module, run_name="__main__")


class SignatureError(EventtimeError, TypeError):
    """A pipeline function whose parameters the kit cannot supply."""


class OutputMismatch(EventtimeError, ValueError):
    """The pipeline's output columns or types differ from the contract's; names every column."""


class PipelineRaised(EventtimeError):
    """The user's pipeline raised while the query was built; `frames` are the user's own."""

    def __init__(self, name: str, exc: BaseException):
        self.original = exc
        self.frames = user_frames(exc)
        where = f"\n{self.frames}" if self.frames else ""
        super().__init__(f"pipeline {name} raised {type(exc).__name__}: {exc}{_hint(exc)}{where}")


def _hint(exc: BaseException) -> str:
    """What the kit knows about a mistake its own values cause: `fn(sources, params)` gets durations
    as Duration objects, which PySpark refuses where it wants an interval string."""
    if "Duration" in str(exc) and "str" in str(exc):
        return ("\n  (a duration in `params` is a Duration: pass `params[...].interval`, a Spark interval string, "
                "or name the parameter in the function's signature to receive the string itself)")
    return ""


def _describe(fn: Callable) -> str:
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    module = getattr(fn, "__module__", None)
    try:
        signature = str(inspect.signature(fn))
    except (TypeError, ValueError):
        signature = "(...)"
    return f"{module + ':' if module else ''}{name}{signature}{_defined_at(fn)}"


def _defined_at(fn: Callable) -> str:
    """` (file:line)` of the function's definition, when Python knows it."""
    target = inspect.unwrap(fn) if callable(fn) else fn
    code = getattr(target, "__code__", None)
    if code is None:
        return ""
    return f" ({shown_file(code.co_filename)}:{code.co_firstlineno})"


# Every shape the kit calls a pipeline in, for a function that fits none (docs/pipelines.md, docs/jobs.md).
SHAPES = ("fn(df) (a contract with one source: its streaming DataFrame)",
          "fn(...) with parameters named after what the contract supplies",
          "fn(sources, params)",
          "a job: build(spark) or main(spark) (the kit's session), or main() with no parameters (it builds "
          "its own session with SparkSession.builder...getOrCreate())",
          "a script run as __main__, bound by its path (jobs/job.py) or as package.module:__main__")


def is_job(fn: Callable, contract: Contract) -> bool:
    """Whether `fn` is a job: its one required parameter is `spark`, which the contract does not supply;
    or it requires nothing and takes nothing the contract supplies (`main()`, `main(argv=None)`, a script):
    a pipeline of the contract takes its sources, so a function that asks for none builds its own."""
    if contract.source("spark") is not None or contract.param("spark") is not None:
        return False
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters):
        return False  # `fn(**kwargs)` takes what the contract supplies by name
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind != inspect.Parameter.VAR_POSITIONAL]
    if [p.name for p in required] == ["spark"]:
        return True
    supplied = {s.name for s in contract.sources} | {p.name for p in contract.params} | {"sources", "params"}
    return not required and not any(p.name in supplied for p in parameters)


def pipeline_caller(fn: Callable, contract: Contract) -> Callable[[Mapping[str, Any], Any], Any]:
    """A function (frames, params) -> what `fn` returns, calling `fn` the way its signature asks."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return lambda frames, params: fn(frames, params)
    parameters = [p for p in signature.parameters.values()
                  if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    has_kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    names = [p.name for p in parameters]
    sources = [s.name for s in contract.sources]
    params = [p.name for p in contract.params]
    supplied = ", ".join([f"source {s}" for s in sources] + [f"parameter {p}" for p in params])

    if names[:2] == ["sources", "params"] and all(p.default is not inspect.Parameter.empty for p in parameters[2:]):
        return lambda frames, values: fn(frames, values)

    known = set(sources) | set(params)
    if names and all(n in known or p.default is not inspect.Parameter.empty for n, p in zip(names, parameters)) \
            and any(n in known for n in names):
        wanted = [n for n in names if n in known] if not has_kwargs else sources + params

        def by_name(frames: Mapping[str, Any], values: Any) -> Any:
            kwargs = {}
            for n in wanted:
                if n in frames:
                    kwargs[n] = frames[n]
                elif n in values:
                    value = values[n]
                    kwargs[n] = getattr(value, "interval", value)
            return fn(**kwargs)
        return by_name

    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(sources) == 1 and len(required) == 1:
        (source,) = sources
        return lambda frames, values: fn(frames[source])

    unknown = [n for n, p in zip(names, parameters) if n not in known and p.default is inspect.Parameter.empty]
    hint = (f"; it asks for {', '.join(repr(u) for u in unknown)}, which the contract does not supply"
            if unknown else "")
    shapes = [shape.replace("what the contract supplies", f"what the contract supplies ({supplied})")
              for shape in SHAPES if len(sources) == 1 or not shape.startswith("fn(df)")]
    raise SignatureError(f"pipeline {_describe(fn)} does not fit contract {contract.name!r}{hint}. The shapes "
                         "the kit calls:\n" + "\n".join(f"  - {shape}" for shape in shapes))


def check_output(fields: list[tuple[str, str]], contract: Contract) -> list[int]:
    """The positions of the DataFrame's columns (`fields`: name and Spark simple type) that give the
    contract's output columns, in the contract's order; raises OutputMismatch naming every missing,
    extra or mistyped column."""
    from .coltypes import TypeSyntaxError, parse_type
    from .contractfile import _COLUMN_NAME  # the names a contract can declare

    def type_name(text: str) -> str:
        try:
            return parse_type(text).name
        except TypeSyntaxError:
            return text

    declared = list(contract.output)
    available = list(enumerate(fields))
    positions: list[int] = []
    problems: list[str] = []
    missing: list[Column] = []
    for column in declared:
        match = next(((i, t) for i, (n, t) in available if n == column.name), None)
        if match is None:
            problems.append(f"column {column.name!r} ({column.type}) is missing")
            missing.append(column)
            continue
        available.remove((match[0], fields[match[0]]))
        actual = type_name(match[1])
        if actual != column.type:
            problems.append(f"column {column.name!r} is {actual}, the contract says {column.type}")
        positions.append(match[0])
    for _, (name, typ) in available:
        problem = f"column {name!r} ({typ}) is not in the contract's output"
        if not _COLUMN_NAME.match(name):
            # Spark names an expression left without an alias by its text (`CAST(window.start AS
            # BIGINT)`, `count(1)`); Spark's own tests often do so, reading the column by position.
            fits = [c.name for c in missing if c.type == type_name(typ)]
            problem += (f"; it is an expression Spark named by its text: name it with "
                        f".alias({fits[0]!r})" if len(fits) == 1 else
                        "; it is an expression Spark named by its text: give it a contract column's name with .alias()")
        problems.append(problem)
    if problems:
        produced = ", ".join(f"{n} {t}" for n, t in fields)
        raise OutputMismatch(f"the output does not match contract {contract.name!r}: " + "; ".join(problems)
                             + f" (the pipeline produces: {produced})")
    return positions


# the kit's own code: this package and the harness (a sibling folder in the repository, inside it
# once installed), whose frames sit between Spark and a job's batch function
_OWN = tuple({os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(_harness.__file__))})
_IMPORTLIB = os.path.dirname(importlib.__file__) + os.sep  # Python's import machinery, between the kit and the module


def user_frames(exc: BaseException, limit: int = 8) -> str:
    """The traceback frames of `exc` that are the user's code (not the kit's, pyspark's or py4j's)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_OWN)
              and not any(part in f.filename for part in (f"{os.sep}pyspark{os.sep}", f"{os.sep}py4j{os.sep}"))]
    if not frames:
        return ""
    return "".join(traceback.format_list(frames[-limit:])).rstrip()
