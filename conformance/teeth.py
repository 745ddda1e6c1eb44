"""The kit checks its own teeth: could each check of a passing run have failed?

For every check of an `expect` step that passed, expectations are mutated, one family per kind of
check the judge knows (a row value changed, a row removed, a row added, a watermark moved by 1 ms, a
count off by one, an operator or a schema column changed, a failure's class or message changed, a
published record removed, ...), and each mutated expectation is judged by the same judge against the
same observations the run kept (`StepResult.observed`: the batches, the rows read back, the state read,
the records published): no second Spark run. Every mutation must fail. A check is

- *vacuous* when it passes whatever is expected (every mutation passes), or when it is a check of
  "since the previous expect" (`rows`, `no_output`, `dropped`, `updated`, `batches`, `event_time: none`,
  `watermarks`, an operator's `updated`/`dropped`) and no step since the previous expect can run a
  micro-batch (only `add`, `static` and `stop` steps, `advance` without a processing-time trigger, or
  the query's first start, when the sources are still empty): nothing the pipeline does can make it fail;
- *weak* when some of its mutations pass (a tolerance wider than a changed value, say);
- *not judged* when the implementation declares the check does not apply to it
  (`@implementation(unjudged=...)`): the run's notes say so already.

The CLI (`eventtime run --teeth`) and the pytest plugin (`--eventtime-teeth`) both call `examine` and
print what `report_lines` says; a vacuous or weak check fails the run (`ExitCode.FAILED`).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

from . import coltypes
from . import spec as m
from .results import ERROR, NOT_APPLICABLE, PASSED, SKIPPED, ScenarioResult, StepResult
from .spec import Where

__all__ = ["CheckTeeth", "Teeth", "examine", "report_lines", "totals_line", "add_cli_option", "BATCH_STEPS"]

MS = 1000  # microseconds: watermarks and event times are held as epoch microseconds

# the step kinds that can run a micro-batch ("advance" only with a processing-time trigger); a watermark or
# a stream status given to an input (the dataflow profile's model) can fire what is waiting on it
BATCH_STEPS = ("start", "restart", "process", "update", "run", "generate", *m.INPUT_STEPS)
_QUIET_STEPS = "add, static and stop steps"


@dataclass
class CheckTeeth:
    """One check of one expect step, and what its mutations did."""

    label: str  # the check as the file says it: `watermark`, `rows`, `batches[2].dropped`, `state`, ...
    where: Where
    mutations: int = 0
    survived: list[str] = field(default_factory=list)  # the mutations the judge let pass
    vacuous: str | None = None  # why it passes whatever is expected; None: it has teeth
    unjudged: bool = False  # the implementation declares it does not apply (`@implementation(unjudged=...)`)

    @property
    def weak(self) -> bool:
        return self.vacuous is None and not self.unjudged and bool(self.survived)


@dataclass
class Teeth:
    """The teeth of one scenario run: each check of its passed expect steps."""

    scenario: str
    path: str
    implementation: str
    checks: list[CheckTeeth] = field(default_factory=list)
    examined: bool = True
    why_not: str = ""  # why the run was not examined (it did not pass, nothing was kept)
    seconds: float = 0.0

    @property
    def vacuous(self) -> list[CheckTeeth]:
        return [c for c in self.checks if c.vacuous is not None]

    @property
    def weak(self) -> list[CheckTeeth]:
        return [c for c in self.checks if c.weak]

    @property
    def unjudged(self) -> list[CheckTeeth]:
        return [c for c in self.checks if c.unjudged]

    @property
    def mutations(self) -> int:
        return sum(c.mutations for c in self.checks)

    @property
    def toothless(self) -> bool:
        """Whether this run fails a teeth check: a vacuous or a weak check."""
        return bool(self.vacuous or self.weak)

    def to_dict(self) -> dict:
        return {"scenario": self.scenario, "file": self.path, "implementation": self.implementation,
                "examined": self.examined, "why_not": self.why_not or None, "checks": len(self.checks),
                "mutations": self.mutations, "seconds": round(self.seconds, 4),
                "vacuous": [{"check": c.label, "where": str(c.where), "why": c.vacuous} for c in self.vacuous],
                "weak": [{"check": c.label, "where": str(c.where), "passing": list(c.survived)} for c in self.weak],
                "unjudged": [{"check": c.label, "where": str(c.where)} for c in self.unjudged]}


# -- values: a different value of the same type -----------------------------------------------------------
def sample_value(t: coltypes.ColumnType) -> Any:
    """A value of type `t` (its zero), as the judge holds values (`coltypes`)."""
    k = t.kind
    if k in coltypes.INTEGRAL_RANGES or k in ("timestamp", "timestamp_ntz"):
        return 0
    if k in ("float", "double"):
        return 0.0
    if k == "decimal":
        return decimal.Decimal(0).quantize(decimal.Decimal(1).scaleb(-t.scale))
    if k == "string":
        return ""
    if k == "boolean":
        return False
    if k == "binary":
        return b""
    if k == "date":
        return _dt.date(1970, 1, 1)
    if k == "array":
        return ()
    if k == "map":
        return coltypes.MapValue.of([])
    if k == "struct":
        return tuple(sample_value(ft) for _, ft in t.fields)
    return None


def changed_value(t: coltypes.ColumnType, v: Any, tolerance: float | None = None) -> Any:
    """A value of type `t` that the judge must tell from `v`: +1 for a number (+1 ms for a timestamp,
    a day for a date, the smallest step of a decimal), far outside the tolerance for a float, text
    with a character more, the other boolean, null replaced by a value."""
    if v is None:
        return sample_value(t)
    k = t.kind
    if k in coltypes.INTEGRAL_RANGES:
        return v + 1 if v + 1 < 2 ** (coltypes.INTEGRAL_RANGES[k] - 1) else v - 1
    if k in ("timestamp", "timestamp_ntz"):
        return v + MS
    if k in ("float", "double"):
        if v != v or v in (float("inf"), float("-inf")):  # NaN, infinities: a finite number
            return 0.0
        tol = max(tolerance or coltypes.REL_TOL, coltypes.REL_TOL)
        return float(v + (abs(v) + 1.0) * 2 * max(1.0, tol))
    if k == "decimal":
        unit = decimal.Decimal(1).scaleb(-t.scale)
        return (v - unit) if len((v + unit).as_tuple().digits) > t.precision else (v + unit)
    if k == "string":
        return v + "~"
    if k == "boolean":
        return not v
    if k == "binary":
        return bytes(v) + b"\x00"
    if k == "date":
        return v + _dt.timedelta(days=1)
    if k == "array":
        assert t.element is not None
        return (changed_value(t.element, v[0], tolerance),) + tuple(v[1:]) if v else (sample_value(t.element),)
    if k == "map":
        assert t.key is not None and t.value is not None
        pairs = list(v)
        if not pairs:
            return coltypes.MapValue.of([(sample_value(t.key), sample_value(t.value))])
        key, value = pairs[0]
        return coltypes.MapValue.of([(key, changed_value(t.value, value, tolerance))] + pairs[1:])
    if k == "struct":
        (_, first), rest = t.fields[0], tuple(v[1:])
        return (changed_value(first, v[0], tolerance),) + rest
    return v


def _row_mutations(rows: Sequence[tuple], names: Sequence[str], types: Sequence[coltypes.ColumnType],
                   ordered: bool, tolerance: float | None) -> Iterator[tuple[str, tuple[tuple, ...]]]:
    """(what, mutated rows) for a list of expected rows: each value of the first row changed, the last
    row removed, a row added (the first counted twice; a row of the columns' types where none is
    expected), and for an ordered check the rows in another order."""
    rows = tuple(tuple(r) for r in rows)
    if rows and len(rows[0]) == len(types):
        for i, (name, t) in enumerate(zip(names, types)):
            first = rows[0]
            row = first[:i] + (changed_value(t, first[i], tolerance),) + first[i + 1:]
            yield f"row 1's {name} changed", (row,) + rows[1:]
    if rows:
        yield f"row {len(rows)} removed", rows[:-1]
        yield "row 1 expected twice", rows + (rows[0],)
    else:
        yield "a row added", (tuple(sample_value(t) for t in types),)
    if ordered and tuple(reversed(rows)) != rows:
        yield "rows in reverse order", tuple(reversed(rows))


def _set(obj: Any, **changes: Any) -> Any:
    """`dataclasses.replace` with the changed field named at run time."""
    return replace(obj, **changes)


def _off_by(value: int, what: str, unit: int = 1, word: str = "") -> Iterator[tuple[str, int]]:
    yield f"{what} +1{word}", value + unit
    if value - unit >= 0 or word:
        yield f"{what} -1{word}", value - unit


# -- the checks of an expect step, each with its mutated expectations ---------------------------------------
@dataclass
class _Check:
    label: str
    where: Where
    family: str  # the judge's name for it (`CheckFailure.check`, or a `part`), for `unjudged`
    mutations: list[tuple[str, Any]]  # (what, the mutated step / state rows / topic check)
    window: bool = False  # a check of "since the previous expect"
    judge: str = "step"  # step | state | topic
    parts: dict[str, str] = field(default_factory=dict)  # a mutation -> the judge's name of what it changes,
    # where that is not the check's family (a batch entry's `state_rows`)


def _key_where(scenario: m.Scenario, step: m.ExpectStep, key: str) -> Where:
    """Where the step's own `key:` is written: of the places the key is written in the step, the least
    nested (its indentation, then the brackets open before it on its line: `dropped` of the step, not of
    a `batches` entry); the step's own place when it cannot be found."""
    pattern = re.compile(r"(^|[\s{,])" + re.escape(key) + r"\s*:")
    found: list[tuple[int, int, int]] = []  # (nesting, line, column)
    for number, text in scenario.step_text(step):
        for match in pattern.finditer(text):
            column = match.start() + len(match.group(1))
            before = text[:column]
            depth = before.count("{") + before.count("[") - before.count("}") - before.count("]")
            found.append((100 * depth + len(text) - len(text.lstrip()), number, column + 1))
    if not found:
        return step.where
    _, line, column = min(found)
    return Where(step.where.file, line, column)


