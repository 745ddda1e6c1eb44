"""Drives Spark Structured Streaming deterministically: MemoryStream inputs, a stepped clock, observed batches."""
from .clock import ClockWaitTimeout, SteppedClock
from .compat import SparkCompat, compat_for
from .session import DEFAULT_MASTER, TEST_CONF, get_session, other_session, prepare_session
from .stream import BatchObservation, HarnessError, HarnessTimeout, MemorySource, QueryFailed, StreamRun

__all__ = [
    "BatchObservation", "ClockWaitTimeout", "DEFAULT_MASTER", "HarnessError", "HarnessTimeout",
    "MemorySource", "QueryFailed", "SparkCompat", "SteppedClock", "StreamRun", "TEST_CONF",
    "compat_for", "get_session", "other_session", "prepare_session",
]
