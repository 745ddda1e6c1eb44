"""The harness names a known clash of PySpark with a library instead of leaving a bare Python error."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("pyarrow")

from eventtime.harness.compat import SparkCompat  # noqa: E402

# what PySpark 3.5.9 with pyarrow 26.0.1 reported (the Python traceback inside the Java message)
SLICE = ('Traceback (most recent call last):\n  File "pyarrow/table.pxi", line 3181, in pyarrow.lib.RecordBatch.slice\n'
         "TypeError: 'float' object cannot be interpreted as an integer")


def test_pyarrow_too_new_for_pyspark_3_apply_in_pandas_with_state_is_named():
    compat = SparkCompat(SimpleNamespace(version="3.5.9"))
    hint = compat.environment_hint(["[STREAM_FAILED] Query terminated with exception", SLICE])
    assert hint is not None and hint.startswith("PySpark 3.5.9's applyInPandasWithState does not work with pyarrow ")
    assert hint.endswith("install pyarrow<18 alongside PySpark 3.x")


def test_other_failures_get_no_hint():
    compat = SparkCompat(SimpleNamespace(version="3.5.9"))
    assert compat.environment_hint(["TypeError: 'float' object cannot be interpreted as an integer"]) is None
    assert compat.environment_hint([]) is None


def test_trigger_once_is_found_on_the_writer_beside_the_dataframe_class(monkeypatch):
    import sys
    import types

    from pyspark.sql import DataFrame

    from eventtime.harness.compat import _writer_takes_once

    assert _writer_takes_once(DataFrame)

    class Writer:  # a line whose writer no longer takes once=True
        def trigger(self, *, processingTime=None, availableNow=None):
            return self
    module = types.ModuleType("nospark.streaming.readwriter")
    module.DataStreamWriter = Writer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nospark.streaming.readwriter", module)
    Frame = type("DataFrame", (), {"__module__": "nospark.dataframe"})
    assert not _writer_takes_once(Frame)

    def trigger(self, *, processingTime=None, once=None, availableNow=None):
        return self
    monkeypatch.setattr(Writer, "trigger", trigger)
    assert _writer_takes_once(Frame)  # control: the same class with once=True
    assert not _writer_takes_once(type("DataFrame", (), {"__module__": "missing.dataframe"}))
