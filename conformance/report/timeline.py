"""The timeline picture of one scenario run, as geometry: batches across, event time up.

x is arrival: one column per micro-batch in the order they ran (no-data batches included, restarts
marked). y is event time. Events added by the scenario sit in the batch that read them; the
watermark each batch ran with is a step line; output windows (or sessions) are vertical spans at the
batch that wrote them; for a failed expectation, the missing and unexpected rows are drawn apart.
The failure's explanation (`eventtime.explain`) is drawn too: each batch says the watermark it ran
with and left and the max event time it read, an event at or behind the watermark its batch judged
lateness by is marked (late where its window had ended by then, else only behind), and a missing
window's end is a line at the watermark that closes it, saying which batch first ran with it.
The HTML template turns this data into SVG elements; nothing here writes markup.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

from ..explain import judged_by
from ..results import ERROR, FAILED, PASSED
from ..timeparse import TimeFormatError, format_time, parse_duration
from .merge import Cell, Row
from .values import format_row, format_wm, output_types, scenario_date

__all__ = ["Timeline", "build_timeline"]

COL_MIN, COL_MAX, PLOT_MIN_W, PLOT_H = 40.0, 64.0, 420.0, 240.0
TOP, BOTTOM, RIGHT = 42.0, 44.0, 70.0
CHAR_W = 6.4  # average glyph width of the 11px sans-serif used for labels

_NICE_MICROS = [s * 1_000_000 for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
                                         10800, 21600, 43200, 86400, 2 * 86400, 7 * 86400, 14 * 86400,
                                         31 * 86400, 92 * 86400, 365 * 86400, 3650 * 86400, 36500 * 86400)]
_SPAN_COLUMNS = (("window_start", "window_end"), ("session_start", "session_end"))


@dataclass(frozen=True)
class Tick:
    pos: float
    label: str


@dataclass(frozen=True)
class BatchColumn:
    left: float
    width: float
    center: float
    label: str
    data: bool
    dropped: int
    title: str


@dataclass(frozen=True)
class Event:
    x: float
    y: float
    source: int
    late: bool
    title: str
    behind: bool = False  # at or behind the watermark its batch judged lateness by, its window still open


@dataclass(frozen=True)
class Segment:
    x1: float
    y1: float
    x2: float
    y2: float
    title: str


@dataclass(frozen=True)
class OutputMark:
    """An output row: a span (window or session) or, without one, a point at its first timestamp."""

    x: float
    y1: float
    y2: float
    kind: str  # output | missing | unexpected
    title: str

    @property
    def point(self) -> bool:
        return self.y1 == self.y2


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    kind: str  # restart | expect-passed | expect-failed | expect-error
    label: str
    title: str


@dataclass(frozen=True)
class LegendItem:
    x: float
    y: float
    kind: str
    label: str
    source: int = 0


@dataclass
class Timeline:
    title: str
    width: float
    height: float
    left: float
    top: float
    right: float
    bottom: float
    columns: list[BatchColumn] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    watermark: list[Segment] = field(default_factory=list)
    closes: list[Segment] = field(default_factory=list)  # a missing window's end: the watermark that closes it
    outputs: list[OutputMark] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    legend: list[LegendItem] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    y_title: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return sum(1 for o in self.outputs if o.kind == "missing")

    @property
    def unexpected(self) -> int:
        return sum(1 for o in self.outputs if o.kind == "unexpected")


@dataclass
class _Batch:
    batch: Mapping[str, Any]
    step: int
    events: list[tuple[str, int, str]] = field(default_factory=list)  # (source, event time, row text)


def _duration(params: Mapping[str, Any], name: str) -> int | None:
    value = params.get(name)
    if not isinstance(value, str):
        return None
    try:
        return parse_duration(value).total_us or None
    except TimeFormatError:
        return None


def _lateness_bound(definition: Mapping[str, Any]):
    """The event-time a row is judged by against the watermark: its own time, or the end of the
    latest window (tumbling or sliding) or of its initial session that could still take it."""
    params = definition.get("params") or {}
    window, slide, gap = _duration(params, "window"), _duration(params, "slide"), _duration(params, "gap")
    if window:
        step = slide or window
        return (lambda t: (t // step) * step + window), "window end"
    if gap:
        return (lambda t: t + gap), "session end (t + gap)"
    return (lambda t: t), "event time"


def _nice_step(span: int) -> int:
    for s in _NICE_MICROS:
        if span / s <= 6:
            return s
    return _NICE_MICROS[-1]


def _index(step: Mapping[str, Any]) -> int:
    index = step.get("index")
    return index if isinstance(index, int) else 0


def _projected(row: Sequence[Any], names: Sequence[str], columns: Sequence[str]) -> list[Any]:
    """`row` (in `names` order) reduced to `columns`, as a failure lists rows."""
    return [row[names.index(c)] if c in names and names.index(c) < len(row) else None for c in columns]


def build_timeline(row: Row, cell: Cell, column: str) -> Timeline | None:
    """The picture of `row` as run on `column`; None when nothing ran (not applicable, or no steps)."""
    definition = row.definition or {}
    date = scenario_date(definition)
    if not cell.steps or not cell.applicable:
        return None
    sources = [s.get("name") for s in definition.get("sources") or []]
    out_names = [c[0] for c in definition.get("output_columns") or []]
    walk = _walk_steps(cell, definition, out_names, date)
    lo, hi, tick = _y_domain(walk, definition, out_names)
    y_labels = [format_time(t, date=date) for t in range(lo, hi + 1, tick)]

    left = max(70.0, max(len(s) for s in y_labels) * CHAR_W + 16)
    n = max(1, len(walk.batches))
    col_w = min(COL_MAX, max(COL_MIN, PLOT_MIN_W / n))
    scale = _Scale(lo, hi, left, col_w, TOP + PLOT_H)
    tl = Timeline(title=f"{row.scenario} [{row.short_impl}] on Spark {column}", width=0, height=0,
                  left=left, top=TOP, right=round(left + col_w * n, 1), bottom=scale.plot_bottom, sources=sources,
                  y_title="event time (UTC" + (f", {date.isoformat()}" if y_labels and ":" in y_labels[0]
                                               and "T" not in y_labels[0] else "") + ")", notes=walk.notes)
    tl.y_ticks = [Tick(scale.y(t), label) for t, label in zip(range(lo, hi + 1, tick), y_labels)]
    bound, bound_label = _lateness_bound(definition)
    below = _draw_batches(tl, walk.batches, scale, definition, out_names, bound, bound_label, date)
    _join_watermark(tl, walk.batches, scale, date)
    _draw_closes(tl, walk, scale, definition, date)
    if below:
        tl.notes.append("the initial watermark (1970-01-01) is drawn at the bottom edge")
    _draw_expected(tl, walk, scale, definition, out_names, date)
    _draw_markers(tl, walk.markers, scale)
    _draw_legend(tl, sources, bound_label, walk.markers, scale, plot_w=col_w * n)
    return tl


@dataclass
class _Walk:
    """The run's steps read in order: batches (with the events each read), markers, failed rows."""

    batches: list[_Batch] = field(default_factory=list)
    markers: list[tuple[int, str, str, str]] = field(default_factory=list)  # (boundary, kind, label, title)
    expected: list[tuple[int, str, list[Any], list[str]]] = field(default_factory=list)  # (boundary, kind, row, columns)
    explanations: list[str] = field(default_factory=list)  # of the failures with missing rows
    notes: list[str] = field(default_factory=list)


