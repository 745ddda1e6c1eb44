"""Drives Spark Structured Streaming deterministically: MemoryStream inputs, a stepped clock, observed batches.

Names are resolved on first use (PEP 562): importing the package, or its pure `observations`
module (as the model does), loads none of the driver modules.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "BatchObservation": "observations", "ClockWaitTimeout": "clock", "DEFAULT_MASTER": "session",
    "HarnessError": "stream", "HarnessTimeout": "stream", "MemorySource": "stream", "QueryFailed": "stream",
    "SparkCompat": "compat", "SteppedClock": "clock", "StreamRun": "stream", "TEST_CONF": "session",
    "compat_for": "compat", "get_session": "session", "other_session": "session", "prepare_session": "session",
}

__all__ = [
    "BatchObservation", "ClockWaitTimeout", "DEFAULT_MASTER", "HarnessError", "HarnessTimeout",
    "MemorySource", "QueryFailed", "SparkCompat", "SteppedClock", "StreamRun", "TEST_CONF",
    "compat_for", "get_session", "other_session", "prepare_session",
]
if sorted(__all__) != sorted(_EXPORTS):  # pragma: no cover - guards refactors
    raise ImportError(f"eventtime.harness.__all__ and its export table differ: {sorted(set(__all__) ^ set(_EXPORTS))}")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'eventtime.harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .clock import ClockWaitTimeout, SteppedClock
    from .compat import SparkCompat, compat_for
    from .observations import BatchObservation
    from .session import DEFAULT_MASTER, TEST_CONF, get_session, other_session, prepare_session
    from .stream import HarnessError, HarnessTimeout, MemorySource, QueryFailed, StreamRun