def _forwarded_checks(step: m.ExpectStep, scenario: m.Scenario) -> list[_Check]:
    """The checks of what an operator forwarded (the dataflow profile's model): its watermarks and its
    stream statuses, each sequence mutated by one more, one left out and its first one changed."""
    out: list[_Check] = []
    if step.watermarks is not None:  # the watermarks an operator forwarded (the dataflow profile's model)
        wms = step.watermarks
        muts = [("one watermark more", replace(step, watermarks=wms + ((wms[-1] if wms else 0) + MS,)))]
        if wms:
            muts += [("watermark 1 +1 ms", replace(step, watermarks=(wms[0] + MS,) + wms[1:])),
                     (f"watermark {len(wms)} left out", replace(step, watermarks=wms[:-1]))]
        out.append(_Check("watermarks", step.watermarks_where or _key_where(scenario, step, "watermarks"), "watermarks",
                          muts, window=True))
    if step.statuses is not None:  # the stream statuses an operator emitted (the dataflow profile's model)
        sts = step.statuses
        muts = [("one status more", replace(step, statuses=sts + ("active" if sts[-1:] == ("idle",) else "idle",)))]
        if sts:
            muts += [(f"status {len(sts)} left out", replace(step, statuses=sts[:-1])),
                     ("status 1 flipped", replace(step, statuses=("active" if sts[0] == "idle" else "idle",) + sts[1:]))]
        out.append(_Check("statuses", step.statuses_where or _key_where(scenario, step, "statuses"), "statuses",
                          muts, window=True))
    return out


