"""The event-time concepts the standard suite covers, as scenario tags, with where each is documented.

Every bundled scenario carries at least one of these tags; `tests/fast/test_suite_coverage.py` checks
that every concept has at least one scenario. The Spark guide is the Structured Streaming
Programming Guide; seed files are the Flink / Dataflow texts the project was conceived from.
"""
from __future__ import annotations

__all__ = ["CONCEPTS", "SPARK_GUIDE", "SEEDS", "GUIDE_SECTIONS", "SEED_TEXTS"]

SPARK_GUIDE = "Spark Structured Streaming Programming Guide"
SEEDS = "Flink event-time documentation and the Dataflow model (seed texts)"

# The sections of the Spark guide a scenario's description may cite as `Spark guide, "Section"`:
# headings of the Structured Streaming Programming Guide (transformWithState: its page, Spark 4.0+).
GUIDE_SECTIONS = frozenset({
    "Arbitrary Stateful Operations", "Conditions for watermarking to clean aggregation state",
    "Handling Late Data and Watermarking", "Inner Joins with optional Watermarking",
    "Outer Joins with Watermarking", "Output Modes", "Policy for handling multiple watermarks",
    "Recovering from Failures with Checkpointing", "Recovery Semantics after Changes in a Streaming Query",
    "Stream-stream Joins", "Streaming Deduplication", "Support matrix for joins in streaming queries",
    "Triggers", "Types of time windows", "Window Operations on Event Time", "transformWithState",
    "Reading Metrics Interactively",
})
# The seed texts a description may cite as `seed 000`: number -> what the text is
SEED_TEXTS = {
    "000": "Flink, Event Time Details",
    "001": "Flink, Generating Timestamps / Watermarks",
    "002": "Apache Flink 101 course, Event Time and Watermarks",
    "003": "Flink, Event Time (zh)",
    "004": "Flink, Generating Timestamps / Watermarks (zh)",
}

