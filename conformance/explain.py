"""Why an expected window row is missing, in event-time terms: the failure's explanation.

"Why did my window not fire?" In append mode a window (or session) row is written by the first batch
that runs with a watermark at or after its end (Spark guide, "Handling Late Data and Watermarking").
The explanation gives the query's watermark timeline (each batch's watermark before and after, and the
max event time it read), says whether a batch has run with a watermark past the row's end, and if not,
what input would move it there: with the delay the query showed (a batch's max event time minus the
watermark it left), a row at or after `end + delay`. The pipeline's logic is not known here, so it is
phrased as what the watermark allows: an operator before the window (a join) can hold the watermark
back further, and several inputs move it only together (the `min` policy).

It also says which of the input rows read since the previous expect were at or behind the watermark
their batch judged lateness by (where the source's event-time column is known and the step
interpreter could tell which batch read which rows, `BatchObservation.inputs`): what an operator
does with such a row is its rule (a join, a deduplication or a state function drops it; a window or
session aggregate only where the row's window or session had ended by then), so it is said as that.

Pure Python: it reads the observations the harness and the model both produce.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

__all__ = ["END_COLUMNS", "explain_missing", "explain_late", "late_inputs", "missing_spans"]

END_COLUMNS = ("window_end", "session_end")  # an output row's end: the time its window closes at
TIME_KINDS = ("timestamp", "timestamp_ntz")  # the column types whose values are instants the watermark compares
SPAN_COLUMNS = (("window_start", "window_end"), ("session_start", "session_end"))
TIMELINE_BATCHES = 6  # the last batches shown; older ones are counted
LATE_ROWS = 10  # the late input rows listed; more are counted
LATE_RULE = ("(a join, a deduplication or a state function drops such a row; an aggregate by window or session "
             "only where the row's window or session had ended by then; what this pipeline does is its own logic)")


def _delay_ms(history: Sequence[Any]) -> tuple[int, Any] | None:
    """The delay the query showed: max event time - the watermark the latest batch that set it left."""
    for b in reversed(history):
        top = (b.event_time or {}).get("max")
        if top is not None and b.watermark_after_ms and b.watermark_after_ms <= top:
            if b.watermark_before_ms is None or b.watermark_after_ms > (b.watermark_before_ms or 0):
                return top - b.watermark_after_ms, b
    return None


def timeline(history: Sequence[Any], show: Callable[[int | None], str]) -> list[str]:
    """One line per batch (the last TIMELINE_BATCHES): watermark before -> after, what it read."""
    lines = [f"({len(history) - TIMELINE_BATCHES} earlier batch(es))"] if len(history) > TIMELINE_BATCHES else []
    for b in history[-TIMELINE_BATCHES:]:
        top = (b.event_time or {}).get("max")
        read = f"{b.input_rows} row(s), max event time {show(top)}" if top is not None else (
            f"{b.input_rows} row(s)" if b.input_rows else "no data")
        lines.append(f"batch {b.batch_id}: ran with {show(b.watermark_before_ms)}, left {show(b.watermark_after_ms)} "
                     f"({read})")
    return lines


def judged_by(batch: Any, history: Sequence[Any], single_watermark: bool = False) -> int:
    """The watermark (ms) Spark judged `batch`'s input rows late by (eventTimeWatermarkForLateEvents):
    the one the batch before it ran with (the initial one for batch 0), so a batch just after a move
    without a no-data batch between still judges by the older one; with a single watermark
    (`statefulOperator.allowMultiple=false`) the one it ran with."""
    if single_watermark:
        return batch.watermark_before_ms or 0
    before = next((b for b in history if b.batch_id == batch.batch_id - 1), None)
    if before is None:
        return 0 if batch.batch_id == 0 else batch.watermark_before_ms or 0
    return before.watermark_before_ms or 0


def _times(names: Sequence[str], kinds: Sequence[str] | None) -> set[str]:
    """The columns whose values are instants (µs): the timestamp ones, when the kinds are known. A window
    end of another type (a `bigint` of seconds, as Spark's own tests cast it) is not read as one."""
    if kinds is None:
        return set(names)
    return {n for n, k in zip(names, kinds) if k in TIME_KINDS}


def missing_spans(missing: Sequence[tuple], names: Sequence[str], kinds: Sequence[str] | None = None
                  ) -> tuple[str, list[tuple[int, int]]]:
    """The windows ('window') or sessions ('session') of missing rows, as (start, end) in µs; none where
    the columns are not timestamps (`kinds`: the columns' type kinds, None: taken as timestamps)."""
    times = _times(names, kinds)
    for start, end in SPAN_COLUMNS:
        if start in times and end in times:
            i, j = names.index(start), names.index(end)
            return start.split("_")[0], sorted({(r[i], r[j]) for r in missing
                                                if isinstance(r[i], int) and isinstance(r[j], int)})
    return "window", []


def late_inputs(batches: Sequence[Any], history: Sequence[Any], show: Callable[[int | None], str],
                show_row: Callable[[str, tuple], str], event_time_at: Mapping[str, int],
                spans: tuple[str, Sequence[tuple[int, int]]] = ("window", ()), single_watermark: bool = False
                ) -> list[str]:
    """The input rows `batches` read that were at or behind the watermark their batch judged lateness by,
    one line each, with the missing window or session each falls in; [] when there are none or which
    rows a batch read is not known."""
    kind, windows = spans
    late = []
    for b in batches:
        wm = judged_by(b, history, single_watermark)
        for source, row in getattr(b, "inputs", None) or ():
            at = event_time_at.get(source)
            ts = row[at] if at is not None and at < len(row) else None
            if not isinstance(ts, int) or isinstance(ts, bool) or ts > wm * 1000:
                continue
            line = f"{source} {show_row(source, row)}: batch {b.batch_id}, watermark {show(wm)}"
            for start, end in windows:
                if start <= ts < end:
                    line += f"; in the missing {kind} [{show(start // 1000)}, {show(end // 1000)})"
                    if kind == "window":
                        line += (", which had ended by then: a window aggregate drops it from that window as late"
                                 if end <= wm * 1000 else ", still open then: a window aggregate counts it there")
            late.append(line)
    if not late:
        return []
    more = [f"  (and {len(late) - LATE_ROWS} more)"] if len(late) > LATE_ROWS else []
    return (["input rows at or behind the watermark their batch judged lateness by (the one the batch before it "
             "ran with):"] + ["  " + line for line in late[:LATE_ROWS]] + more + [LATE_RULE])


def explain_late(late: Sequence[str], history: Sequence[Any], show: Callable[[int | None], str]) -> str:
    """The late input rows with the watermark timeline ('' without late rows): why rows were dropped."""
    return "\n".join(list(late) + ["watermark timeline:"] + ["  " + line for line in timeline(history, show)]) if late else ""


def explain_missing(missing: Sequence[tuple], names: Sequence[str], history: Sequence[Any], output_mode: str,
                    show: Callable[[int | None], str], inputs: int = 1, late: Sequence[str] = (),
                    kinds: Sequence[str] | None = None) -> str:
    """Why the missing rows that end a window are not there yet ('' when none of them does, when the
    output mode writes rows before their window closes, or when the end column is not a timestamp:
    `kinds`, the columns' type kinds, say which are), with the `late` input rows."""
    times = _times(names, kinds)
    end_at = next((names.index(c) for c in END_COLUMNS if c in times), None)
    if end_at is None or output_mode != "append" or not missing:
        return ""
    ends = sorted({row[end_at] // 1000 for row in missing if isinstance(row[end_at], int)})
    if not ends:
        return ""
    ran_with = max((b.watermark_before_ms or 0 for b in history), default=0)
    left = history[-1].watermark_after_ms or 0 if history else 0
    delay = _delay_ms(history)
    chain = [str(o.get("operatorName")) for o in (history[-1].operators if history else [])]
    out = []
    for end in ends[:3]:
        what = f"a row ending at {show(end)} is written by the first batch that runs with a watermark at or after it"
        if ran_with >= end and len(chain) > 1:
            out.append(f"{what}; a batch has run with a global watermark of {show(ran_with)}, but the query "
                       f"chains {len(chain)} stateful operators ({', '.join(chain)}, as its progress lists them): "
                       "the window's operator closes a window by the watermark its input carries, which an "
                       "operator before it holds back (a stream-stream join by its time bound), so the global "
                       "watermark must pass the end by that much more; else its rows were dropped as late or "
                       "counted in another window")
        elif ran_with >= end:
            out.append(f"{what}; a batch has run with {show(ran_with)}, so its window was closed and written "
                       "without these values: its rows were dropped as late, arrived in another window, or the "
                       "window holds other values")
        elif left >= end:
            out.append(f"{what}; the last batch left {show(left)}, but no batch has run with it yet: the no-data "
                       "batch that follows runs it (unless no-data batches are off), or the next data batch")
        elif delay is not None:
            ms, batch = delay
            out.append(f"{what}; the watermark is {show(left)}. With the delay this query showed (batch "
                       f"{batch.batch_id}: max event time {show((batch.event_time or {}).get('max'))} - watermark "
                       f"{show(batch.watermark_after_ms)} = {ms / 1000:g} s), an input row at or after "
                       f"{show(end + ms)}{' on every input' if inputs > 1 else ''} moves it there, and the batch "
                       "after the one that reads it writes the row (an operator before the window, such as a "
                       "join, can hold the watermark back further)")
        else:
            out.append(f"{what}; the watermark is {show(left)} and no batch has read event times that move it")
    dropping = [b for b in history if b.dropped]
    if dropping:
        out.append(f"{sum(b.dropped for b in dropping)} row(s) were dropped as late (numRowsDroppedByWatermark; a "
                   "window aggregate counts groups), by batch(es) " + ", ".join(str(b.batch_id) for b in dropping))
    return "\n".join(out + list(late) + ["watermark timeline:"] + ["  " + line for line in timeline(history, show)])