def _checks(step: m.ExpectStep, scenario: m.Scenario) -> list[_Check]:
    """Every check `step` holds, with its mutated expectations, one family per kind of check."""
    from .judge import compared

    out: list[_Check] = []
    names, types, _ = compared(step, scenario)
    tol = step.tolerance
    if step.failure is not None:
        f = step.failure
        muts: list[tuple[str, Any]] = [("no failure expected", replace(step, failure=None))]
        for attr, what in (("error_class", "error class"), ("exception", "exception"), ("message", "message")):
            value = getattr(f, attr)
            if value:
                muts.append((f"another {what}", replace(step, failure=_set(f, **{attr: value + "_MUTATED"}))))
        out.append(_Check("failure", f.where, "failure", muts))
        return out  # a failure stands alone in its expect
    for i, check in enumerate(step.rows):
        label = check.scope if check.rows else ("no_output" if _at_key(scenario, check.where, "no_output")
                                                else f"{check.scope}: []")
        muts = [(what, replace(step, rows=step.rows[:i] + (replace(check, rows=rows),) + step.rows[i + 1:]))
                for what, rows in _row_mutations(check.rows, names, types, step.ordered, tol)]
        window = check.scope == "rows" and step.written is None
        out.append(_Check(label, check.where, check.scope, muts, window=window))
    if step.watermark_us is not None:
        out.append(_Check("watermark", step.watermark_where or _key_where(scenario, step, "watermark"), "watermark",
                          [(w, replace(step, watermark_us=v)) for w, v in _off_by(step.watermark_us, "watermark",
                                                                                 MS, " ms")]))
    for attr, key in (("dropped", "dropped"), ("state_rows", "state_rows"), ("updated", "updated"),
                      ("batch_count", "batches")):
        value = getattr(step, attr)
        if value is not None:
            out.append(_Check(key, _key_where(scenario, step, key), "batches" if key == "batches" else key,
                              [(w, _set(step, **{attr: v})) for w, v in _off_by(value, key)],
                              window=attr != "state_rows"))
    out += _forwarded_checks(step, scenario)
    if step.batch_watermark_us is not None:
        out.append(_Check("batch_watermark", step.batch_watermark_where or _key_where(scenario, step, "batch_watermark"),
                          "batch_watermark", [(w, replace(step, batch_watermark_us=v)) for w, v in
                                              _off_by(step.batch_watermark_us, "batch_watermark", MS, " ms")]))
    if step.batches is not None:
        out += _batch_checks(step, scenario, names, types)
    if step.event_time is not None:
        out += _event_time_checks(step)
    if step.schema is not None:
        out.append(_schema_check(step))
    if step.operators is not None:
        out += _operator_checks(step, scenario)
    if step.state is not None:
        out.append(_Check("state", step.state.where, "state", [], judge="state"))  # mutations: once its types are read
    if step.topic is not None:
        out.append(_topic_check(step.topic))
    return out


