"""Loads scenario files: YAML -> schema check -> meaning check -> `Scenario`, or every problem found."""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable

import jsonschema
from referencing import Registry, Resource

from . import spec as m
from .coltypes import TypeSyntaxError, ValueProblem, parse_type
from .contracts import Column, Contract
from .generate import GenerateSpec, round_robin
from .timeparse import DEFAULT_DATE, Duration, TimeFormatError, check_zone, parse_date, parse_duration, parse_time
from .contractfile import param_value, parse_columns, read_columns, read_contract, source_shape
from .sourcekinds import PayloadReader, RowProblem, _payload, source_columns
from .problems import Checker, FileInvalid, Problem, ScenarioInvalid, Where, _json_type, did_you_mean
from .registry import ContractLookup
from .yamlsource import YamlSyntaxError, load_yaml

__all__ = ["Problem", "ScenarioInvalid", "load_scenario", "validate_file", "find_scenario_files",
           "SCENARIO_SUFFIXES", "ALLOWED_CONF", "schema"]

SCENARIO_SUFFIXES = (".scenario.yaml", ".scenario.yml")
# Environment variables that set how processes start (the dynamic loader, Python, Java, Spark, Hadoop, the
# kit): a scenario's `job: {env: ...}` cannot set them, so a scenario file still runs no code of its own.
PROCESS_ENV = ("LD_", "DYLD_", "PYTHON", "PYSPARK", "SPARK_", "JAVA", "_JAVA", "JDK_", "HADOOP", "EVENTTIME",
               "BASH_", "TMP", "TEMP")
PROCESS_ENV_NAMES = ("PATH", "CLASSPATH", "HOME", "SHELL", "ENV", "IFS")
_STATE_FIELD = re.compile(r"(key|value)(\.[^.]+)+")  # a leaf of the state reader's key or value struct
_NOT_NULL = re.compile(r"\s+NOT\s+NULL\s*$", re.IGNORECASE)  # a column of an expected schema: `name type NOT NULL`

# Spark SQL settings a scenario may change for its query. Anything else (memory, paths, plugins,
# classes to load) stays out of a scenario file's reach.
ALLOWED_CONF = {
    "spark.sql.streaming.noDataMicroBatches.enabled": ("true", "false"),
    "spark.sql.streaming.multipleWatermarkPolicy": ("min", "max"),
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"),
    "spark.sql.streaming.statefulOperator.allowMultiple": ("true", "false"),
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled": ("true", "false"),
    "spark.sql.streaming.stateStore.stateSchemaCheck": ("true", "false"),
    "spark.sql.session.timeZone": None,
    # settings Spark's own tests of real jobs set that change no meaning of a check (docs/scenario-format.md)
    "spark.sql.shuffle.partitions": None,  # a whole number, 1 to SHUFFLE_PARTITIONS_MAX
    "spark.sql.legacy.interval.enabled": ("true", "false"),
}
SHUFFLE_PARTITIONS_MAX = 64  # a step's time grows with the number of tasks each stateful batch runs


def _whole_in(value: Any, low: int, high: int) -> bool:
    """Whether a YAML value is a whole number (or its text) from `low` to `high`."""
    if isinstance(value, bool):
        return False
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,6}", value.strip()):
        value = int(value)
    return isinstance(value, int) and low <= value <= high


@lru_cache(maxsize=None)
def schema() -> dict:
    text = resources.files("eventtime").joinpath("schema/scenario.schema.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _validators() -> tuple[Any, dict[str, Any]]:
    root = schema()
    registry = Registry().with_resource(root["$id"], Resource.from_contents(root))
    top = json.loads(json.dumps(root))
    top["properties"]["steps"] = {"type": "array", "minItems": 1}
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"uniqueItems": _unique_items})
    top_validator = cls(top, registry=registry)
    parts = {name: cls({"$ref": f"{root['$id']}#/$defs/{name}"}, registry=registry)
             for name in ("add", "expect", "duration", "conf_change", "generate", "run", "static", "watermark_input",
                          "inputs", "update")}
    return top_validator, parts


def _unique_items(validator: Any, unique: bool, instance: Any, schema: dict) -> Iterable[Any]:
    """`uniqueItems` in linear time (jsonschema compares all pairs of a list it cannot sort)."""
    if not unique or not isinstance(instance, list):
        return
    seen: set = set()
    for item in instance:
        key = _hashable(item)
        if key in seen:
            yield jsonschema.ValidationError(f"{instance!r} has non-unique elements")
            return
        seen.add(key)


def _hashable(value: Any) -> Any:
    """A key equal for values JSON Schema calls equal (1 == 1.0, but true != 1)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("list", tuple(_hashable(v) for v in value))
    if isinstance(value, dict):
        return ("map", frozenset((k, _hashable(v)) for k, v in value.items()))
    return ("text", value)


_TYPE_WORDS = {"string": "text", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "nothing", "array": "a list", "object": "a mapping"}


class _Checker(Checker):
    """Collects problems for one scenario file while building the model."""

    # -- structural errors from the JSON Schema, said plainly -------------------------------------
    def schema_errors(self, validator: Any, instance: Any, prefix: tuple) -> bool:
        errors = list(validator.iter_errors(instance))
        for error in errors:
            for leaf in _leaves(error):
                self._schema_error(leaf, prefix)
        return not errors

    def _schema_error(self, e: Any, prefix: tuple) -> None:
        path = prefix + tuple(e.absolute_path)
        name = f"'{path[-1]}'" if path and isinstance(path[-1], str) else "this value"
        v, inst, sch = e.validator, e.instance, e.schema
        if _snapshot_hole(path, inst):
            what = "an `expect` without checks" if path[-1] == "expect" else f"{name} has no value"
            self.at(path, f"{what}: a check left empty is for a snapshot to fill with what Spark does: run "
                          "`eventtime run PATH --snapshot create` (pytest: `--eventtime-snapshot=create`), review "
                          "the diff, or write its value (docs/scenario-format.md, *Snapshots*)")
        elif v == "additionalProperties" and isinstance(inst, dict):
            allowed = list(sch.get("properties", {}))
            for key in inst:
                if key not in allowed:
                    hint = did_you_mean(key, allowed)
                    known = f" (known: {', '.join(allowed)})" if allowed and not hint else ""
                    self.at(path + (key,), f"unknown key {key!r}{hint}{known}", key=True)
        elif v == "required":
            self.at(path, f"missing required key {_missing(e)!r}")
        elif v == "type":
            want = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
            words = " or ".join(_TYPE_WORDS.get(str(w), str(w)) for w in want)
            self.at(path, f"{name} must be {words}, not {_json_type(inst)}")
        elif v == "enum":
            hint = did_you_mean(inst, [str(x) for x in e.validator_value])
            self.at(path, f"{inst!r} is not allowed here{hint} (one of: {', '.join(map(str, e.validator_value))})")
        elif v == "const":
            self.at(path, f"{name} can only be {json.dumps(e.validator_value)}")
        elif v in ("minProperties", "minItems", "minLength"):
            self.at(path, f"{name} must not be empty")
        elif v == "pattern":
            if path and path[-1] == "scenario":
                self.at(path, f"scenario name {inst!r} must be lower case letters, digits, '-', '_' or '.'")
            elif str(e.validator_value).startswith("^partition "):
                self.at(path + (inst,), f"{inst!r} is not a partition: write `partition 0`, `partition 1`, ... (the index "
                              "counts from 0, without leading zeros)", key=True)
            elif "( partition " in str(e.validator_value):  # an input of a watermark, idle or active step
                key = "propertyNames" in e.schema_path
                self.at(path + (inst,) if key else path,
                        f"{inst!r} is not an input: write `SOURCE` (each of its partitions) or `SOURCE partition K` "
                        "(K counts from 0, without leading zeros), such as `events` or `events partition 0`", key=key)
            elif len(path) >= 2 and path[0] == "tags":
                self.at(path, f"tag {inst!r} must be lower case letters, digits, '-' or '_'")
            else:
                self.at(path, f"{inst!r} is not a valid name here (letters, digits and '_')")
        elif v == "minimum":
            self.at(path, f"{name} must be at least {e.validator_value}")
        elif v == "maximum":
            self.at(path, f"{name} must be at most {e.validator_value}")
        elif v == "uniqueItems":
            self.at(path, f"{name} lists an item twice")
        elif v == "maxProperties":
            self.at(path, f"{name} must have one key")
        elif v in ("oneOf", "anyOf"):
            desc = sch.get("description") or "a value of another form"
            self.at(path, f"{name} has the wrong form: expected {desc[0].lower() + desc[1:]}")
        else:
            self.at(path, f"{name}: {e.message}")


def _snapshot_hole(path: tuple, inst: Any) -> bool:
    """Whether a schema error is a check left without a value for a snapshot to fill (in an `expect`): one
    of its checks, a field of a `batches`, `operators` or `event_time` entry, a `state`'s rows."""
    from .snapshotedit import BATCH_KEYS, CHECK_KEYS, EVENT_TIME_KEYS, OPERATOR_KEYS

    if not path or "expect" not in path:
        return False
    if path[-1] == "expect":  # a bare `- expect:` or `- expect: {}`
        return inst is None or inst == {}
    return inst is None and path[-1] in (*CHECK_KEYS, *BATCH_KEYS, *EVENT_TIME_KEYS, *OPERATOR_KEYS)