def _walk_steps(cell: Cell, definition: Mapping[str, Any], out_names: list[str], date: Any) -> _Walk:
    """Batches in order, events into the data batch that read them, restart and expect markers."""
    defs = {d.get("index"): d for d in definition.get("steps") or []}
    event_col = {s.get("name"): [c[0] for c in s.get("columns") or []].index(s.get("event_time"))
                 for s in definition.get("sources") or []
                 if s.get("event_time") in [c[0] for c in s.get("columns") or []]}
    source_types = {s.get("name"): [c[1] for c in s.get("columns") or []] for s in definition.get("sources") or []}
    walk = _Walk()
    batches, markers, expected = walk.batches, walk.markers, walk.expected
    pending: list[tuple[str, int, str]] = []
    for step in sorted(cell.steps, key=_index):
        index, kind = _index(step), step.get("kind")
        if kind == "add":
            for source, rows in sorted(((defs.get(index) or {}).get("rows") or {}).items()):
                pos = event_col.get(source)
                for r in rows:
                    if pos is not None and pos < len(r) and isinstance(r[pos], int):
                        pending.append((source, r[pos], format_row(r, source_types.get(source, []), date)))
        if kind in ("restart", "run") or (kind == "start" and index):
            markers.append((len(batches), "restart", kind, f"step {index}: {kind} from the checkpoint"))
        for b in step.get("batches") or []:
            batches.append(_Batch(b, index))
            if b.get("data") and pending:
                batches[-1].events, pending = pending, []
        if kind == "expect" or step.get("status") == ERROR:
            status = step.get("status") or PASSED
            mark = {PASSED: "✓", FAILED: "✗", ERROR: "!"}.get(status, "·")
            markers.append((len(batches), f"expect-{status}", f"{mark}{index}",
                            f"step {index} ({kind}): {status}" + (f": {step['message']}" if step.get("message") else "")))
            for f in step.get("failures") or []:
                cols = list(f.get("columns") or out_names)
                if f.get("missing") and f.get("explanation"):
                    walk.explanations.append(f["explanation"])
                for r in f.get("missing") or []:
                    expected.append((len(batches), "missing", r, cols))
                for r in f.get("unexpected") or []:
                    expected.append((len(batches), "unexpected", r, cols))
    if pending:
        batches.append(_Batch({"data": False, "batch_id": None}, -1, pending))
        walk.notes.append(f"{len(pending)} added row(s) were never read by a batch (last column)")
    if not batches:
        walk.notes.append("no micro-batch ran")
    return walk