def _at_key(scenario: m.Scenario, where: Where, key: str) -> bool:
    if not 0 < where.line <= len(scenario.lines):
        return False
    text = scenario.lines[where.line - 1]
    return text[where.column - 1:].startswith(key) or text[:where.column - 1].rstrip().endswith(key + ":")


def _batch_checks(step: m.ExpectStep, scenario: m.Scenario, names: Sequence[str],
                  types: Sequence[coltypes.ColumnType]) -> list[_Check]:
    assert step.batches is not None
    batches = step.batches
    out = [_Check("batches", _key_where(scenario, step, "batches"), "batches",
                  [("one batch more", replace(step, batches=batches + (m.BatchCheck(step.where),)))]
                  + ([("one batch fewer", replace(step, batches=batches[:-1]))] if batches else []), window=True)]
    for i, b in enumerate(batches):
        def with_entry(entry: m.BatchCheck, i: int = i) -> m.ExpectStep:
            return replace(step, batches=batches[:i] + (entry,) + batches[i + 1:])
        label = f"batches[{i + 1}]"
        muts: list[tuple[str, Any]] = []
        if b.data is not None:
            muts.append((f"data: {str(not b.data).lower()}", with_entry(replace(b, data=not b.data))))
        for attr in ("watermark_before_us", "watermark_after_us"):
            value = getattr(b, attr)
            if value is not None:
                muts += [(w, with_entry(_set(b, **{attr: v}))) for w, v in
                         _off_by(value, attr.removesuffix("_us"), MS, " ms")]
        parts: dict[str, str] = {}
        for attr in ("dropped", "state_rows", "updated"):
            value = getattr(b, attr)
            if value is not None:
                muts += [(w, with_entry(_set(b, **{attr: v}))) for w, v in _off_by(value, attr)]
                parts.update((w, attr) for w, _ in _off_by(value, attr))
        if b.rows is not None:
            muts += [(f"rows: {w}", with_entry(replace(b, rows=rows)))
                     for w, rows in _row_mutations(b.rows, names, types, False, step.tolerance)]
        if muts:
            out.append(_Check(label, b.where, "batches", muts, window=True, parts=parts))
    return out