# tag -> (what the concept is, where it is documented)
CONCEPTS: dict[str, tuple[str, str]] = {
    # -- Spark's watermark ------------------------------------------------------------------------
    "watermark-formula": ("watermark = max event time seen - delay, computed at the end of a micro-batch "
                          "and applied from the next one", "Spark guide: Handling Late Data and Watermarking"),
    "initial-watermark": ("before any data the watermark is 0 (1970-01-01), so nothing is late yet",
                          "Spark guide: Handling Late Data and Watermarking"),
    "watermark-monotonic": ("the watermark never moves backwards, whatever arrives later",
                            "Spark guide: Handling Late Data and Watermarking"),
    "late-data-dropped": ("rows whose state was already finalised by the watermark are dropped and counted",
                          "Spark guide: Handling Late Data and Watermarking; numRowsDroppedByWatermark"),
    "lateness-per-window": ("lateness is judged per window: a row older than the watermark is still accepted "
                            "while its window is open", "Spark guide: Handling Late Data and Watermarking"),
    "append-mode": ("append: a result row is emitted once, when it is final",
                    "Spark guide: Output Modes; Conditions for watermarking to clean aggregation state"),
    "update-mode": ("update: changed result rows are emitted every batch", "Spark guide: Output Modes"),
    "complete-mode": ("complete: the whole result table every batch; watermark does not drop state",
                      "Spark guide: Output Modes; Conditions for watermarking to clean aggregation state"),
    "no-data-batch": ("a batch without new data runs when the watermark moved, to emit finalised results",
                      "Spark guide: Handling Late Data and Watermarking; spark.sql.streaming.noDataMicroBatches.enabled"),
    "no-data-batch-disabled": ("with no-data batches disabled, finalised results wait for the next data",
                               "spark.sql.streaming.noDataMicroBatches.enabled"),
    "event-time-stats": ("a progress's eventTime min, max and avg: avg is a running double per task, merged "
                         "as tasks finish and truncated to a millisecond",
                         "Spark: StreamingQueryProgress.eventTime; EventTimeStatsAccum"),
    "state-eviction": ("state below the watermark is removed", "Spark guide: Handling Late Data and Watermarking"),
    "delay-units": ("watermark delays written in different units, seconds to months (a month is 31 days)",
                    "Spark guide: withWatermark; CalendarInterval"),
    "far-past-events": ("events far in the past of the watermark", "Spark guide: Handling Late Data and Watermarking"),
    "future-events": ("events far ahead of the others drag the watermark forward",
                      "Spark guide: Handling Late Data and Watermarking"),
    "duplicate-events": ("the same event delivered more than once", "Spark guide: Streaming Deduplication"),
    "out-of-order-within-batch": ("disorder inside one micro-batch is invisible to the watermark",
                                  "Spark guide: Handling Late Data and Watermarking"),
    "out-of-order-across-batches": ("disorder across micro-batches is judged against the watermark",
                                    "Spark guide: Handling Late Data and Watermarking"),
    "multiple-watermarks-min": ("several inputs: the global watermark is the minimum (default policy)",
                                "Spark guide: Policy for handling multiple watermarks"),
    "multiple-watermarks-max": ("several inputs: the global watermark is the maximum (policy max)",
                                "Spark guide: Policy for handling multiple watermarks"),
    "policy-survives-restart": ("the multiple-watermark policy is fixed by the checkpoint, not the restart's conf",
                                "Spark guide: Recovery Semantics after Changes in a Streaming Query"),
    "restart-keeps-watermark": ("a restart from the checkpoint restores the watermark and the state",
                                "Spark guide: Recovering from Failures with Checkpointing"),
    "session-merge-bridge": ("a late-but-accepted row can bridge two sessions into one",
                             "Spark guide: Types of time windows (session windows)"),
    "outer-join-null-delay": ("outer-join rows with nulls appear only once the watermark passes",
                              "Spark guide: Stream-stream Joins, Outer Joins with Watermarking"),
    "dedup-state-expiry": ("deduplication state expires with the watermark: a copy with the same (now late) ts "
                           "is then dropped as late; with dropDuplicatesWithinWatermark a later row passes again",
                           "Spark guide: Streaming Deduplication"),
    "window-bounds": ("window start is inclusive, end exclusive; window_time is end - 1 microsecond",
                      "Spark guide: Types of time windows; functions.window_time"),
    # -- Concepts from the seeds, shown as Spark does them -----------------------------------------
    "bounded-out-of-orderness": ("out-of-order arrival bounded by the delay is handled; beyond it, dropped",
                                 "seed 001 (bounded out-of-orderness), seed 002"),
    "partition-runs-ahead": ("one partition/source runs ahead: Flink's per-partition minimum vs Spark's one "
                             "global watermark from the maximum of a source", "seed 000 (per-partition watermarks), seed 004"),
    "idle-source": ("an idle input stalls event time under the min policy; Spark has no idleness marker",
                    "seed 000 (idle sources), seed 002, seed 003"),
    "periodic-vs-punctuated": ("the watermark moves at micro-batch boundaries, Spark's 'period'; "
                               "no per-event (punctuated) watermark", "seed 001 (periodic vs punctuated), seed 000"),
    "stream-status": ("an input marked idle (explicitly, or after a processing-time idle timeout) leaves the "
                      "minimum; active again below the operator's watermark it does not move it back (dataflow "
                      "profile, model only)", "seed 000 (stream status), seed 002, seed 003 (idling sources)"),
    "watermark-as-input": ("a watermark a source or an upstream operator emits, given as input; an input's "
                           "watermark never goes back (dataflow profile, model only)",
                           "seed 001 (sources with timestamps and watermarks), seed 003"),
    "completeness-vs-latency": ("a larger delay emits later but drops fewer rows", "seed 002 (trade-off)"),
    "allowed-lateness": ("a fired window accepts late elements for `allowed lateness` and fires again with "
                         "each (dataflow profile)", "seed 000 (allowed lateness)"),
    "late-side-output": ("elements past a window's allowed lateness go to a side output instead of vanishing "
                         "(dataflow profile)", "seed 000 (getting late data as a side output)"),
    "early-firing": ("a window fires before the watermark reaches its end: each time its pane holds N elements, "
                     "or a processing-time delay after the pane's first element (dataflow profile; the processing-time one "
                     "model only)",
                     "seed 000 (delaying watermarks: the early firing of windows)"),
    "discarding-panes": ("each firing counts only the elements since the previous one, so the panes sum to the "
                         "accumulating count (dataflow profile)",
                         "seed 000 (late records in window operators: result updates)"),
    "session-merging": ("a session window merges with every session it overlaps; a late element that bridges "
                        "two sessions merges them, judged late on the merged session (dataflow profile)",
                        "seed 000 (late records in window operators: session windows)"),
    # -- Operators ---------------------------------------------------------------------------------
    "tumbling-window": ("tumbling event-time window", "Spark guide: Window Operations on Event Time"),
    "sliding-window": ("sliding event-time window: a row belongs to window/slide windows",
                       "Spark guide: Window Operations on Event Time"),
    "session-window": ("session window with a fixed gap", "Spark guide: Types of time windows"),
    "dynamic-gap": ("session window whose gap comes from each row", "Spark guide: Types of time windows"),
    "raw-event-time-aggregation": ("aggregation grouped by the event-time column itself",
                                   "Spark guide: Conditions for watermarking to clean aggregation state"),
    "deduplication": ("dropDuplicates with the event-time column", "Spark guide: Streaming Deduplication"),
    "dedup-within-watermark": ("dropDuplicatesWithinWatermark (Spark 3.5+)", "Spark guide: Streaming Deduplication"),
    "stream-stream-join": ("stream-stream join with watermarks and a time-range condition",
                           "Spark guide: Stream-stream Joins"),
    "chained-operators": ("several stateful operators in one query (Spark 3.4+)",
                          "Spark guide: Support matrix for joins / multiple stateful operators"),
    "event-time-timeout": ("applyInPandasWithState with GroupStateTimeout.EventTimeTimeout",
                           "Spark guide: Arbitrary Stateful Operations"),
    "event-time-timer": ("transformWithState event-time timers (Spark 4.0+)",
                         "Spark guide: transformWithState"),
    "processing-time": ("processing time, current_timestamp() and triggers follow the clock",
                        "Spark guide: Triggers"),
    "restart": ("stop and start from the same checkpoint", "Spark guide: Recovering from Failures with Checkpointing"),
    "trigger-once": ("Trigger.Once: each run starts from the checkpoint, runs one trigger (at most one batch, so "
                     "no trailing no-data batch) and stops; a window closes only when a later run reads data",
                     "Spark guide: Triggers"),
    "operator-metrics": ("what each stateful operator did, as the query's progress lists them (the one nearest "
                         "the sink first): rows in state, rows updated, rows dropped as late; the watermark a "
                         "batch ran with; a batch without event-time statistics",
                         "Spark guide: Reading Metrics Interactively (StreamingQueryProgress.stateOperators)"),
    "state-contents": ("which rows a stateful operator keeps after a step (a window's group, an open session, "
                       "each side of a join, a state variable), read with Spark's state data source (Spark 4.0+)",
                       "Spark guide: Handling Late Data and Watermarking; State Data Source Integration Guide"),
    "available-now": ("trigger(availableNow=True): each run processes what is available, the no-data batch a "
                      "watermark advance needs included, and stops; state and watermark carry over the checkpoint",
                      "Spark guide: Triggers"),
}
