"""Hypothesis strategies that generate event-time scenarios: disordered, late, duplicated, idle, restarted, split.

    from hypothesis import given
    from eventtime.strategies import scenarios

    @given(scenarios("tumbling_count", out_of_orderness="2s"))
    def test_nothing_is_dropped_when_the_delay_covers_the_disorder(scenario): ...

A generated scenario is a `eventtime.spec.Scenario`, written with `ScenarioBuilder` and read by
the same loader as a scenario file, so whatever runs a file (the model's `simulate`, the
harness) runs it. It has no `expect` steps: fill them from the model (`eventtime expect`) to
run it on Spark. What the strategies vary:

- event times: a "true" clock moves forward by random steps; each event lags it by up to the
  out-of-orderness bound (bounded disorder: no event is more than the bound behind the largest
  time seen), or by any amount including far-past rows (`out_of_orderness=None`);
- late rows and duplicate timestamps, duplicate events (the same row delivered again);
- several sources, with idle spells (a run of batches where one source gets nothing);
- batch splits (rows of one batch in several `add`s, i.e. input partitions; adds that wait for
  the next batch), restarts (`restart`, or `stop`, adds while stopped, `start`), no-data batches
  on or off, processing-time triggers driven by `advance`;
- the contract's parameters, drawn from values Spark accepts.

For any contract (a user's own, a job's): `scenarios(contract, typed=True, delay="10 minutes")`
draws every column from its declared type (`typed_values`: nulls, empty and unicode text, text
that looks like a time with an offset, integer bounds, whole-second and sub-millisecond
timestamps, far-past rows), and event times late by less than, exactly, and more than the
watermark delay (`delay`). The property checks (`eventtime.properties`) run these.

Needs the `hypothesis` package (the `test` extra).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hypothesis import strategies as st

from .contracts import Contract
from .registry import CONTRACTS
from .spec import Scenario
from .timeparse import format_time, parse_duration, parse_time

if TYPE_CHECKING:
    from .builder import ScenarioBuilder

__all__ = ["Event", "event_times", "events", "contract_params", "scenarios", "typed_values", "not_generated",
           "GENERATED_CONTRACTS",
           "T0", "TEXT_EDGES"]

T0 = parse_time("2024-01-01T00:00:00Z")  # epoch microseconds
MS = 1000
KEYS = ("a", "b", "c")
GAPS = ("1 second", "3 seconds", "5 seconds", "10 seconds", "0 seconds")
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
# Every bundled contract Spark runs (not a `model_only` one); processing_time_stamp has no watermark but
# still runs on the model.
GENERATED_CONTRACTS = tuple(sorted(n for n, c in CONTRACTS.items() if not c.model_only))


@dataclass(frozen=True)
class Event:
    """One input row: which source it goes to and its values by column (timestamps in epoch µs)."""

    source: str
    values: Mapping[str, Any]

    @property
    def ts(self) -> int:
        return self.values["ts"]


def _ms(duration: str | int | None) -> int | None:
    if duration is None or isinstance(duration, int):
        return duration
    return parse_duration(duration).total_ms


@st.composite
def event_times(draw: Any, *, min_size: int = 1, max_size: int = 12, out_of_orderness: str | int | None = "5s",
                max_step: str | int = "6s", resolution: str | int = "1s", start: int = T0,
                duplicates: bool = True, delay: str | int | None = None, edges: bool = False) -> list[int]:
    """Event times (epoch µs) in arrival order.

    A true clock starts at `start` and moves by 0..`max_step` per event, in multiples of
    `resolution` (coarse steps make ties with window ends likely). With `out_of_orderness` (a
    duration) each event lags the clock by up to that bound, so no event is more than the bound
    behind the largest time seen; with None, an event may lag by anything up to a year (late
    rows, far-past rows). With `duplicates`, an event may repeat an earlier time that is still
    within the bound.

    With `delay` (the watermark delay the job is believed to use) the lag is drawn around it instead:
    within it, exactly it (on the watermark's boundary), one `resolution` beyond it, or far past (an
    hour, a day, a year). With `edges`, a time is moved by a few microseconds or milliseconds off its
    whole second (sub-millisecond values, which a parse or a cast to milliseconds may lose).
    """
    unit = _ms(resolution) or 1
    late = _ms(delay)
    bound = _ms(out_of_orderness)
    step_units = max((_ms(max_step) or 0) // unit, 0)
    n = draw(st.integers(min_size, max_size))
    clock: int = start
    seen: int | None = None
    out: list[int] = []
    for _ in range(n):
        clock += draw(st.integers(0, step_units)) * unit * MS
        if duplicates and out and draw(st.integers(0, 4)) == 0:
            candidates = [t for t in out if bound is None or seen is None or t >= seen - bound * MS]
            if candidates:
                out.append(draw(st.sampled_from(candidates)))
                continue
        if late is not None:
            lag = draw(st.one_of(st.integers(0, max(late // unit, 0)).map(lambda u: u * unit * MS),
                                 st.sampled_from((late * MS, (late + unit) * MS)),
                                 st.sampled_from([3_600, 86_400, 365 * 86_400]).map(lambda s: s * 1_000_000)))
        elif bound is None:
            lag = draw(st.one_of(st.integers(0, 30) .map(lambda u: u * unit * MS),
                                 st.sampled_from([3_600, 86_400, 365 * 86_400]).map(lambda s: s * 1_000_000)))
        else:
            lag = draw(st.integers(0, bound // unit)) * unit * MS
        ts = clock - lag
        if edges:
            ts += draw(st.sampled_from((0, 0, 0, 1, 999, 1_000, 123_456, 999_999)))
        out.append(ts)
        seen = ts if seen is None else max(seen, ts)
    return out


def _value(column: str, col_type: str) -> st.SearchStrategy[Any]:
    if column in ("key", "id"):
        return st.sampled_from(KEYS)
    if column == "gap":
        return st.sampled_from(GAPS)
    if col_type in ("long", "int"):
        return st.one_of(st.none(), st.integers(-5, 100))
    if col_type == "double":
        return st.one_of(st.none(), st.floats(-100, 100, allow_nan=False))
    if col_type == "boolean":
        return st.booleans()
    return st.sampled_from(KEYS)


# Text a job may parse: times with and without fractions, with an offset, one that does not parse,
# plus empty, blank, unicode (a combining accent, CJK, an emoji) and number-like text.
TEXT_EDGES = ("", " ", "é", "e\u0301", "日本", "🙂", "2024-01-01T00:00:03+02:00", "2024-01-01 00:00:03",
              "2024-01-01T00:00:03.5Z", "2024-01-01T00:00:03.123456Z", "00:00:03", "not a time", "0", "-1", "null")
_FAR = (-62_135_596_800_000_000, 0, 253_402_300_799_000_000)  # 0001-01-01, the epoch, 9999-12-31T23:59:59


def typed_values(ctype: Any, *, nullable: bool = True, pool: Any = None) -> st.SearchStrategy[Any]:
    """Values of a column type (`coltypes.ColumnType`, or its text) as a scenario file writes them:
    timestamps as ISO-8601 text, dates as `YYYY-MM-DD`, decimals as quoted text, binary as
    `{base64: ...}`, maps as `[key, value]` pairs, structs by field name. With `nullable`, null too
    (nested elements and fields as well). `pool`: the values to draw from instead (a narrowed
    strategy), null still added where nullable."""
    from .coltypes import parse_type

    t = parse_type(ctype) if isinstance(ctype, str) else ctype
    values = None if pool is None else tuple(pool)
    try:
        hash(values)
    except TypeError:  # a pool of lists or mappings: built each time
        return _typed.__wrapped__(t, nullable, values)
    return _typed(t, nullable, values)


@lru_cache(maxsize=256)
def _typed(t: Any, nullable: bool, pool: tuple | None) -> st.SearchStrategy[Any]:
    """`typed_values`, built once per type (a strategy is built and validated once, then drawn from often)."""
    import base64
    import datetime as _dt
    import decimal

    from .coltypes import INTEGRAL_RANGES

    k = t.kind
    base: st.SearchStrategy[Any]
    if pool is not None:
        base = st.sampled_from(tuple(pool))
    elif k == "string":
        base = st.one_of(st.sampled_from(KEYS), st.sampled_from(TEXT_EDGES), st.text(max_size=4))
    elif k in INTEGRAL_RANGES:
        bits = INTEGRAL_RANGES[k]
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        base = st.one_of(st.integers(-5, 100), st.sampled_from((0, lo, hi)))
    elif k in ("float", "double"):
        base = st.one_of(st.floats(-100, 100, allow_nan=False, width=32 if k == "float" else 64),
                         st.sampled_from((0.0, -0.0, float("inf"), float("-inf"))))
    elif k == "decimal":
        whole = 10 ** (t.precision - t.scale) - 1 if t.precision > t.scale else 0
        base = st.one_of(st.integers(-100, 100), st.sampled_from((0, whole, -whole))).flatmap(
            lambda n: st.integers(0, 10 ** t.scale - 1).map(
                lambda f: str(decimal.Decimal(n) + (decimal.Decimal(f).scaleb(-t.scale) if n >= 0 else
                                                    -decimal.Decimal(f).scaleb(-t.scale)))))
    elif k == "boolean":
        base = st.booleans()
    elif k == "date":
        base = st.one_of(st.dates(_dt.date(2023, 12, 1), _dt.date(2024, 2, 1)),
                         st.sampled_from((_dt.date(1, 1, 1), _dt.date(1970, 1, 1), _dt.date(9999, 12, 31)))
                         ).map(lambda d: d.isoformat())
    elif k in ("timestamp", "timestamp_ntz"):
        near = st.integers(0, 3_600_000_000).map(lambda u: T0 + u)
        whole = st.integers(0, 3_600).map(lambda s: T0 + s * 1_000_000)
        base = st.one_of(near, whole, st.sampled_from(_FAR)).map(format_time)
        if k == "timestamp_ntz":  # no zone: the local date and time
            base = base.map(lambda text: text.rstrip("Z"))
    elif k == "binary":
        base = st.binary(max_size=4).map(lambda b: {"base64": base64.b64encode(b).decode("ascii")})
    elif k == "array":
        assert t.element is not None
        base = st.lists(_typed(t.element, True, None), max_size=3)
    elif k == "map":
        assert t.key is not None and t.value is not None
        vt = t.value
        base = st.lists(_typed(t.key, False, None), max_size=2, unique_by=repr).flatmap(
            lambda keys: st.tuples(*[_typed(vt, True, None) for _ in keys]).map(
                lambda values: [[key, v] for key, v in zip(keys, values)]))
    elif k == "struct":
        base = st.fixed_dictionaries({name: _typed(ft, True, None) for name, ft in t.fields})
    else:
        raise ValueError(f"no generated values for the type {t.ddl} (column type {k!r})")
    # null one draw in five (it shrinks to null: a null that breaks a job is the simplest value)
    return st.one_of(st.none(), base, base, base, base) if nullable else base


@st.composite
def events(draw: Any, contract: str | Contract = "tumbling_count", *, max_events: int = 12,
           out_of_orderness: str | int | None | Mapping[str, Any] = "5s", resolution: str | int = "1s",
           idle: bool = True, typed: bool = False, delay: str | int | None = None, max_step: str | int = "6s",
           pools: Mapping[str, Any] | None = None) -> list[Event]:
    """Events for a contract's sources, in arrival order. Two-source contracts get idle spells:
    runs of consecutive events that all go to one source. `out_of_orderness` may map each
    source to its own bound.

    `typed`: every column but the event time drawn by `typed_values` from its declared type
    (nulls included), the event time with edge values and lags around `delay`; `pools` narrows a
    column (`{"page": ["home", "cart"]}`, or `{"clicks.page": ...}` for one source's)."""
    c = CONTRACTS[contract] if isinstance(contract, str) else contract
    names = [s.name for s in c.sources]
    bounds = out_of_orderness if isinstance(out_of_orderness, Mapping) else {n: out_of_orderness for n in names}
    n = draw(st.integers(1, max_events))
    # which source each event goes to: runs of one source when `idle`, else any
    if len(names) == 1:
        targets = [names[0]] * n
    elif idle:
        targets = []
        while len(targets) < n:
            targets += [draw(st.sampled_from(names))] * draw(st.integers(1, 4))
        targets = targets[:n]
    else:
        targets = [draw(st.sampled_from(names)) for _ in range(n)]
    # one true clock shared by the sources, each with its own disorder bound
    extra: dict[str, Any] = {"delay": delay, "edges": True, "max_step": max_step} if typed else {}
    times = {name: iter(draw(event_times(min_size=targets.count(name), max_size=targets.count(name),
                                         out_of_orderness=bounds[name], resolution=resolution, **extra)))
             for name in names if targets.count(name)}
    out = []
    for name in targets:
        spec = c.source(name)
        assert spec is not None  # targets come from the contract's sources
        ts_col = (spec.event_time or "ts") if typed else "ts"
        if typed:
            chosen = pools or {}
            values = {col.name: draw(typed_values(col.ctype, pool=chosen.get(f"{name}.{col.name}",
                                                                             chosen.get(col.name))))
                      for col in spec.columns if col.name != ts_col}
        else:
            values = {col.name: draw(_value(col.name, col.type)) for col in spec.columns if col.name != "ts"}
        values[ts_col] = next(times[name])
        out.append(Event(name, values))
        if draw(st.integers(0, 9)) == 0:  # the same row delivered again
            out.append(Event(name, dict(values)))
    return out


_DELAYS = ("0s", "2s", "5s", "10s")
# Choices a contract lists that Spark refuses at start: complete mode needs an aggregation.
_RUNNABLE = {("processing_time_stamp", "output_mode"): ("append", "update")}


@st.composite
def contract_params(draw: Any, contract: str | Contract) -> dict[str, Any]:
    """Parameters for a contract, drawn from values Spark accepts (a slide divides its window, an
    outer window is a multiple of the inner one, output modes the contract allows)."""
    c = CONTRACTS[contract] if isinstance(contract, str) else contract
    p: dict[str, Any] = {}
    window = draw(st.sampled_from((5, 10, 20)))
    for spec in c.params:
        if spec.profile == "dataflow":  # a trigger setting only the dataflow profile's model takes: its default
            continue
        if spec.kind == "choice":
            p[spec.name] = draw(st.sampled_from(_RUNNABLE.get((c.name, spec.name), spec.choices)))
        elif spec.name == "window":
            p[spec.name] = f"{window}s"
        elif spec.name == "slide":
            p[spec.name] = f"{draw(st.sampled_from([d for d in (1, 2, 5, 10, 20) if window % d == 0]))}s"
        elif spec.name == "outer_window":
            p[spec.name] = f"{window * draw(st.sampled_from((1, 2, 3)))}s"
        elif spec.name in ("gap", "timeout", "hold"):
            p[spec.name] = draw(st.sampled_from(("2s", "5s", "10s")))
        elif spec.name == "bound":
            p[spec.name] = draw(st.sampled_from(("0s", "2s", "5s")))
        else:  # watermark delays
            p[spec.name] = draw(st.sampled_from(_DELAYS))
    return p


def _iso(micros: int) -> str:
    return format_time(micros)  # ISO-8601 with Z: exact whatever the scenario's date


def _row(event: Event, contract: Contract) -> list[Any]:
    spec = contract.source(event.source)
    assert spec is not None
    out = []
    for c in spec.columns:
        v = event.values[c.name]
        if c.type in ("timestamp", "timestamp_ntz") and isinstance(v, int) and not isinstance(v, bool):
            v = _iso(v) if c.type == "timestamp" else _iso(v).rstrip("Z")
        out.append(v)
    return out


def not_generated(contract: Contract) -> str | None:
    """Why streams cannot be generated for `contract` yet (None: they can): rows sources only, and a
    contract Spark runs (not a `model_only` one)."""
    if contract.model_only:
        return f"contract {contract.name} is model only: {contract.model_only}"
    unsupported = [f"source {s.name!r} (kind {s.kind})" for s in contract.sources if s.kind != "rows"]
    unsupported += [f"static input {s.name!r}" for s in contract.statics]
    if unsupported:
        return (f"contract {contract.name}: no generated streams for its {', '.join(unsupported)} yet "
                "(rows sources only)")
    return None


def _scenario_params(draw: Any, c: Contract, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """`params` as given; else a bundled contract's drawn (`contract_params`), another's defaults with
    the output mode drawn from those it allows."""
    if params is not None:
        return dict(params)
    if c.bundled:
        return draw(contract_params(c))
    p = {}
    mode = c.param("output_mode")
    if mode is not None and len(mode.choices) > 1:
        p["output_mode"] = draw(st.sampled_from(mode.choices))
    return p


def _deliver(draw: Any, b: ScenarioBuilder, stream: Sequence[Event], c: Contract, trigger: int | None, restarts: bool) -> None:
    """The steps that deliver `stream` on builder `b`: consecutive events grouped into `add`s, each
    followed by a drawn action (run the batch, wait, restart, or stop); the query is running at the end."""
    running = True

    def run_batches() -> None:
        if trigger:
            b.advance(f"{draw(st.sampled_from((trigger // 2, trigger, 2 * trigger)))}s")
        else:
            b.process()

    i = 0
    while i < len(stream):
        size = draw(st.integers(1, 4))
        chunk = stream[i:i + size]
        i += size
        by_source: dict[str, list] = {}
        for e in chunk:
            by_source.setdefault(e.source, []).append(_row(e, c))
        b.add(**by_source)  # type: ignore[arg-type]  # source names as keywords
        action = draw(st.sampled_from(("run", "run", "run", "wait", "restart", "stop")) if restarts
                      else st.sampled_from(("run", "run", "run", "wait")))
        if action == "stop" and running:
            b.stop()
            running = False
        elif action == "restart":
            if running:
                b.restart()
            else:
                b.start()
                running = True
        elif action == "run" and running:
            run_batches()
    if not running:
        b.start()


@st.composite
def scenarios(draw: Any, contract: str | Contract | None = None, *, params: Mapping[str, Any] | None = None,
              max_events: int = 12, out_of_orderness: str | int | None | Mapping[str, Any] = "5s",
              resolution: str | int = "1s", restarts: bool = True, triggers: bool = True,
              no_data_batches: bool | None = None, idle: bool = True, typed: bool = False,
              delay: str | int | None = None, max_step: str | int = "6s", pools: Mapping[str, Any] | None = None,
              contracts: Any = None) -> Scenario:
    """A runnable scenario for `contract` (drawn from every bundled contract when None): its
    parameters (or `params`), events from `events(...)`, and the steps that deliver them.

    Consecutive events are grouped into `add`s (one input partition each); after an add the
    batch runs (`process`, or `advance` under a processing-time trigger), or waits to be read
    with the next adds, or the query restarts (or stops, takes adds while stopped, and starts).
    `no_data_batches` None draws spark.sql.streaming.noDataMicroBatches.enabled.

    `contract` may be a Contract (a user's, a job's: `contracts` is the ContractLookup its file was
    found by); its parameters are then `params` (else their defaults), with the output mode drawn
    from the modes it allows. `typed`, `delay`, `max_step`, `pools`: as `events`. Rows sources only:
    a kafka or text source, or a static input, is refused with its name (not generated yet)."""
    from .builder import ScenarioBuilder

    c = contract if isinstance(contract, Contract) else CONTRACTS[contract or draw(st.sampled_from(GENERATED_CONTRACTS))]
    name = c.name
    refused = not_generated(c)
    if refused is not None:
        raise ValueError(refused)
    p = _scenario_params(draw, c, params)
    stream = draw(events(c, max_events=max_events, out_of_orderness=out_of_orderness, resolution=resolution,
                         idle=idle, typed=typed, delay=delay, max_step=max_step, pools=pools))
    conf = {}
    enabled = draw(st.booleans()) if no_data_batches is None else no_data_batches
    if not enabled:
        conf[NO_DATA_BATCHES] = False
    trigger = draw(st.sampled_from((None, 5, 10))) if triggers else None
    clock = {"start": "2024-01-01T00:00:00Z", **({"trigger": f"{trigger}s"} if trigger else {})}
    b = ScenarioBuilder(c, params=p or None, conf=conf or None, clock=clock, name=f"generated-{name.replace('_', '-')}",
                        contracts=contracts)
    b.doc["description"] = "Generated by eventtime.strategies.scenarios."
    _deliver(draw, b, stream, c, trigger, restarts)
    b.process()  # drain: everything added is read, and the no-data batch it calls for runs
    from .loader import load_scenario_text

    return load_scenario_text(b.yaml(), path=f"<generated {name} scenario>", contracts=b.lookup)