def _event_time_checks(step: m.ExpectStep) -> list[_Check]:
    et = step.event_time
    assert et is not None
    if et.none:
        return [_Check("event_time: none", et.where, "event_time",
                       [("statistics expected", replace(step, event_time=m.EventTimeCheck(et.where)))], window=True)]
    muts: list[tuple[str, Any]] = []
    for key in ("min", "max", "avg", "watermark"):
        value = getattr(et, f"{key}_us")
        if value is not None:
            muts += [(w, replace(step, event_time=_set(et, **{f"{key}_us": v})))
                     for w, v in _off_by(value, f"event_time {key}", MS, " ms")]
    return [_Check("event_time", et.where, "event_time", muts, window=True)]


def _schema_check(step: m.ExpectStep) -> _Check:
    schema = step.schema
    assert schema is not None
    cols = schema.columns
    muts: list[tuple[str, Any]] = []
    for i, (name, type_name, not_null) in enumerate(cols):
        other = "binary" if type_name != "binary" else "string"
        muts.append((f"column {name} as {other}",
                     replace(step, schema=replace(schema, columns=cols[:i] + ((name, other, not_null),) + cols[i + 1:]))))
    if cols:
        muts.append((f"column {cols[-1][0]} left out", replace(step, schema=replace(schema, columns=cols[:-1]))))
        muts.append(("a column more", replace(step, schema=replace(schema, columns=cols + (("mutated_column", "int",
                                                                                              False),)))))
    if len(cols) > 1:
        muts.append(("columns in reverse order", replace(step, schema=replace(schema, columns=tuple(reversed(cols))))))
    return _Check("schema", schema.where, "schema", muts)


def _operator_checks(step: m.ExpectStep, scenario: m.Scenario) -> list[_Check]:
    ops = step.operators
    assert ops is not None
    out = [_Check("operators", _key_where(scenario, step, "operators"), "operators",
                  [("one operator more", replace(step, operators=ops + (m.OperatorCheck(step.where, len(ops)),)))]
                  + ([("one operator fewer", replace(step, operators=ops[:-1]))] if ops else []))]
    for i, op in enumerate(ops):
        def with_entry(entry: m.OperatorCheck, i: int = i) -> m.ExpectStep:
            return replace(step, operators=ops[:i] + (entry,) + ops[i + 1:])
        muts: list[tuple[str, Any]] = []
        if op.name is not None:
            muts.append(("another name", with_entry(replace(op, name=op.name + "Mutated"))))
        window = False
        for attr in ("state_rows", "updated", "dropped"):
            value = getattr(op, attr)
            if value is not None:
                muts += [(w, with_entry(_set(op, **{attr: v}))) for w, v in _off_by(value, attr)]
                window = window or attr != "state_rows"
        if muts:
            # a window check only when it holds nothing but counts of the batches since the previous expect
            window = window and op.name is None and op.state_rows is None
            out.append(_Check(f"operators[{i + 1}]", op.where, "operators", muts, window=window))
    return out


def _topic_check(check: m.TopicCheck) -> _Check:
    records = check.records
    muts: list[tuple[str, Any]] = []
    if records:
        first = records[0]
        muts.append(("record 1's value changed", replace(check, records=(replace(first, value=_changed_payload(
            first.value)),) + records[1:])))
        muts.append(("record 1's key changed", replace(check, records=(replace(first, key=_changed_payload(
            first.key)),) + records[1:])))
        muts.append((f"record {len(records)} removed", replace(check, records=records[:-1])))
        muts.append(("record 1 expected twice", replace(check, records=records + (first,))))
        if check.ordered and tuple(reversed(records)) != records:
            muts.append(("records in reverse order", replace(check, records=tuple(reversed(records)))))
    else:
        muts.append(("a record added", replace(check, records=(m.ExpectedRecord(value="mutated"),))))
    return _Check("records", check.where, "records", muts, judge="topic")


def _changed_payload(value: Any) -> Any:
    if value is None:
        return "mutated"
    if isinstance(value, str):
        return value + "~"
    if isinstance(value, dict) and list(value) != ["base64"]:
        return {**value, "mutated": True}
    if isinstance(value, list):
        return value + ["mutated"]
    return ["mutated", value]


