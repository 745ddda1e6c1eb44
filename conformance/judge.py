"""Judges an `expect` step against what the harness observed: row multisets, watermark, drops, state."""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, NamedTuple, Sequence

from eventtime.harness.observations import BatchObservation

from . import coltypes, rowmatch
from .drive import rows_seen
from .explain import explain_late, explain_missing, late_inputs, missing_spans
from .coltypes import ColumnType
from .spec import BatchCheck, ExpectStep, OperatorCheck, RowsCheck, Scenario, SchemaCheck
from .results import FAILED, PASSED, SKIPPED, CheckFailure, FailureInfo, StepResult
from .timeparse import format_relative, format_time

__all__ = ["Observed", "judge", "judge_expect", "match_rows", "format_value", "schema_differences", "Compared",
           "compared", "rows_updated", "type_name"]

REL_TOL = 1e-9


class Observed:
    """What a check looks at: the batches since the previous `expect`, all batches so far, and the
    query's failure if it has failed. The harness and the model both fill it in."""

    def __init__(self, since_expect: Sequence[BatchObservation], history: Sequence[BatchObservation],
                 output_mode: str, columns: Sequence[str], failure: FailureInfo | None = None,
                 schema: Sequence[tuple[str, str, bool]] | None = None,
                 since_check: Sequence[BatchObservation] | None = None, watermark_now_ms: int | None = None):
        self.schema = None if schema is None else list(schema)  # the pipeline's (name, Spark type, nullable)
        self.since_expect = list(since_expect)
        # the batches since the previous `*_since_check` check of the query, or its last start
        # (`spec.checks_since_check`); the caller keeps that span, else it is the expect's own
        self.since_check = self.since_expect if since_check is None else list(since_check)
        # in batch order within a checkpoint; a query that started anew (no checkpoint location) counts from 0
        self.history = sorted(history, key=lambda b: (getattr(b, "checkpoint", 0), b.batch_id))
        self.output_mode = output_mode
        self.columns = list(columns)
        self.failure = failure
        self.unjudged: frozenset[str] = frozenset()  # checks the implementation is not judged on
        # a `state` check's operator as read with every field (`stateread.StateTable`), or why it could
        # not be read; None where the check was not read again (it agreed): what a snapshot writes
        self.state: Any = None
        self.state_judged: Any = None  # the state a `state` check was judged on (its fields), for `eventtime.teeth`
        # the query's current watermark where it is not what the last batch left: the dataflow model's after
        # a restart (watermarks are not checkpointed: Long.MIN_VALUE until one is emitted); None: the last batch's
        self.watermark_now_ms = watermark_now_ms

    @property
    def watermark_ms(self) -> int:
        """The current global watermark: what the last batch left for the next (0 = Spark's initial)."""
        if self.watermark_now_ms is not None:
            return self.watermark_now_ms
        if not self.history or self.history[-1].watermark_after_ms is None:
            return 0
        return int(self.history[-1].watermark_after_ms)

    def rows(self, scope: str) -> list[tuple]:
        return rows_seen(scope, self.output_mode, self.since_expect, self.history)


def _event_time_inputs(scenario: Scenario) -> int:
    return sum(1 for s in scenario.sources.values() if s.event_time is not None)


def _late_inputs(observed: Observed, scenario: Scenario, missing: Sequence[tuple] = (),
                 names: Sequence[str] = (), kinds: Sequence[str] | None = None) -> list[str]:
    """The input rows since the previous expect that were behind the watermark their batch judged
    lateness by (`eventtime.explain.late_inputs`), with the missing windows they fall in."""
    rows = {n: src for n, src in scenario.sources.items() if src.kind == "rows"}
    event_time_at = {n: src.column_names.index(src.event_time) for n, src in rows.items()
                     if src.event_time in src.column_names}

    def show_row(source: str, row: tuple) -> str:  # as the scenario lists it, times in its own form
        return "[" + ", ".join(coltypes.format_value(v, c.type, lambda us: format_time(us, date=scenario.date),
                                                     quote_text=False)
                               for v, c in zip(row, rows[source].columns)) + "]"
    single = str(scenario.query_conf().get("spark.sql.streaming.statefulOperator.allowMultiple", "")).lower() == "false"
    return late_inputs(observed.since_expect, observed.history, lambda ms: _fmt_wm(ms, scenario), show_row,
                       event_time_at, missing_spans(missing, names, kinds), single)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if not (_is_number(a) and _is_number(b)):
            return False
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def _rows_equal(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))


