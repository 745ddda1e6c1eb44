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
watermark delay (`delay`); kafka records and JSON lines from a source's declared payload (`kafka_records`,
`text_lines`, one renderer: `payloads`); the static inputs' rows, keys overlapping the stream's
(`static_rows`). The property checks (`eventtime.properties`) run these.

Needs the `hypothesis` package (the `test` extra).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from hypothesis import strategies as st

from .contracts import Contract, ValueRange, declared_pools
from .registry import CONTRACTS
from .spec import Scenario
from .timeparse import format_time, parse_duration, parse_time

if TYPE_CHECKING:
    from .builder import ScenarioBuilder

__all__ = ["Event", "event_times", "events", "kafka_records", "payloads", "text_lines", "static_rows", "json_time", "contract_params", "scenarios", "typed_values", "not_generated",
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



def _rarely(draw: Any, one_in: int) -> bool:
    """True about once in `one_in` draws: for a rare event (a row delivered again, a record that is not
    JSON). It is the largest value of the range, so Hypothesis, which shrinks integers towards 0, shrinks a
    counterexample away from the rare event unless the failure needs it."""
    return bool(draw(st.integers(0, one_in - 1)) == one_in - 1)

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
        if duplicates and out and _rarely(draw, 5):
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
    if isinstance(pool, ValueRange):
        return _typed(t, nullable, pool)
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
    if isinstance(pool, ValueRange):
        base = _ranged(t, pool)
    elif pool is not None:
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


def _ranged(t: Any, bounds: ValueRange) -> st.SearchStrategy[Any]:
    """A number column's values between a `generate:` range's bounds, the bounds themselves (and 0 when
    inside) drawn as edges, as a type's own bounds are."""
    import decimal

    if t.kind == "decimal":
        dlow, dhigh = decimal.Decimal(str(bounds.low)), decimal.Decimal(str(bounds.high))
        inside = st.decimals(dlow, dhigh, places=t.scale, allow_nan=False, allow_infinity=False)
        return st.one_of(inside, st.sampled_from(_edges(dlow, dhigh))).map(str)
    if t.kind in ("float", "double"):
        flow, fhigh = float(bounds.low), float(bounds.high)
        return st.one_of(st.floats(flow, fhigh, allow_nan=False, width=32 if t.kind == "float" else 64),
                         st.sampled_from(_edges(flow, fhigh)))
    low, high = int(bounds.low), int(bounds.high)
    return st.one_of(st.integers(low, high), st.sampled_from(_edges(low, high)))


def _edges(low: Any, high: Any) -> tuple[Any, ...]:
    return (low, high, 0 * low) if low <= 0 <= high else (low, high)


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
        if spec.kind in ("kafka", "text"):
            drawn = kafka_records if spec.kind == "kafka" else text_lines
            record = draw(drawn(spec, pools=pools, event_time=next(times[name])))
            out.append(Event(name, record))
            if _rarely(draw, 10):  # the producer retried, the writer wrote a line twice: again
                out.append(Event(name, dict(record)))
            continue
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
        if _rarely(draw, 10):  # the same row delivered again
            out.append(Event(name, dict(values)))
    return out


# How JSON producers write an instant: with Z or an offset, with no fraction, milliseconds or microseconds,
# or with no zone at all (a local time). Each is the same instant (the local one: in UTC).
_TIME_STYLES = ("Z", "Z.000", "Z.000000", "+02:00", "-05:30", "+02:00.000", "local")
# Payloads a producer sends by mistake: not JSON, or JSON cut short, or JSON that is not an object.
_NOT_JSON: tuple[Any, ...] = ("not json", "", "{", '{"id": ', "[1, 2]", "null", {"base64": "//4="})
PARTITIONS = 3  # partitions a generated kafka record goes to: 0, 1, 2


def json_time(micros: int, style: str) -> str:
    """An instant (epoch µs) as a JSON producer writes it in `style` (`_TIME_STYLES`): `Z` with no fraction,
    `Z.000` milliseconds, `Z.000000` microseconds, an offset (`+02:00`, its local time moved) with or without
    milliseconds, `local` with no zone. A fraction finer than the style's is cut, as the producer's
    formatter cuts it."""
    import datetime as _dt

    when = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=micros)
    offset = style[:6] if style[0] in "+-" else "+00:00"
    sign = 1 if offset[0] == "+" else -1
    shift = _dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])) * sign
    try:
        local = (when + shift).replace(tzinfo=None)
    except OverflowError:  # 0001-01-01 west of UTC, 9999-12-31 east of it: written in UTC
        return json_time(micros, "Z" + style[6:] if style[0] in "+-" else style)
    fraction = style.split(".", 1)[1] if "." in style else ""
    text = local.replace(microsecond=0).isoformat()
    if fraction:
        text += "." + f"{local.microsecond:06d}"[:len(fraction)]
    if style == "local":
        return text
    return text + ("Z" if style.startswith("Z") else offset)