# -- examining a run ------------------------------------------------------------------------------------
def examine(result: ScenarioResult) -> Teeth:
    """The teeth of each check of `result`'s passed expect steps, judged on what the run kept."""
    t0 = time.monotonic()
    scenario = result.scenario
    teeth = Teeth(scenario.name, scenario.path, result.implementation)
    if result.status != PASSED:
        said = {ERROR: "erred", NOT_APPLICABLE: "did not apply"}.get(result.status, result.status)
        teeth.examined, teeth.why_not = False, f"the run {said}: only a passing run is examined"
        return teeth
    by_index = {s.index: s for s in scenario.steps}
    quiet = _quiet_steps(result)
    for sr in result.steps:
        step = by_index.get(sr.index)
        if sr.kind != "expect" or sr.status != PASSED or not isinstance(step, m.ExpectStep):
            continue
        if sr.observed is None:
            teeth.examined, teeth.why_not = False, "the run kept no observations to judge again"
            continue
        teeth.checks += _examine_step(step, sr, scenario, sr.index in quiet)
    teeth.seconds = time.monotonic() - t0
    return teeth


def _quiet_steps(result: ScenarioResult) -> set[int]:
    """The judged expect steps (by index) whose window ("since the previous expect" of the query they look
    at) held no step that can run a micro-batch: `start`, `restart`, `process`, `run`, `generate`, and
    `advance` under a processing-time trigger can; `add`, `static`, `stop`, `advance` without a trigger
    and the implicit start (the sources are empty then) cannot."""
    scenario = result.scenario
    by_index = {s.index: s for s in scenario.steps}
    ran_since: dict[str | None, bool] = {}  # per query an expect names: whether a batch could run since its last
    ran_before_any = False  # a step that can run a batch before a query's first expect
    quiet: set[int] = set()
    for sr in result.steps:
        step = by_index.get(sr.index) if sr.index else None
        if sr.status == SKIPPED:
            continue
        if isinstance(step, m.ExpectStep):
            key = step.query
            could = ran_since.get(key, ran_before_any)
            if not could:
                quiet.add(sr.index)
            ran_since[key] = False
        elif sr.index and (sr.kind in BATCH_STEPS or (sr.kind == "advance" and scenario.trigger is not None)):
            ran_before_any = True
            ran_since = {key: True for key in ran_since}
    return quiet


def _examine_step(step: m.ExpectStep, sr: StepResult, scenario: m.Scenario, quiet: bool) -> list[CheckTeeth]:
    from .judge import judge

    observed = sr.observed
    contract = m.checked_contract(scenario.contract, step)
    judged_in = scenario if contract is scenario.contract else replace(scenario, contract=contract)
    unjudged = frozenset(getattr(observed, "unjudged", frozenset()))
    from .topics import judge_records

    records = list(observed) if isinstance(observed, list) else []  # what an output topic holds

    def step_fails(mutated: Any) -> bool:
        return bool(judge(mutated, observed, judged_in, unjudged))

    def topic_fails(mutated: Any) -> bool:
        return bool(judge_records(mutated, records))

    out = []
    for check in _checks(step, judged_in):
        fails: Callable[[Any], bool] = topic_fails if check.judge == "topic" else step_fails
        if check.judge == "state":
            fails, check.mutations = _state_judge(step, observed, judged_in)
        teeth = CheckTeeth(check.label, check.where, len(check.mutations))
        declared = unjudged | ({"updated", "operators", "state"} if "state_rows" in unjudged else set())
        passing = [what for what, mutated in check.mutations if not fails(mutated)]
        # a mutation of what the implementation declares it is not judged on passes by that declaration
        teeth.survived = [w for w in passing if check.parts.get(w, check.family) not in declared]
        judged = len(check.mutations) - (len(passing) - len(teeth.survived))
        if check.mutations and not judged:
            teeth.unjudged = True
        elif check.window and quiet and not getattr(observed, "since_expect", [None]):
            teeth.vacuous = (f"no step since the previous expect can run a micro-batch ({_QUIET_STEPS} only"
                             + (", or advance without a processing-time trigger" if scenario.trigger is None else "")
                             + "), so it passes whatever the pipeline does")
        elif judged and len(teeth.survived) == judged:
            teeth.vacuous = "it passes whatever is expected: " + "; ".join(teeth.survived) + " pass as well"
        if check.mutations or teeth.vacuous:
            out.append(teeth)
    return out


