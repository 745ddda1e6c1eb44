"""Properties of a streaming job checked on generated streams, with no expected values written.

    from eventtime.properties import check_properties

    report = check_properties(contract, "shop.clicks:build", session=spark, max_examples=20)
    assert report.held, report.describe()

Hypothesis draws streams from the contract (`eventtime.strategies.scenarios`, `typed=True`: every
declared column of its declared type, nulls, edge timestamps, rows late by less than, exactly and
more than the watermark delay, duplicates). Each property runs the job on one or two variants of a
drawn stream and compares what they observed (`RunObservation`): the rows of every batch per
query, and what the job wrote to each `kind: path` parameter's folder (and each table named in
`tables`), read back at the end. A property that breaks is shrunk by Hypothesis; the smallest
stream is written as a scenario file (`Counterexample.write`) whose expect steps hold the values
the property says the run must have (the other variant's, filled in by the snapshot writer) and a
comment naming the property, so that `eventtime run FILE` fails for the same reason.

The properties (docs/properties.md says what each means in Spark's terms and when it does not apply):

- `no-query-dies`: no generated value of the declared types ends a run in an error;
- `exactly-once-rerun`: a data batch run again after a crash between its sink write and its commit
  (`restart: {rerun_last_batch: true}`) leaves the sinks as a plain restart at the same point does;
- `restart-transparency`: a restart (in the same, or in a new session) after a batch changes no output;
- `bounded-state`: once the watermark has passed every event of the stream, each query's stateful
  operators hold no more rows than the same closing events leave when they are the whole stream;
- `batch-boundary-independence`: a data batch split in two (or, where none can be, two adjacent ones merged), each
  row as late or on time as it was, changes no final output (append: every row written over the run, once
  closing events passed the watermark; complete: the last result table; update: the last row per declared key;
  what the job wrote, read back at the end). The split and merge rules (`_split_rows`, `_merge_rows`) are Spark's
  end-of-batch watermark read backwards: see their docstrings;
- `stream-equals-batch`: the streaming result after the final watermark equals the transform applied as a batch
  to the rows that were not late (`eventtime.streambatch`; a job has no transform: does not apply);
- `invariants`: the job's own invariants (the contract's `invariants:`, `InvariantSpec`, and hooks passed
  in code), each its own property `invariant:NAME`, judged on what a run observed (`Observations`).
"""
from __future__ import annotations

import re
import textwrap
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from eventtime.harness.waits import DEFAULT_TIMEOUT

from . import spec as m
from .contracts import Contract, ValueRange, declared_pools
from .semantics.microbatch import NO_DATA_BATCHES
from .results import ERROR, NOT_APPLICABLE, PROPERTY_FAILING, PROPERTY_VERDICTS, ScenarioResult, judged_ways

__all__ = ["PROPERTIES", "RunObservation", "Counterexample", "PropertyReport", "CheckReport",
           "check_properties", "wanted_properties", "stream_of", "observe_run", "Observations", "CLOSING_TIME"]

PROPERTIES = ("no-query-dies", "exactly-once-rerun", "restart-transparency", "bounded-state",
              "batch-boundary-independence", "stream-equals-batch", "invariants")
TITLES = {
    "no-query-dies": "no generated value of the declared types stops a query",
    "exactly-once-rerun": "a batch run again after a crash leaves the sinks as a plain restart does",
    "restart-transparency": "a restart after a batch changes no output",
    "bounded-state": "once the watermark passes every event, state holds only what the closing events left",
    "batch-boundary-independence": "the same rows split into micro-batches differently, each as late or on time "
                                   "as before, give the same final output",
    "stream-equals-batch": "the streaming result after the final watermark equals the transform applied as a batch "
                           "to the rows that were not late",
    "invariants": "the job's own invariants",
}
STREAM_BATCH = "stream-equals-batch"  # its judge is `streambatch.judge_stream_batch`
INVARIANT = "invariant:"  # an invariant's property is `invariant:NAME`
# The closing events of `bounded-state`: one per event-time source at this time, months after any event the
# streams draw (they start at 2024-01-01 and move by seconds), so the watermark passes every window,
# session and join bound shorter than that.
CLOSING_TIME = "2024-07-01T00:00:00Z"


def title(prop: str, invariants: Mapping[str, Any] | None = None) -> str:
    if prop.startswith(INVARIANT):
        spec = (invariants or {}).get(prop[len(INVARIANT):])
        doc = getattr(spec, "doc", "") or ""
        return f"the job's invariant {prop[len(INVARIANT):]!r}" + (f": {doc}" if doc else "")
    return TITLES[prop]


def _pad(lines: Sequence[str], first_step_line: int) -> str:
    line = lines[first_step_line - 1]
    return " " * (len(line) - len(line.lstrip()))


def with_step_after(scenario: m.Scenario, index: int, step: str | Sequence[str], *, tail: Sequence[str] = ()) -> str:
    """The scenario's text with `step` (one line of YAML, e.g. `- restart`, or several) after its step
    `index` (1-based; 0: no step inserted) and the `tail` steps at the end, every other line as written."""
    lines = list(scenario.lines)
    steps = list(scenario.steps)
    first = min(s.where.line for s in steps)
    pad = _pad(lines, first)
    head = lines[: first - 1]
    body: list[str] = []
    for s in steps:
        body += [text for _, text in scenario.step_text(s)]
        if s.index == index:
            body += [pad + one for one in ([step] if isinstance(step, str) else step)]
    body += [pad + t for t in tail]
    return "\n".join(head + body) + "\n"


def observation_steps(contract: Contract, tables: Sequence[str] = (), *, stream: bool = True) -> list[str]:
    """The expect steps, without values, that make a run observe what the job left at the end: each
    query's whole output (`stream`), each `kind: path` parameter's folder, each table in `tables`."""
    out = []
    if stream:
        names = [q.name for q in contract.queries]
        out += [f"- expect: {{query: {n}, output: }}" for n in names] if names else ["- expect: {output: }"]
    out += [f"- expect: {{written: {p.name}{_writer_of(contract, p)}, rows: }}" for p in contract.params
            if p.kind == "path"]
    out += [f"- expect: {{table: {t}, rows: }}" for t in tables]
    return out


def _writer_of(contract: Contract, param: Any) -> str:
    """`, query: NAME` for a folder of a contract of several queries (its expect must name the query whose
    columns it is read in; the kit cannot see which query writes it before the run): the query named like
    the parameter (a word of the parameter's name or conf in the query's name), else the first declared."""
    if contract.output or not contract.queries:
        return ""
    words = set(re.split(r"[^a-z0-9]+", f"{param.name} {getattr(param, 'conf', '') or ''}".lower())) - {
        "", "path", "dir", "folder", "out", "output"}
    named = [q.name for q in contract.queries if words & set(re.split(r"[^a-z0-9]+", q.name.lower()))]
    return f", query: {(named or [contract.queries[0].name])[0]}"


def _one_line(reason: str, width: int = 600) -> str:
    """An error as `eventtime run` says it, on one line (the user's file:line first when it is in their code)."""
    text = re.sub(r"\s+", " ", reason or "").strip()
    # the step's number is the generated stream's: alike errors of other streams read alike ("expect step: ...")
    text = re.sub(r"^step \d+ \(([a-z_ ]+)\): ", r"\1 step: ", text)
    return text if len(text) <= width else text[: width - 3] + "..."


def _error_class(reason: str) -> str:
    """Spark's innermost error class named in `reason` (" [CAST_INVALID_INPUT]"), "" when none: a wrapper's
    first line (Spark 3.4's Py4JJavaError of a foreachBatch) can hide it past the comment's width."""
    found = re.findall(r"\[([A-Z][A-Z0-9_]{2,}(?:\.[A-Z0-9_]+)?)\]", reason or "")
    return f" [{found[-1]}]" if found else ""


@dataclass
class RunObservation:
    """What one run observed: its result, each query's rows as an idempotent sink keeps them (a batch
    run again replaces its earlier run, as Spark's own sinks skip a batch id they committed), and
    the rows of each written folder or table read back at the end."""

    text: str
    result: ScenarioResult
    stream: dict[str | None, Counter] = field(default_factory=dict)
    written: dict[str, Counter] = field(default_factory=dict)

    @property
    def died(self) -> str | None:
        """Why the run ended in an error (the job's or Spark's, not the kit's: see `kit_error`)."""
        return self.result.reason if self.result.status == ERROR and self.result.cause is None else None

    @property
    def kit_error(self) -> str | None:
        return self.result.reason if self.result.status == ERROR and self.result.cause is not None else None

    @property
    def mismatch(self) -> str | None:
        """Why the job's output does not match the contract (`eventtime run`'s schema check fails the run
        on it, whatever the stream): None when it matches."""
        found = [f.message for sr in self.result.steps for f in sr.failures if f.check == "output_schema"]
        return found[0] if found else None

    @property
    def applicable(self) -> bool:
        return self.result.status != NOT_APPLICABLE

    def differences(self, other: "RunObservation") -> list[str]:
        """What `other` (the variant) shows that this run does not, and what it lacks, per sink."""
        contract = self.result.scenario.contract
        out = []
        sinks: list[tuple[str, Mapping[Any, Counter], Mapping[Any, Counter]]] = [
            ("query", self.stream, other.stream), ("written", self.written, other.written)]
        for kind, mine, theirs in sinks:
            for name in sorted(set(mine) | set(theirs), key=str):
                a, b = mine.get(name, Counter()), theirs.get(name, Counter())
                if a != b:
                    spec = contract.query(name) if kind == "query" and name is not None else None
                    types = [col.type for col in (spec.output if spec is not None else contract.output)]
                    label = f"{kind} {name!r}" if name is not None else "the query's output"
                    extra, lost = b - a, a - b
                    parts = []
                    if extra:
                        parts.append(f"{sum(extra.values())} row(s) more: {_rows(extra, types)}")
                    if lost:
                        parts.append(f"{sum(lost.values())} row(s) fewer: {_rows(lost, types)}")
                    out.append(f"{label}: " + "; ".join(parts))
        return out