def match_rows(expected: Sequence[tuple], actual: Sequence[tuple], *, ordered: bool = False,
               types: Sequence[ColumnType] | None = None, rel_tol: float | None = None
               ) -> tuple[list[tuple], list[tuple]]:
    """(missing, unexpected): expected rows not produced, produced rows not expected (multisets).

    With the columns' `types`, values compare as `ColumnType.equal` says (exact, float/double within a
    relative 1e-9, a value of another Python type never equal) and actual rows are first put in their
    canonical form (`ColumnType.canonical`: maps order-free, nested lists as tuples)."""
    if types is not None:
        actual = [tuple(t.canonical(v) for t, v in zip(types, row)) if len(row) == len(types) else row
                  for row in actual]
        typed = list(types)
        tol = REL_TOL if rel_tol is None else rel_tol

        def same(a: tuple, b: tuple) -> bool:
            return len(a) == len(b) and all(t.equal(x, y, tol) for t, x, y in zip(typed, a, b))
        approximate = any(t.approximate for t in types)
        # grouped by hashing: top-level scalar columns compared exactly; indexed: a float/double column
        exact = [i for i, t in enumerate(typed) if not t.approximate and t.kind not in ("array", "map", "struct")]
        indexed = next((i for i, t in enumerate(typed) if t.kind in ("float", "double")), None)
    else:
        same, tol = _rows_equal, REL_TOL
        floats = {i for row in list(expected) + list(actual) for i, v in enumerate(row) if isinstance(v, float)}
        approximate = bool(floats)
        width = max((len(r) for r in list(expected) + list(actual)), default=0)
        exact = [i for i in range(width) if i not in floats]
        indexed = min(floats) if floats else None
    if ordered:
        if len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual)):
            return [], []
        return list(expected), list(actual)
    if not approximate:
        exp, act = Counter(expected), Counter(actual)
        missing, unexpected = list((exp - act).elements()), list((act - exp).elements())
        if types is None or not missing or not unexpected:
            return missing, unexpected
        expected, actual = missing, unexpected  # equal hashes, other Python types (1 vs True): check each
    # tolerance is not transitive: a one-to-one matching of the most rows, not the first close row
    return rowmatch.match_tolerant(expected, actual, same, exact=exact, indexed=indexed, rel_tol=tol)


def format_value(value: Any, column_type: str | None, scenario: Scenario | None = None) -> str:
    date = scenario.date if scenario else None
    return coltypes.format_value(value, column_type, lambda us: format_time(us, date=date))


def _fmt_wm(ms: int | None, scenario: Scenario) -> str:
    if ms is None:
        return "-"
    if ms == 0:
        return "initial (1970-01-01T00:00:00Z)"
    return format_relative(ms * 1000, date=scenario.date)  # before the scenario's date: `-00:00:02`


def judge(step: ExpectStep, observed: Observed, scenario: Scenario,
          unjudged: frozenset[str] = frozenset()) -> list[CheckFailure]:
    """The expectations of `step` that did not hold. Checks named in `unjudged` (`dropped`,
    `state_rows`: what an implementation declared it cannot be judged on) are not looked at."""
    failures = _judge(step, observed, scenario)
    if not unjudged:
        return failures
    if "state_rows" in unjudged:  # an operator of another shape: its updates and its place in the plan too
        unjudged = unjudged | {"updated", "updated_since_check", "operators"}
    if "dropped" in unjudged:
        unjudged = unjudged | {"dropped_since_check"}
    return [f for f in failures if f.check not in unjudged and f.part not in unjudged]