def _json_value(ctype: Any, value: Any, style: str) -> Any:
    """A drawn value of `ctype` (`typed_values`, scenario form) as a JSON producer writes it: a timestamp as
    text in `style`, bytes as base64 text, a map as an object, a float's infinity as null (JSON has none)."""
    k = ctype.kind
    if value is None:
        return None
    if k == "timestamp" and isinstance(value, str):
        return json_time(parse_time(value), style)
    if k == "binary":
        return value["base64"]
    if k in ("float", "double") and value in (float("inf"), float("-inf")):
        return None
    if k == "array" and ctype.element is not None:
        return [_json_value(ctype.element, v, style) for v in value]
    if k == "map" and ctype.value is not None:
        return {str(key): _json_value(ctype.value, v, style) for key, v in value}
    if k == "struct":
        return {name: _json_value(ft, value.get(name), style) for name, ft in ctype.fields}
    return value


@st.composite
def payloads(draw: Any, spec: Any, *, pools: Mapping[str, Any] | None = None, event_time: int | None = None,
             malformed: bool | None = None, not_json: Sequence[Any] = _NOT_JSON) -> Any:
    """The JSON payload a producer writes for a source that declares it (`value:` of a kafka or text source):
    an object of the declared fields drawn by `typed_values` (pools as `events`: `{"amount": [...]}` or
    `{"orders.amount": [...]}`), each field missing one draw in six, timestamps written as producers write
    them (`json_time`: `+02:00`, no milliseconds, ...), the event-time field at `event_time` (epoch µs) so
    lateness and disorder are drawn as for rows. One draw in fifteen it is not a JSON object at all (one of
    `not_json`) unless `malformed` (None: the contract's `value: {malformed: ...}`) is false. Returned in the
    scenario file's form: a mapping (written as compact JSON), or the text or bytes sent instead."""
    # Each rare choice is drawn after what it replaces, so its branch is never the shorter one: Hypothesis
    # prefers fewer draws when it shrinks, and would otherwise shrink every payload to one that is not JSON
    chosen = pools or {}
    bad = spec.malformed if malformed is None else malformed
    style = draw(st.sampled_from(_TIME_STYLES))
    payload: dict[str, Any] = {}
    for col in spec.value:
        t = col.ctype
        if col.name == spec.value_event_time and event_time is not None:
            value: Any = format_time(event_time) if t.kind == "timestamp" else format_time(event_time).rstrip("Z")
        else:
            value = draw(typed_values(t, pool=chosen.get(f"{spec.name}.{col.name}", chosen.get(col.name))))
        if not _rarely(draw, 6):  # else an optional field the producer left out
            payload[col.name] = _json_value(t, value, style)
    if bad and _rarely(draw, 15):
        return draw(st.sampled_from(tuple(not_json)))
    # a value whose only key is `base64` would be read as bytes: written as its JSON text instead
    return payload if list(payload) != ["base64"] else json.dumps(payload, separators=(",", ":"))


@st.composite
def kafka_records(draw: Any, spec: Any, *, pools: Mapping[str, Any] | None = None,
                  event_time: int | None = None, malformed: bool | None = None) -> dict[str, Any]:
    """A record of kafka source `spec` (a `SourceSpec` with `value:` fields) as a producer sends it: the value
    drawn by `payloads` (sometimes not JSON, bytes that are not UTF-8 among them), a key (or none) and a
    partition 0..2. Returns the scenario-file record `{value, key, partition}` and the instant under `ts`."""
    record: dict[str, Any] = {"ts": event_time, "partition": draw(st.integers(0, PARTITIONS - 1))}
    key = draw(st.one_of(st.none(), st.sampled_from(KEYS)))
    if key is not None:
        record["key"] = key
    record["value"] = draw(payloads(spec, pools=pools, event_time=event_time, malformed=malformed))
    if spec.headers:  # a source read with includeHeaders=true
        chosen = pools or {}
        found = chosen.get(f"{spec.name}.headers", chosen.get("headers"))
        headers = draw(kafka_headers(found))
        if headers:
            record["headers"] = headers
    return record


# Headers a producer sends (a key may repeat; a value may be null or bytes that are not UTF-8 text)
HEADER_KEYS = ("trace", "source", "content-type")
_HEADER_VALUES = ("t-1", "web", "app", "application/json", "", "é", {"base64": "//4="})