def _span_of(definition: Mapping[str, Any], r: Sequence[Any], cols: Sequence[str]) -> tuple[int, int] | None:
    """A window's or session's (start, end); else the row's first timestamp twice; else None."""
    values = dict(zip(cols, r))
    for start, end in _SPAN_COLUMNS:
        va, vb = values.get(start), values.get(end)
        if isinstance(va, int) and isinstance(vb, int):
            return va, vb
    for c, t in zip(cols, output_types(definition, cols)):
        v = values.get(c)
        if t == "timestamp" and isinstance(v, int) and not isinstance(v, bool):
            return v, v
    return None


def _y_domain(walk: _Walk, definition: Mapping[str, Any], out_names: list[str]) -> tuple[int, int, int]:
    """(lowest, highest, tick) of event time, in µs: everything drawn that has an event time, on round ticks."""
    values: list[int] = [t for b in walk.batches for _, t, _ in b.events]
    for b in walk.batches:
        for r in b.batch.get("rows") or []:
            s = _span_of(definition, r, out_names)
            if s:
                values += list(s)
        for key in ("watermark_before_ms", "watermark_after_ms"):
            wm = b.batch.get(key)
            if isinstance(wm, int) and wm:
                values.append(wm * 1000)
    for _, _, r, cols in walk.expected:
        s = _span_of(definition, r, cols)
        if s:
            values += list(s)
    lo, hi = (min(values), max(values)) if values else (0, 1_000_000)
    if hi == lo:
        lo, hi = lo - 1_000_000, hi + 1_000_000
    tick = _nice_step(hi - lo)
    return (lo // tick) * tick, -((-hi) // tick) * tick, tick


@dataclass(frozen=True)
class _Scale:
    """Event time (µs) to y, batch boundaries to x."""

    lo: int
    hi: int
    left: float
    col_w: float
    plot_bottom: float

    def y(self, t: int) -> float:
        t = min(max(t, self.lo), self.hi)
        return round(self.plot_bottom - (t - self.lo) / (self.hi - self.lo) * PLOT_H, 1)

    def bx(self, boundary: int) -> float:
        return round(self.left + boundary * self.col_w, 1)


def _draw_batches(tl: Timeline, batches: list[_Batch], scale: _Scale, definition: Mapping[str, Any],
                  out_names: list[str], bound: Any, bound_label: str, date: Any) -> bool:
    """Each batch's column, the events it read, the watermark it ran with and the rows it wrote; True
    when a watermark lies below the plot (the initial one)."""
    y, bx, col_w = scale.y, scale.bx, scale.col_w
    sources = tl.sources
    source_index = {s: i for i, s in enumerate(sources)}
    out_types = output_types(definition)
    below = False
    history = [SimpleNamespace(batch_id=b.batch.get("batch_id"), watermark_before_ms=b.batch.get("watermark_before_ms"))
               for b in batches]
    single = str((definition.get("conf") or {}).get("spark.sql.streaming.statefulOperator.allowMultiple", "")
                 ).lower() == "false"
    for i, b in enumerate(batches):
        raw = b.batch
        bid = raw.get("batch_id")
        data = bool(raw.get("data"))
        wm_before, wm_after = raw.get("watermark_before_ms"), raw.get("watermark_after_ms")
        top = (raw.get("event_time") or {}).get("max")
        dropped = raw.get("dropped") or 0
        title = ("not read by any batch" if bid is None else
                 f"batch {bid} ({'data' if data else 'no-data'}, step {b.step}, run {raw.get('run', 0)}): "
                 f"{raw.get('input_rows', 0)} in, {len(raw.get('rows') or [])} out, watermark "
                 f"{format_wm(wm_before, date)} -> {format_wm(wm_after, date)}"
                 + (f" (max event time {format_wm(top, date)})" if isinstance(top, int) else "")
                 + f", dropped {dropped}, state rows {raw.get('state_rows')}")
        judged = judged_by(history[i], history, single) if isinstance(bid, int) else None
        tl.columns.append(BatchColumn(bx(i), col_w, round(bx(i) + col_w / 2, 1),
                                      "-" if bid is None else str(bid), data, dropped, title))
        # events: one lane per source in the left half of the column
        seen: dict[tuple[str, int], int] = {}
        for source, t, text in b.events:
            k = seen.get((source, t), 0)
            seen[(source, t)] = k + 1
            si = source_index.get(source, 0)
            behind = judged is not None and t <= judged * 1000
            late = behind and judged is not None and bound(t) <= judged * 1000
            lane = col_w * 0.22 + si * min(7.0, col_w * 0.25 / max(1, len(sources)))
            why = f"watermark {format_wm(judged, date)} its batch judged lateness by"
            tl.events.append(Event(round(bx(i) + lane + 2.5 * k, 1), y(t), si, late,
                                   f"{source} {text} read by batch {bid}"
                                   + (f"; late: {bound_label} {format_time(bound(t), date=date)} <= {why}" if late
                                      else f"; behind the {why}, its {bound_label} "
                                      f"{format_time(bound(t), date=date)} is not: an aggregate still counts it" if behind else ""),
                                   behind and not late))
        # watermark the batch ran with, and the jump to the one it left
        if isinstance(wm_before, int):
            below = below or (wm_before * 1000 < scale.lo)
            tl.watermark.append(Segment(bx(i), y(wm_before * 1000), bx(i + 1), y(wm_before * 1000),
                                        f"batch {bid} ran with watermark {format_wm(wm_before, date)}"))
        # output rows, in the right half of the column
        rows = [r for r in raw.get("rows") or []]
        spans = [(r, _span_of(definition, r, out_names)) for r in rows]
        for k, (r, s) in enumerate(spans):
            x = bx(i) + col_w * 0.6 + k * min(5.0, col_w * 0.32 / max(1, len(spans)))
            y1, y2 = (y(s[1]), y(s[0])) if s else (scale.plot_bottom - 4, scale.plot_bottom - 4)
            tl.outputs.append(OutputMark(round(x, 1), y1, y2, "output",
                                         f"batch {bid} wrote {format_row(r, out_types, date)}"))
    return below


def _join_watermark(tl: Timeline, batches: list[_Batch], scale: _Scale, date: Any) -> None:
    """Connect consecutive watermark segments; a stub after the last batch shows the watermark it left."""
    y = scale.y
    joined = []
    ran = [b.batch for b in batches if isinstance(b.batch.get("watermark_before_ms"), int)]  # one per segment
    for a, b, batch in zip(tl.watermark, tl.watermark[1:], ran):
        joined.append(a)
        if a.x2 == b.x1 and a.y2 != b.y1:
            joined.append(Segment(a.x2, a.y2, b.x1, b.y1, _moved(batch, date)))
    if tl.watermark:
        joined.append(tl.watermark[-1])
        last = next((b.batch for b in reversed(batches) if isinstance(b.batch.get("watermark_after_ms"), int)), None)
        if last is not None:
            after = last["watermark_after_ms"]
            end = joined[-1]
            if end.y2 != y(after * 1000):
                joined.append(Segment(end.x2, end.y2, end.x2, y(after * 1000), _moved(last, date)))
            joined.append(Segment(end.x2, y(after * 1000), round(end.x2 + 24, 1), y(after * 1000),
                                  f"watermark left for the next batch: {format_wm(after, date)}"))
    tl.watermark = joined


def _moved(batch: Mapping[str, Any], date: Any) -> str:
    """A watermark move at a batch boundary: what the batch left, and the max event time that set it."""
    top = (batch.get("event_time") or {}).get("max")
    return (f"batch {batch.get('batch_id')} left watermark {format_wm(batch.get('watermark_after_ms'), date)}"
            + (f", set by the max event time it read, {format_wm(top, date)}" if isinstance(top, int) else ""))


def _draw_closes(tl: Timeline, walk: _Walk, scale: _Scale, definition: Mapping[str, Any], date: Any) -> None:
    """For each missing window or session, a line at its end: the watermark a batch must run with to
    close it, saying which batch first did (the row is written then), or that none has yet, and the
    explanation's words for it."""
    y = scale.y
    ends = sorted({s[1] for _, kind, r, cols in walk.expected if kind == "missing"
                   and (s := _span_of(definition, r, cols)) is not None and s[0] != s[1]})
    lines = [line for text in walk.explanations for line in text.splitlines()]
    for end in ends:
        first = next((b.batch for b in walk.batches if isinstance(b.batch.get("watermark_before_ms"), int)
                      and b.batch["watermark_before_ms"] * 1000 >= end), None)
        when = (f"batch {first.get('batch_id')} was the first to run with one ({format_wm(first['watermark_before_ms'], date)})"
                if first is not None else "no batch has run with one yet")
        said = next((line for line in lines if line.startswith(f"a row ending at {format_time(end, date=date)} ")), "")
        tl.closes.append(Segment(tl.left, y(end), tl.right, y(end),
                                 f"a window ending at {format_time(end, date=date)} closes when a batch runs with a "
                                 f"watermark at or after it: {when}" + (f"\n{said}" if said else "")))


def _draw_expected(tl: Timeline, walk: _Walk, scale: _Scale, definition: Mapping[str, Any], out_names: list[str],
                   date: Any) -> None:
    """Expected vs actual: missing rows at the point they were expected, unexpected ones where written."""
    y, bx, col_w = scale.y, scale.bx, scale.col_w
    per_boundary: dict[int, int] = {}
    for boundary, kind, r, cols in walk.expected:
        col = max(0, boundary - 1)
        if kind == "unexpected":
            for j in range(boundary - 1, -1, -1):
                if any(_projected(w, out_names, cols) == list(r) for w in walk.batches[j].batch.get("rows") or []):
                    col = j
                    break
        k = per_boundary.get(col, 0)
        per_boundary[col] = k + 1
        s = _span_of(definition, r, cols)
        x = bx(col) + col_w * 0.92 - k * 4.0
        y1, y2 = (y(s[1]), y(s[0])) if s else (tl.top + 6, tl.top + 6)
        types = output_types(definition, cols)
        what = "expected, not produced" if kind == "missing" else "produced, not expected"
        tl.outputs.append(OutputMark(round(max(x, bx(col) + col_w * 0.5), 1), y1, y2, kind,
                                     f"{kind} ({what}): {format_row(r, types, date)}"))


def _draw_markers(tl: Timeline, markers: list[tuple[int, str, str, str]], scale: _Scale) -> None:
    """Markers at batch boundaries: expect labels stacked upwards, a restart as a line."""
    stack: dict[int, int] = {}
    for boundary, kind, label, title in markers:
        k = stack.get(boundary, 0)
        stack[boundary] = k + 1
        tl.markers.append(Marker(scale.bx(boundary), round(tl.top - 8 - 11 * k, 1) if kind != "restart" else tl.top - 4,
                                 kind, label, title))
        if kind == "restart":
            stack[boundary] = k  # the restart line does not take a label row


def _draw_legend(tl: Timeline, sources: list[str], bound_label: str, markers: list[tuple[int, str, str, str]],
                 scale: _Scale, plot_w: float) -> None:
    """The legend under the plot, wrapped to the picture's width; sets the picture's size."""
    items = [("source", f"event ({s})", i) for i, s in enumerate(sources)]
    items += [("late", f"event at/below the watermark ({bound_label})", 0)]
    if any(e.behind for e in tl.events):
        items.append(("behind", "event at/below the watermark, its window open", 0))
    items += [("watermark", "watermark", 0),
              ("output", "output window", 0) if any(not o.point for o in tl.outputs)
              else ("output-point", "output row (at its first timestamp)", 0)]
    if tl.missing:
        items.append(("missing", "missing (expected, not produced)", 0))
    if tl.closes:
        items.append(("closes", "watermark that closes a missing window", 0))
    if tl.unexpected:
        items.append(("unexpected", "unexpected (produced, not expected)", 0))
    items += [("nodata", "no-data batch", 0)]
    if any(k == "restart" for _, k, _, _ in markers):
        items.append(("restart", "restart", 0))
    width = max(round(scale.left + plot_w + RIGHT, 1), 520.0)
    lx, ly = 8.0, scale.plot_bottom + BOTTOM
    for kind, label, si in items:
        w = 22 + len(label) * CHAR_W + 14
        if lx + w > width and lx > 8:
            lx, ly = 8.0, ly + 16
        tl.legend.append(LegendItem(round(lx, 1), round(ly, 1), kind, label, si))
        lx += w
    tl.width, tl.height = width, round(ly + 14, 1)
