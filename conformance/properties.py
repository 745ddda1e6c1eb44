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
- `restart-transparency`: a restart (in the same, or in a new session) after a batch changes no output.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from eventtime.harness.waits import DEFAULT_TIMEOUT

from . import spec as m
from .contracts import Contract
from .results import ERROR, NOT_APPLICABLE, ScenarioResult

__all__ = ["PROPERTIES", "RunObservation", "Counterexample", "PropertyReport", "CheckReport",
           "check_properties", "stream_of", "observe_run"]

PROPERTIES = ("no-query-dies", "exactly-once-rerun", "restart-transparency")
TITLES = {
    "no-query-dies": "no generated value of the declared types stops a query",
    "exactly-once-rerun": "a batch run again after a crash leaves the sinks as a plain restart does",
    "restart-transparency": "a restart after a batch changes no output",
}


def _pad(lines: Sequence[str], first_step_line: int) -> str:
    line = lines[first_step_line - 1]
    return " " * (len(line) - len(line.lstrip()))


def with_step_after(scenario: m.Scenario, index: int, step: str, *, tail: Sequence[str] = ()) -> str:
    """The scenario's text with `step` (one line of YAML, e.g. `- restart`) after its step `index`
    (1-based; 0: no step inserted) and the `tail` steps at the end, every other line as written."""
    lines = list(scenario.lines)
    steps = list(scenario.steps)
    first = min(s.where.line for s in steps)
    pad = _pad(lines, first)
    head = lines[: first - 1]
    body: list[str] = []
    for s in steps:
        body += [text for _, text in scenario.step_text(s)]
        if s.index == index:
            body.append(pad + step)
    body += [pad + t for t in tail]
    return "\n".join(head + body) + "\n"


def observation_steps(contract: Contract, tables: Sequence[str] = (), *, stream: bool = True) -> list[str]:
    """The expect steps, without values, that make a run observe what the job left at the end: each
    query's whole output (`stream`), each `kind: path` parameter's folder, each table in `tables`."""
    out = []
    if stream:
        names = [q.name for q in contract.queries]
        out += [f"- expect: {{query: {n}, output: }}" for n in names] if names else ["- expect: {output: }"]
    out += [f"- expect: {{written: {p.name}, rows: }}" for p in contract.params if p.kind == "path"]
    out += [f"- expect: {{table: {t}, rows: }}" for t in tables]
    return out


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
class Counterexample:
    """The smallest stream a property broke on: the scenario text that shows it, and why."""

    prop: str
    contract: str
    text: str  # the variant's scenario, its observation steps filled with the values the property demands
    why: list[str]

    def write(self, out_dir: str | Path) -> Path:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.prop}-{self.contract.replace('_', '-')}.scenario.yaml"
        path.write_text(self.text, encoding="utf-8")
        return path


def _header(prop: str, why: Sequence[str], note: str) -> str:
    lines = [f"# Generated by `eventtime check-properties`: this stream breaks the property {prop!r}",
             f"# ({TITLES[prop]}).", f"# {note}", "# What broke:"]
    lines += ["#   " + re.sub(r"\s+", " ", w).strip()[:300] for w in why]
    return "\n".join(lines) + "\n"


def _renamed(text: str, prop: str) -> str:
    """The generated scenario named and described for the property it breaks."""
    text = re.sub(r"^scenario: generated-", f"scenario: {prop}-", text, count=1, flags=re.M)
    return re.sub(r"^description: .*$", f"description: 'Shrunk by eventtime check-properties: {TITLES[prop]}.'",
                  text, count=1, flags=re.M)


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


@dataclass
class PropertyReport:
    """One property over a check: how many generated streams it held on, was not judged on (and
    why), and its shrunk counterexample if it broke."""

    prop: str
    held_on: int = 0
    not_judged: Counter = field(default_factory=Counter)
    counterexample: Counterexample | None = None
    written: Path | None = None
    error: str | None = None  # Hypothesis or the kit stopped the check (not a verdict on the job)

    @property
    def held(self) -> bool:
        return self.counterexample is None and self.error is None and self.held_on > 0

    def describe(self) -> str:
        if self.error is not None:
            return f"{self.prop}: not checked: {self.error}"
        skipped = sum(self.not_judged.values())
        tail = (f", not judged on {skipped} (" + "; ".join(f"{n}: {why}" for why, n in self.not_judged.most_common(3))
                + ")") if skipped else ""
        if self.counterexample is not None:
            where = f"; written: {self.written}" if self.written else ""
            return (f"{self.prop}: BROKEN ({TITLES[self.prop]}); held on {self.held_on} of the streams tried{tail}"
                    f"{where}\n" + "\n".join("  " + w for w in self.counterexample.why))
        if not self.held_on:
            return f"{self.prop}: judged on no generated stream{tail}: nothing was checked"
        return f"{self.prop}: held on {self.held_on} generated stream(s){tail}"