def _state_judge(step: m.ExpectStep, observed: Any, scenario: m.Scenario
                 ) -> tuple[Callable[[Any], bool], list[tuple[str, Any]]]:
    """How a mutated `state` check is judged (its rows, read by the types of the state as it was read),
    and its mutations; none when the state was not kept (the check did not read it)."""
    from .statecheck import _read_row, judge_state_rows

    check = step.state
    assert check is not None
    table = getattr(observed, "state_judged", None)
    if table is None or isinstance(table, str):
        return (lambda mutated: True), []
    try:
        types = [coltypes.parse_type(table.fields[c]) for c in check.columns]
    except (KeyError, coltypes.TypeSyntaxError):
        return (lambda mutated: True), []
    rows = []
    for raw in check.rows:
        row, bad = _read_row(raw, check.columns, types, scenario)
        if bad:
            return (lambda mutated: True), []
        rows.append(row)
    muts = [(what, list(mutated)) for what, mutated in
            _row_mutations(rows, check.columns, types, False, step.tolerance)]

    def fails(mutated: Any) -> bool:
        return bool(judge_state_rows(check, table, mutated, types, step.tolerance))
    return fails, muts


# -- what is printed (the CLI and pytest alike) -------------------------------------------------------------
def _line_of(where: Where, lines: Sequence[str]) -> str:
    return lines[where.line - 1].strip() if 0 < where.line <= len(lines) else ""


def report_lines(teeth: Teeth, lines: Sequence[str] = ()) -> list[str]:
    """One line for the run (its checks, mutations, vacuous and weak checks), then one per vacuous or
    weak check at its file:line:column with the file's line."""
    if not teeth.examined and not teeth.checks:
        return [f"TEETH {teeth.scenario}  [{teeth.implementation}]  not examined: {teeth.why_not}"]
    words = [f"{len(teeth.checks)} check{'s' if len(teeth.checks) != 1 else ''}",
             f"{teeth.mutations} mutation{'s' if teeth.mutations != 1 else ''}", f"{len(teeth.vacuous)} vacuous"]
    if teeth.weak:
        words.append(f"{len(teeth.weak)} weak")
    if teeth.unjudged:
        words.append(f"{len(teeth.unjudged)} not judged on this implementation (it declares so)")
    mark = "TOOTHLESS" if teeth.toothless else "TEETH"
    out = [f"{mark:5} {teeth.scenario}  [{teeth.implementation}]  ({', '.join(words)})"]
    for c in teeth.vacuous:
        out.append(f"  {c.where}: vacuous `{c.label}`: {c.vacuous}")
        if _line_of(c.where, lines):
            out.append(f"      {c.where.line} | {_line_of(c.where, lines)}")
    for c in teeth.weak:
        out.append(f"  {c.where}: weak `{c.label}`: {len(c.survived)} of {c.mutations} mutations pass: "
                   + "; ".join(c.survived))
        if _line_of(c.where, lines):
            out.append(f"      {c.where.line} | {_line_of(c.where, lines)}")
    return out


def totals_line(all_teeth: Sequence[Teeth | dict]) -> str:
    """The run's figures: checks, mutations, vacuous, weak (and not judged) checks, passing runs examined,
    the seconds spent judging. Takes `Teeth` or their `to_dict()` (what a pytest-xdist worker sends)."""
    records = [t.to_dict() if isinstance(t, Teeth) else t for t in all_teeth]
    examined = [t for t in records if t["examined"] or t["checks"]]
    checks = sum(t["checks"] for t in examined)
    unjudged = sum(len(t["unjudged"]) for t in examined)
    words = [f"{checks} check{'s' if checks != 1 else ''}", f"{sum(t['mutations'] for t in examined)} mutations",
             f"{sum(len(t['vacuous']) for t in examined)} vacuous", f"{sum(len(t['weak']) for t in examined)} weak"]
    words += [f"{unjudged} not judged (declared by the implementation)"] if unjudged else []
    left = len(records) - len(examined)
    return (f"teeth: {', '.join(words)} in {len(examined)} passing run{'s' if len(examined) != 1 else ''}"
            + (f" ({left} not examined)" if left else "") + f"; judged in {sum(t['seconds'] for t in records):.1f}s")


def add_cli_option(parser: Any) -> None:
    """`--teeth`, for `run` and `certify` (`commands.execute` prints the report)."""
    parser.add_argument("--teeth", action="store_true",
                        help="also ask whether each check of a passing run could have failed: its expectations "
                             "mutated and judged again on what the run observed; a vacuous or weak check fails "
                             "the run (docs/teeth.md)")