def judge_expect(result: StepResult, step: ExpectStep, observed: Observed, scenario: Scenario,
                 unjudged: frozenset[str] = frozenset()) -> None:
    """Judge one `expect` step into its result. Once the query has failed only a `failure` check is
    judged: the step's other checks could only repeat that failure, so the step is skipped."""
    if observed.failure is not None and step.failure is None:
        result.status, result.message = SKIPPED, "not checked: the query failed earlier"
        return
    observed.unjudged = unjudged
    result.observed = observed  # what a snapshot writes (eventtime.snapshot)
    result.failures = judge(step, observed, scenario, unjudged)
    result.status = FAILED if result.failures else PASSED


def _judge(step: ExpectStep, observed: Observed, scenario: Scenario) -> list[CheckFailure]:
    out: list[CheckFailure] = []
    names, types, pick = compared(step, scenario)
    if step.failure is not None:
        return _judge_failure(step, observed)
    if observed.failure is not None:
        return [CheckFailure("failure", step.where, f"the query has failed: {observed.failure}")]
    for check in step.rows:
        failures = _judge_rows(check, [pick(r) for r in observed.rows(check.scope)], step.ordered, names, types,
                               step.tolerance, _written_label(step))
        if step.written is None:
            kinds = [t.kind for t in types]
            for f in failures:  # a missing (window) row: why it is not there yet, in event-time terms
                late = _late_inputs(observed, scenario, f.missing, names, kinds)
                f.explanation = explain_missing(
                    f.missing, names, observed.history, observed.output_mode, lambda ms: _fmt_wm(ms, scenario),
                    _event_time_inputs(scenario), late, kinds) or (f.missing and explain_late(
                        late, observed.history, lambda ms: _fmt_wm(ms, scenario))) or ""
        out.extend(failures)
    if step.watermark_us is not None:
        actual = observed.watermark_ms
        if actual * 1000 != step.watermark_us:
            out.append(CheckFailure(
                "watermark", step.watermark_where or step.where,
                f"watermark is {_fmt_wm(actual, scenario)}, expected {_fmt_wm(step.watermark_us // 1000, scenario)}",
                expected=step.watermark_us // 1000, actual=actual))
    if step.watermarks is not None:
        out.extend(_judge_forwarded(step, observed, scenario))
    if step.statuses is not None:
        out.extend(_judge_statuses(step, observed))
    if step.watermark_range is not None:
        out.extend(_judge_watermark_range(step, observed, scenario))
    if step.dropped is not None:
        actual = sum(b.dropped for b in observed.since_expect)
        if actual != step.dropped:
            out.append(CheckFailure("dropped", step.at("dropped"),
                                    f"{actual} row(s) dropped as late since the previous expect, expected {step.dropped}",
                                    expected=step.dropped, actual=actual, explanation=explain_late(
                                        _late_inputs(observed, scenario), observed.history,
                                        lambda ms: _fmt_wm(ms, scenario))))
    if step.state_rows is not None:
        actual = observed.history[-1].state_rows if observed.history else 0
        if actual != step.state_rows:
            out.append(CheckFailure("state_rows", step.at("state_rows"),
                                    f"{actual} row(s) in state, expected {step.state_rows}",
                                    expected=step.state_rows, actual=actual))
    if step.batch_count is not None and len(observed.since_expect) != step.batch_count:
        out.append(CheckFailure("batches", step.at("batches"),
                                f"{len(observed.since_expect)} micro-batch(es) ran since the previous expect, "
                                f"expected {step.batch_count}", expected=step.batch_count, actual=len(observed.since_expect)))
    if step.batches is not None:
        out.extend(_judge_batches(step, observed, scenario, names))
    if step.event_time is not None:
        out.extend(_judge_event_time(step, observed, scenario))
    if step.schema is not None:
        out.extend(_judge_schema(step.schema, observed))
    out.extend(_judge_operators(step, observed, scenario))
    return out


def _recorded(batches: Sequence[BatchObservation], name: str) -> list[Any] | None:
    """What every batch recorded under `name`, in order; None when a batch does not say (only the
    dataflow profile's model records the operator's outputs)."""
    out: list[Any] = []
    for b in batches:
        recorded = getattr(b, name, None)
        if recorded is None:
            return None
        out += recorded
    return out


def forwarded_ms(batches: Sequence[BatchObservation]) -> list[int] | None:
    """The watermarks the operator forwarded in these batches, in order; None when the batches do not say."""
    return _recorded(batches, "forwarded")


def _judge_forwarded(step: ExpectStep, observed: Observed, scenario: Scenario) -> list[CheckFailure]:
    """`watermarks`: the sequence of watermarks forwarded since the previous expect, in order."""
    where = step.watermarks_where or step.where
    want = [us // 1000 for us in step.watermarks or ()]
    actual = forwarded_ms(observed.since_expect)
    if actual is None:
        return [CheckFailure("watermarks", where, "this run does not record the watermarks an operator forwarded "
                                                  "(the dataflow profile's model does)", expected=want)]
    if actual == want:
        return []
    shown = ", ".join(format_time(ms * 1000, date=scenario.date) for ms in actual) or "none"
    expected = ", ".join(format_time(ms * 1000, date=scenario.date) for ms in want) or "none"
    return [CheckFailure("watermarks", where, f"the operator forwarded watermarks [{shown}] since the previous "
                                              f"expect, expected [{expected}]", expected=want, actual=actual)]


def statuses_emitted(batches: Sequence[BatchObservation]) -> list[str] | None:
    """The stream statuses the operator emitted in these batches, in order; None when the batches do not say."""
    return _recorded(batches, "statuses")


def _judge_statuses(step: ExpectStep, observed: Observed) -> list[CheckFailure]:
    """`statuses`: the stream statuses emitted since the previous expect, in order."""
    where = step.statuses_where or step.where
    want = list(step.statuses or ())
    actual = statuses_emitted(observed.since_expect)
    if actual is None:
        return [CheckFailure("statuses", where, "this run does not record the stream statuses an operator emitted "
                                                "(the dataflow profile's model does)", expected=want)]
    if actual == want:
        return []
    return [CheckFailure("statuses", where, f"the operator emitted stream statuses [{', '.join(actual) or 'none'}] "
                                            f"since the previous expect, expected [{', '.join(want) or 'none'}]",
                         expected=want, actual=actual)]


def _judge_watermark_range(step: ExpectStep, observed: Observed, scenario: Scenario) -> list[CheckFailure]:
    """`watermark: {at_least: T, at_most: T}`: the current watermark within the bounds (each inclusive)."""
    assert step.watermark_range is not None
    low, high = step.watermark_range
    actual = observed.watermark_ms * 1000
    if (low is None or actual >= low) and (high is None or actual <= high):
        return []
    bounds = [f"at least {_fmt_wm(low // 1000, scenario)}" if low is not None else "",
              f"at most {_fmt_wm(high // 1000, scenario)}" if high is not None else ""]
    return [CheckFailure("watermark", step.watermark_where or step.where,
                         f"watermark is {_fmt_wm(observed.watermark_ms, scenario)}, expected "
                         f"{' and '.join(b for b in bounds if b)}",
                         expected={k: v // 1000 for k, v in zip(("at_least", "at_most"), step.watermark_range)
                                   if v is not None}, actual=observed.watermark_ms)]


def rows_updated(batch: BatchObservation) -> int:
    """The rows a batch updated in state (`numRowsUpdated`, summed over its stateful operators): what
    `updated`, `updated_since_check` and a batch's `updated` compare."""
    return sum(int(o.get("numRowsUpdated") or 0) for o in batch.operators)


def _judge_operators(step: ExpectStep, observed: Observed, scenario: Scenario) -> list[CheckFailure]:
    """`updated`, `batch_watermark` and `operators`: what the stateful operators did, from the progress."""
    out: list[CheckFailure] = []
    if step.updated is not None:
        actual = sum(rows_updated(b) for b in observed.since_expect)
        if actual != step.updated:
            out.append(CheckFailure("updated", step.at("updated"), f"{actual} row(s) updated in state since the previous "
                                    f"expect, expected {step.updated}", expected=step.updated, actual=actual))
    for key, expected, count, what in (
            ("updated_since_check", step.updated_since_check, rows_updated, "row(s) updated in state"),
            ("dropped_since_check", step.dropped_since_check, lambda b: b.dropped, "row(s) dropped as late")):
        if expected is None:
            continue
        summed = sum(count(b) for b in observed.since_check)
        if summed != expected:
            out.append(CheckFailure(key, step.at(key), f"{summed} {what} {_span_words(observed)}, expected {expected}",
                                    expected=expected, actual=summed))
    if step.batch_watermark_us is not None:
        where = step.batch_watermark_where or step.where
        want = _fmt_wm(step.batch_watermark_us // 1000, scenario)
        if not observed.history:
            out.append(CheckFailure("batch_watermark", where, f"no batch has run, expected the last one to have "
                                    f"run with watermark {want}", expected=step.batch_watermark_us // 1000))
        else:
            last = observed.history[-1]
            ran_with = last.watermark_before_ms or 0
            if ran_with * 1000 != step.batch_watermark_us:
                out.append(CheckFailure("batch_watermark", where, f"the last batch ({last.batch_id}) ran with watermark "
                                        f"{_fmt_wm(ran_with, scenario)}, expected {want}",
                                        expected=step.batch_watermark_us // 1000, actual=ran_with))
    if step.operators is not None:
        out.extend(_judge_operator_list(step.operators, step, observed))
    return out


def _span_words(observed: Observed) -> str:
    """The batches a `*_since_check` check sums, in words."""
    ids = [b.batch_id for b in observed.since_check]
    which = f"batches {ids[0]} to {ids[-1]}" if len(ids) > 1 else f"batch {ids[0]}" if ids else "no batch"
    return (f"since the previous check of `updated_since_check`/`dropped_since_check` or the query's start "
            f"({which})")


def _judge_operator_list(want: Sequence[OperatorCheck], step: ExpectStep, observed: Observed) -> list[CheckFailure]:
    """Each stateful operator at its position in the progress: name, state rows after the last batch,
    rows updated and dropped by the batches since the previous expect."""
    last = observed.history[-1].operators if observed.history else []
    names = [str(o.get("operatorName")) for o in last]
    listed = ", ".join(f"{i + 1}. {n}" for i, n in enumerate(names)) or "none"
    if len(want) != len(last):
        return [CheckFailure("operators", want[0].where if want else step.where,
                             f"the query's progress lists {len(last)} stateful operator(s) ({listed}), "
                             f"expected {len(want)}", expected=len(want), actual=len(last))]
    out = []
    for check in want:
        i = check.position
        label = f"operator {i + 1} of {len(last)} ({names[i]})"
        if check.name is not None and check.name != names[i]:
            out.append(CheckFailure("operators", check.where, f"operator {i + 1} of {len(last)} is {names[i]}, "
                                    f"expected {check.name} (in order: {listed})", expected=check.name,
                                    actual=names[i], part="name"))
            continue
        window = [b.operators[i] for b in observed.since_expect if i < len(b.operators)]
        span = [b.operators[i] for b in observed.since_check if i < len(b.operators)]
        for part, expected, actual, what in (
                ("state_rows", check.state_rows, int(last[i].get("numRowsTotal") or 0), "row(s) in state"),
                ("updated", check.updated, sum(int(o.get("numRowsUpdated") or 0) for o in window),
                 "row(s) updated in state since the previous expect"),
                ("dropped", check.dropped, sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in window),
                 "row(s) dropped as late since the previous expect"),
                ("updated_since_check", check.updated_since_check,
                 sum(int(o.get("numRowsUpdated") or 0) for o in span), "row(s) updated in state " + _span_words(observed)),
                ("dropped_since_check", check.dropped_since_check,
                 sum(int(o.get("numRowsDroppedByWatermark") or 0) for o in span),
                 "row(s) dropped as late " + _span_words(observed))):
            if expected is not None and expected != actual:
                out.append(CheckFailure("operators", check.where, f"{label}: {actual} {what}, expected {expected}",
                                        expected=expected, actual=actual, part=part))
    return out


def _judge_schema(want: SchemaCheck, observed: Observed) -> list[CheckFailure]:
    if observed.schema is None:
        return [CheckFailure("schema", want.where, "no query ran, so there is no output schema to check")]
    differences = schema_differences(want.columns, observed.schema)
    if not differences:
        return []
    expected = ", ".join(f"{n} {t}{' NOT NULL' if nn else ''}" for n, t, nn in want.columns)
    actual = ", ".join(f"{n} {type_name(t)}{'' if nullable else ' NOT NULL'}" for n, t, nullable in observed.schema)
    return [CheckFailure("schema", want.where, "output schema differs: " + "; ".join(differences)
                         + f"\n      expected: {expected}\n      actual:   {actual}", expected=expected, actual=actual)]


def type_name(spark_type: str) -> str:
    """A Spark type as the kit writes it and `schema` compares it (`bigint` -> `long`); text the type
    reader does not know stays as it is."""
    try:
        return coltypes.parse_type(spark_type).name
    except coltypes.TypeSyntaxError:
        return spark_type


def schema_differences(expected: Sequence[tuple[str, str, bool]], actual: Sequence[tuple[str, str, bool]]
                       ) -> list[str]:
    """Each way `actual` (name, Spark type, nullable) differs from `expected` (name, type, NOT NULL
    asked): a missing, unexpected or mistyped column, a nullable one where NOT NULL is asked, and the
    order of the columns both have. Nullability is checked only where NOT NULL is asked."""
    out: list[str] = []
    got = {name: (type_name(t), nullable) for name, t, nullable in actual}
    wanted = {name for name, _, _ in expected}
    for name, wanted_type, not_null in expected:
        if name not in got:
            out.append(f"column {name!r} ({wanted_type}) is missing")
            continue
        actual_type, nullable = got[name]
        if actual_type != wanted_type:
            out.append(f"column {name!r} is {actual_type}, expected {wanted_type}")
        if not_null and nullable:
            out.append(f"column {name!r} is nullable, expected NOT NULL")
    for name, t, _ in actual:
        if name not in wanted:
            out.append(f"column {name!r} ({type_name(t)}) is not expected")
    order_want = [n for n, _, _ in expected if n in got]
    order_got = [n for n, _, _ in actual if n in wanted]
    if order_want != order_got:
        out.append(f"columns are in the order {', '.join(order_got)}, expected {', '.join(order_want)}")
    return out


class Compared(NamedTuple):
    """What an expect's row checks compare: the output columns (`columns:` / `ignore:`, else all), in the
    order the check states them, and their types. The judge compares these; whatever writes or mutates
    a check's rows (a snapshot, `expect --write`, `eventtime.teeth`) writes these and no other."""

    names: tuple[str, ...]
    types: list[ColumnType]
    pick: Callable[[tuple], tuple]  # an output row (every output column) -> the compared values

    def canonical(self, row: tuple) -> tuple:
        """The compared values of an output row, in the canonical form values compare in
        (`ColumnType.canonical`); a row of another width is returned as it is."""
        picked = self.pick(row)
        if len(picked) != len(self.types):
            return tuple(picked)
        return tuple(t.canonical(v) for t, v in zip(self.types, picked))


def compared(step: ExpectStep | None, scenario: Scenario) -> Compared:
    """The columns `step`'s row checks compare, their types, and how to pick them out of an output row
    (`step` None: every output column, as a check the writer adds states them)."""
    output = scenario.contract.output
    if step is None or step.columns is None:
        return Compared(tuple(c.name for c in output), [c.ctype for c in output], lambda row: row)
    positions = [next(i for i, c in enumerate(output) if c.name == name) for name in step.columns]
    return Compared(tuple(step.columns), [output[i].ctype for i in positions],
                    lambda row: tuple(row[i] for i in positions) if len(row) == len(output) else row)


def _written_label(step: ExpectStep) -> str | None:
    """What the rows of an expect of what a job wrote are (None for the sink's rows)."""
    check = step.written
    if check is None:
        return None
    what = f"the rows of table {check.table!r}" if check.table is not None else \
        f"the rows written to {check.path!r} ({check.format or 'parquet'})"
    return what + (" where " + ", ".join(f"{n} = {v!r}" for n, v in check.filter) if check.filter else "")


def _judge_rows(check: RowsCheck, actual: list[tuple], ordered: bool, names: tuple[str, ...],
                types: Sequence[ColumnType] | None = None, tolerance: float | None = None,
                label: str | None = None) -> list[CheckFailure]:
    missing, unexpected = match_rows(check.rows, actual, ordered=ordered, types=types, rel_tol=tolerance)
    if not missing and not unexpected:
        return []
    what = label or {"rows": "rows since the previous expect", "output": "the whole output",
                     "last_batch": "the last batch's rows"}[check.scope]
    order = " (in order)" if ordered else ""
    return [CheckFailure(check.scope, check.where,
                         f"{what}{order}: {len(missing)} missing, {len(unexpected)} unexpected",
                         expected=[list(r) for r in check.rows], actual=[list(r) for r in actual],
                         missing=missing, unexpected=unexpected, columns=names)]


def _judge_batches(step: ExpectStep, observed: Observed, scenario: Scenario, names: tuple[str, ...]
                   ) -> list[CheckFailure]:
    assert step.batches is not None
    out: list[CheckFailure] = []
    if len(step.batches) != len(observed.since_expect):
        out.append(CheckFailure("batches", step.at("batches"),
                                f"{len(observed.since_expect)} micro-batch(es) ran since the previous expect, "
                                f"expected {len(step.batches)}", expected=len(step.batches), actual=len(observed.since_expect)))
        return out
    for i, (want, got) in enumerate(zip(step.batches, observed.since_expect)):
        label = f"batch {got.batch_id} (#{i + 1} since the previous expect)"
        out.extend(_judge_batch(want, got, label, scenario, names, step))
    return out


def _judge_batch(want: BatchCheck, got: BatchObservation, label: str, scenario: Scenario, names: tuple[str, ...],
                 step: ExpectStep) -> list[CheckFailure]:
    _, types, pick = compared(step, scenario)
    tolerance = step.tolerance
    out = []
    if want.data is not None and want.data != got.has_data:
        out.append(CheckFailure("batches", want.where,
                                f"{label} was a {'data' if got.has_data else 'no-data'} batch, expected "
                                f"a {'data' if want.data else 'no-data'} batch", expected=want.data, actual=got.has_data))
    for field_name, expected, actual in (("watermark_before", want.watermark_before_us, got.watermark_before_ms),
                                         ("watermark_after", want.watermark_after_us, got.watermark_after_ms)):
        if expected is not None and (actual or 0) * 1000 != expected:
            out.append(CheckFailure("batches", want.where,
                                    f"{label}: {field_name} is {_fmt_wm(actual, scenario)}, expected "
                                    f"{_fmt_wm(expected // 1000, scenario)}", expected=expected // 1000, actual=actual))
    for field_name, expected, actual in (("dropped", want.dropped, got.dropped),
                                         ("state_rows", want.state_rows, got.state_rows),
                                         ("updated", want.updated, rows_updated(got) if want.updated is not None else 0)):
        if expected is not None and expected != actual:
            out.append(CheckFailure("batches", want.where, f"{label}: {field_name} is {actual}, expected {expected}",
                                    expected=expected, actual=actual, part=field_name))
    if want.rows is not None:
        missing, unexpected = match_rows(want.rows, [pick(r) for r in got.rows], types=types, rel_tol=tolerance)
        if missing or unexpected:
            out.append(CheckFailure("batches", want.where,
                                    f"{label}: rows: {len(missing)} missing, {len(unexpected)} unexpected",
                                    missing=missing, unexpected=unexpected, columns=names))
    return out


def _judge_event_time(step: ExpectStep, observed: Observed, scenario: Scenario) -> list[CheckFailure]:
    assert step.event_time is not None
    batch = next((b for b in reversed(observed.since_expect) if b.event_time), None)
    if step.event_time.none:
        if batch is None:
            return []
        stats = batch.event_time
        return [CheckFailure("event_time", step.event_time.where,
                             f"batch {batch.batch_id} reported event-time statistics "
                             f"(max {format_time(int(stats.get('max') or 0) * 1000, date=scenario.date)}), "
                             "expected none since the previous expect", expected="none", actual=stats)]
    if batch is None:
        return [CheckFailure("event_time", step.event_time.where,
                             "no batch since the previous expect reported event-time statistics")]
    stats = batch.event_time
    out = []
    carried = step.event_time.watermark_us
    if carried is not None and (stats.get("watermark") or 0) * 1000 != carried:
        shown = _fmt_wm(stats.get("watermark"), scenario) if "watermark" in stats else "absent"
        out.append(CheckFailure("event_time", step.event_time.where,
                                f"the event-time statistics of batch {batch.batch_id} carry watermark {shown}, "
                                f"expected {_fmt_wm(carried // 1000, scenario)}", expected=carried // 1000,
                                actual=stats.get("watermark"), part="watermark"))
    for key in ("min", "max", "avg"):
        expected = getattr(step.event_time, f"{key}_us")
        if expected is None:
            continue
        actual = stats.get(key)
        if key == "avg" and actual is None and stats.get("avg_range"):  # only the model says this
            low, high = (format_time(v * 1000, date=scenario.date) for v in stats["avg_range"])
            out.append(CheckFailure("event_time", step.event_time.where,
                                    f"event-time avg depends on the order Spark's tasks finish in here "
                                    f"({low} to {high}): leave it out of the expectation",
                                    expected=expected // 1000, actual=None))
            continue
        if actual is None or actual * 1000 != expected:
            shown = format_time(actual * 1000, date=scenario.date) if actual is not None else "absent"
            out.append(CheckFailure("event_time", step.event_time.where,
                                    f"event-time {key} is {shown}, expected {format_time(expected, date=scenario.date)}",
                                    expected=expected // 1000, actual=actual))
    return out


def _judge_failure(step: ExpectStep, observed: Observed) -> list[CheckFailure]:
    want = step.failure
    assert want is not None
    failure = observed.failure
    if failure is None:
        return [CheckFailure("failure", want.where, "expected the query to have failed, but it has not")]
    if step.query is not None and failure.query is not None and failure.query != step.query:
        return [CheckFailure("failure", want.where, f"expected query {step.query!r} to have failed, but query "
                             f"{failure.query!r} of the job failed: {failure}", expected=step.query,
                             actual=failure.query)]
    out = []
    classes = failure.error_classes
    if want.error_class and want.error_class not in classes:
        out.append(CheckFailure("failure", want.where,
                                f"the failure has error class(es) {', '.join(classes) or 'none'}, expected {want.error_class}",
                                expected=want.error_class, actual=classes))
    exceptions = failure.exception_names
    if want.exception and not any(n == want.exception or n.rsplit(".", 1)[-1] == want.exception for n in exceptions):
        out.append(CheckFailure("failure", want.where,
                                f"the failure's exceptions are {', '.join(exceptions)}, expected {want.exception}",
                                expected=want.exception, actual=exceptions))
    if want.message and want.message not in failure.text:
        out.append(CheckFailure("failure", want.where, f"the failure message does not contain {want.message!r}",
                                expected=want.message, actual=failure.text[:500]))
    return out