@dataclass
class CheckReport:
    contract: str
    properties: list[PropertyReport]

    @property
    def held(self) -> bool:
        return all(p.held for p in self.properties)

    def describe(self) -> str:
        return "\n".join(p.describe() for p in self.properties)


class _Broken(AssertionError):
    """A property broke on a generated stream (Hypothesis shrinks on this)."""


class _KitError(RuntimeError):
    """The kit could not run a stream (a dead driver, a fault of the machine): the check stops, unjudged."""


def check_properties(contract: Contract, pipeline: Any, *, session: Any, properties: Sequence[str] = PROPERTIES,
                     lookup: Any = None, max_examples: int = 20, seed: int | None = None, derandomize: bool = False,
                     database: Any = "default", delay: str | None = None, max_events: int = 8,
                     tables: Sequence[str] = (), pools: Mapping[str, Any] | None = None,
                     params: Mapping[str, Any] | None = None, out_dir: str | Path | None = None,
                     timeout: float = DEFAULT_TIMEOUT, progress: Callable[[str], None] | None = None,
                     hypothesis_settings: Any = None, conf: Mapping[str, str] | None = None) -> CheckReport:
    """Check each of `properties` on up to `max_examples` streams generated from `contract`, run against
    `pipeline` on `session`. A broken property's shrunk stream is written under `out_dir` (None: not
    written; never in CI, where the text is kept in the report only). `hypothesis_settings` (a
    `hypothesis.settings`) replaces the ones built from `max_examples`, `derandomize` and `database`."""
    from hypothesis import HealthCheck, Phase, settings

    from .registry import ContractLookup
    from .snapshot import in_ci
    from .strategies import scenarios

    unknown = [p for p in properties if p not in PROPERTIES]
    if unknown:
        raise ValueError(f"unknown propert{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                         f"(known: {', '.join(PROPERTIES)})")
    lookup = lookup or ContractLookup((), extra=[contract])
    delay = delay or _declared_delay(contract, params)
    streams = scenarios(contract, typed=True, delay=delay, max_events=max_events, restarts=False, triggers=False,
                        idle=True, pools=pools, params=params, contracts=lookup,
                        resolution=_resolution(delay), max_step=_step(delay))
    if hypothesis_settings is None:
        kwargs: dict[str, Any] = {"max_examples": max_examples, "deadline": None, "derandomize": derandomize,
                                  "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                                            HealthCheck.filter_too_much],
                                  # not the `explain` phase: it runs the shrunk stream's variants again, each a
                                  # Spark run, to say which parts mattered; the written file says it instead
                                  "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]}
        if database != "default":
            kwargs["database"] = database
        hypothesis_settings = settings(**kwargs)
    tell = progress or (lambda _: None)
    observed: dict[str, RunObservation] = {}

    def run(text: str) -> RunObservation:
        if text not in observed:
            obs = observe_run(text, contract, lookup=lookup, pipeline=pipeline, session=session, timeout=timeout,
                              path=f"<generated {contract.name} stream>", conf=conf)
            if obs.kit_error is not None:  # the kit's or the machine's trouble: never a verdict on the job
                raise _KitError(f"the kit could not run a generated stream: {obs.kit_error}")
            observed[text] = obs
        return observed[text]

    reports = []
    for prop in properties:
        report = PropertyReport(prop)
        reports.append(report)
        tell(f"eventtime: checking {prop} ({TITLES[prop]}) on up to {hypothesis_settings.max_examples} "
             f"generated stream(s)")
        target = pipeline if isinstance(pipeline, str) else (
            f"{getattr(pipeline, '__module__', '')}:{getattr(pipeline, '__qualname__', repr(pipeline))}")
        _check_one(report, streams, hypothesis_settings, seed, run, observation_steps(contract, tables), contract,
                   lookup, key=f"eventtime check-properties {contract.name} {prop} {target}")
        if report.counterexample is not None and out_dir is not None and not in_ci():
            report.written = report.counterexample.write(out_dir)
        tell(report.describe())
    return CheckReport(contract.name, reports)


def _check_one(report: PropertyReport, streams: Any, hypothesis_settings: Any, seed: int | None,
               run: Callable[[str], RunObservation], ends: Sequence[str], contract: Contract, lookup: Any, *,
               key: str) -> None:
    """Run one property's Hypothesis test; its outcome goes into `report`. `key`: where Hypothesis's database
    keeps its examples (one per contract, property and pipeline, so a broken stream is tried first on the
    next check of the same three, and never replayed for another)."""
    from hypothesis import given, seed as hseed, strategies as st

    prop = report.prop

    def points(sc: m.Scenario) -> list[int]:
        """After a `process` that read rows: a data batch ran, nothing is left pending."""
        out, added = [], False
        for s in sc.steps:
            if isinstance(s, m.AddStep):
                added = True
            elif isinstance(s, m.ProcessStep) and added:
                out.append(s.index)
                added = False
        return out

    def draw_case(sc: m.Scenario) -> Any:
        where = points(sc)
        if prop == "no-query-dies" or not where:
            return st.just((sc, 0, "same"))
        return st.tuples(st.just(sc), st.sampled_from(where), st.sampled_from(("same", "new")))

    cases = streams.flatmap(draw_case)

    @hypothesis_settings
    @given(cases)
    def holds(case: tuple[m.Scenario, int, str]) -> None:
        if report.error is not None:  # the kit failed on an earlier stream: nothing more is judged
            return
        try:
            judge(case)
        except _KitError as exc:  # never shrunk as if it were the job's failure
            report.error = str(exc)

    def judge(case: tuple[m.Scenario, int, str]) -> None:
        sc, point, session_kind = case
        base_text = with_step_after(sc, 0, "", tail=ends)
        if prop == "no-query-dies":
            base = run(base_text)
            if not base.applicable:
                report.not_judged[f"not applicable: {base.result.reason}"] += 1
                return
            if base.died is not None:
                why = [f"the run ended in an error{_error_class(base.died)}: {base.died}"]
                text = _header(prop, why, "Reproduce: eventtime run THIS_FILE (it ends in the same error).")
                report.counterexample = Counterexample(prop, contract.name, text + _renamed(
                    with_step_after(sc, 0, ""), prop), why)
                raise _Broken("\n".join(why))
            report.held_on += 1
            return
        if not point:
            report.not_judged["no batch read rows"] += 1
            return
        restart = "- restart" if session_kind == "same" else "- restart: {session: new}"
        if prop == "exactly-once-rerun":
            reference = run(with_step_after(sc, point, restart, tail=ends))
            variant_text = with_step_after(sc, point, "- restart: {rerun_last_batch: true}", tail=ends)
        else:
            reference = run(base_text)
            variant_text = with_step_after(sc, point, restart, tail=ends)
        variant = run(variant_text)
        for o in (reference, variant):
            if not o.applicable:
                report.not_judged[f"not applicable: {o.result.reason}"] += 1
                return
            if o.died is not None:  # `no-query-dies` says so; nothing to compare here
                report.not_judged["the run ended in an error"] += 1
                return
        why = reference.differences(variant)
        if not why:
            report.held_on += 1
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
        if stream_differs:
            note += " The re-run batch's own rows differed too (a batch that is not deterministic)."
        body = filled(_renamed(variant_text, prop), reference, lookup=lookup, keep=keep)
        report.counterexample = Counterexample(prop, contract.name, _header(prop, why, note) + body, why)
        raise _Broken("\n".join(why))

    # the test function is the same code for every property: Hypothesis would key them all alike
    holds._hypothesis_internal_database_key = key.encode("utf-8")
    test = hseed(seed)(holds) if seed is not None else holds
    try:
        test()
    except _Broken:
        pass
    except Exception as exc:  # noqa: BLE001 - Hypothesis (unsatisfiable, flaky) or the kit: said, not a verdict
        text = str(exc).strip()
        report.error = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"

def _declared_delay(contract: Contract, params: Mapping[str, Any] | None) -> str:
    """The watermark delay the streams are drawn around: a duration parameter named for it (its given
    value, else its default), else 10 seconds."""
    for p in contract.params:
        if p.kind == "duration" and ("watermark" in p.name or "delay" in p.name):
            value = (params or {}).get(p.name, p.default)
            if value is not None:
                return str(value)
    return "10 seconds"


def _ms(text: str) -> int:
    from .timeparse import parse_duration

    return parse_duration(text).total_ms


def _resolution(delay: str) -> str:
    """Steps of a tenth of the delay (whole seconds at least), so that a few events cross it."""
    return f"{max(_ms(delay) // 10 // 1000, 1)}s"


def _step(delay: str) -> str:
    """The true clock moves by up to twice the delay per event: a handful of events close windows."""
    return f"{max(_ms(delay) * 2 // 1000, 1)}s"