def _missing(e: Any) -> str:
    import re

    found = re.match(r"'([^']+)' is a required property", e.message)
    return found.group(1) if found else e.message


def _leaves(error: Any) -> list[Any]:
    """For oneOf/anyOf errors, descend into the branch that matches the value's type."""
    if error.validator not in ("oneOf", "anyOf") or not error.context:
        return [error]
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
    plausible = [errs for errs in branches.values()
                 if not any(s.validator in ("type", "enum", "const") and not s.relative_path for s in errs)]
    if len(plausible) == 1:
        out: list[Any] = []
        for sub in plausible[0]:
            out.extend(_leaves(sub))
        return out
    return [error]


# ------------------------------------------------------------------------------------------------

def validate_file(path: str | Path, *, contracts: ContractLookup | None = None) -> list[Problem]:
    """Every problem in the scenario file at `path` (empty when it is valid)."""
    try:
        load_scenario(path, contracts=contracts)
    except FileInvalid as exc:  # a contract file's problems too
        return exc.problems
    return []


def load_scenario(path: str | Path, *, display_path: str | None = None,
                  contracts: ContractLookup | None = None) -> m.Scenario:
    """Read and check one scenario file; raises ScenarioInvalid listing every problem. Its contract is
    found by `contracts` (default: beside the file and above it, registered, bundled; see registry)."""
    shown = display_path or str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ScenarioInvalid([Problem(shown, 1, 1, f"cannot read file: {exc.strerror or exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ScenarioInvalid([Problem(shown, line, 1, "the file is not UTF-8 text")]) from None
    return load_scenario_text(text, shown, contracts=contracts, file=Path(path))


def load_scenario_text(text: str, path: str = "<scenario>", *, contracts: ContractLookup | None = None,
                       file: Path | None = None, relocate: Callable[[int, int], Where] | None = None) -> m.Scenario:
    """A scenario from its text; `file` is where it lives (for finding contract files near it);
    `relocate` maps places in a text written by code to the code that wrote it (`problems.Checker`)."""
    try:
        located = load_yaml(text)
    except YamlSyntaxError as exc:
        raise ScenarioInvalid([Problem(path, exc.position.line, exc.position.column, exc.message)]) from None
    checker = _Checker(path, located, relocate)
    doc = located.data
    if not isinstance(doc, dict):
        checker.at((), f"a scenario file is a YAML mapping (scenario:, description:, contract:, "
                       f"sources:, steps:), not {_json_type(doc)}")
        raise ScenarioInvalid(checker.problems)
    top, _ = _validators()
    checker.schema_errors(top, doc, ())
    scenario = _Builder(checker, doc, text, contracts or ContractLookup(), file).build()
    if checker.problems or scenario is None:
        raise ScenarioInvalid(checker.problems)
    return scenario


@dataclass
class _StepFlow:
    """What the steps read so far leave: whether the query is running, and whether any step runs a batch."""

    running: bool = True
    runs_batches: bool = False


class _Builder:
    def __init__(self, checker: _Checker, doc: dict, text: str, contracts: ContractLookup, file: Path | None):
        self.c = checker
        self.doc = doc
        self.text = text
        self.contracts = contracts
        self.file = file
        self.date = DEFAULT_DATE
        self.zone = "UTC"
        self.bad_sources: set[str] = set()
        # no `sources:` and no contract to take them from (its problem is reported): say nothing more
        self.sources_unknown = False
        # kafka and text rows: offsets counted per partition over the scenario; `now_us` is the
        # processing-time clock at the step being read (a kafka record's default timestamp)
        self.payloads = PayloadReader(lambda v: parse_time(v, date=self.date, zone=self.zone))
        self.now_us = 0

    # -- helpers -------------------------------------------------------------------------------
    def time(self, value: Any, path: tuple, *, allow_initial: bool = False) -> int | None:
        if allow_initial and value == "initial":
            return 0
        try:
            return parse_time(value, date=self.date, zone=self.zone)
        except TimeFormatError as exc:
            extra = " (or 'initial')" if allow_initial else ""
            self.c.at(path, f"{exc}{extra}")
            return None

    def duration(self, value: Any, path: tuple, *, positive: bool = False) -> Duration | None:
        try:
            d = parse_duration(value)
        except TimeFormatError as exc:
            self.c.at(path, str(exc))
            return None
        if positive and d.total_us <= 0:
            self.c.at(path, "the duration must be longer than zero")
            return None
        return d

    def value(self, raw: Any, column: Column, path: tuple) -> Any:
        """A value of `column`'s type (coltypes), or None with a problem at the place inside it."""
        try:
            return column.ctype.read(
                raw, parse_time=lambda v: parse_time(v, date=self.date, zone=self.zone), parse_date=parse_date,
                float_text=lambda inner: self.c.loc.float_texts.get(path + inner) if self.c.loc else None)
        except ValueProblem as exc:
            inside = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.path)
            self.c.at(path + exc.path, f"column {column.name!r} is {column.type}: {exc.message}"
                                       + (f" (at {column.name}{inside})" if inside else ""))
            return None

    def rows(self, raw: Any, columns: tuple[Column, ...], path: tuple, what: str) -> tuple[tuple, ...]:
        if not isinstance(raw, list):
            return ()
        names = [c.name for c in columns]
        out = []
        for i, row in enumerate(raw):
            rp = path + (i,)
            if isinstance(row, list):
                if len(row) != len(columns):
                    self.c.at(rp, f"row has {len(row)} value{'s' if len(row) != 1 else ''} but {what} has "
                                  f"{len(columns)} column{'s' if len(columns) != 1 else ''} ({', '.join(names)})")
                    continue
                out.append(tuple(self.value(v, col, rp + (j,)) for j, (v, col) in enumerate(zip(row, columns))))
            elif not isinstance(row, dict):
                self.c.at(rp, f"a row of {what} is a list of values or a mapping of column to value, "
                              f"not {_json_type(row)}")
            else:
                bad = False
                for key in row:
                    if key not in names:
                        self.c.at(rp + (key,), f"{what} has no column {key!r}{did_you_mean(key, names)} "
                                               f"(columns: {', '.join(names)})", key=True)
                        bad = True
                missing = [n for n in names if n not in row]
                if missing:
                    self.c.at(rp, f"row does not give column{'s' if len(missing) > 1 else ''} "
                                  f"{', '.join(missing)} of {what}")
                    bad = True
                if not bad:
                    out.append(tuple(self.value(row[col.name], col, rp + (col.name,)) for col in columns))
        return tuple(out)

    # -- the document ---------------------------------------------------------------------------
    def build(self) -> m.Scenario | None:
        d, c = self.doc, self.c
        if isinstance(d.get("date"), str):
            try:
                self.date = parse_date(d["date"])
            except TimeFormatError as exc:
                c.at(("date",), str(exc))
        if isinstance(d.get("timezone"), str):
            try:
                check_zone(d["timezone"])
                self.zone = d["timezone"]
            except TimeFormatError as exc:
                c.at(("timezone",), str(exc))

        contract = self.contract()
        if contract is not None and contract.model_only:
            self.dataflow_only(("contract",), f"contract {contract.name!r} is model only ({contract.model_only}): "
                                              "its scenarios are ones", why="judges (add `profile: dataflow`)")
        params = self.params(contract)
        requires_spark, features = self.requires()
        conf = self.conf(d.get("conf"), ("conf",))
        job_args, job_env = self.job(d.get("job"))
        clock_start_us, trigger = self.clock()
        sources = self.sources(contract)
        self.sources_unknown = contract is None and "sources" not in d
        self.now_us = clock_start_us
        steps = self.steps(contract, sources, trigger)
        statics = self.static_rows(d.get("static"), contract, ("static",)) if "static" in d else {}
        if c.problems or contract is None:
            return None
        where = c.where(())
        return m.Scenario(
            name=d["scenario"], description=d["description"], tags=tuple(d.get("tags") or ()),
            contract=contract, params=m.Params(params), sources=sources, steps=steps, path=c.path,
            where=where, requires_spark=requires_spark, date=self.date,
            requires_features=features + tuple(f for f in m.step_features(steps) if f not in features),
            timezone=self.zone, conf=conf, clock_start_us=clock_start_us, trigger=trigger,
            lines=tuple(self.text.splitlines()), profile=d.get("profile", "spark"), job_args=job_args,
            job_env=job_env, job_where=c.where(("job",)) if "job" in d else None, statics=statics)

    def contract(self) -> Contract | None:
        raw = self.doc.get("contract")
        if isinstance(raw, dict):  # the contract itself, for a one-off pipeline
            scenario = self.doc.get("scenario")
            name = scenario if isinstance(scenario, str) else "inline"
            return read_contract(raw, self.c, ("contract",), name=re.sub(r"\W", "_", name))
        if not isinstance(raw, str):
            return None
        contract, reason = self.contracts.resolve(raw, self.file)
        if contract is not None:
            return contract
        if isinstance(reason, list):  # its file has problems: report them where they are
            self.c.problems.extend(reason)
            self.c.at(("contract",), f"contract {raw!r} does not load (see the problems in its file)")
        elif reason:
            self.c.at(("contract",), reason)
        else:
            names = self.contracts.names(self.file)
            self.c.at(("contract",), f"unknown contract {raw!r}{did_you_mean(raw, names)}: no bundled contract, no "
                                     f"*.contract.yaml beside the scenario or above it, and none registered; a folder "
                                     f"of contract files is named with --contracts DIR (CLI) or the ini key "
                                     f"eventtime_contracts (pytest) (contracts: {', '.join(names)})")
        return None

    def params(self, contract: Contract | None) -> dict[str, Any]:
        raw = self.doc.get("params") or {}
        if contract is None or not isinstance(raw, dict):
            return {}
        out: dict[str, Any] = {}
        names = [p.name for p in contract.params]
        for key, value in raw.items():
            spec = contract.param(key)
            if spec is None:
                self.c.at(("params", key), f"contract {contract.name!r} has no parameter {key!r}"
                                           f"{did_you_mean(key, names)} (parameters: {', '.join(names)})", key=True)
                continue
            if spec.profile == "dataflow" and not self.dataflow_only(
                    ("params", key), f"parameter {key!r} is a trigger setting, which", key=True,
                    why="takes (add `profile: dataflow`): a Spark aggregation fires a window once, when the "
                        "watermark passes its end, with no early or late firings and no panes, so the spark "
                        "profile cannot state it"):
                continue
            if spec.kind == "duration":
                d = self.duration(value, ("params", key))
                if d is not None:
                    out[key] = d
                continue
            read = param_value(spec.kind, value, spec.choices)
            if hasattr(read, "message"):
                self.c.at(("params", key), f"parameter {key!r} {read.message}")
            else:
                out[key] = read
        for spec in contract.params:
            if spec.name not in raw:
                if spec.required:
                    self.c.at(("params",) if "params" in self.doc else ("contract",),
                              f"contract {contract.name!r} needs parameter {spec.name!r} ({spec.doc})")
                else:
                    out[spec.name] = spec.default
        return out

    def requires(self) -> tuple[str | None, tuple[str, ...]]:
        from eventtime.harness.features import FEATURES

        raw = self.doc.get("requires") or {}
        if not isinstance(raw, dict):
            return None, ()
        spec = raw.get("spark")
        if isinstance(spec, str):
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                self.c.at(("requires", "spark"), f"{spec!r} is not a version specifier; write e.g. '>=3.5' or '>=3.5,<4.2'")
                spec = None
        features = []
        listed = raw.get("features")
        for i, f in enumerate(listed if isinstance(listed, list) else ()):  # another type: a schema error
            if isinstance(f, str) and f not in FEATURES:
                self.c.at(("requires", "features", i), f"unknown Spark feature {f!r}{did_you_mean(f, FEATURES)} "
                                                       f"(known: {', '.join(sorted(FEATURES))})")
            elif isinstance(f, str):
                features.append(f)
        return (spec if isinstance(spec, str) else None), tuple(features)

    def conf(self, raw: Any, path: tuple) -> dict[str, str]:
        if not isinstance(raw, dict):
            return {}
        out = {}
        for key, value in raw.items():
            if key not in ALLOWED_CONF:
                self.c.at(path + (key,), f"Spark setting {key!r} cannot be set by a scenario"
                                         f"{did_you_mean(key, ALLOWED_CONF)} (allowed: {', '.join(sorted(ALLOWED_CONF))})",
                          key=True)
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            allowed = ALLOWED_CONF[key]
            if allowed is not None and text not in allowed:
                self.c.at(path + (key,), f"{key} must be one of {', '.join(allowed)}, not {text!r}")
                continue
            if key == "spark.sql.session.timeZone":
                try:
                    check_zone(text)
                except TimeFormatError as exc:
                    self.c.at(path + (key,), str(exc))
                    continue
            if key == "spark.sql.shuffle.partitions" and not _whole_in(value, 1, SHUFFLE_PARTITIONS_MAX):
                self.c.at(path + (key,), f"{key} must be a whole number from 1 to {SHUFFLE_PARTITIONS_MAX}, "
                                         f"not {text!r}")
                continue
            out[key] = text
        return out

    def job(self, raw: Any) -> tuple[tuple[str, ...], dict[str, str]]:
        """`job: {args: [...], env: {...}}`: a job's command-line arguments and environment variables (the
        schema checks their shapes and keys; here, the names a scenario may not set)."""
        if not isinstance(raw, dict):
            return (), {}
        scalar = (str, int, float, bool)

        def text(value: Any) -> str:
            return str(value).lower() if isinstance(value, bool) else str(value)

        args = raw.get("args")
        out_args = tuple(text(a) for a in args if isinstance(a, scalar)) if isinstance(args, list) else ()
        env = raw.get("env")
        out_env = {}
        for name, value in (env.items() if isinstance(env, dict) else ()):
            if not isinstance(name, str) or not isinstance(value, scalar):
                continue
            if name.upper().startswith(PROCESS_ENV) or name.upper() in PROCESS_ENV_NAMES:
                self.c.at(("job", "env", name), f"{name} sets how processes start (their loader, Python, Java, "
                                                "Spark or the kit): a scenario gives a job only its own settings",
                          key=True)
            else:
                out_env[name] = text(value)
        return out_args, out_env

    def clock(self) -> tuple[int, Duration | None]:
        raw = self.doc.get("clock") or {}
        start = parse_time("00:00:00", date=self.date, zone=self.zone)
        trigger = None
        if isinstance(raw, dict):
            if isinstance(raw.get("start"), str):
                given = self.time(raw["start"], ("clock", "start"))
                start = start if given is None else given
            if isinstance(raw.get("trigger"), str):
                trigger = self.duration(raw["trigger"], ("clock", "trigger"), positive=True)
        if start < 0:
            self.c.at(("clock", "start"), "the processing-time clock cannot start before 1970-01-01")
        return start, trigger

    def sources(self, contract: Contract | None) -> dict[str, m.SourceDef]:
        raw = self.doc.get("sources")
        if raw is None and contract is not None:  # the contract's sources, as it declares them
            return {spec.name: m.SourceDef(spec.name, spec.columns, spec.event_time, self.c.where(("contract",)),
                                           kind=spec.kind, topic=spec.topic, headers=spec.headers)
                    for spec in contract.sources}
        if not isinstance(raw, dict):
            return {}
        out = {}
        for name, spec in raw.items():
            if not isinstance(spec, dict):
                continue
            source = self.source(name, spec, contract)
            if source is None:
                self.bad_sources.add(name)  # reported; its rows cannot be read
                continue
            out[name] = source
        if contract is not None:
            self.sources_against(contract, out, raw)
        return out

    def source(self, name: str, spec: dict, contract: Contract | None) -> m.SourceDef | None:
        """One source the scenario declares (None: reported, its rows cannot be read)."""
        shape = source_shape(name, spec, ("sources", name), self.c.at)
        if shape is None:
            return None
        kind, topic, headers = shape
        if kind == "rows" and "columns" not in spec:
            self.c.at(("sources", name), f"source {name!r} needs `columns:` (a DDL list or a mapping of name "
                                         "to type), or a `kind:` (kafka, text)")
            return None
        columns = (self.columns(spec["columns"], ("sources", name, "columns")) if kind == "rows"
                   else source_columns(kind, headers=headers))
        if columns is None:
            return None
        declared = contract.source(name) if contract is not None else None
        if contract is not None and declared is not None and (
                declared.kind, declared.topic, declared.headers) != (kind, topic, headers):
            self.c.at(("sources", name), f"source {name!r} is {_shape_text(declared.kind, declared.topic, declared.headers)} "
                                         f"in contract {contract.name!r}, not {_shape_text(kind, topic, headers)}")
        event_time = spec.get("event_time")
        if not isinstance(event_time, str) and declared is not None:
            event_time = declared.event_time  # the contract names the source's event-time column
        if isinstance(event_time, str):
            self.source_event_time(name, spec, event_time, columns)
        partitions = spec.get("partitions")
        partitions = partitions if isinstance(partitions, int) and not isinstance(partitions, bool) else None
        return m.SourceDef(name, columns, event_time if isinstance(event_time, str) else None,
                           self.c.where(("sources", name)), partitions, kind=kind, topic=topic,
                           headers=headers, **self.dataflow_source(name, spec, partitions))

    def source_event_time(self, name: str, spec: dict, event_time: str, columns: tuple[Column, ...]) -> None:
        """A source's event-time column must be one of its columns, and a timestamp."""
        col = next((c for c in columns if c.name == event_time), None)
        if col is None:
            self.c.at(("sources", name, "event_time") if "event_time" in spec else ("sources", name),
                      f"event_time {event_time!r} is not a column of source {name!r}"
                      f"{did_you_mean(event_time, [c.name for c in columns])}")
        elif col.type not in ("timestamp", "timestamp_ntz"):
            self.c.at(("sources", name, "event_time"),
                      f"event_time column {event_time!r} must be a timestamp, not {col.type}")

    def sources_against(self, contract: Contract, out: dict[str, m.SourceDef], raw: dict) -> None:
        """The scenario's sources against the ones its contract reads: none unknown, none missing, each
        with the columns the contract needs, of its types."""
        wanted = [s.name for s in contract.sources]
        for name in out:
            if contract.source(name) is None:
                self.c.at(("sources", name), f"contract {contract.name!r} reads no source {name!r}"
                                             f"{did_you_mean(name, wanted)} (it reads: {', '.join(wanted)})", key=True)
        for spec in contract.sources:
            src = out.get(spec.name)
            if src is None:
                if spec.name not in raw:
                    self.c.at(("sources",), f"contract {contract.name!r} reads source {spec.name!r}; declare it "
                                            "(or leave `sources:` out to take the contract's)")
                continue
            have = {col.name: col.type for col in src.columns}
            for col in spec.columns:
                if col.name not in have:
                    self.c.at(("sources", spec.name, "columns"),
                              f"source {spec.name!r} needs column {col.name!r} ({col.type}) for contract {contract.name!r}")
                elif have[col.name] != col.type:
                    self.c.at(("sources", spec.name, "columns", col.name)
                              if isinstance(raw[spec.name].get("columns"), dict) else ("sources", spec.name, "columns"),
                              f"column {col.name!r} must be {col.type} for contract {contract.name!r}, not {have[col.name]}")

    def columns(self, raw: Any, path: tuple) -> tuple[Column, ...] | None:
        return read_columns(raw, path, self.c.at)

    def dataflow_source(self, name: str, spec: dict, partitions: int | None) -> dict[str, Any]:
        """A source's dataflow-profile keys (`idle_timeout`, `generator`, `subtasks`, `lag`, `idle_after`,
        `ignore_watermarks`), schema-checked."""
        out: dict[str, Any] = {}
        for key in m.DATAFLOW_SOURCE_KEYS:
            if key not in spec or not self.dataflow_only(("sources", name, key), f"`{key}` is a source setting",
                                                         key=True):
                continue
            if key in ("idle_timeout", "idle_after"):
                out[key] = self.duration(spec[key], ("sources", name, key), positive=True)
            elif key == "lag":
                out[key] = self.duration(spec[key], ("sources", name, key))
            elif key == "ignore_watermarks":
                out[key] = tuple(spec[key]) if isinstance(spec[key], list) else None
            else:
                out[key] = spec[key]
        kind = out.get("generator") or "periodic"
        if "lag" in out and kind != "time_lag" and "idle_after" not in out:
            self.c.at(("sources", name, "lag"), f"source {name!r}: `lag` is the lag behind processing time of a "
                                                "`generator: time_lag`, or of `idle_after`; this source has neither")
        if kind == "time_lag" and "lag" not in spec:
            self.c.at(("sources", name, "generator"), f"source {name!r}: `generator: time_lag` needs `lag:` (its "
                                                      "watermark is processing time - lag)")
        if "idle_after" in out:
            if kind != "periodic":
                self.c.at(("sources", name, "idle_after"), f"source {name!r}: `idle_after` is an option of the "
                                                           f"periodic generator, not of `generator: {kind}`")
            elif "lag" not in spec:
                self.c.at(("sources", name, "idle_after"), f"source {name!r}: `idle_after` needs `lag:` (idle that "
                                                           "long, the generator proposes processing time - lag)")
        subtasks = out.get("subtasks")
        count = subtasks if isinstance(subtasks, int) else 1
        for i, k in enumerate(out.get("ignore_watermarks") or ()):
            if isinstance(k, int) and not 0 <= k < count:
                has = (f"it has {count} (`subtasks: {count}`: subtasks 0-{count - 1})" if isinstance(subtasks, int)
                       else "without `subtasks` one subtask reads every partition (subtask 0); give it `subtasks: N`")
                self.c.at(("sources", name, "ignore_watermarks", i),
                          f"source {name!r} has no subtask {k}: {has}; `ignore_watermarks` lists subtasks the window "
                          "operator reads")
        ignored = {k for k in out.get("ignore_watermarks") or () if isinstance(k, int) and 0 <= k < count}
        if ignored and len(ignored) >= count:
            self.c.at(("sources", name, "ignore_watermarks"),
                      f"source {name!r}: `ignore_watermarks` leaves the window operator no input whose watermarks "
                      "it takes, so its watermark would never move")
        if isinstance(subtasks, int) and subtasks > 1 and not partitions:
            self.c.at(("sources", name, "subtasks"),
                      f"source {name!r} has no `partitions:` for its {subtasks} subtasks to read (partition k is "
                      "read by subtask k mod subtasks)")
        return out

    # -- steps ------------------------------------------------------------------------------------
    KINDS = ("add", "process", "update", "advance", "stop", "start", "restart", "run", "expect", "generate", "static") + m.INPUT_STEPS

    def steps(self, contract: Contract | None, sources: dict[str, m.SourceDef],
              trigger: Duration | None) -> tuple[m.Step, ...]:
        raw = self.doc.get("steps")
        if not isinstance(raw, list):
            return ()
        out: list[m.Step] = []
        flow = _StepFlow()
        for i, item in enumerate(raw):
            path = ("steps", i)
            kind_body = self.step_kind(item, path)
            if kind_body is None:
                continue
            kind, body = kind_body
            bpath = path + (kind,) if isinstance(item, dict) else path
            step = self.step(kind, body, path, bpath, contract, sources, trigger, flow)
            if step is not None:
                object.__setattr__(step, "_index", i + 1)
                out.append(step)
        if raw and not flow.runs_batches and not any(isinstance(s, m.StartStep) for s in out) and not self.c.problems:
            hint = " (`advance` runs batches only with `clock: {trigger: ...}`)" if any(
                isinstance(s, m.AdvanceStep) for s in out) else ""
            self.c.at(("steps",), f"no step ever runs a micro-batch: add a `- process` step{hint}")
        return tuple(out)

    def step_kind(self, item: Any, path: tuple) -> tuple[str, Any] | None:
        """A step item's (kind, value): a bare step name or a one-key mapping; None (a problem said)
        for anything else."""
        if isinstance(item, str):
            if item not in self.KINDS:
                self.c.at(path, f"unknown step kind {item!r}{did_you_mean(item, self.KINDS)} "
                                f"(steps: {', '.join(self.KINDS)})")
                return None
            if item in ("add", "advance", "expect", "generate", "run", "static") + m.INPUT_STEPS:
                self.c.at(path, f"step {item!r} needs a value, e.g. `- {item}: ...`")
                return None
            return item, None
        if isinstance(item, dict) and len(item) == 1:
            kind, body = next(iter(item.items()))
            if kind not in self.KINDS:
                self.c.at(path + (kind,), f"unknown step kind {kind!r}{did_you_mean(kind, self.KINDS)} "
                                          f"(steps: {', '.join(self.KINDS)})", key=True)
                return None
            return kind, body
        if isinstance(item, dict):
            keys = list(item)
            self.c.at(path, f"a step has exactly one kind, found {len(keys)} keys ({', '.join(map(str, keys))}); "
                            "write one `- kind: ...` item per step")
            return None
        self.c.at(path, f"a step is a step name or a one-key mapping, not {_json_type(item)}")
        return None

    def step(self, kind: str, body: Any, path: tuple, bpath: tuple, contract: Contract | None,
             sources: dict[str, m.SourceDef], trigger: Duration | None, flow: _StepFlow) -> m.Step | None:
        """One step of a known kind; None when its value has a problem (said)."""
        _, parts = _validators()
        where = self.c.where(path)
        if kind == "add":
            if self.c.schema_errors(parts["add"], body, bpath):
                return self.add_step(body or {}, sources, bpath, where)  # schema-checked: a mapping
        elif kind == "generate":
            flow.runs_batches = True
            if self.c.schema_errors(parts["generate"], body, bpath):
                return self.generate_step(body or {}, sources, bpath, where)  # schema-checked: a mapping
        elif kind == "process":
            if body is not None:
                self.c.at(bpath, "`process` takes no value")
            flow.runs_batches = True
            return m.ProcessStep(where)
        elif kind == "update":
            flow.runs_batches = True
            if body is None or self.c.schema_errors(parts["update"], body, bpath):
                return self.update_step(body or {}, bpath, where)
        elif kind == "advance":
            if self.c.schema_errors(parts["duration"], body, bpath):
                d = self.duration(body, bpath, positive=True)
                if d is not None:
                    flow.runs_batches = flow.runs_batches or trigger is not None
                    self.now_us += d.total_us
                    return m.AdvanceStep(where, by=d)
        elif kind in ("stop", "start", "restart"):
            return self.run_state_step(kind, body, path, bpath, where, flow)
        elif kind == "run":
            if self.c.schema_errors(parts["run"], body, bpath):
                step = m.RunStep(where, trigger=body, was_running=flow.running)
                flow.running, flow.runs_batches = False, True
                return step
        elif kind == "static":
            if self.c.schema_errors(parts["static"], body, bpath):
                return m.StaticStep(where, rows=self.static_rows(body, contract, bpath))
        elif kind == "expect":
            if self.c.schema_errors(parts["expect"], body, bpath) and contract is not None:
                return self.expect_step(body or {}, contract, bpath, where)  # schema-checked: a mapping
        elif kind in m.INPUT_STEPS:
            return self.input_step(kind, body, path, bpath, where, sources)
        return None

    def update_step(self, body: dict, bpath: tuple, where: m.Where) -> m.UpdateStep | None:
        """`update`, schema-checked; Spark's own refusals of a selection said at the step's line (read from
        pyspark's pipelines cli.py and the server's PipelinesHandler, 4.3.0): `full_refresh: all` with
        `refresh` (CONFLICTING_PIPELINE_REFRESH_OPTIONS), a dataset both refreshed and fully refreshed
        ("Datasets specified for refresh and full refresh cannot overlap"). Whether the names are the
        pipeline's datasets is known once it is bound (an error at this line then, `sdpsteps`)."""
        refresh = tuple(body.get("refresh") or ())
        full = body.get("full_refresh") or ()
        if full == "all" and refresh:
            self.c.at(bpath, "`full_refresh: all` already recomputes every dataset: Spark refuses a `refresh` "
                             "selection with it (CONFLICTING_PIPELINE_REFRESH_OPTIONS, --refresh with "
                             "--full-refresh-all)")
            return None
        both = [n for n in refresh if n.lower() in {f.lower() for f in full}] if full != "all" else []
        if both:
            self.c.at(bpath, f"{', '.join(both)} both in `refresh` and `full_refresh`: Spark refuses that (\"Datasets "
                             "specified for refresh and full refresh cannot overlap\"); a full refresh runs the "
                             "dataset's flows too, so name it in `full_refresh` only")
            return None
        return m.UpdateStep(where, refresh=refresh, full_refresh=() if full == "all" else tuple(full),
                            full_refresh_all=full == "all")

    def dataflow_only(self, path: tuple, what: str, key: bool = False, why: str | None = None) -> bool:
        """Whether the scenario states the dataflow profile; else a problem at `path` saying `what` needs it."""
        if self.doc.get("profile") == "dataflow":
            return True
        self.c.at(path, f"{what} only the dataflow profile's model " + (why or (
            "takes (add `profile: dataflow`): Spark derives its watermark from the data (withWatermark) and has no "
            "stream status, so the spark profile cannot state it")), key=key)
        return False

    def input_step(self, kind: str, body: Any, path: tuple, bpath: tuple, where: m.Where,
                   sources: dict[str, m.SourceDef]) -> m.Step | None:
        """`watermark: {INPUT: TIME}`, `idle: INPUT(S)` or `active: INPUT(S)` (dataflow profile only)."""
        _, parts = _validators()
        what = ("`watermark` gives a watermark as input, which" if kind == "watermark" else
                f"`{kind}` gives a stream status as input, which")
        if not self.dataflow_only(path + (kind,) if path != bpath else path, what, key=path != bpath):
            return None
        if not self.c.schema_errors(parts["watermark_input" if kind == "watermark" else "inputs"], body, bpath):
            return None
        named = list(body.items()) if kind == "watermark" else [(n, None) for n in ([body] if isinstance(body, str) else body)]
        out = []
        for i, (name, raw_time) in enumerate(named):
            ipath = bpath + (name,) if kind == "watermark" else (bpath + (i,) if isinstance(body, list) else bpath)
            target = self.input_of(str(name), sources, ipath, key=kind == "watermark")
            if target is None:
                continue
            watermark_us = None
            if kind == "watermark":
                watermark_us = self.time(raw_time, bpath + (name,))
                if watermark_us is None:
                    continue
            out.append((target[0], target[1], watermark_us))
        if len(out) != len(named):
            return None
        return m.InputStep(where, signal=kind, inputs=tuple(out))

    def input_of(self, text: str, sources: dict[str, m.SourceDef], path: tuple, key: bool) -> tuple[str, int | None] | None:
        """`SOURCE` or `SOURCE partition K` (the schema checked the form): (source, partition), or None
        (a problem said) for an unknown source or partition."""
        name, _, index = text.partition(" partition ")
        src = sources.get(name)
        if src is None:
            if name not in self.bad_sources and not self.sources_unknown:
                self.c.at(path, f"unknown source {name!r}{did_you_mean(name, sources)} (sources: {', '.join(sources)})",
                          key=key)
            return None
        if not index:
            return name, None
        if not src.partitions:
            self.c.at(path, f"source {name!r} declares no partitions, so it has no partition {index}; give it "
                            f"`partitions: N` under `sources: {name}:`, or name the source alone", key=key)
            return None
        if int(index) >= src.partitions:
            self.c.at(path, f"unknown partition {index}: source {name!r} has {src.partitions} "
                            f"partition{'s' if src.partitions != 1 else ''} (0-{src.partitions - 1})", key=key)
            return None
        return name, int(index)

    def run_state_step(self, kind: str, body: Any, path: tuple, bpath: tuple, where: m.Where,
                       flow: _StepFlow) -> m.Step:
        """`stop`, `start` or `restart`, checked against whether the query is running at that point;
        with `query: NAME`, of one query of a job while the job runs (the kit checks the name, and
        whether that query runs, when it runs the step)."""
        _, parts = _validators()
        query = body.get("query") if isinstance(body, dict) else None
        if query is not None and not isinstance(query, str):
            self.c.at(bpath + ("query",), "`query` is the name of one query of the job (text)")
            query = None
        if query is not None and not flow.running:
            self.c.at(path, f"`{kind}: {{query: ...}}` stops or starts one query of a running job; the job is "
                            "stopped here (use `- start`)")
        if kind == "stop":
            if body is not None and (not isinstance(body, dict) or set(body) != {"query"}):
                self.c.at(bpath, "`stop` takes no value, or `{query: NAME}` for one query of a job")
            if not flow.running and query is None:
                self.c.at(path, "the query is already stopped here (add `- start` before)")
            flow.running = flow.running and query is not None
            return m.StopStep(where, query=query)
        conf: dict[str, str] = {}
        new_session = rerun = False
        if body is not None and self.c.schema_errors(parts["conf_change"], body, bpath):
            conf = self.conf(body.get("conf"), bpath + ("conf",))
            new_session = body.get("session") == "new"
            rerun = body.get("rerun_last_batch") is True
            if rerun and kind != "restart":
                self.c.at(bpath + ("rerun_last_batch",), "`rerun_last_batch` goes with `restart` (a query that "
                                                         "was running)", key=True)
        if query is not None and new_session:
            self.c.at(bpath + ("session",), "a new session restarts the whole job: leave out `query` or `session`",
                      key=True)
        if kind == "start" and flow.running and query is None:
            self.c.at(path, "the query is already running here; use `restart` to stop and start it again")
        if kind == "restart" and not flow.running:
            self.c.at(path, "the query is stopped here; use `start`")
        flow.running = True
        return m.StartStep(where, conf=conf, restart=kind == "restart", new_session=new_session,
                           rerun_last_batch=rerun, query=query)

    def static_rows(self, raw: Any, contract: Contract | None, path: tuple) -> dict[str, tuple[tuple, ...]]:
        """`static: {NAME: rows}` (schema-checked): each named static input's rows, in its columns."""
        if not isinstance(raw, dict) or contract is None:
            return {}
        names = [s.name for s in contract.statics]
        out = {}
        for name, rows in raw.items():
            spec = contract.static(name)
            if spec is None:
                self.c.at(path + (name,), f"contract {contract.name!r} declares no static input {name!r}"
                                          f"{did_you_mean(name, names)}" + (f" (static: {', '.join(names)})" if names
                                                                           else " (it has no `static:`)"), key=True)
                continue
            out[name] = self.rows(rows, spec.columns, path + (name,), f"static input {name!r}")
        return out

    def add_step(self, body: dict, sources: dict[str, m.SourceDef], path: tuple, where: m.Where) -> m.Step:
        rows = {}
        parts = {}
        declared = self.doc.get("sources")
        declared = declared if isinstance(declared, dict) else {}  # another type: a schema error
        for name, raw_rows in body.items():
            src = sources.get(name)
            if src is None and (name in self.bad_sources or name in declared or self.sources_unknown):
                continue  # declared, but its declaration has problems of its own (reported there)
            if src is None:
                self.c.at(path + (name,), f"unknown source {name!r}{did_you_mean(name, sources)} "
                                          f"(sources: {', '.join(sources)})", key=True)
                continue
            if isinstance(raw_rows, dict):  # `partition K: [rows]` (the schema checked the keys' form)
                placed = self.partition_rows(raw_rows, src, path + (name,))
                if placed is not None:
                    parts[name] = placed
                    rows[name] = tuple(row for part in placed for row in part)
                continue
            rows[name] = self.source_rows(raw_rows, src, path + (name,))
            if src.partitions:
                parts[name] = round_robin(rows[name], src.partitions)
        return m.AddStep(where, rows=rows, parts=parts)

    def partition_rows(self, raw: dict, src: m.SourceDef, path: tuple) -> tuple[tuple[tuple, ...], ...] | None:
        """`partition K: [rows]` of one source in an add: the rows of each of its partitions."""
        if not src.partitions:
            first = next(iter(raw), None)
            self.c.at(path + ((first,) if first is not None else ()),
                      f"source {src.name!r} declares no partitions; give it `partitions: N` under "
                      f"`sources: {src.name}:` to place rows in partitions", key=first is not None)
            return None
        placed: list[tuple[tuple, ...]] = [() for _ in range(src.partitions)]
        ok = True
        for key, raw_rows in raw.items():
            index = int(str(key).split()[-1])
            if index >= src.partitions:
                self.c.at(path + (key,), f"partition {index} is out of range: source {src.name!r} has "
                                         f"{src.partitions} partition{'s' if src.partitions != 1 else ''} "
                                         f"(0-{src.partitions - 1})", key=True)
                ok = False
                continue
            placed[index] = self.source_rows(raw_rows, src, path + (key,))
        return tuple(placed) if ok else None

    def source_rows(self, raw: Any, src: m.SourceDef, path: tuple) -> tuple[tuple, ...]:
        """The rows of one source in an add, read as its kind reads them (`sourcekinds`)."""
        if src.kind == "rows":
            return self.rows(raw, src.columns, path, f"source {src.name!r}")
        if not isinstance(raw, list):
            return ()  # a schema error
        out = []
        for i, row in enumerate(raw):
            try:
                out.append(self.payloads.row(src.kind, src.name, src.topic or src.name, src.headers, row,
                                             self.now_us, path + (i,)))
            except RowProblem as exc:
                self.c.at(exc.path, f"{src.kind} source {src.name!r}: {exc.message}", key=exc.key)
        return tuple(out)

    def generate_step(self, body: dict, sources: dict[str, m.SourceDef], path: tuple, where: m.Where) -> m.Step | None:
        name = body.get("source")
        if name is None:
            if len(sources) != 1:
                self.c.at(path, f"say which source to generate rows for: `source: ...` (sources: {', '.join(sources)})")
                return None
            name = next(iter(sources))
        src = sources.get(name)
        if src is None:
            if name not in self.bad_sources and not self.sources_unknown:
                self.c.at(path + ("source",), f"unknown source {name!r}{did_you_mean(name, sources)} "
                                              f"(sources: {', '.join(sources)})")
            return None
        if src.event_time is None:
            self.c.at(path, f"source {name!r} has no event_time column for the generated event times")
            return None
        et = body["event_time"]
        start = self.time(et["start"], path + ("event_time", "start")) if "start" in et else parse_time(
            "00:00:00", date=self.date, zone=self.zone)
        step = self.duration(et["step"], path + ("event_time", "step"))
        late = body.get("late") or {}
        late_by = self.duration(late["by"], path + ("late", "by")) if "by" in late else Duration(0)
        if body["batches"] > body["rows"]:
            self.c.at(path + ("batches",), f"{body['batches']} batches of {body['rows']} rows would leave some empty; "
                                           "give at most as many batches as rows")
            return None
        if start is None or step is None or late_by is None:
            return None
        if step.months or late_by.months:
            self.c.at(path, "generated times move in fixed units: write the step and the lateness without months")
            return None
        spec = GenerateSpec(rows=body["rows"], batches=body["batches"], start=start, step=step.total_us,
                            seed=body.get("seed", 0), keys=body.get("keys", 1),
                            late_fraction=float(late.get("fraction", 0.0)), late_by=late_by.total_us)
        return m.GenerateStep(where, source=name, spec=spec, columns=src.columns, partitions=src.partitions)

    def expect_step(self, body: dict, contract: Contract, path: tuple, where: m.Where) -> m.ExpectStep:
        step = self.expect_checks({k: v for k, v in body.items() if k != "on_spark"}, contract, path, where)
        raw = body.get("on_spark")
        if not isinstance(raw, dict):  # absent, or another type: a schema error
            return step
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        variants = []
        for spec, variant in raw.items():
            vpath = path + ("on_spark", spec)
            try:
                SpecifierSet(str(spec))
            except InvalidSpecifier:
                self.c.at(vpath, f"{spec!r} is not a version specifier; write e.g. '<3.5.4' or '>=4.0,<4.2'", key=True)
                continue
            if not isinstance(variant, dict):
                continue  # a schema error
            if "on_spark" in variant:
                self.c.at(vpath + ("on_spark",), "a version's checks cannot have versions of their own", key=True)
                continue
            if "query" in body and "query" not in variant:  # a version's checks look at the step's query
                variant = {"query": body["query"], **variant}
            variants.append((str(spec), self.expect_checks(variant, contract, vpath, self.c.where(vpath))))
        return dataclasses.replace(step, variants=tuple(variants))

    def expect_checks(self, body: dict, contract: Contract, path: tuple, where: m.Where) -> m.ExpectStep:
        checked = self.query_contract(body, contract, path)
        if checked is None:  # its rows cannot be read without knowing whose they are
            return m.ExpectStep(where=where)
        contract = checked
        out_cols = contract.output
        what = f"the output of contract {contract.name!r}"
        selected = self.selected_columns(body, contract, path)
        if selected is not None:
            out_cols = tuple(c for name in selected for c in contract.output if c.name == name)
            what += f" ({', '.join(selected)})"
        checks = self.row_checks(body, out_cols, path, what)
        wm, wm_range = self.watermark_check(body, path)
        event_time = self.event_time_check(body, path)
        failure = self.failure_check(body, path)
        schema = self.schema_check(body["schema"], path + ("schema",)) if isinstance(body.get("schema"), str) else None
        batch_count, batches = self.batch_checks(body, out_cols, path, what)
        written = self.written_check(body, contract, path)
        topic = self.topic_check(body, path)
        step = m.ExpectStep(topic=topic,
            written=written, where=where, rows=tuple(checks), ordered=bool(body.get("ordered", False)), watermark_us=wm,
            watermark_range=wm_range,
            watermark_where=self.c.where(path + ("watermark",)) if "watermark" in body else None,
            dropped=body.get("dropped"), state_rows=body.get("state_rows"), batch_count=batch_count,
            batches=batches, event_time=event_time, failure=failure, schema=schema, columns=selected,
            tolerance=body.get("tolerance") if isinstance(body.get("tolerance"), (int, float)) else None,
            query=str(body["query"]) if isinstance(body.get("query"), str) else None)
        return self.inside_checks(step, body, path)

    def row_checks(self, body: dict, out_cols: tuple[Column, ...], path: tuple, what: str) -> list[m.RowsCheck]:
        """`rows`, `output`, `last_batch` and `no_output` (the same as `rows: []`)."""
        checks = []
        for scope in ("rows", "output", "last_batch"):
            if scope in body:
                checks.append(m.RowsCheck(scope, self.rows(body[scope], out_cols, path + (scope,), what),
                                          self.c.where(path + (scope,))))
        if body.get("no_output") is True:
            if "rows" in body:
                self.c.at(path + ("no_output",), "`no_output` and `rows` say the same thing twice; keep one", key=True)
            checks.append(m.RowsCheck("rows", (), self.c.where(path + ("no_output",))))
        return checks

    def watermark_check(self, body: dict, path: tuple) -> tuple[int | None, tuple[int | None, int | None] | None]:
        """`watermark: T` (the watermark itself) or `watermark: {at_least: T, at_most: T}` (a range)."""
        wm, wm_range = None, None
        if isinstance(body.get("watermark"), dict):  # `{at_least: T, at_most: T}`: either bound, or both
            bounds = {k: self.time(body["watermark"][k], path + ("watermark", k), allow_initial=True)
                      for k in ("at_least", "at_most") if k in body["watermark"]}
            low, high = bounds.get("at_least"), bounds.get("at_most")
            if low is not None and high is not None and low > high:
                self.c.at(path + ("watermark", "at_most"), "`at_most` is before `at_least`: no watermark is in "
                                                           "this range")
            wm_range = (low, high)
        elif "watermark" in body:
            wm = self.time(body["watermark"], path + ("watermark",), allow_initial=True)
        return wm, wm_range

    def event_time_check(self, body: dict, path: tuple) -> m.EventTimeCheck | None:
        if not isinstance(body.get("event_time"), dict):
            return None
        et = body["event_time"]
        return m.EventTimeCheck(
            self.c.where(path + ("event_time",)),
            **{f"{k}_us": self.time(et[k], path + ("event_time", k), allow_initial=k == "watermark")
               for k in ("min", "max", "avg", "watermark") if k in et})  # type: ignore[arg-type]

    def failure_check(self, body: dict, path: tuple) -> m.FailureCheck | None:
        if not isinstance(body.get("failure"), dict):
            return None
        f = body["failure"]
        failure = m.FailureCheck(self.c.where(path + ("failure",)), f.get("error_class"), f.get("exception"),
                                 f.get("message"))
        others = [k for k in body if k not in ("failure", "query")]  # `query:` says which query of a job failed
        if others:
            self.c.at(path + (others[0],), "an expected failure stands alone: the query produces nothing after it",
                      key=True)
        return failure

    def batch_checks(self, body: dict, out_cols: tuple[Column, ...], path: tuple, what: str
                     ) -> tuple[int | None, tuple[m.BatchCheck, ...] | None]:
        """`batches: N` (how many ran) or `batches: [...]` (what each did)."""
        if isinstance(body.get("batches"), int) and not isinstance(body.get("batches"), bool):
            return body["batches"], None
        if not isinstance(body.get("batches"), list):
            return None, None
        items = []
        for i, b in enumerate(body["batches"]):
            bp = path + ("batches", i)
            items.append(m.BatchCheck(
                self.c.where(bp), data=b.get("data"),
                rows=self.rows(b["rows"], out_cols, bp + ("rows",), what) if "rows" in b else None,
                watermark_before_us=self.time(b["watermark_before"], bp + ("watermark_before",), allow_initial=True)
                if "watermark_before" in b else None,
                watermark_after_us=self.time(b["watermark_after"], bp + ("watermark_after",), allow_initial=True)
                if "watermark_after" in b else None,
                dropped=b.get("dropped"), state_rows=b.get("state_rows"), updated=b.get("updated")))
        return None, tuple(items)

    def inside_checks(self, step: m.ExpectStep, body: dict, path: tuple) -> m.ExpectStep:
        """The checks of what the query's operators did: `updated`, `batch_watermark`, `operators`,
        `event_time: none`."""
        changes: dict[str, Any] = {"key_places": tuple((k, self.c.where(path + (k,))) for k in body if isinstance(k, str))}
        for key in ("updated", "updated_since_check", "dropped_since_check"):
            if isinstance(body.get(key), int):
                changes[key] = body[key]
        if "batch_watermark" in body:
            changes["batch_watermark_us"] = self.time(body["batch_watermark"], path + ("batch_watermark",),
                                                      allow_initial=True)
            changes["batch_watermark_where"] = self.c.where(path + ("batch_watermark",))
        if body.get("event_time") == "none":
            changes["event_time"] = m.EventTimeCheck(self.c.where(path + ("event_time",)), none=True)
        if isinstance(body.get("operators"), list):
            changes["operators"] = tuple(
                m.OperatorCheck(self.c.where(path + ("operators", i)), i, name=o.get("name"),
                                state_rows=o.get("state_rows"), updated=o.get("updated"), dropped=o.get("dropped"),
                                updated_since_check=o.get("updated_since_check"),
                                dropped_since_check=o.get("dropped_since_check"))
                for i, o in enumerate(body["operators"]) if isinstance(o, dict))
        if isinstance(body.get("state"), dict):
            changes["state"] = self.state_check(body["state"], path + ("state",))
        if isinstance(body.get("watermarks"), list) and self.dataflow_only(
                path + ("watermarks",), "`watermarks` checks the watermarks an operator forwarded, which", key=True,
                why="gives (add `profile: dataflow`): a Spark run does not show them (check `watermark`, or "
                    "`watermark_after` of `batches`)"):
            times = [self.time(t, path + ("watermarks", i)) for i, t in enumerate(body["watermarks"])]
            if all(t is not None for t in times):
                changes["watermarks"] = tuple(times)
                changes["watermarks_where"] = self.c.where(path + ("watermarks",))
        if isinstance(body.get("statuses"), list) and self.dataflow_only(
                path + ("statuses",), "`statuses` checks the stream statuses an operator emitted, which", key=True,
                why="gives (add `profile: dataflow`): Spark has no stream status"):
            changes["statuses"] = tuple(str(s) for s in body["statuses"])
            changes["statuses_where"] = self.c.where(path + ("statuses",))
        return dataclasses.replace(step, **changes) if changes else step

    def state_check(self, body: dict, path: tuple) -> m.StateCheck:
        """`state: {operator, side, variable, rows}`: every row names the same leaf fields; their values
        are read by the types Spark's state reader gives (when the step is judged)."""
        rows = [r for r in body.get("rows") or () if isinstance(r, dict)]
        for i, row in enumerate(rows):
            for name in row:
                if not _STATE_FIELD.fullmatch(str(name)):
                    self.c.at(path + ("rows", i, name), f"a state field is a path into the state reader's `key` or "
                                                        f"`value` struct, such as key.id or value.count, not "
                                                        f"{str(name)!r}", key=True)
        columns = tuple(dict.fromkeys(str(k) for r in rows for k in r if _STATE_FIELD.fullmatch(str(k))))
        for i, row in enumerate(rows):
            absent = [c for c in columns if c not in row]
            if absent:
                self.c.at(path + ("rows", i), f"a state row gives every field the others give: this one has no "
                                              f"{', '.join(absent)} (fields: {', '.join(columns)})")
        return m.StateCheck(
            self.c.where(path), columns, tuple(tuple(r.get(c) for c in columns) for r in rows),
            tuple(self.c.where(path + ("rows", i)) for i in range(len(rows))), operator=body.get("operator"),
            side=body.get("side"), variable=body.get("variable"))

    def query_contract(self, body: dict, contract: Contract, path: tuple) -> Contract | None:
        """`query: NAME`: the checks look at that query of a job that starts several, with the output
        columns the contract declares for it under `queries:`; `written:` of a path (`table:` of a table)
        a declared query is named after reads with that query's columns."""
        names = [q.name for q in contract.queries]
        name = body.get("query")
        if isinstance(name, str):
            if names and contract.query(name) is None:
                self.c.at(path + ("query",), f"contract {contract.name!r} declares no query {name!r}"
                                             f"{did_you_mean(name, names)} (queries: {', '.join(names)})")
                return None
            return contract.for_query(name)
        written = body.get("written")
        table = body.get("table")
        if isinstance(written, str) and contract.query(written) is not None:
            return contract.for_query(written)
        if isinstance(table, str) and contract.query(table) is not None:  # a table is its query's name too
            return contract.for_query(table)
        if isinstance(written, str) and names and not contract.output and contract.param(written) is None:
            hint = (f"; a folder is read in the columns of the query that writes it: say which with `query: NAME` "
                    f"beside it (e.g. `query: {names[0]}`)" if "/" in written or "\\" in written
                    else f"{did_you_mean(written, names)}")
            self.c.at(path + ("written",), f"`written: {written}` is no query contract {contract.name!r} declares "
                                           f"by name (queries: {', '.join(names)}){hint}; a query is known by its "
                                           "queryName, else the path, table or topic it writes")
            return None
        if len(names) == 1 and not contract.output and any(k in body for k in _NEEDS_OUTPUT):
            self.c.at(path, f"contract {contract.name!r} declares its one query under `queries:` ({names[0]}) and "
                            f"no `output`: say `query: {names[0]}` in this expect, or declare the query's columns "
                            "as the contract's `output:` (a job of one query)")
            return None
        if names and not contract.output and any(k in body for k in _NEEDS_OUTPUT):
            self.c.at(path, f"contract {contract.name!r} declares several queries ({', '.join(names)}) and no "
                            "`output`: say which query this expect checks with `query: NAME`")
            return None
        return contract

    def written_check(self, body: dict, contract: Contract, path: tuple) -> m.WrittenCheck | None:
        """`table: NAME` or `written: PARAM` (+ `format`, `where`): the row checks read what the job wrote."""
        table, folder = body.get("table"), body.get("written")
        if table is None and folder is None:
            for key in ("format", "where"):
                if key in body:
                    self.c.at(path + (key,), f"`{key}` goes with `table:` or `written:` (what a job wrote)", key=True)
            return None
        if table is not None and folder is not None:
            self.c.at(path + ("written",), "read one thing per expect: `table:` or `written:`, not both", key=True)
            return None
        stream_checks = [k for k in body if k in ("watermark", "dropped", "state_rows", "batches", "event_time",
                                                  "failure", "no_output", "last_batch", "updated",
                                                  "updated_since_check", "dropped_since_check",
                                                  "batch_watermark", "operators", "state")]
        if stream_checks:
            self.c.at(path + (stream_checks[0],), f"an expect that reads what the job wrote checks its rows "
                                                  f"(`rows` or `output`); put `{stream_checks[0]}` in an expect "
                                                  "of its own", key=True)
        if not any(k in body for k in ("rows", "output")):
            self.c.at(path, "say which rows the job must have written: `rows: [...]` (`[]` for none)")
        if folder is not None and not self.written_path(folder, contract, path + ("written",)):
            return None
        fmt = body.get("format", "")  # "": as the job's query that writes the folder writes it, else parquet
        if table is not None and "format" in body:
            self.c.at(path + ("format",), "a table is read as its catalog says; `format` is for `written:`", key=True)
        where: list[tuple[str, Any]] = []
        for name, raw in (body.get("where") or {}).items() if isinstance(body.get("where"), dict) else ():
            column = next((c for c in contract.output if c.name == name), None)
            if column is None:
                self.c.at(path + ("where", name), f"contract {contract.name!r} has no output column {name!r}"
                                                  f"{did_you_mean(str(name), contract.output_names)}", key=True)
                continue
            where.append((str(name), self.value(raw, column, path + ("where", name))))
        return m.WrittenCheck(self.c.where(path + ("table" if table is not None else "written",)),
                              table=str(table) if table is not None else None,
                              path=str(folder) if folder is not None else None, format=str(fmt), filter=tuple(where))

    def topic_check(self, body: dict, path: tuple) -> m.TopicCheck | None:
        """`topic: T, records: [...]` (+ `ordered`): what a job's Kafka sink published to topic T."""
        topic, records = body.get("topic"), body.get("records")
        if topic is None:
            if records is not None:
                self.c.at(path + ("records",), "`records` goes with `topic:` (what a job published to it)", key=True)
            return None
        others = [k for k in body if k not in ("topic", "records", "ordered", "query")]
        if others:
            self.c.at(path + (others[0],), f"an expect of a topic checks its `records`; put `{others[0]}` in an "
                                           "expect of its own", key=True)
            return None
        if not isinstance(records, list):
            self.c.at(path, "say which records the topic must hold: `records: [...]` (`[]` for none)")
            return None
        out = []
        for i, raw in enumerate(records):
            rpath = path + ("records", i)
            if not isinstance(raw, dict) or "value" not in raw:
                self.c.at(rpath, "a record is a mapping with `value` (null for a tombstone) and optional key, "
                                 "headers, partition")
                continue
            bad = [k for k in raw if k not in m.RECORD_KEYS]
            if bad:
                self.c.at(rpath + (bad[0],), f"a record has no key {bad[0]!r}{did_you_mean(str(bad[0]), m.RECORD_KEYS)} "
                                             f"(keys: {', '.join(m.RECORD_KEYS)})", key=True)
                continue
            try:
                for key in ("value", "key"):
                    _payload(raw.get(key), rpath + (key,), key)
                if raw.get("headers") is not None:
                    self.payloads._headers(raw["headers"], rpath + ("headers",))
            except RowProblem as exc:
                self.c.at(exc.path, exc.message, key=exc.key)
                continue
            partition = raw.get("partition")
            if partition is not None and (isinstance(partition, bool) or not isinstance(partition, int)
                                          or partition < 0):
                self.c.at(rpath + ("partition",), f"`partition` is a whole number from 0, not {partition!r}")
                continue
            out.append(m.ExpectedRecord(raw["value"], raw.get("key"), raw.get("headers"), partition))
        return m.TopicCheck(self.c.where(path + ("topic",)), str(topic), tuple(out), bool(body.get("ordered", False)))

    def written_path(self, folder: Any, contract: Contract, path: tuple) -> bool:
        """`written:` names a `kind: path` parameter, or a path as the job writes it (`data/gold/x`,
        `s3a://bucket/x`): text that is not another kind of parameter."""
        spec = contract.param(str(folder)) if isinstance(folder, str) else None
        if not isinstance(folder, str) or not folder.strip() or (spec is not None and spec.kind != "path"):
            paths = [p.name for p in contract.params if p.kind == "path"]
            self.c.at(path, f"`written` names a path as the job writes it (`data/gold/revenue`) or a path parameter "
                            f"of contract {contract.name!r} (`kind: path`), not {folder!r}"
                      + (f" (path parameters: {', '.join(paths)})" if paths else ""))
            return False
        return True

    def schema_check(self, text: str, path: tuple) -> m.SchemaCheck | None:
        """`schema: DDL`: columns `name type [NOT NULL]`, read by `coltypes` (problems at the step's line)."""
        try:
            columns = parse_columns(text)
        except ValueError as exc:
            self.c.at(path, f"schema: {exc}")
            return None
        out: list[tuple[str, str, bool]] = []
        for name, written in columns:
            not_null = bool(_NOT_NULL.search(written))
            try:
                type_name = parse_type(_NOT_NULL.sub("", written)).name
            except TypeSyntaxError as exc:
                self.c.at(path, f"schema: column {name!r}: {exc}")
                return None
            if any(n == name for n, _, _ in out):
                self.c.at(path, f"schema: column {name!r} appears twice")
                return None
            out.append((name, type_name, not_null))
        return m.SchemaCheck(self.c.where(path), tuple(out))

    def selected_columns(self, body: dict, contract: Contract, path: tuple) -> tuple[str, ...] | None:
        """`columns: [...]` (these, in this order) or `ignore: [...]` (the others): what row checks compare."""
        names = list(contract.output_names)
        if "columns" in body and "ignore" in body:
            self.c.at(path + ("ignore",), "give `columns` (what to compare) or `ignore` (what not to), not both",
                      key=True)
            return None
        for key in ("columns", "ignore"):
            given = body.get(key)
            if not isinstance(given, list):
                continue
            bad = [i for i, n in enumerate(given) if n not in names]
            for i in bad:
                self.c.at(path + (key, i), f"contract {contract.name!r} has no output column {given[i]!r}"
                                           f"{did_you_mean(str(given[i]), names)} (columns: {', '.join(names)})")
            if bad:
                return None
            if key == "columns":
                return tuple(given)
            kept = tuple(n for n in names if n not in given)
            if not kept:
                self.c.at(path + (key,), "`ignore` leaves no column to compare")
                return None
            return kept
        return None


# expect keys whose values are read with the output columns of the query checked
_NEEDS_OUTPUT = ("rows", "output", "last_batch", "no_output", "batches", "columns", "ignore", "where", "schema")


def _shape_text(kind: str, topic: str | None, headers: bool) -> str:
    if kind == "kafka":
        return f"kind kafka (topic {topic!r}, headers {'true' if headers else 'false'})"
    return f"kind {kind}"


def find_scenario_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Expand files and directories into scenario files; returns (files, paths that do not exist)."""
    files: list[Path] = []
    missing: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files.extend(sorted(f for f in path.rglob("*") if f.is_file() and f.name.endswith(SCENARIO_SUFFIXES)))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(str(p))
    return files, missing