def kafka_headers(pool: Mapping[str, Any] | None = None) -> st.SearchStrategy[list[list[Any]]]:
    """A record's headers as a scenario file writes them, `[[key, value], ...]`: none, or up to three, keys
    drawn from `HEADER_KEYS` (a key repeated now and then) and values text, null or bytes. `pool`
    (`{"source": ["web", "app"]}`) names the keys and the values each is drawn from (null still drawn)."""
    if pool:
        values = dict(pool)  # a mapping, or the contract's (key, values) pairs
        pairs = st.sampled_from(sorted(values)).flatmap(
            lambda k: st.tuples(st.just(k), st.one_of(st.none(), st.sampled_from(tuple(values[k])))))
    else:
        pairs = st.tuples(st.sampled_from(HEADER_KEYS), st.one_of(st.none(), st.sampled_from(_HEADER_VALUES)))
    return st.lists(pairs.map(list), max_size=3)


# Lines a writer of JSON lines leaves by mistake: text, an empty line, JSON cut short, JSON that is not an
# object (a line is text: no bytes here, and no line is null).
_NOT_JSON_LINES = tuple(v for v in _NOT_JSON if isinstance(v, str))


@st.composite
def text_lines(draw: Any, spec: Any, *, pools: Mapping[str, Any] | None = None, event_time: int | None = None,
               malformed: bool | None = None) -> dict[str, Any]:
    """A line of text source `spec` (a `SourceSpec` with `value:` fields: JSON lines its job reads with
    `readStream.text` and parses): the payload `payloads` draws, a mapping written as one compact JSON line,
    or one of `_NOT_JSON_LINES`. Returns `{value: LINE, ts: INSTANT}`."""
    line = draw(payloads(spec, pools=pools, event_time=event_time, malformed=malformed, not_json=_NOT_JSON_LINES))
    return {"ts": event_time, "value": line}


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


def _row(event: Event, contract: Contract) -> Any:
    spec = contract.source(event.source)
    assert spec is not None
    if spec.kind == "kafka":  # a record as a scenario file writes it (`sourcekinds`)
        return {k: v for k, v in event.values.items() if k in ("value", "key", "partition", "headers")}
    if spec.kind == "text":  # a line: text, or a mapping written as one JSON line
        return event.values["value"]
    out = []
    for c in spec.columns:
        v = event.values[c.name]
        if c.type in ("timestamp", "timestamp_ntz") and isinstance(v, int) and not isinstance(v, bool):
            v = _iso(v) if c.type == "timestamp" else _iso(v).rstrip("Z")
        out.append(v)
    return out


def not_generated(contract: Contract) -> str | None:
    """Why streams cannot be generated for `contract` yet (None: they can): rows sources, kafka and text
    sources that declare their payload (`value:`) and static inputs, of a contract Spark runs (not a
    `model_only` one)."""
    if contract.model_only:
        return f"contract {contract.name} is model only: {contract.model_only}"
    bare = [s for s in contract.sources if s.kind in ("kafka", "text") and not s.value]
    if bare:
        what = "its records" if bare[0].kind == "kafka" else "its lines (JSON lines; other text is not generated yet)"
        return (f"contract {contract.name}: {bare[0].kind} source {bare[0].name!r} declares no payload: give it "
                "`value: {columns: \"id string, ts timestamp\", event_time: ts}` (the fields of the JSON its job "
                f"parses) to generate {what}")
    return None


# Column types a static input's row shares with the stream's rows by value (a join key): text, whole
# numbers, booleans, dates, written alike in a scenario's rows and in a JSON payload.
_SHARED_KINDS = ("string", "byte", "short", "int", "long", "boolean", "date")


def _stream_values(stream: Sequence[Event]) -> dict[str, list[Any]]:
    """The non-null values the stream holds per column name (a rows source's columns, a payload's fields)."""
    out: dict[str, list[Any]] = {}
    for e in stream:
        fields = e.values.get("value") if "value" in e.values and isinstance(e.values.get("value"), dict) \
            else e.values
        if not isinstance(fields, Mapping):
            continue
        for name, v in fields.items():
            if v is not None and not isinstance(v, (dict, list)) and v not in out.setdefault(name, []):
                out[name].append(v)
    return out