def _rows(c: Counter, types: Sequence[str] = (), limit: int = 4) -> str:
    from .coltypes import format_value
    from .timeparse import format_time

    def row(r: tuple) -> str:
        if len(types) != len(r):
            return repr(list(r))
        return "[" + ", ".join(format_value(v, t, format_time) for v, t in zip(r, types)) + "]"

    items = sorted(c.items(), key=repr)
    shown = ", ".join(row(r) + (f" x{n}" if n > 1 else "") for r, n in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def stream_of(result: ScenarioResult) -> dict[str | None, Counter]:
    """Each query's rows at the end as an idempotent sink keeps them: every batch's rows (append,
    update) or the latest batch's table (complete), a batch id run again counting once, its latest run."""
    from .differential import whole_output

    mode = result.scenario.params.get("output_mode") or (result.scenario.contract.output_modes or ("append",))[0]
    latest: dict[tuple, Any] = {}
    for sr in result.steps:
        for b in sr.batches:
            latest[(b.query, getattr(b, "checkpoint", 0), b.batch_id)] = b
    by_query: dict[str | None, list[Any]] = {}
    for key in sorted(latest, key=lambda k: (str(k[0]), k[1], k[2])):
        by_query.setdefault(key[0], []).append(latest[key])
    return {q: whole_output(bs, mode) for q, bs in by_query.items()}


def observe_run(text: str, contract: Contract, *, lookup: Any, pipeline: Any, session: Any, timeout: float,
                path: str, conf: Mapping[str, str] | None = None) -> RunObservation:
    """Run a scenario text whose observation steps have no values (read as placeholders, as a snapshot
    reads them) and collect what it observed."""
    from . import snapshotedit as se
    from .loader import load_scenario_text
    from .runner import run_scenario

    scenario = load_scenario_text(se.placeholder_text(text, se.holes(text)), path, contracts=lookup)
    result = run_scenario(scenario, pipeline, session=session, timeout=timeout, conf=conf)
    obs = RunObservation(text, result, stream_of(result))
    for sr in result.steps:
        step = next((s for s in scenario.steps if s.index == sr.index), None)
        if not isinstance(step, m.ExpectStep) or step.written is None or sr.observed is None:
            continue
        check = step.written
        name = f"table {check.table}" if check.table is not None else str(check.path)
        obs.written[name] = Counter(tuple(r) for b in sr.observed.history for r in b.rows)
    return obs


@dataclass
class Observations:
    """What one run of a generated stream observed, as an invariant reads it (a hook gets this).

    `inputs`: the rows added to each source, in order, each a dict by column name. `outputs`: each sink's
    rows at the end, each a dict by column name: `output` (a contract without `queries:`) or each query's
    name (its rows as an idempotent sink keeps them: every batch's in append and update mode, the latest
    table in complete mode), each `kind: path` parameter's name (what the job wrote there, read back),
    `table:NAME` for each table checked. `batches`: per query (`output` for the only one), every micro-batch
    as the harness saw it (`BatchObservation`: rows, dropped, state_rows, operators, watermarks). `statics`:
    each static input's rows when the query first started (the scenario's `static:`), dicts by column name."""

    inputs: dict[str, list[dict]]
    outputs: dict[str, list[dict]]
    batches: dict[str, list[Any]]
    statics: dict[str, list[dict]] = field(default_factory=dict)

    def rows(self, sink: str) -> list[dict]:
        if sink not in self.outputs:
            raise KeyError(f"no sink {sink!r} was observed (sinks: {', '.join(self.outputs) or 'none'})")
        return self.outputs[sink]

    @property
    def dropped(self) -> int:
        """Rows Spark's stateful operators dropped as late (numRowsDroppedByWatermark), over the run."""
        return sum(b.dropped for bs in self.batches.values() for b in bs)

    @property
    def state_rows(self) -> dict[str, int]:
        """Each query's state rows after its last batch (numRowsTotal over its stateful operators)."""
        return {q: (bs[-1].state_rows if bs else 0) for q, bs in self.batches.items()}


def _sink_names(contract: Contract, stream: Mapping[Any, Any]) -> dict[Any, str]:
    """Each observed query's name as an invariant names it: `output` for a contract without `queries:`."""
    if not contract.queries and len(stream) == 1:
        return {next(iter(stream)): "output"}
    return {q: str(q) for q in stream}


def observations_of(obs: RunObservation, contract: Contract) -> Observations:
    from .contractfile import sink_columns

    sc = obs.result.scenario
    inputs: dict[str, list[dict]] = {}
    for step in sc.steps:
        if isinstance(step, m.AddStep):
            for source, rows in step.rows.items():
                names = sc.sources[source].column_names
                inputs.setdefault(source, []).extend(dict(zip(names, r)) for r in rows)

    def dicts(sink: str, counter: Counter) -> list[dict]:
        names = [c.name for c in sink_columns(contract.queries, contract.output, sink)]
        return [dict(zip(names, r)) for r, n in sorted(counter.items(), key=repr) for _ in range(n)]

    named = _sink_names(contract, obs.stream)
    outputs = {named[q]: dicts(named[q], c) for q, c in obs.stream.items()}
    for name, c in obs.written.items():
        sink = "table:" + name[len("table "):] if name.startswith("table ") else name
        outputs[sink] = dicts(sink, c)
    batches: dict[str, list[Any]] = {}
    for sr in obs.result.steps:
        for b in sr.batches:
            batches.setdefault(named.get(b.query, str(b.query)), []).append(b)
    statics = {s.name: [dict(zip([c.name for c in s.columns], r)) for r in sc.statics.get(s.name, ())]
               for s in contract.statics}
    return Observations(inputs, outputs, batches, statics)


def _show(values: Sequence[Any], types: Sequence[str]) -> str:
    from .coltypes import format_value
    from .timeparse import format_time

    return "[" + ", ".join(format_value(v, t, format_time) for v, t in zip(values, types)) + "]"


@dataclass
class _Verdict:
    """Why an invariant broke on a run, and what its counterexample's expect steps hold instead of what the
    run observed: rows taken out of (`remove`) and put in (`add`) each sink, as tuples in its columns."""

    why: list[str] = field(default_factory=list)
    remove: dict[str, Counter] = field(default_factory=dict)
    add: dict[str, Counter] = field(default_factory=dict)
    exact: bool = True  # the expect steps say what the invariant demands (False: they hold what the run did)


def judge_invariant(spec: Any, obs: Observations, contract: Contract, hook: Callable[..., Any] | None = None) -> _Verdict:
    """An invariant (`contracts.InvariantSpec`) judged on one run's observations."""
    from .contractfile import sink_columns

    v = _Verdict()
    cols_of = {o: [c for c in sink_columns(contract.queries, contract.output, o)] for o in spec.outputs}
    missing = [o for o in spec.outputs if o not in obs.outputs]
    if missing:  # a sink the contract names but the run did not observe: said, never passed over
        v.why.append(f"no rows of {', '.join(missing)} were observed (sinks observed: {', '.join(obs.outputs)}): "
                     "a `table:` the job writes is read back only when it is given (--table, tables=)")
        v.exact = False
        return v
    if spec.form == "hook":
        assert hook is not None
        _judge_hook(spec, obs, hook, v)
    elif spec.form == "not_null":
        _judge_not_null(spec, obs, cols_of, v)
    elif spec.form == "disjoint":
        _judge_disjoint(spec, obs, cols_of, v)
    elif spec.relation is not None:
        _judge_count(spec, obs, v)
    else:
        _judge_conserve(spec, obs, contract, cols_of, v)
    return v


def _tuple_in(cols_of: Mapping[str, Sequence[Any]], sink: str, row: Mapping[str, Any]) -> tuple:
    """A sink's row as a tuple in the sink's columns (how the counterexample's expect steps hold it)."""
    return tuple(row[c.name] for c in cols_of[sink])


def _judge_hook(spec: Any, obs: Observations, hook: Callable[..., Any], v: _Verdict) -> None:
    """A hook holds when it returns None, True or []; else what it returned (or asserted) is why."""
    try:
        said = hook(obs)
    except AssertionError as exc:
        said = str(exc) or f"{spec.hook or spec.name} failed an assertion"
    if said is None or said is True or said == []:
        return
    v.why = ([said] if isinstance(said, str) else [f"the hook returned {said!r}"] if said is False
             else [str(w) for w in said])
    v.exact = False


def _judge_not_null(spec: Any, obs: Observations, cols_of: Mapping[str, Sequence[Any]], v: _Verdict) -> None:
    (sink,) = spec.outputs
    for row in obs.outputs[sink]:
        nulls = [c for c in spec.columns if row.get(c) is None]
        if nulls:
            t = _tuple_in(cols_of, sink, row)
            v.remove.setdefault(sink, Counter())[t] += 1
            v.why.append(f"{sink!r} holds a row with null {', '.join(nulls)}: "
                         f"{_show(t, [c.type for c in cols_of[sink]])}")


def hook_raised(spec: Any, exc: BaseException) -> str:
    """What stops a check when an invariant's hook raises: where in the user's code, named as `eventtime run`
    names the line a user's module raised at (relative to the working directory, the kit's frames passed over)."""
    from .userpipeline import _raised_at

    at = _raised_at(exc)
    return f"invariant {spec.name!r}: its hook {spec.hook} raised {type(exc).__name__}{f' at {at}' if at else ''}: {exc}"


def _judge_disjoint(spec: Any, obs: Observations, cols_of: Mapping[str, Sequence[Any]], v: _Verdict) -> None:
    where: dict[tuple, list[str]] = {}
    for sink in spec.outputs:
        for row in obs.outputs[sink]:
            key = tuple(row[c] for c in spec.columns)
            if sink not in where.setdefault(key, []):
                where[key].append(sink)
    types = [next(c.type for c in cols_of[spec.outputs[0]] if c.name == k) for k in spec.columns]
    for key, sinks in sorted(where.items(), key=repr):
        if len(sinks) > 1:
            v.why.append(f"key {', '.join(spec.columns)} = {_show(key, types)} is in {' and '.join(sinks)}")
            for sink in sinks[:-1]:  # expected only in the last of them the invariant names
                for row in obs.outputs[sink]:
                    if tuple(row[c] for c in spec.columns) == key:
                        v.remove.setdefault(sink, Counter())[_tuple_in(cols_of, sink, row)] += 1


def _judge_count(spec: Any, obs: Observations, v: _Verdict) -> None:
    """`conserve` with a `count:` relation: only the numbers of rows are compared."""
    added = sum(len(obs.inputs.get(s, [])) for s in spec.sources)
    out = sum(len(obs.outputs[o]) for o in spec.outputs)
    holds = {"==": out == added, "<=": out <= added, ">=": out >= added}[spec.relation]
    if not holds:
        v.why.append(f"{out} row(s) in {' + '.join(spec.outputs)} against {added} added to "
                     f"{' + '.join(spec.sources)}: not {spec.relation}")
        v.exact = False


def _judge_conserve(spec: Any, obs: Observations, contract: Contract, cols_of: Mapping[str, Sequence[Any]],
                    v: _Verdict) -> None:
    """`conserve`: each row added lands once in the outputs, followed by the columns they all name."""
    from .contractfile import conserved_columns

    common = conserved_columns(contract.sources, contract.queries, contract.output, spec.sources, spec.outputs)
    src = next(s for s in contract.sources if s.name in spec.sources)
    types = [next(c.type for c in src.columns if c.name == n) for n in common]
    ins: Counter = Counter(tuple(r.get(c) for c in common) for s in spec.sources for r in obs.inputs.get(s, []))
    outs = {o: Counter(tuple(r[c] for c in common) for r in obs.outputs[o]) for o in spec.outputs}
    for key in sorted(set(ins) | {k for c in outs.values() for k in c}, key=repr):
        landed = {o: c[key] for o, c in outs.items() if c[key]}
        n_in, n_out = ins[key], sum(landed.values())
        if n_in == n_out:
            continue
        shown = _show(key, types)
        where_text = " and ".join(f"{o}" + (f" x{n}" if n > 1 else "") for o, n in landed.items())
        if n_in == 0:
            v.why.append(f"{shown} is in {where_text} but was never added to {', '.join(spec.sources)}")
        elif n_out < n_in:
            v.why.append(f"{shown}, added {n_in} time(s) to {', '.join(spec.sources)}, landed "
                         + (f"only in {where_text}" if landed else f"in none of {', '.join(spec.outputs)}"))
            last = spec.outputs[-1]  # a row in none is expected in the last output named: the catch-all
            if {c.name for c in cols_of[last]} <= set(common):
                rows = [r for s in spec.sources for r in obs.inputs.get(s, []) if tuple(r.get(c) for c in common) == key]
                v.add.setdefault(last, Counter())[_tuple_in(cols_of, last, rows[0])] += n_in - n_out
            else:
                v.exact = False
            continue
        else:
            v.why.append(f"{shown}, added {n_in} time(s) to {', '.join(spec.sources)}, landed in {where_text}")
        # the rows too many are taken out: first from the outputs before the last it landed in, where it is
        # expected (a row from no input from all of them)
        extra = n_out - n_in
        for o in landed:
            for r in obs.outputs[o]:
                if extra and tuple(r[c] for c in common) == key:
                    v.remove.setdefault(o, Counter())[_tuple_in(cols_of, o, r)] += 1
                    extra -= 1


class _Corrected:
    """An observation with rows taken out and put in (what an invariant demands), for the snapshot writer."""

    def __init__(self, observed: Any, remove: Counter, add: Counter):
        self._observed, self._remove, self._add = observed, remove, add

    def __getattr__(self, name: str) -> Any:
        return getattr(self._observed, name)

    def rows(self, scope: str) -> list[tuple]:
        left = Counter(self._remove)
        out = []
        for r in self._observed.rows(scope):
            if left[tuple(r)] > 0:
                left[tuple(r)] -= 1
            else:
                out.append(r)
        return out + [r for r, n in sorted(self._add.items(), key=repr) for _ in range(n)]


def _corrected(obs: RunObservation, contract: Contract, verdict: _Verdict) -> RunObservation:
    """`obs` with each sink's observation step showing what `verdict` demands."""
    from dataclasses import replace

    named = _sink_names(contract, obs.stream)
    sc = obs.result.scenario
    steps = []
    for sr in obs.result.steps:
        step = next((s for s in sc.steps if s.index == sr.index), None)
        sink = _step_sink(step, named) if isinstance(step, m.ExpectStep) else None
        if sink is not None and sr.observed is not None and (sink in verdict.remove or sink in verdict.add):
            sr = replace(sr, observed=_Corrected(sr.observed, verdict.remove.get(sink, Counter()),
                                                 verdict.add.get(sink, Counter())))
        steps.append(sr)
    return RunObservation(obs.text, replace(obs.result, steps=steps), obs.stream, obs.written)


def _step_sink(step: m.ExpectStep, named: Mapping[Any, str]) -> str | None:
    """The sink an observation step reads, by the name an invariant gives it."""
    if step.written is not None:
        return f"table:{step.written.table}" if step.written.table is not None else str(step.written.path)
    if step.query is not None:
        return named.get(step.query, step.query)
    return "output" if "output" in named.values() else None


def closing_steps(contract: Contract, pools: Mapping[str, Any] | None = None) -> list[str]:
    """`bounded-state`'s closing steps: twice, one row per event-time source at CLOSING_TIME and a batch
    (the second batch runs with the watermark the first moved, also with no-data batches off), then each
    query's state rows observed."""
    import json

    def add(second: bool) -> str:
        row: dict[str, list] = {}
        for src in contract.sources:
            if src.kind in ("kafka", "text") and src.value_event_time is not None:  # its payload has the closing time
                payload = {c.name: _closing_value(src.name, c.name, c.type, src.value_event_time, pools, second)
                           for c in src.value}
                row[src.name] = [{"value": payload} if src.kind == "kafka" else payload]  # a record, a JSON line
            elif src.kind == "rows" and src.event_time is not None:
                row[src.name] = [[_closing_value(src.name, c.name, c.type, src.event_time, pools, second)
                                  for c in src.columns]]
        return "- add: " + json.dumps(row, ensure_ascii=False)

    checks = ([f"- expect: {{query: {q.name}, state_rows: }}" for q in contract.queries] if contract.queries
              else ["- expect: {state_rows: }"])
    return [add(False), "- process", add(True), "- process", *checks]


def _closing_value(source: str, column: str, ctype: str, event_time: str, pools: Mapping[str, Any] | None,
                   second: bool = False) -> Any:
    """A closing row's value: the closing time in the event-time column, else the column's first pooled value
    (a range's: 1 where it is inside, else its low bound), else a plain value of its type (text 'closing', 1,
    false, the closing day; null for a nested type). The `second` closing row's text is another ('closing-2',
    a pool's second value): a dedup on a key does not drop it, so a query downstream of one reads a second
    batch, which evicts by the watermark the first moved (also with no-data batches off)."""
    if column == event_time:
        return CLOSING_TIME if ctype == "timestamp" else CLOSING_TIME.rstrip("Z")
    pool = (pools or {}).get(f"{source}.{column}", (pools or {}).get(column))
    if isinstance(pool, ValueRange):
        plain = _closing_value(source, column, ctype, event_time, None, second)
        return plain if float(pool.low) <= float(plain) <= float(pool.high) else pool.low
    if pool:
        values = list(pool)
        first = values[1] if second and len(values) > 1 and isinstance(values[1], str) else values[0]
        return first if isinstance(first, (str, int, float, bool)) or first is None else str(first)
    if ctype == "string" or ctype.startswith(("char", "varchar")):
        return "closing-2" if second else "closing"
    # 1, not 0: a closing event must pass the rules a job keeps rows by, and `amount > 0` is a common one
    if ctype in ("byte", "short", "int", "long", "tinyint", "smallint", "integer", "bigint") or ctype.startswith("decimal"):
        return 1
    if ctype in ("float", "double"):
        return 1.0
    if ctype == "boolean":
        return False
    if ctype == "date":
        return CLOSING_TIME[:10]
    if ctype in ("timestamp", "timestamp_ntz"):
        return CLOSING_TIME if ctype == "timestamp" else CLOSING_TIME.rstrip("Z")
    return None


def with_steps(scenario: m.Scenario, steps: Sequence[str]) -> str:
    """The scenario's text up to its steps (name, contract, params, conf, clock), with `steps` as its steps."""
    lines = list(scenario.lines)
    first = min(s.where.line for s in scenario.steps)
    pad = _pad(lines, first)
    return "\n".join(lines[: first - 1] + [pad + t for t in steps]) + "\n"


def _query_label(q: str) -> str:
    return "the query" if q == "output" else f"query {q!r}"


def _watermark_moved(obs: RunObservation, contract: Contract) -> set[str]:
    """The queries (named as `_state_by_query` names them) whose watermark some batch of the run moved."""
    named = _sink_names(contract, obs.stream)
    return {named.get(b.query, str(b.query)) for sr in obs.result.steps for b in sr.batches
            if b.watermark_after_ms and b.watermark_after_ms != b.watermark_before_ms}


def _state_by_query(obs: RunObservation, contract: Contract) -> tuple[dict[str, int], bool]:
    """Each query's state rows after its last batch, and whether any batch had a stateful operator."""
    named = _sink_names(contract, obs.stream)
    last: dict[str, Any] = {}
    stateful = False
    for sr in obs.result.steps:
        for b in sr.batches:
            last[named.get(b.query, str(b.query))] = b
            stateful = stateful or bool(b.operators)
    return {q: b.state_rows for q, b in last.items()}, stateful


@dataclass
class Counterexample:
    """The smallest stream a property broke on: the scenario text that shows it, and why."""

    prop: str
    contract: str
    text: str  # the variant's scenario, its observation steps filled with the values the property demands
    why: list[str]
    replaced: bool = False  # `write` overwrote a file of the same name (an earlier check's) with other text

    def write(self, out_dir: str | Path) -> Path:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{_slug(self.prop)}-{self.contract.replace('_', '-')}.scenario.yaml"
        self.replaced = path.is_file() and path.read_text(encoding="utf-8") != self.text
        path.write_text(self.text, encoding="utf-8")
        from .counterexamples import record

        record(out, path.name)  # not collected where it is written until reviewed and moved (the module's rule)
        return path


def _header(prop: str, why: Sequence[str], note: str, heading: str | None = None) -> str:
    lines = [f"# Generated by `eventtime check-properties`: this stream breaks the property {prop!r}",
             f"# ({heading or TITLES[prop]}).", f"# {note}", "# What broke:"]
    for w in why:  # whole, wrapped: the reason is what a reviewer reads first (cut only past a page of it)
        said = re.sub(r"\s+", " ", w).strip()
        if len(said) > _WHY_CHARS:
            said = said[:_WHY_CHARS] + " [cut here: eventtime run THIS_FILE prints the whole message]"
        lines += ["#   " + part for part in textwrap.wrap(said, 100, break_on_hyphens=False)]
    return "\n".join(lines) + "\n"


_WHY_CHARS = 2000
# conf lines a generated stream may carry, and why (a comment the file keeps beside the line)
_CONF_SAID = {NO_DATA_BATCHES: "drawn off: a micro-batch runs only for new data, none for a watermark move "
                               "alone (Spark's default is on; the break may need it off)"}


def _conf_explained(text: str) -> str:
    """`text` with each drawn conf line commented with why the stream sets it."""
    def said(match: re.Match) -> str:
        why = _CONF_SAID.get(match.group(2))
        return match.group(0) if why is None or "#" in match.group(0) else f"{match.group(0)}  # {why}"

    return re.sub(r"^(\s+)([\w.]+): .*$", said, text, flags=re.M)


def _renamed(text: str, prop: str, heading: str | None = None) -> str:
    """The generated scenario named and described for the property it breaks."""
    import json

    text = re.sub(r"^scenario: generated-", f"scenario: {_slug(prop)}-", text, count=1, flags=re.M)
    said = json.dumps(f"Shrunk by eventtime check-properties: {heading or TITLES[prop]}.")
    return re.sub(r"^description: .*$", lambda _: f"description: {said}", text, count=1, flags=re.M)


def _slug(prop: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", prop).strip("-").lower()


def filled(variant_text: str, reference: RunObservation, *, lookup: Any, keep: Callable[[str], bool]) -> str:
    """`variant_text` with the observation steps `keep` accepts (by their text) kept, and filled by the
    snapshot writer with the values the reference run observed at the same steps."""
    from . import snapshotedit as se
    from .loader import load_scenario_text
    from .results import PASSED, StepResult
    from .snapshot import observe

    lines = variant_text.splitlines()
    ref_steps = [s for s in reference.result.scenario.steps if isinstance(s, m.ExpectStep)]
    ref_observed = {s.index: next((sr.observed for sr in reference.result.steps if sr.index == s.index), None)
                    for s in ref_steps}
    # drop the observation steps `keep` refuses (each is one line)
    kept = [line for line in lines if not (line.lstrip().startswith("- expect:") and not keep(line.strip()))]
    text = "\n".join(kept) + "\n"
    scenario = load_scenario_text(se.placeholder_text(text, se.holes(text)), "<counterexample>", contracts=lookup)
    by_text = {reference.result.scenario.lines[s.where.line - 1].strip(): ref_observed[s.index] for s in ref_steps}
    steps = []
    for s in scenario.steps:
        if isinstance(s, m.ExpectStep):
            seen = by_text.get(scenario.lines[s.where.line - 1].strip())
            if seen is not None:
                steps.append(StepResult(s.index, "expect", s.where, observed=seen))
    fake = ScenarioResult(scenario, reference.result.implementation, PASSED, steps=steps,
                          spark_version=reference.result.spark_version)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "counterexample.scenario.yaml"
        path.write_text(text, encoding="utf-8")
        made = observe(path, "<counterexample>", fake, "create")
    if made.erred is not None or made.new is None:
        raise RuntimeError(f"the snapshot writer did not fill the counterexample: {made.erred}")
    return made.new


def with_rerun_checks(text: str, variant: RunObservation, restart: int, contract: Contract) -> str:
    """`exactly-once-rerun`'s file where a query's re-run batch wrote other rows than its first run: after
    the `rerun_last_batch` restart (step `restart`, whose start runs the batch again), an expect per such
    query that its `last_batch` is what the batch wrote the first time, as `variant` observed both. The
    sinks' checks alone would pass where only a query's rows differ, so the file could not fail."""
    from .scenariotext import rows_text

    steps = sorted(variant.result.steps, key=lambda sr: sr.index)
    at = next((sr for sr in steps if sr.index == restart), None)
    if at is None:
        return text
    first: dict[tuple, Any] = {}
    for sr in steps:
        if sr.index < restart:
            for b in sr.batches:
                first.setdefault((b.query, b.checkpoint, b.batch_id), b)
    checks = []
    for b in at.batches:
        was = first.get((b.query, b.checkpoint, b.batch_id))
        if was is None or Counter(was.rows) == Counter(b.rows):
            continue
        view = contract.for_query(b.query)
        rows = rows_text(was.rows, [c.ctype for c in view.output], variant.result.scenario)
        named = f"query: {b.query}, " if b.query is not None and contract.queries else ""
        checks.append(f"- expect: {{{named}last_batch: {rows}}}  # what batch {b.batch_id} wrote the first time")
    lines = text.splitlines()
    mark = next((i for i, line in enumerate(lines) if "rerun_last_batch: true" in line), None)
    if mark is None or not checks:
        return text
    pad = lines[mark][: len(lines[mark]) - len(lines[mark].lstrip())]
    return "\n".join(lines[: mark + 1] + [pad + c for c in checks] + lines[mark + 1:]) + "\n"


@dataclass
class PropertyReport:
    """One property over a check: how many generated streams it held on, was not judged on (and
    why), and its shrunk counterexample if it broke."""

    prop: str
    held_on: int = 0
    not_judged: Counter = field(default_factory=Counter)
    counterexample: Counterexample | None = None
    written: Path | None = None
    # Hypothesis or the kit stopped the check (not a verdict on the job), or no run could be judged (an output
    # that does not match the contract)
    error: str | None = None
    heading: str = ""  # what the property says (TITLES, or an invariant's name and doc)
    # the errors runs of the job ended in, as `eventtime run` says them, each with how many streams it ended
    run_errors: Counter = field(default_factory=Counter)
    # why the property does not apply to this contract at all (said, not checked: see `CheckReport.held`)
    does_not_apply: str | None = None
    compared: str = ""  # for a property that compares sinks: what was read, and what was not
    notes: list[str] = field(default_factory=list)  # what the check says of itself (shrinking cut short)
    shrink_tried: int = 0  # streams Hypothesis tried while it shrank the counterexample (not in held_on)
    # of the streams it held on, how many were judged each way (`batch-boundary-independence`: a batch "split",
    # two batches "merge"d)
    judged_by: Counter = field(default_factory=Counter)

    @property
    def title(self) -> str:
        return self.heading or TITLES.get(self.prop, self.prop)

    @property
    def held(self) -> bool:
        return self.verdict not in PROPERTY_FAILING

    @property
    def verdict(self) -> str:
        """One of results.PROPERTY_VERDICTS: `held`, `broken`, `not_checked` (the check stopped: `error`), `judged_nothing` (no
        stream could be judged: a failure, as the command's exit says) or `does_not_apply`."""
        if self.does_not_apply is not None:
            return "does_not_apply"
        if self.error is not None:
            return "not_checked"
        if self.counterexample is not None:
            return "broken"
        return "held" if self.held_on else "judged_nothing"

    def record(self) -> dict[str, Any]:
        """This property's entry in a results file (docs/results-format.md, *Properties*)."""
        ce = self.counterexample
        return {"property": self.prop, "title": self.title, "verdict": self.verdict, "held_on": self.held_on,
                "not_judged": [{"reason": why, "count": n} for why, n in self.not_judged.most_common()],
                "run_errors": [{"message": why, "count": n} for why, n in self.run_errors.most_common()],
                "does_not_apply": self.does_not_apply, "not_checked": self.error, "compared": self.compared or None,
                "notes": list(self.notes), "shrink_tried": self.shrink_tried,
                "judged_by": dict(sorted(self.judged_by.items(), reverse=True)),
                "counterexample": None if ce is None else {
                    "why": list(ce.why), "text": ce.text, "written": None if self.written is None else str(self.written)}}

    def describe(self) -> str:
        from eventtime.scenarios import display_path

        if self.does_not_apply is not None:
            return f"{self.prop}: does not apply: {self.does_not_apply}"
        if self.error is not None:
            return f"{self.prop}: not checked: {self.error}"
        skipped = sum(self.not_judged.values())
        tail = (f", not judged on {skipped} (" + "; ".join(f"{n}: {why}" for why, n in self.not_judged.most_common(3))
                + ")") if skipped else ""
        if self.counterexample is not None:
            where = f"; written: {display_path(self.written)}" if self.written else ""  # as `eventtime run` names it
            if self.written and self.counterexample.replaced:
                where += " (it overwrote the file of that name an earlier check wrote)"
            shrunk = f"; shrinking tried {self.shrink_tried} smaller stream(s)" if self.shrink_tried else ""
            return (f"{self.prop}: BROKEN ({self.title}); held on {self.held_on} stream(s) before it broke{tail}"
                    f"{shrunk}{where}\n" + "\n".join("  " + w for w in [*self.counterexample.why, *self.notes]))
        if not self.held_on:
            return f"{self.prop}: judged on no generated stream{tail}: nothing was checked" + self._errors_text()
        compared = f"\n  compared: {self.compared}" if self.compared else ""
        return (f"{self.prop}: held on {self.held_on} generated stream(s){judged_ways(dict(self.judged_by))}{tail}"
                + compared
                + self._errors_text())

    def _errors_text(self, limit: int = 3) -> str:
        """The first distinct errors the runs ended in, each with how many streams it ended."""
        shown = [f"\n  {n} stream(s) ended in: {why}" for why, n in self.run_errors.most_common(limit)]
        more = len(self.run_errors) - limit
        return "".join(shown) + (f"\n  and {more} other error(s)" if more > 0 else "")


@dataclass
class CheckReport:
    contract: str
    properties: list[PropertyReport]
    implementation: str = ""  # what was checked: `module:function`, a job's path or a spec
    delay: str = ""  # the watermark delay late rows were drawn around (given, or the contract's parameter)
    job_notes: list[str] = field(default_factory=list)  # what the runs noted of the job, as `eventtime run` does

    @property
    def held(self) -> bool:
        """Every property held, and at least one was checked (not all of them beside the point)."""
        return all(p.held for p in self.properties) and any(p.does_not_apply is None for p in self.properties)

    def describe(self) -> str:
        return "\n".join(p.describe() for p in self.properties)

    def tally(self) -> str:
        """The verdicts counted: `3 held, 1 broken, 1 does not apply (of 5 properties)`."""
        counts = Counter(p.verdict for p in self.properties)
        said = [f"{counts[v]} {v.replace('_', ' ')}" for v in PROPERTY_VERDICTS if counts[v]]
        return f"{', '.join(said)} (of {len(self.properties)} properties)"

    def records(self, runtime: Mapping[str, Any] | None = None,
                settings: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Each property's entry in a results file, with the Spark it ran on (`runtime`) and the check's
        settings (`settings`: max_examples, seed, ...)."""
        return [{"contract": self.contract, "implementation": self.implementation, **p.record(),
                 "job_notes": list(self.job_notes), "runtime": dict(runtime or {}), "settings": dict(settings or {})}
                for p in self.properties]


class _Broken(AssertionError):
    """A property broke on a generated stream (Hypothesis shrinks on this)."""


class _KitError(RuntimeError):
    """The kit could not run a stream (a dead driver, a fault of the machine): the check stops, unjudged."""


class _Unjudgeable(_KitError):
    """No stream can be judged (the job's output does not match its contract): the check stops, said."""


def check_properties(contract: Contract, pipeline: Any, *, session: Any, properties: Sequence[str] = PROPERTIES,
                     lookup: Any = None, max_examples: int = 20, seed: int | None = None, derandomize: bool = False,
                     database: Any = "default", delay: str | None = None, max_events: int = 8,
                     tables: Sequence[str] = (), pools: Mapping[str, Any] | None = None,
                     params: Mapping[str, Any] | None = None, out_dir: str | Path | None = None,
                     timeout: float = DEFAULT_TIMEOUT, progress: Callable[[str], None] | None = None,
                     hypothesis_settings: Any = None, conf: Mapping[str, str] | None = None,
                     invariants: Mapping[str, Callable[[Observations], Any]] | None = None,
                     shrink: bool = True, jobs: int | str = 1) -> CheckReport:
    """Check each of `properties` on up to `max_examples` streams generated from `contract`, run against
    `pipeline` on `session`. A broken property's shrunk stream is written under `out_dir` (None: not
    written; never in CI, where the text is kept in the report only). `hypothesis_settings` (a
    `hypothesis.settings`) replaces the ones built from `max_examples`, `derandomize` and `database`.
    `invariants`: hooks of your own by name (each a function over `Observations`: None or True when it
    holds, else False, a message or a list of them, or an AssertionError), checked beside the contract's
    `invariants:` as `invariant:NAME`; `properties` names them so, or all of them as `invariants`.
    `shrink=False`: a broken property's counterexample is the first stream it broke on, not shrunk.
    `jobs`: how many properties are checked at once, each in a worker thread on its own isolated session
    of `session`'s SparkContext (`eventtime.parallel`, as `eventtime run --jobs`); their lines are told in
    the order of `properties`, each property's together, and the report is the one `jobs=1` gives."""
    from .parallel import parse_jobs
    from .registry import ContractLookup
    from .strategies import scenarios

    jobs = parse_jobs(jobs)
    wanted = wanted_properties(properties, contract, list(invariants or ()))
    specs, hooks = _invariant_hooks(contract, invariants)
    lookup = lookup or ContractLookup((), extra=[contract])
    pools = declared_pools(contract, pools)
    delay, origin = (delay, "given") if delay else _declared_delay(contract, params)
    streams = scenarios(contract, typed=True, delay=delay, max_events=max_events, restarts=False, triggers=False,
                        idle=True, pools=pools, params=params, contracts=lookup, supports=_supports(pipeline),
                        resolution=_resolution(delay), max_step=_step(delay))
    if hypothesis_settings is None:
        hypothesis_settings = _settings(max_examples, derandomize, database, shrink)
    tell = progress or (lambda _: None)
    tell(f"eventtime: late and out-of-order rows drawn around a watermark delay of {delay} ({origin})")
    runs = _SharedRuns(timeout)
    target = pipeline if isinstance(pipeline, str) else _code_name(pipeline)
    check = _Check(contract, lookup, streams, hypothesis_settings, seed, tables, pools, specs, hooks, target,
                   lambda s: _observer(contract, lookup, pipeline, s, timeout, conf, runs), pipeline, conf, timeout)
    reports = [check.start(prop) for prop in wanted]
    _run_checks(check, reports, jobs, session, tell, out_dir)
    for note in runs.notes:  # what `eventtime run` notes of the job (a setting not exercised), said once
        tell(f"eventtime: note: {note}")
    return CheckReport(contract.name, reports, target, delay, runs.notes)


NOT_APPLIED = "not applicable: "  # begins the reason a stream was not judged when the run did not apply


def _supports(pipeline: Any) -> Mapping[str, tuple[Any, ...]]:
    """The parameter values the implementation says it handles (`@implementation(supports=...)`): streams are
    drawn within them, where a stream outside them would only be not applicable."""
    from .userpipeline import PipelineError, implementation_info, resolve_pipeline

    try:
        fn = resolve_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    except PipelineError:  # said by the first run, as for any stream
        return {}
    return implementation_info(fn).supports


def _found_not_to_apply(report: PropertyReport) -> None:
    """A property found on the runs, not in the contract, not to apply: every stream it drew was not judged
    for a reason of the job's own operators, never one of the stream's. `bounded-state` of a job that keeps no
    state; `stream-equals-batch` of a job whose stateful operators have no batch equivalent."""
    from .streambatch import BY_DESIGN, IMPURE

    if report.verdict != "judged_nothing":
        return
    reasons, n = set(report.not_judged), sum(report.not_judged.values())
    if report.prop == "bounded-state" and reasons == {STATELESS}:
        report.does_not_apply = (f"no stateful operator ran on any of the {n} generated stream(s): the job keeps no "
                                 "state to bound")
    elif report.prop == STREAM_BATCH and any(r.endswith(IMPURE) for r in reasons):
        # the transform's own code, the same on every stream: where one stream found it, every stream has it
        said = next(r for r in reasons if r.endswith(IMPURE))
        report.does_not_apply = f"{said} (found on the generated streams; the job's code is the same on each)"
    elif report.prop == STREAM_BATCH and any(r.endswith(BY_DESIGN) for r in reasons):
        # the job's own operators, in its plan whatever the stream: where a stream found one, no stream could be
        # judged (and none was: the verdict is judged_nothing)
        names = sorted({r[len("stateful operator "):-len(BY_DESIGN) - 2] for r in reasons if r.endswith(BY_DESIGN)})
        ran = sum(k for r, k in report.not_judged.items() if r.endswith(BY_DESIGN))
        others = f" ({n - ran} other(s) not judged before their operators were looked at)" if n > ran else ""
        report.does_not_apply = (f"on {ran} of the {n} generated stream(s){others} the job ran stateful operator(s) "
                                 f"{'; '.join(names)}, whose {BY_DESIGN[4:]}")


@dataclass
class _Check:
    """What every property of one check shares; `observer(session)` runs stream texts on that session."""

    contract: Contract
    lookup: Any
    streams: Any
    hypothesis_settings: Any
    seed: int | None
    tables: Sequence[str]
    pools: Mapping[str, Any] | None
    specs: Mapping[str, Any]
    hooks: Mapping[str, Callable[..., Any]]
    target: str
    observer: Callable[[Any], Callable[[str], RunObservation]]
    pipeline: Any
    conf: Mapping[str, str] | None
    timeout: float

    def start(self, prop: str) -> PropertyReport:
        from .streambatch import not_a_transform

        return PropertyReport(prop, heading=title(prop, self.specs), compared=_compared(prop, self.contract, self.tables),
                              does_not_apply=_does_not_apply(prop, self.contract) or (
                                  not_a_transform(self.pipeline, self.contract) if prop == STREAM_BATCH else None))

    def first_line(self, report: PropertyReport) -> str:
        if report.does_not_apply is not None:
            return report.describe()
        return (f"eventtime: checking {report.prop} ({report.title}) on up to "
                f"{self.hypothesis_settings.max_examples} generated stream(s)")

    def run(self, report: PropertyReport, session: Any) -> PropertyReport:
        """Check one property (not one that does not apply) on `session`; its outcome goes into `report`."""
        from .streambatch import batch_runner

        prop = report.prop
        name = prop[len(INVARIANT):]
        judge_with = (self.specs.get(name), self.hooks.get(name), self.tables, self.pools) \
            if prop.startswith(INVARIANT) else (
            batch_runner(prop, self.pipeline, self.contract, session, self.conf, self.timeout), None, self.tables,
            self.pools)
        _check_one(report, self.streams, self.hypothesis_settings, self.seed, self.observer(session),
                   observation_steps(self.contract, self.tables), self.contract, self.lookup,
                   key=f"eventtime check-properties {self.contract.name} {prop} {self.target}", extra=judge_with)
        _found_not_to_apply(report)
        return report


def _run_checks(check: _Check, reports: list[PropertyReport], jobs: int, session: Any,
                tell: Callable[[str], None], out_dir: str | Path | None, sessions: Any = None) -> None:
    """Check each report's property, `jobs` at a time; each property's lines are told once it and every one
    before it are done (with `jobs` 1, its first line before it starts), and its counterexample written then,
    in the order of `reports`, so that the lines and files are the same whatever `jobs` is. `sessions`: how
    worker threads get theirs (`parallel.Sessions`; default isolated Spark sessions; tests pass stand-ins)."""
    from .snapshot import in_ci

    def finish(report: PropertyReport) -> None:  # a report that ran (`_found_not_to_apply` may have found it does not apply)
        if report.counterexample is not None and out_dir is not None and not in_ci():
            report.written = report.counterexample.write(out_dir)
        tell(report.describe())

    firsts = [check.first_line(r) for r in reports]  # said before it ran (`_found_not_to_apply` may change it after)
    todo = [r for r in reports if r.does_not_apply is None]
    ran = {id(r) for r in todo}
    if jobs == 1 or len(todo) <= 1:
        for first, report in zip(firsts, reports):
            tell(first)
            if id(report) in ran:
                finish(check.run(report, session))
        return
    done = _in_parallel(check, todo, jobs, session, sessions)
    for first, report in zip(firsts, reports):
        tell(first)
        if id(report) in ran:
            finish(next(done))


def _in_parallel(check: _Check, todo: Sequence[PropertyReport], jobs: int, session: Any, sessions: Any) -> Any:
    """The reports of `todo` checked `jobs` at a time by `parallel.run_pairs` (its worker threads, isolated
    sessions and ordered results: one mechanism for `eventtime run --jobs` and this), in the order given."""
    from typing import cast

    from .parallel import Pair, run_pairs

    def runner(report: PropertyReport, _implementation: Any, *, session: Any, **_: Any) -> Any:
        return check.run(report, session)

    return run_pairs([Pair(cast(Any, r), None) for r in todo], jobs=jobs, session=session, runner=runner,
                     sessions=sessions)


class _SharedRuns:
    """The runs of stream texts shared by the properties of one check (a property's base stream is often
    another's, and Hypothesis replays a stream while it shrinks): each text is run once. A thread asking for a
    text another thread is running waits for that run, bounded by `wait` seconds (each of whose waits on Spark
    is bounded by the check's timeout); a run that raised is not kept, and the next thread to ask runs it."""

    WAITS = 20  # a stream run is a few dozen waits on Spark at most: a wait for one is bounded by that many

    def __init__(self, timeout: float):
        self.wait = timeout * self.WAITS
        self._lock = threading.Lock()
        self._done: dict[str, RunObservation] = {}
        self._running: dict[str, threading.Event] = {}
        self.notes: list[str] = []  # what `eventtime run` notes of the job, each once, in the order first noted

    def add_notes(self, notes: Sequence[str]) -> None:
        with self._lock:
            self.notes.extend(n for n in notes if n not in self.notes)

    def get(self, text: str, observe: Callable[[str], RunObservation]) -> RunObservation:
        while True:
            with self._lock:
                if text in self._done:
                    return self._done[text]
                running = self._running.get(text)
                if running is None:
                    mine = self._running[text] = threading.Event()
                    break
            if not running.wait(self.wait):
                raise _KitError(f"waited {self.wait:g} seconds for the run of a generated stream another property "
                                "was running, and it did not end")
        try:
            obs = observe(text)
            with self._lock:
                self._done[text] = obs
            return obs
        finally:
            with self._lock:
                del self._running[text]
            mine.set()


def _observer(contract: Contract, lookup: Any, pipeline: Any, session: Any, timeout: float,
              conf: Mapping[str, str] | None, runs: _SharedRuns | None = None) -> Callable[[str], RunObservation]:
    """The run of a generated stream's text against `pipeline` on `session`, each text run once over the
    properties sharing `runs` (Hypothesis replays a stream while it shrinks). The kit's trouble (an invalid
    scenario it wrote, a dead driver) stops the check: never a verdict on the job."""
    from .problems import ScenarioInvalid

    shared = runs if runs is not None else _SharedRuns(timeout)

    def observe(text: str) -> RunObservation:
        try:
            obs = observe_run(text, contract, lookup=lookup, pipeline=pipeline, session=session, timeout=timeout,
                              path=f"<generated {contract.name} stream>", conf=conf)
        except ScenarioInvalid as exc:  # the kit wrote the scenario: its bug, never the user's mistake
            raise _KitError(f"the kit generated an invalid scenario (a bug of the kit, not of your contract or "
                            f"job: please report it with this message): {_one_line(str(exc))}") from None
        if obs.kit_error is not None:  # the kit's or the machine's trouble: never a verdict on the job
            raise _KitError(f"the kit could not run a generated stream: {obs.kit_error}")
        shared.add_notes(getattr(obs.result, "notes", None) or [])
        return obs

    return lambda text: shared.get(text, observe)


def wanted_properties(properties: Sequence[str], contract: Contract, invariants: Sequence[str] = ()) -> list[str]:
    """The properties a check runs, in order, each once, as both faces read them (`--property NAME`,
    `properties=`): a built-in name, `invariants` (every invariant of the contract and every one of
    `invariants`, the names of hooks given in code), or `invariant:NAME` for one. An unknown name is a
    ValueError naming the known ones, said before any Spark run."""
    names = [i.name for i in contract.invariants] + [n for n in invariants if n not in
                                                       {i.name for i in contract.invariants}]
    return _wanted(properties, [INVARIANT + n for n in names])


def _wanted(properties: Sequence[str], named: list[str]) -> list[str]:
    """The properties to check, in order, each once: `invariants` stands for every invariant by name
    (`named`, `invariant:NAME`); an unknown name is a ValueError that lists the known ones."""
    known = [n[len(INVARIANT):] for n in named]
    for p in properties:
        if p.startswith(INVARIANT) and p not in named:
            raise ValueError(f"unknown invariant {p[len(INVARIANT):]!r} in {p!r} ("
                             + (f"the invariants known: {', '.join(known)}" if known else
                                "no invariant is declared: `invariants:` in the contract file, or invariants= in code")
                             + ")")
    unknown = [p for p in properties if p not in PROPERTIES and p not in named]
    if unknown:
        raise ValueError(f"unknown propert{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                         f"(known: {', '.join([*PROPERTIES, *named])})")
    wanted: list[str] = []
    for p in properties:
        for q in (named or [p]) if p == "invariants" else [p]:
            if q not in wanted:
                wanted.append(q)
    return wanted


def _settings(max_examples: int, derandomize: bool, database: Any, shrink: bool = True) -> Any:
    """The Hypothesis settings of a check: no deadline (a stream is Spark runs), no health check that a
    slow or large draw trips, no `explain` phase, and no `shrink` phase unless `shrink`."""
    from hypothesis import HealthCheck, Phase, settings

    kwargs: dict[str, Any] = {"max_examples": max_examples, "deadline": None, "derandomize": derandomize,
                              "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                                        HealthCheck.filter_too_much],
                              # not the `explain` phase: it runs the shrunk stream's variants again, each a
                              # Spark run, to say which parts mattered; the written file says it instead
                              "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
                              + ([Phase.shrink] if shrink else [])}
    if database != "default":
        kwargs["database"] = database
    return settings(**kwargs)


def _code_name(fn: Any) -> str:
    """'module:qualname' of a function given in code."""
    return f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', repr(fn))}"


def _invariant_hooks(contract: Contract, given: Mapping[str, Callable[..., Any]] | None
                     ) -> tuple[dict[str, Any], dict[str, Callable[..., Any]]]:
    """The invariants to check by name (the contract's, then those given in code) and each hook's function,
    imported now: a hook that cannot be imported is an error at the contract's line, before any run."""
    import importlib

    from .contracts import InvariantSpec

    specs: dict[str, Any] = {i.name: i for i in contract.invariants}
    hooks: dict[str, Callable[..., Any]] = {}
    for spec in contract.invariants:
        if spec.form != "hook" or spec.hook is None:
            continue
        module, _, name = spec.hook.partition(":")
        place = f"{spec.where.file}:{spec.where.line}: " if spec.where is not None else ""
        try:
            fn: Any = importlib.import_module(module)
            for part in name.split("."):
                fn = getattr(fn, part)
        except Exception as exc:  # noqa: BLE001 - the user's module: said at the contract's line
            raise ValueError(f"{place}invariant {spec.name!r}: cannot import its hook {spec.hook}: "
                             f"{type(exc).__name__}: {exc}") from None
        if not callable(fn):
            raise ValueError(f"{place}invariant {spec.name!r}: its hook {spec.hook} is not a function")
        hooks[spec.name] = fn
    for name, fn in (given or {}).items():
        if name in specs:
            raise ValueError(f"invariant {name!r} is the contract's already: give the hook another name")
        if not callable(fn):
            raise ValueError(f"invariant {name!r}: a hook is a function over the run's observations, not {fn!r}")
        specs[name] = InvariantSpec(name, "hook", hook=_code_name(fn),
                                    doc=(fn.__doc__ or "").strip().split("\n")[0])
        hooks[name] = fn
    return specs, hooks


SINK_PROPERTIES = ("exactly-once-rerun", "restart-transparency", "batch-boundary-independence")


def _compared(prop: str, contract: Contract, tables: Sequence[str]) -> str:
    """What a property that compares sinks reads (`observation_steps`), and what it cannot: a folder a job writes
    at a path of its own (from its batch function) is named by no parameter, so it is not read back. A green is
    only as wide as this, so the report says it."""
    if prop not in SINK_PROPERTIES:
        return ""
    folders = [p.name for p in contract.params if p.kind == "path"]
    read = ["the queries' rows as their sinks keep them"] + [f"folder {f!r}" for f in folders] + [
        f"table {t!r}" for t in tables]
    unread = ("" if folders or tables else "; a folder or table the job writes at a path of its own (not a `kind: "
              "path` parameter) is not read back, only the rows its queries handed their sinks: name it as a `kind: "
              "path` parameter or with --table to compare what was written")
    return ", ".join(read) + unread


def _does_not_apply(prop: str, contract: Contract) -> str | None:
    """Why `prop` cannot be judged for this contract at all (None: it can)."""
    if prop == "invariants":
        return "the contract declares no invariants (`invariants:` in its file, or invariants= in code)"
    if prop == "bounded-state":
        if not any(s.event_time or s.value_event_time for s in contract.sources):
            return "no source declares an `event_time` column, so no closing event moves a watermark"
        if contract.output_modes == ("complete",):
            return "complete mode only: Spark keeps every group of an aggregation in state, whatever the watermark"
    payload_timed = [s for s in contract.sources if s.kind in ("kafka", "text") and s.value_event_time]
    if prop in (BOUNDARIES, STREAM_BATCH) and payload_timed:
        return (f"{payload_timed[0].kind} source {payload_timed[0].name!r} has its event time inside the payload, "
                "which the kit does not parse to tell which records Spark dropped as late")
    if prop == BOUNDARIES and contract.output_modes == ("update",):
        names: list[str | None] = [q.name for q in contract.queries] or [None]
        unkeyed = [q for q in names if not _key_of(contract, q)]
        if unkeyed:
            return ("update mode only, and no `key:` declared" + (f" for query {unkeyed[0]!r}" if unkeyed[0] else "")
                    + ": which rows an update emits depends on where batches end, and without a key the final "
                    "output (the last row per key) is not defined")
    return None


def _check_one(report: PropertyReport, streams: Any, hypothesis_settings: Any, seed: int | None,
               run: Callable[[str], RunObservation], ends: Sequence[str], contract: Contract, lookup: Any, *,
               key: str, extra: tuple = (None, None, (), None)) -> None:
    """Run one property's Hypothesis test; its outcome goes into `report`. `key`: where Hypothesis's database
    keeps its examples (one per contract, property and pipeline, so a broken stream is tried first on the
    next check of the same three, and never replayed for another)."""
    from hypothesis import given, seed as hseed
    from hypothesis.reporting import with_reporter

    judge = _PropertyJudge(report, run, ends, contract, lookup, extra)

    @hypothesis_settings
    @given(streams.flatmap(judge.draw_case))
    def holds(case: tuple[m.Scenario, int, str]) -> None:
        if report.error is not None:  # the kit failed on an earlier stream: nothing more is judged
            return
        # once broken, each stream is one Hypothesis tries while it shrinks: counted as such, not as held
        shrinking, held, unjudged = report.counterexample is not None, report.held_on, Counter(report.not_judged)
        try:
            judge(case)
        except _KitError as exc:  # never shrunk as if it were the job's failure
            report.error = str(exc)
        finally:
            if shrinking:
                report.shrink_tried += 1
                report.held_on, report.not_judged = held, unjudged

    # the test function is the same code for every property: Hypothesis would key them all alike
    holds._hypothesis_internal_database_key = key.encode("utf-8")
    test = hseed(seed)(holds) if seed is not None else holds
    heard: list[object] = []
    try:
        with with_reporter(heard.append), _own_draws():  # Hypothesis's lines: said in the report's words, below
            test()
    except _Broken:
        pass
    except Exception as exc:  # noqa: BLE001 - Hypothesis (unsatisfiable, flaky) or the kit: said, not a verdict
        text = str(exc).strip()
        report.error = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    report.notes += _heard(heard)
    # Hypothesis runs the smallest stream found once more at the end, to report it: not a stream shrinking tried
    report.shrink_tried = max(report.shrink_tried - 1, 0)


STATELESS = "no stateful operator ran"  # a stream `bounded-state` cannot judge: the job kept no state on it

_DRAWS_LOCK = threading.Lock()
_DRAWS: dict[str, Any] = {"running": 0, "lookup": None}  # checks running (`--jobs`), Hypothesis's own lookup


@contextmanager
def _own_draws() -> Iterator[None]:
    """Streams drawn from the check's strategies only: the same contract, seed and settings give the same streams
    whatever else is imported. Hypothesis (6.131+) draws about one value in twenty from the literals of the
    modules loaded from the working directory, a set that grows as a test session imports (another test's
    module, the user's job): the same derandomized check drew other streams in another order of tests. Its lookup
    of those literals (a private function, so feature-detected: without it, nothing is changed) answers none
    while any check runs, and its cache of them is cleared on the way in and out."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the module
        yield
        return
    cache: Any = getattr(providers, "CONSTANTS_CACHE", None)
    if not hasattr(providers, "_get_local_constants") or not hasattr(cache, "cache"):
        yield
        return
    with _DRAWS_LOCK:
        if _DRAWS["running"] == 0:
            none = type(providers._get_local_constants())()  # an empty set, of Hypothesis's own type
            _DRAWS["lookup"], providers._get_local_constants = providers._get_local_constants, lambda: none
            cache.cache.clear()
        _DRAWS["running"] += 1
    try:
        yield
    finally:
        with _DRAWS_LOCK:
            _DRAWS["running"] -= 1
            if _DRAWS["running"] == 0:
                providers._get_local_constants = _DRAWS["lookup"]
                cache.cache.clear()


# Hypothesis stops shrinking after five minutes (its MAX_SHRINKING_SECONDS), which a stream of Spark runs reaches
SLOW_SHRINK = ("shrinking stopped at Hypothesis's five-minute limit (each stream tried is Spark runs): the "
               "counterexample is smaller than the stream first found, maybe not the smallest; check again with "
               "the database on (the default) to go on shrinking from it")


def _heard(lines: Sequence[object]) -> list[str]:
    """What a check says of Hypothesis's own lines: its falsifying example is the counterexample the report
    writes (its text is not repeated); its slow-shrinking warning, addressed to a Hypothesis user, becomes
    SLOW_SHRINK; any other line is kept as Hypothesis said it."""
    notes = []
    for line in lines:
        text = str(line)
        if "five minutes working to shrink" in text:
            notes.append(SLOW_SHRINK)
        elif not text.startswith(("Falsifying example", "Trying example", "Reproduce", "You can reproduce")):
            notes.append("Hypothesis: " + " ".join(text.split())[:300])
    return notes


def _points(sc: m.Scenario) -> list[int]:
    """After a `process` that read rows: a data batch ran, nothing is left pending."""
    out, added = [], False
    for s in sc.steps:
        if isinstance(s, m.AddStep):
            added = True
        elif isinstance(s, m.ProcessStep) and added:
            out.append(s.index)
            added = False
    return out


class _PropertyJudge:
    """One property judged on one drawn case (a stream, a point after a data batch, a kind of session):
    a stream it holds on is counted in the report, one it cannot be judged on is counted with the reason,
    a broken one leaves its counterexample in the report and raises `_Broken` (Hypothesis shrinks on it)."""

    def __init__(self, report: PropertyReport, run: Callable[[str], RunObservation], ends: Sequence[str],
                 contract: Contract, lookup: Any, extra: tuple):
        self.report, self.prop, self.run, self.ends = report, report.prop, run, ends
        self.contract, self.lookup = contract, lookup
        self.spec, self.hook, self.tables, self.pools = extra

    def draw_case(self, sc: m.Scenario) -> Any:
        from hypothesis import strategies as st

        where = _points(sc)
        prop = self.prop
        if prop == BOUNDARIES:  # which rows a split puts first, one choice per added row (see `_split_batches`)
            n = sum(len(rows) for s in sc.steps if isinstance(s, m.AddStep) for rows in s.rows.values())
            return st.tuples(st.just(sc), st.lists(st.booleans(), min_size=n, max_size=n), st.just("same"))
        if prop in ("no-query-dies", "bounded-state", STREAM_BATCH) or prop.startswith(INVARIANT) or not where:
            return st.just((sc, 0, "same"))
        return st.tuples(st.just(sc), st.sampled_from(where), st.sampled_from(("same", "new")))

    def __call__(self, case: tuple[m.Scenario, int, str]) -> None:
        sc, point, session_kind = case
        base_text = with_step_after(sc, 0, "", tail=self.ends)
        if self.prop == "no-query-dies":
            return self.judge_dies(sc, base_text)
        if self.prop == "bounded-state":
            return self.judge_bounded(sc)
        if self.prop == BOUNDARIES:
            return self.judge_boundaries(sc, point)  # type: ignore[arg-type]  # the drawn choices
        if self.prop.startswith(INVARIANT):
            return self.judge_invariant_on(base_text)
        if self.prop == STREAM_BATCH:
            return judge_stream_batch(self, sc)  # `self.spec`: its BatchRunner
        if not point:
            self.report.not_judged["no batch read rows"] += 1
            return
        return self.judge_restart(sc, base_text, point, session_kind)

    def broken(self, why: list[str], text: str) -> None:
        """The property broke: `text` is the counterexample's file."""
        self.report.counterexample = Counterexample(self.prop, self.contract.name, _conf_explained(text), why)
        raise _Broken("\n".join(why))

    def usable(self, o: RunObservation) -> bool:
        """Whether a run can be compared: it applied, and it did not end in an error (`no-query-dies`
        says so); else counted as not judged, with the reason."""
        self.matches(o)
        if not o.applicable:
            self.report.not_judged[f"{NOT_APPLIED}{o.result.reason}"] += 1
            return False
        if o.died is not None:  # `no-query-dies` breaks on it; here it is said with the stream it ended
            self.report.not_judged["the run ended in an error"] += 1
            self.report.run_errors[_one_line(o.died)] += 1
            return False
        return True

    def matches(self, o: RunObservation) -> None:
        """A job whose output does not match its contract fails every run as `eventtime run` fails it: the
        check stops, said once, never a property held on such runs."""
        if o.mismatch is not None:
            raise _Unjudgeable(f"every run fails as `eventtime run` fails it: {_one_line(o.mismatch)}")

    def judge_dies(self, sc: m.Scenario, base_text: str) -> None:
        base = self.run(base_text)
        self.matches(base)
        if not base.applicable:
            self.report.not_judged[f"{NOT_APPLIED}{base.result.reason}"] += 1
            return
        if base.died is not None:
            why = [f"the run ended in an error{_error_class(base.died)}: {base.died}"]
            text = _header(self.prop, why, "Reproduce: eventtime run THIS_FILE (it ends in the same error).")
            self.broken(why, text + _renamed(with_step_after(sc, 0, ""), self.prop))
        self.report.held_on += 1

    def judge_restart(self, sc: m.Scenario, base_text: str, point: int, session_kind: str) -> None:
        """`exactly-once-rerun` and the restart properties: a run with a restart (or a batch run again)
        after `point` against one without."""
        prop, ends = self.prop, self.ends
        restart = "- restart" if session_kind == "same" else "- restart: {session: new}"
        if prop == "exactly-once-rerun":
            # a `process` after either restart: the batch run again is followed by the no-data batch Spark
            # runs when no new data came before its next trigger, as the plain restart's timeline had it
            # (its last process ran that no-data batch, which the re-run removed); without it, the next
            # data batch would run with another previous watermark, and with several stateful operators
            # Spark judges lateness by the previous batch's watermark: rows dropped on one side only
            reference = self.run(with_step_after(sc, point, [restart, "- process"], tail=ends))
            variant_text = with_step_after(sc, point, ["- restart: {rerun_last_batch: true}", "- process"], tail=ends)
        else:
            reference = self.run(base_text)
            variant_text = with_step_after(sc, point, restart, tail=ends)
        variant = self.run(variant_text)
        if not (self.usable(reference) and self.usable(variant)):
            return
        why = reference.differences(variant)
        if not why:
            self.report.held_on += 1
            return
        what = "a batch run again after a crash" if prop == "exactly-once-rerun" else "the restart"
        why = [f"{what} after step {point} changed {w}" for w in why]
        stream_differs = prop == "exactly-once-rerun" and reference.stream != variant.stream
        # a re-run batch is counted twice by an `output` check (the batches seen), so the file checks only
        # what was written for that property; a restart's file checks the queries' outputs too
        keep = (lambda line: "written:" in line or "table:" in line) if prop == "exactly-once-rerun" else (
            lambda line: True)
        note = ("Its expect steps hold what the run with a plain restart at the same point observed; "
                "reproduce: eventtime run THIS_FILE (it fails where the sinks differ)."
                if prop == "exactly-once-rerun" else
                "Its expect steps hold what the run without the restart observed; reproduce: eventtime run "
                "THIS_FILE (it fails where the outputs differ).")
        body = filled(_renamed(variant_text, prop), reference, lookup=self.lookup, keep=keep)
        if stream_differs:
            note += " The re-run batch's own rows differed too (a batch that is not deterministic)."
            body = with_rerun_checks(body, variant, point + 1, self.contract)
        self.broken(why, _header(prop, why, note) + body)

    def judge_bounded(self, sc: m.Scenario) -> None:
        contract, report = self.contract, self.report
        mode = sc.params.get("output_mode") or (contract.output_modes or ("append",))[0]
        if mode == "complete":
            report.not_judged["complete mode: Spark keeps every group in state"] += 1
            return
        closing = closing_steps(contract, self.pools)
        variant_text = with_step_after(sc, 0, "", tail=closing)
        variant, reference = self.run(variant_text), self.run(with_steps(sc, closing))
        if not (self.usable(variant) and self.usable(reference)):
            return
        after, stateful = _state_by_query(variant, contract)
        alone, _ = _state_by_query(reference, contract)
        if not stateful:
            report.not_judged[STATELESS] += 1
            return
        held = sorted(q for q, n in after.items() if n > alone.get(q, 0))
        unmoved = [q for q in held if q not in _watermark_moved(reference, contract)]
        if unmoved:  # the job's own rules dropped the closing events before that query: its watermark stood still
            report.not_judged[f"the closing events alone move no watermark of {_query_label(unmoved[0])} (the job's "
                              "rules drop them before it?): narrow the source's columns with `generate:` so that "
                              "a closing event, built from each column's first value, passes them"] += 1
            return
        why = [f"{_query_label(q)} holds {after[q]} state row(s) once the watermark passed every event, where the "
               f"closing events alone leave {alone.get(q, 0)}" + _operators_text(variant, q, contract) for q in held]
        if not why:
            report.held_on += 1
            return
        note = (f"After the stream, a closing event at {CLOSING_TIME} on each event-time source, twice; its expect "
                "steps hold the state rows those closing steps leave run alone; reproduce: eventtime run THIS_FILE "
                "(it fails at the state_rows check).")
        body = filled(_renamed(variant_text, self.prop), reference, lookup=self.lookup,
                      keep=lambda line: "state_rows" in line)
        self.broken(why, _header(self.prop, why, note) + body)

    def judge_boundaries(self, sc: m.Scenario, firsts: Sequence[bool]) -> None:
        """`batch-boundary-independence`: the stream with its closing steps, against the same with data
        batches split in two (`_split_batches`, from what the first run's watermarks were)."""
        contract, report = self.contract, self.report
        mode = sc.params.get("output_mode") or (contract.output_modes or ("append",))[0]
        names: list[str | None] = [q.name for q in contract.queries] or [None]
        if mode == "update" and not all(_key_of(contract, q) for q in names):
            report.not_judged["update mode with no declared `key:`: the last row per key is not defined"] += 1
            return
        closing = closing_steps(contract, self.pools)[:4] if any(s.event_time or s.value_event_time for s in contract.sources) else []
        reference = self.run(with_step_after(sc, 0, "", tail=[*closing, *self.ends]))
        if not self.usable(reference):
            return
        changed, how = _split_batches(sc, reference, contract, firsts), "split"
        if changed is None:  # the converse: two adjacent data batches run as one
            changed, how = _merge_batches(sc, reference, firsts), "merge"
        if changed is None:
            read = [rows for rows in _rows_per_batch(sc) if rows]
            report.not_judged[
                "one data batch, of one row: nothing to split or merge" if len(read) == 1 and len(read[0]) == 1 else
                ("every data batch read one row (nothing to split), and no two" if all(len(r) == 1 for r in read)
                 else "no data batch could be split, nor two") + " adjacent ones merged, keeping each row as late "
                "or on time as it was"] += 1
            return
        _, cut = changed
        variant = self.run(with_steps(sc, [*cut, *closing, *self.ends]))
        if not self.usable(variant):
            return
        ref, var = _final(reference, contract, mode), _final(variant, contract, mode)
        why = ref.differences(var)
        if not why:
            report.held_on += 1
            report.judged_by[how] += 1
            return
        why = [f"the rows {'split into more' if how == 'split' else 'merged into fewer'} micro-batches changed {w}"
               for w in why]
        keep = (lambda line: True) if mode != "update" else (lambda line: "written:" in line or "table:" in line)
        note = ("Its data batches are split in two" if how == "split" else "Two adjacent data batches of it are "
                "merged into one") + (" where no row changes between late and on time; its expect steps hold what "
                                      "the same rows in the original batches gave (after closing events passed the "
                                      "watermark); reproduce: eventtime run THIS_FILE (it fails where the final "
                                      "outputs differ).")
        if mode == "update":
            note += " Update mode: only what was written is checked (the file cannot say 'the last row per key')."
        body = filled(_renamed(with_steps(sc, [*cut, *closing, *self.ends]), self.prop), reference,
                      lookup=self.lookup, keep=keep)
        self.broken(why, _header(self.prop, why, note) + body)

    def judge_invariant_on(self, base_text: str) -> None:
        spec, contract, report = self.spec, self.contract, self.report
        base = self.run(base_text)
        if not self.usable(base):
            return
        try:
            verdict = judge_invariant(spec, observations_of(base, contract), contract, self.hook)
        except Exception as exc:  # noqa: BLE001 - the user's hook failed: said where, never a verdict
            raise _KitError(hook_raised(spec, exc)) from None
        if not verdict.why:
            report.held_on += 1
            return
        demands = {"not_null": "its rows with a null left out",
                   "disjoint": "a key in two outputs expected only in the last of them the invariant names",
                   "conserve": "a row in none of the outputs expected in the last one named, a row too many "
                               "taken out"}.get(spec.form, "")
        note = ("Its expect steps hold what the run observed" + (
            f", corrected to what the invariant demands ({demands}); reproduce: eventtime run THIS_FILE (it fails "
            "where the job breaks the invariant)." if verdict.exact else
            ": the invariant does not say which values it demands; correct them from What broke before the file "
            "guards anything."))
        reference = _corrected(base, contract, verdict)
        body = filled(_renamed(base_text, self.prop, report.title), reference, lookup=self.lookup,
                      keep=lambda line: True)
        self.broken(verdict.why, _header(self.prop, verdict.why, note, report.title) + body)

BOUNDARIES = "batch-boundary-independence"


def _key_of(contract: Contract, query: str | None) -> tuple[str, ...]:
    spec = contract.query(query) if query is not None else None
    return spec.key if spec is not None else contract.key


def _final(obs: RunObservation, contract: Contract, mode: str) -> RunObservation:
    """`obs` with each query's rows as its final output: as `stream_of` keeps them (every row written in
    append mode, the last table in complete mode), and in update mode the last row written per declared key."""
    if mode != "update":
        return obs
    from .contractfile import sink_columns

    latest: dict[tuple, Any] = {}
    for sr in obs.result.steps:
        for b in sr.batches:
            latest[(b.query, getattr(b, "checkpoint", 0), b.batch_id)] = b
    last: dict[Any, dict[tuple, tuple]] = {}
    for key in sorted(latest, key=lambda k: (str(k[0]), k[1], k[2])):
        b = latest[key]
        names = [c.name for c in sink_columns(contract.queries, contract.output, b.query)] \
            if b.query is not None and contract.queries else [c.name for c in contract.output]
        keys = _key_of(contract, b.query)
        at = [names.index(k) for k in keys if k in names]
        for r in b.rows:
            last.setdefault(b.query, {})[tuple(r[i] for i in at)] = tuple(r)
    stream = {q: Counter(rows.values()) for q, rows in last.items()}
    return RunObservation(obs.text, obs.result, stream, obs.written)


def _rows_per_batch(sc: m.Scenario) -> list[list[tuple]]:
    """The rows each `process` read (the `add`s since the previous one), every source together."""
    out: list[list[tuple]] = [[]]
    for s in sc.steps:
        if isinstance(s, m.AddStep):
            out[-1] += [r for rows in s.rows.values() for r in rows]
        elif isinstance(s, m.ProcessStep):
            out.append([])
    return out


def _event_micros(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class _Row:
    """One added row of a data batch: its source, the row as the file writes it, its event time (micros; None
    when null or when its source declares no `event_time`) and whether its source declares one."""

    source: str
    written: Any
    et: int | None
    timed: bool


@dataclass(frozen=True)
class _Marks:
    """The unsplit run's watermarks around one data batch N, in micros, over every query that read it: `before`
    E(N), the watermark N ran with; `after` W(N), the one it left for the next batch (None: not reported);
    `still`: the batch before N ran with E(N) too (N's rows were judged late by E(N) whichever rule Spark
    applies); `kept`: N moved no query's watermark."""

    before: int
    after: int | None
    still: bool
    kept: bool


def _marks(batches: Sequence[Any], order: Mapping[Any, list[Any]]) -> _Marks:
    still, kept, before = True, True, 0
    after: int | None = 0
    for b in batches:
        seen = order.get(b.query, [])
        i = next(i for i, x in enumerate(seen) if x is b)
        now = b.watermark_before_ms or 0
        still = still and (seen[i - 1].watermark_before_ms or 0 if i else now) == now
        kept = kept and (b.watermark_after_ms or 0) == now
        before = max(before, now)
        after = None if after is None or b.watermark_after_ms is None else max(after, b.watermark_after_ms)
    return _Marks(before * 1000, None if after is None else after * 1000, still, kept)


def _neutral(row: _Row, maxima: Mapping[str, int]) -> bool:
    """A row that moves no source's largest event time read so far (so no watermark, whatever the policy)."""
    return not row.timed or (row.et is not None and row.source in maxima and row.et <= maxima[row.source])


def _reads_all(first: Sequence[int], rows: Sequence[_Row], maxima: Mapping[str, int]) -> bool:
    """Whether the first part reads from every event-time source that reads its first event time in this batch
    (one with an event time, if the batch has one): after it, the same inputs have data as after the whole
    batch, so the watermark it leaves is at most the whole batch's (the min policy takes the minimum over the
    inputs that have data; either policy is monotone in each input's largest event time)."""
    for source in {r.source for r in rows if r.timed and r.source not in maxima}:
        mine = [i for i, r in enumerate(rows) if r.source == source]
        wanted = [i for i in mine if rows[i].et is not None] or mine
        if not set(wanted) & set(first):
            return False
    return True


def _parts(rows: Sequence[_Row], choices: Sequence[bool], may_rest: Callable[[_Row], bool],
           maxima: Mapping[str, int]) -> tuple[list[int], list[int]] | None:
    """The rows (their indexes) in two non-empty parts, each row first where it was drawn so or may not come later
    (`may_rest`), and so that `_reads_all` holds: a row is moved to the first part when a source needs one,
    the first row when no row was drawn first, one back when every row was; None when no such split."""
    first = [i for i, (r, c) in enumerate(zip(rows, choices)) if c or not may_rest(r)]
    for source in sorted({r.source for r in rows if r.timed and r.source not in maxima}):
        mine = [i for i, r in enumerate(rows) if r.source == source]
        wanted = [i for i in mine if rows[i].et is not None] or mine
        if not set(wanted) & set(first):
            first.append(wanted[0])
    if not first:
        first = [0]
    if len(first) == len(rows):
        back = [i for i in sorted(first, reverse=True) if may_rest(rows[i])
                and _reads_all([j for j in first if j != i], rows, maxima)]
        first = [j for j in first if not back or j != back[0]]
    rest = [i for i in range(len(rows)) if i not in first]
    if not first or not rest or not all(may_rest(rows[i]) for i in rest):
        return None
    return sorted(first), rest


def _split_rows(rows: Sequence[_Row], choices: Sequence[bool], marks: _Marks, maxima: Mapping[str, int],
                following: Sequence[_Row], *, may_move: bool = True) -> tuple[list[_Row], list[_Row]] | None:
    """One data batch N split in two, F then R, with no row of the stream changing between late and on time;
    None when that cannot be. Spark computes the watermark at the end of a micro-batch from the largest event
    time each input has read (minus its delay; the min or max over the inputs that have data): a batch runs
    with the watermark E the batch before it left, evicts by E, and drops as late the rows E passes (Spark 3.3)
    or that the batch before it's E passed (3.4+: `eventTimeWatermarkForLateEvents`). A row is late by its
    operator's rule (its window's end, a join bound): whatever the rule, a row with an event time after every
    watermark it meets is on time. F runs where N ran, with N's watermarks, so its rows are as they were.
    - F moves no watermark when its rows move no input's largest event time (`_neutral`), or when N moved no
      watermark and F reads from every input N first read (`_reads_all`): then R runs with E(N) for eviction
      and late rows alike, and a row of R is as it was when E(N) judged N's rows too (`still`), or when its
      event time is after E(N); the batch after R runs as the batch after N did.
    - Else F may move the watermark, to W(F) <= W(N), the one N left (`_reads_all` makes it so): a row of R
      meets E(N) and W(F) only, so it is on time either way when its event time is after W(N). The batch
      after R drops late rows by W(F) (3.4+, no no-data batch between) where the batch after N did by E(N):
      every row of it (`following`) must have an event time after W(N) too. Only where `may_move`
      (`_moves_safely`): an operator's state the earlier watermark evicts must be state no row on time could
      meet (a window, a session window, a join bound, a dedup key holding the event time).
    After R every input has read what it had after N: the watermark, and all that follows, is the same. Rows
    of a source without an `event_time` move no watermark and are never late; a null event time is only in R
    where E(N) judges it as it did. `choices`: the drawn part of each row that may go either way."""
    def static_rest(r: _Row) -> bool:
        return not r.timed or marks.still or (r.et is not None and r.et > marks.before)

    split = _parts(rows, choices, static_rest, maxima)
    if split is None or not (all(_neutral(rows[i], maxima) for i in split[0])
                             or (marks.kept and _reads_all(split[0], rows, maxima))):
        after = marks.after
        if after is None or not may_move or not all(not r.timed or (r.et is not None and r.et > after) for r in following):
            return None
        split = _parts(rows, choices, lambda r: not r.timed or (r.et is not None and r.et > after), maxima)
    return None if split is None else ([rows[i] for i in split[0]], [rows[i] for i in split[1]])


def _batch_rows(sc: m.Scenario, adds: Sequence[m.AddStep], et_col: Mapping[str, int | None],
                lines: Callable[[m.Step], list[str]]) -> tuple[list[_Row], bool]:
    """The rows of a batch's `add` steps, in order, and whether each is written as a plain list per source
    (only such batches are split: a row is moved as it is written)."""
    import yaml

    out: list[_Row] = []
    plain = True
    for add in adds:
        doc = yaml.safe_load("\n".join(lines(add)))
        written = doc[0].get("add") if isinstance(doc, list) and doc and isinstance(doc[0], dict) else None
        for source, rows in add.rows.items():
            listed = written.get(source) if isinstance(written, dict) and not add.parts else None
            if not isinstance(listed, list) or len(listed) != len(rows):
                plain, listed = False, [None] * len(rows)
            col = et_col.get(source)
            out += [_Row(source, w, _event_micros(r[col]) if col is not None else None, col is not None)
                    for w, r in zip(listed, rows)]
    return out, plain


def _rendered(parts: Sequence[Sequence[_Row]], process: list[str]) -> list[str]:
    """Each part as one `add` (its rows per source, in order) and a `process`; the last with the batch's own."""
    import yaml

    out: list[str] = []
    for n, part in enumerate(parts):
        grouped: dict[str, list] = {}
        for r in part:
            grouped.setdefault(r.source, []).append(r.written)
        flow = yaml.safe_dump(grouped, default_flow_style=True, allow_unicode=True, width=10 ** 9).strip()
        out += [f"- add: {flow}", *(process if n == len(parts) - 1 else ["- process"])]
    return out


# The stateful operators (Spark's progress names) whose state a watermark evicts only where no row on time can
# meet it: an aggregation's (a window, a key holding the event time), a session window's, a join's (its bound),
# a dedup's (a key with the event time; without it, never evicted). Not `dedupeWithinWatermark` (a key expires
# at its first event time plus the delay, and a later duplicate on time may meet it gone), nor state with
# event-time timeouts (`flatMapGroupsWithState`, `applyInPandasWithState`, `transformWithState...`), which a
# watermark moved earlier fires before rows on time arrive.
_EVICTS_ONLY_PAST = frozenset({"stateStoreSave", "sessionWindowStateStoreSaveExec", "symmetricHashJoin", "dedupe"})


def _moves_safely(reference: RunObservation) -> bool:
    """Whether a split's first part may move the watermark (`_split_rows`): every query of the unsplit run has
    at most one stateful operator, of `_EVICTS_ONLY_PAST` (chained operators pass rows emitted by the watermark
    to the next one, timed by the batch they ran in: not judged so)."""
    return all(len(b.operators) <= 1 and all(o.get("operatorName") in _EVICTS_ONLY_PAST for o in b.operators)
               for sr in reference.result.steps for b in sr.batches)


def _reading(sc: m.Scenario, reference: RunObservation) -> tuple[dict[str, int | None], dict[int, list[Any]],
                                                                  dict[Any, list[Any]], Callable[[m.Step], list[str]]]:
    """What a split or a merge reads of the stream and of its unsplit run: each source's event-time column, the
    batches each step ran, each query's batches in order (no-data ones too), and a step's lines as written."""
    et_col = {s.name: (s.column_names.index(s.event_time) if s.event_time else None) for s in sc.sources.values()}
    by_step: dict[int, list[Any]] = {sr.index: list(sr.batches) for sr in reference.result.steps}
    order: dict[Any, list[Any]] = {}
    for sr in reference.result.steps:
        for b in sr.batches:
            order.setdefault(b.query, []).append(b)
    pad = _pad(list(sc.lines), min(s.where.line for s in sc.steps))

    def lines(step: m.Step) -> list[str]:
        return [ln[len(pad):] if ln.startswith(pad) else ln.lstrip() for _, ln in sc.step_text(step)]

    return et_col, by_step, order, lines


def _split_batches(sc: m.Scenario, reference: RunObservation, contract: Contract, firsts: Sequence[bool]
                   ) -> tuple[str, list[str]] | None:
    """The stream's steps with each data batch that can be split in two so split (`_split_rows`, from the
    watermarks of `reference`, the unsplit run), as the scenario text and its step lines; None when none can.
    A data batch is the `add` steps since the previous `process` and that `process`; `firsts`: the drawn
    part of each added row, in order."""
    et_col, by_step, order, lines = _reading(sc, reference)
    steps, may_move = list(sc.steps), _moves_safely(reference)
    out: list[str] = []
    maxima: dict[str, int] = {}
    pending: list[m.AddStep] = []
    row_no, any_split = 0, False
    for k, step in enumerate(steps):
        if isinstance(step, m.AddStep):
            pending.append(step)
            continue
        rows, plain = _batch_rows(sc, pending, et_col, lines)
        parts = None
        batches = [b for b in by_step.get(step.index, []) if b.has_data]
        if isinstance(step, m.ProcessStep) and plain and batches and len(rows) > 1:
            later = next((i for i in range(k + 1, len(steps)) if isinstance(steps[i], m.ProcessStep)), len(steps))
            following, _ = _batch_rows(sc, [s for s in steps[k + 1:later] if isinstance(s, m.AddStep)], et_col, lines)
            choices = [*firsts[row_no: row_no + len(rows)], *[False] * len(rows)][: len(rows)]
            parts = _split_rows(rows, choices, _marks(batches, order), maxima, following, may_move=may_move)
        row_no += len(rows)
        for r in rows:
            if r.et is not None:
                maxima[r.source] = max(maxima.get(r.source, r.et), r.et)
        if parts is None:
            out += [ln for p in pending for ln in lines(p)] + lines(step)
        else:
            any_split = True
            out += _rendered(parts, lines(step))
        pending = []
    out += [ln for p in pending for ln in lines(p)]
    return (with_steps(sc, out), out) if any_split else None


def _merge_rows(later: Sequence[_Row], marks: _Marks, maxima: Mapping[str, int], following: Sequence[_Row],
                end: int | None, *, idle_after: bool, may_move: bool = True) -> bool:
    """Whether data batches N and N+1 (N+1's rows `later`) may run as one batch M, with no row of the stream changing
    between late and on time (Spark's end-of-batch watermark as `_split_rows` says it). M runs where N ran, with
    N's watermarks: N's rows are judged as they were, and N+1's by the late watermark N ran with, L(N) <= E(N),
    where they were by L(N+1) >= L(N): a row late could become on time (by its window, its join bound), never the
    converse. `marks`: N's, `maxima`: each source's largest event time after N, `end`: W(N+1).
    - N moved no watermark (`kept`): N+1 ran with E(N) for eviction and late rows alike, as M does; its rows are as
      they were when E(N) judged N's late rows too (`still`), or when each has an event time after E(N). M leaves
      W(N+1) (each input has read what it had after N+1), and all that follows is the same.
    - Else only where `may_move` (`_moves_safely`): the unsplit run evicted by W(N) before N+1's rows came, M does
      not, which only operators whose state no row on time can meet allow. Every row of N+1 must have an event
      time after W(N) (on time both ways), and read from an input N read already (under the min policy an input
      with its first data would pull M's watermark below W(N)). The batch after M judges late rows by E(N) where
      the unsplit run's did by W(N) or W(N+1), unless a no-data batch runs between (`idle_after`: the unsplit
      run ran one after N, so M, moving the watermark further, is followed by one too, evicting by W(N+1)):
      else every row of it (`following`) must have an event time after W(N+1).
    Rows of a source without an `event_time` move no watermark and are never late; a null event time merges only
    where `still` holds."""
    def after(bound: int | None, rows: Sequence[_Row]) -> bool:
        return bound is not None and all(not r.timed or (r.et is not None and r.et > bound) for r in rows)

    if marks.kept:
        return marks.still or after(marks.before, later)
    if not may_move or any(r.timed and r.source not in maxima for r in later):
        return False
    return after(marks.after, later) and (idle_after or after(end, following))


def _idle_after(ran: Sequence[Any]) -> bool:
    """Whether each query whose data batch moved its watermark ran a no-data batch after it in the same step (Spark
    runs one for a stateful query whose watermark moved, unless `noDataMicroBatches` is off)."""
    for i, b in enumerate(ran):
        if b.has_data and (b.watermark_after_ms or 0) > (b.watermark_before_ms or 0) and not any(
                c.query == b.query and not c.has_data for c in ran[i + 1:]):
            return False
    return True


def _data_batches(sc: m.Scenario, et_col: Mapping[str, int | None], lines: Callable[[m.Step], list[str]]
                  ) -> list[tuple[int, int, list[_Row], int]]:
    """Each data batch as (the position of its first `add` among the steps, of its `process`, its rows, the number
    of its first row among every added row): `add` steps directly followed by a `process`."""
    out: list[tuple[int, int, list[_Row], int]] = []
    start, pending, row_no = None, [], 0
    for k, step in enumerate(sc.steps):
        if isinstance(step, m.AddStep):
            start = k if start is None else start
            pending.append(step)
            continue
        if isinstance(step, m.ProcessStep) and start is not None:
            out.append((start, k, _batch_rows(sc, pending, et_col, lines)[0], row_no))
        row_no += sum(len(rows) for add in pending for rows in add.rows.values())
        start, pending = None, []
    return out


def _merge_batches(sc: m.Scenario, reference: RunObservation, firsts: Sequence[bool]) -> tuple[str, list[str]] | None:
    """The stream's steps with two adjacent data batches N and N+1 (N+1's `add`s right after N's `process`) run as
    one, N's `process` left out, where `_merge_rows` finds it safe from the watermarks of `reference`, the unmerged
    run: the first such pair whose N+1 starts with a row drawn first (`firsts`), else the first; None when no pair
    may merge."""
    et_col, by_step, order, lines = _reading(sc, reference)
    steps, may_move = list(sc.steps), _moves_safely(reference)
    data = _data_batches(sc, et_col, lines)
    maxima: dict[str, int] = {}
    safe: list[int] = []
    for i, (_, end, rows, _) in enumerate(data):
        for r in rows:
            if r.et is not None:
                maxima[r.source] = max(maxima.get(r.source, r.et), r.et)
        if i + 1 == len(data) or data[i + 1][0] != end + 1:
            continue
        ran = by_step.get(steps[end].index, [])
        mine = [b for b in ran if b.has_data]
        ran_next = [b for b in by_step.get(steps[data[i + 1][1]].index, []) if b.has_data]
        if not mine or not ran_next:
            continue
        following = data[i + 2][2] if i + 2 < len(data) else []
        if _merge_rows(data[i + 1][2], _marks(mine, order), maxima, following, _marks(ran_next, order).after,
                       idle_after=_idle_after(ran), may_move=may_move):
            safe.append(i)
    if not safe:
        return None
    pick = next((i for i in safe if data[i + 1][3] < len(firsts) and firsts[data[i + 1][3]]), safe[0])
    out = [ln for k, s in enumerate(steps) if k != data[pick][1] for ln in lines(s)]
    return with_steps(sc, out), out


def _operators_text(obs: RunObservation, query: str, contract: Contract) -> str:
    named = _sink_names(contract, obs.stream)
    last = [b for sr in obs.result.steps for b in sr.batches if named.get(b.query, str(b.query)) == query]
    ops = last[-1].operators if last else []
    shown = ", ".join(f"{o.get('operatorName')} {o.get('numRowsTotal')}" for o in ops)
    return f" ({shown})" if shown else ""


def _declared_delay(contract: Contract, params: Mapping[str, Any] | None) -> tuple[str, str]:
    """The watermark delay the streams are drawn around: a duration parameter named for it (its given
    value, else its default), else 10 seconds; and where it came from, as the check says it."""
    for p in contract.params:
        if p.kind == "duration" and ("watermark" in p.name or "delay" in p.name):
            value = (params or {}).get(p.name, p.default)
            if value is not None:
                return str(value), f"the contract's parameter {p.name!r}"
    return "10 seconds", "the default: no duration parameter of the contract names a watermark or delay; --delay sets it"


def _ms(text: str) -> int:
    from .timeparse import parse_duration

    return parse_duration(text).total_ms


def _resolution(delay: str) -> str:
    """Steps of a tenth of the delay (whole seconds at least), so that a few events cross it."""
    return f"{max(_ms(delay) // 10 // 1000, 1)}s"


def _step(delay: str) -> str:
    """The true clock moves by up to twice the delay per event: a handful of events close windows."""
    return f"{max(_ms(delay) * 2 // 1000, 1)}s"


# `stream-equals-batch` (`streambatch` holds its pieces that read no other property's: the batch run, the
# late rows told from Spark's counts, the comparison): the stream's batches read, rewritten and judged here.


def _sb_batches(sc: m.Scenario, obs: Any, lines: Callable[[m.Step], list[str]]) -> list[Any] | None:
    """The stream's data batches with what the run `obs` saw them do; None when a batch's rows are not written
    as plain lists per source (rows in partitions: not rewritten) or rows are added where no `process` ends
    their batch."""
    from .streambatch import Batch

    et_col = {s.name: (s.column_names.index(s.event_time) if s.event_time else None) for s in sc.sources.values()}
    seen = {sr.index: list(sr.batches) for sr in obs.result.steps}
    out: list[Any] = []
    pending: list[m.AddStep] = []
    for step in sc.steps:
        if isinstance(step, m.AddStep):
            pending.append(step)
            continue
        if not pending:
            continue
        if not isinstance(step, m.ProcessStep):
            return None
        rows, plain = _batch_rows(sc, pending, et_col, lines)
        if not plain:
            return None
        values = [tuple(r) for add in pending for rs in add.rows.values() for r in rs]
        ran = seen.get(step.index, [])
        data = [b for b in ran if b.has_data]
        mark = max([(b.watermark_before_ms or 0) for b in data] or [0]) * 1000
        out.append(Batch(rows, values, step, list(pending), mark, sum(b.dropped for b in ran)))
        pending = []
    return out


def _sb_lines(sc: m.Scenario) -> Callable[[m.Step], list[str]]:
    """Each step's lines as written, without the steps' indent."""
    pad = _pad(list(sc.lines), min(s.where.line for s in sc.steps))
    return lambda step: [ln[len(pad):] if ln.startswith(pad) else ln.lstrip() for _, ln in sc.step_text(step)]


def _sb_without(sc: m.Scenario, batches: Sequence[Any], late: Sequence[tuple[int, int]],
                lines: Callable[[m.Step], list[str]]) -> list[str]:
    """The stream's steps with the `late` rows (batch, position) taken out of their `add`s, each data batch's
    remaining rows in one `add` before its `process`, every other step as written."""
    gone = set(late)
    by_process = {b.process.index: k for k, b in enumerate(batches)}
    out: list[str] = []
    pending: list[str] = []
    for step in sc.steps:
        if isinstance(step, m.AddStep):
            pending += lines(step)
            continue
        k = by_process.get(step.index)
        if k is None:
            out += pending + lines(step)
        else:
            kept = [r for i, r in enumerate(batches[k].rows) if (k, i) not in gone]
            out += _rendered([kept], lines(step)) if kept else lines(step)
        pending = []
    return out + pending


def _sb_confirmed(judge: Any, sc: m.Scenario, batches: Sequence[Any], late: Sequence[tuple[int, int]],
                  tail: Sequence[str], full: Any, mode: str) -> str | None:
    """None when the stream without the `late` rows drops nothing and gives the same final output (so Spark
    dropped exactly those); else why the stream is not judged."""
    again = judge.run(with_steps(sc, [*_sb_without(sc, batches, late, _sb_lines(sc)), *tail]))
    if not judge.usable(again):
        return "the stream without its rows behind the watermark could not be run"
    dropped = sum(b.dropped for sr in again.result.steps for b in sr.batches)
    if dropped or _final(again, judge.contract, mode).stream != _final(full, judge.contract, mode).stream:
        return ("the rows behind the watermark were not the rows Spark dropped as late (without them the stream "
                "drops or writes something else): which rows were late cannot be told")
    return None


def judge_stream_batch(judge: Any, sc: m.Scenario) -> None:
    """`stream-equals-batch` on one drawn stream; `judge` is the property's `properties._PropertyJudge` (its
    `spec` the `BatchRunner`): a held stream is counted, one not judged is counted with the reason, a broken
    one leaves its counterexample (`_sb_broken`)."""
    from .streambatch import compare, kept_rows, late_rows, unjudged_operators

    contract, report, batch = judge.contract, judge.report, judge.spec
    mode = sc.params.get("output_mode") or (contract.output_modes or ("append",))[0]
    if mode == "update" and not contract.key:
        report.not_judged["update mode with no declared `key:`: the last row per key is not defined"] += 1
        return
    closing = closing_steps(contract, judge.pools)[:4] if any(s.event_time for s in contract.sources) else []
    full = judge.run(with_step_after(sc, 0, "", tail=[*closing, *judge.ends]))
    if not judge.usable(full):
        return
    batches = _sb_batches(sc, full, _sb_lines(sc))
    late, why = ([], "rows added where no `process` ends their batch") if batches is None else late_rows(batches)
    why = why or unjudged_operators(full)
    if why is None and late:
        why = _sb_confirmed(judge, sc, batches or [], late, [*closing, *judge.ends], full, mode)
    if why is None:
        alone = judge.run(with_steps(sc, [*closing, *judge.ends])) if closing else None
        if alone is not None and not judge.usable(alone):
            return
        got = batch(full.result.scenario, kept_rows(sc, batches or [], late, full))
        closing_got = batch(full.result.scenario, kept_rows(sc, [], [], full)) if closing else Counter()
        why = got if isinstance(got, str) else closing_got if isinstance(closing_got, str) else None
    if why is not None:
        report.not_judged[why[:300]] += 1
        return
    stream = _final(full, contract, mode).stream.get(None, Counter())
    stream_closing = _final(alone, contract, mode).stream.get(None, Counter()) if alone is not None else Counter()
    assert isinstance(got, Counter) and isinstance(closing_got, Counter)
    expected, more, fewer = compare(stream, got, stream_closing, closing_got)
    if not more and not fewer:
        report.held_on += 1
        batch.late_judged += bool(late)
        report.compared = (f"the query's final output against the transform applied as a batch; {batch.late_judged} "
                           "of the streams it held on had rows Spark dropped as late, left out of the batch's input")
        return
    _sb_broken(judge, sc, full, [*closing, *judge.ends], mode, more, fewer)


def _sb_broken(judge: Any, sc: m.Scenario, full: Any, tail: Sequence[str], mode: str, more: Counter,
               fewer: Counter) -> None:
    """The counterexample: the stream with its closing steps, its `output` check holding what the batch gave."""
    types = [c.type for c in judge.contract.output]
    why = [f"the stream's final output has {sum(c.values())} row(s) {what} than the batch result: {_rows(c, types)}"
           for c, what in ((more, "more"), (fewer, "fewer")) if c]
    if not full.stream:  # the query wrote nothing: its `output` check still holds what the batch gave
        full = RunObservation(full.text, full.result, {None: Counter()}, full.written)
    reference = _corrected(full, judge.contract, _Verdict(why, {"output": more}, {"output": fewer}))
    keep = (lambda line: "written:" not in line and "table:" not in line) if mode != "update" else (
        lambda line: False)
    note = ("Its expect steps hold what the transform applied as a batch to the rows that were not late gave (after "
            "closing events passed the watermark); reproduce: eventtime run THIS_FILE (it fails at the output check).")
    if mode == "update":
        note += " Update mode: the file cannot say 'the last row per key', so it checks nothing: What broke says it."
    body = filled(_renamed(with_step_after(sc, 0, "", tail=tail), STREAM_BATCH), reference, lookup=judge.lookup,
                  keep=keep)
    judge.broken(why, _header(STREAM_BATCH, why, note) + body)
