"""Why an expected window row is missing, in event-time terms: the failure's explanation.

"Why did my window not fire?" In append mode a window (or session) row is written by the first batch
that runs with a watermark at or after its end (Spark guide, "Handling Late Data and Watermarking").
The explanation gives the query's watermark timeline (each batch's watermark before and after, and the
max event time it read), says whether a batch has run with a watermark past the row's end, and if not,
what input would move it there: with the delay the query showed (a batch's max event time minus the
watermark it left), a row at or after `end + delay`. The pipeline's logic is not known here, so it is
phrased as what the watermark allows: an operator before the window (a join) can hold the watermark
back further, and several inputs move it only together (the `min` policy).

Pure Python: it reads the observations the harness and the model both produce.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["END_COLUMNS", "explain_missing"]

END_COLUMNS = ("window_end", "session_end")  # an output row's end: the time its window closes at
TIMELINE_BATCHES = 6  # the last batches shown; older ones are counted


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


def explain_missing(missing: Sequence[tuple], names: Sequence[str], history: Sequence[Any], output_mode: str,
                    show: Callable[[int | None], str], inputs: int = 1) -> str:
    """Why the missing rows that end a window are not there yet ('' when none of them does, or when
    the output mode writes rows before their window closes)."""
    end_at = next((names.index(c) for c in END_COLUMNS if c in names), None)
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
    late = [b for b in history if b.dropped]
    if late:
        out.append(f"{sum(b.dropped for b in late)} row(s) were dropped as late (numRowsDroppedByWatermark; a "
                   "window aggregate counts groups), by batch(es) " + ", ".join(str(b.batch_id) for b in late))
    return "\n".join(out + ["watermark timeline:"] + ["  " + line for line in timeline(history, show)])