@st.composite
def static_rows(draw: Any, static: Any, stream: Sequence[Event] = (), *, pools: Mapping[str, Any] | None = None,
                max_rows: int = 4, keys: Sequence[str] | None = None) -> list[list[Any]]:
    """The rows of static input `static` (a `StaticSpec`: a table or folder the job reads as a batch) when the
    query first starts, in its columns, drawn by `typed_values` (nulls and edge values; pools as `events`, by
    `{"pages.section": ...}` or the column's name). A column it shares by name with the stream (a join key: text,
    whole numbers, booleans, dates) takes, row by row, a value the stream holds or a value of its own, so a
    join has matches and misses; there is at least one row where the stream has such values. The columns
    `keys` names (default: those the stream has values of; `scenarios` gives those the sources declare) that
    are of those types are unique across its rows (a dimension table's key), so a stream row meets at most one. A `text`-format folder's line is never null."""
    chosen = pools or {}
    seen = _stream_values(stream)
    meets = {c.name: [v for v in seen.get(c.name, ()) if _fits(c.ctype, v)] for c in static.columns}
    nullable = static.format != "text"

    def column(c: Any) -> st.SearchStrategy[Any]:
        own = typed_values(c.ctype, nullable=nullable, pool=chosen.get(f"{static.name}.{c.name}", chosen.get(c.name)))
        if not meets[c.name]:
            return own
        met = st.sampled_from(meets[c.name])
        # a value of the stream two draws in three (one_of would flatten `own`'s branches and draw it far less)
        return st.integers(0, 2).flatmap(lambda i: own if i == 2 else met)

    row = st.tuples(*[column(c) for c in static.columns]).map(list)
    named = set(seen if keys is None else keys)
    index = [i for i, c in enumerate(static.columns) if c.name in named and c.ctype.kind in _SHARED_KINDS]
    key = (lambda r: repr([r[i] for i in index])) if index else None
    # at least one row where the stream has values to meet (an empty table would only miss)
    least = 1 if any(meets.values()) else 0
    return draw(st.lists(row, min_size=least, max_size=max_rows, unique_by=key))


def _fits(ctype: Any, value: Any) -> bool:
    """Whether a stream's value is one of column type `ctype`'s, as a scenario row writes it (`_SHARED_KINDS`)."""
    from .coltypes import INTEGRAL_RANGES

    k = ctype.kind
    if k not in _SHARED_KINDS:
        return False
    if k in INTEGRAL_RANGES:
        bits = INTEGRAL_RANGES[k]
        return isinstance(value, int) and not isinstance(value, bool) and -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
    if k == "boolean":
        return isinstance(value, bool)
    if k == "date":
        return isinstance(value, str) and len(value) == 10 and value[4:5] == "-"
    return isinstance(value, str)


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
              contracts: Any = None, supports: Mapping[str, Sequence[Any]] | None = None) -> Scenario:
    """A runnable scenario for `contract` (drawn from every bundled contract when None): its
    parameters (or `params`), events from `events(...)`, and the steps that deliver them.

    Consecutive events are grouped into `add`s (one input partition each); after an add the
    batch runs (`process`, or `advance` under a processing-time trigger), or waits to be read
    with the next adds, or the query restarts (or stops, takes adds while stopped, and starts).
    `no_data_batches` None draws spark.sql.streaming.noDataMicroBatches.enabled.

    `contract` may be a Contract (a user's, a job's: `contracts` is the ContractLookup its file was
    found by); its parameters are then `params` (else their defaults), with the output mode drawn
    from the modes it allows. `typed`, `delay`, `max_step`, `pools`: as `events`, the contract's
    `generate:` pools under `pools`. `supports`: parameter values an implementation handles (a drawn value
    outside them is drawn again from them). Rows sources, kafka and
    text sources with a declared payload (`kafka_records`, `text_lines`: a kafka or text source without
    `value:` is refused with its name), and the static inputs' first rows (`static_rows`, in `static:`)."""
    from .builder import ScenarioBuilder

    c = contract if isinstance(contract, Contract) else CONTRACTS[contract or draw(st.sampled_from(GENERATED_CONTRACTS))]
    name = c.name
    refused = not_generated(c)
    if refused is not None:
        raise ValueError(refused)
    p = _scenario_params(draw, c, params)
    for param, allowed in (supports or {}).items():  # an implementation's own bounds (`@implementation`)
        if param in p and p[param] not in allowed and allowed:
            p[param] = draw(st.sampled_from(tuple(allowed)))
    pools = declared_pools(c, pools)  # the contract's `generate:` under the given pools
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
    if c.statics:  # drawn once per stream: what the static inputs hold when the query first starts
        keys = [col.name for src in c.sources for col in (src.value or src.columns)]
        b.doc["static"] = {s.name: draw(static_rows(s, stream, pools=pools, keys=keys)) for s in c.statics}
    _deliver(draw, b, stream, c, trigger, restarts)
    b.process()  # drain: everything added is read, and the no-data batch it calls for runs
    from .loader import load_scenario_text

    return load_scenario_text(b.yaml(), path=f"<generated {name} scenario>", contracts=b.lookup)
