"""The harness's settings for tiny batches (harness/tuning.py) and the switch that leaves Spark's defaults."""
import pytest

from eventtime.harness import tuning


def test_on_by_default(monkeypatch):
    monkeypatch.delenv(tuning.ENV, raising=False)
    assert tuning.enabled()
    assert tuning.query_conf() == {"spark.sql.streaming.pollingDelay": "0", "spark.sql.codegen.wholeStage": "false",
                                   "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@pytest.mark.parametrize("value", ["off", "OFF", " off ", "0", "false", "no"])
def test_off_leaves_spark_defaults(monkeypatch, value):
    monkeypatch.setenv(tuning.ENV, value)
    assert not tuning.enabled()
    assert tuning.query_conf() == {}


@pytest.mark.parametrize("value", ["on", "1", "yes", ""])
def test_anything_else_keeps_them(monkeypatch, value):
    monkeypatch.setenv(tuning.ENV, value)
    assert tuning.enabled() and tuning.query_conf()


def test_callers_get_copies(monkeypatch):
    monkeypatch.delenv(tuning.ENV, raising=False)
    tuning.query_conf()["spark.sql.codegen.wholeStage"] = "true"
    assert tuning.QUERY_CONF["spark.sql.codegen.wholeStage"] == "false"


# Run in a fresh interpreter (no JVM: the warm-up asks converters only, never Spark): which modules
# PySpark's py4j argument converters import on their first ask, with and without the warm-up thread.
_CONVERTERS = r'''
import json, sys
import pyspark.sql  # registers PySpark's converters, as any session's import does
from py4j import protocol
from eventtime.harness import session as hs

def ask():
    for converter in list(protocol.INPUT_CONVERTER):
        converter.can_convert(object())

first = set(sys.modules)
if sys.argv[1] == "warm":
    thread = hs._warm_argument_converters_while_launching()
    thread.join(120)
    assert not thread.is_alive()
second = set(sys.modules)
ask()  # the main thread's first py4j call with an argument
print(json.dumps({"by_warm_up": sorted(second - first), "by_first_call": sorted(set(sys.modules) - second)}))
'''


def _converter_imports(mode):
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CONVERTERS, mode], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_converters_first_imports_happen_on_the_warm_up_thread_not_on_the_first_call():
    cold = _converter_imports("cold")
    assert cold["by_warm_up"] == []
    warm = _converter_imports("warm")
    assert warm["by_first_call"] == []  # the main thread's first call imports nothing left
    assert set(warm["by_warm_up"]) == set(cold["by_first_call"])  # the same imports, made earlier
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:  # control: PySpark 4's numpy converters import pandas & co
        assert "pandas" in cold["by_first_call"] and "pandas" in warm["by_warm_up"]


_GUARD = r'''
import json, sys
import pyspark.sql  # registers PySpark's converters, as any session's import does
from py4j import protocol
from eventtime.harness import session as hs

if sys.argv[1] == "guarded":
    hs._numpy_converters_ask_only_with_numpy()
before = set(sys.modules)
took_object = [c.can_convert(object()) for c in protocol.INPUT_CONVERTER]
imported = sorted(set(sys.modules) - before)
import numpy as np
took_array = any(c.can_convert(np.array([1, 2])) for c in protocol.INPUT_CONVERTER)
took_scalar = any(c.can_convert(np.int64(1)) for c in protocol.INPUT_CONVERTER)
print(json.dumps({"imported": imported, "object": any(took_object), "array": took_array, "scalar": took_scalar}))
'''


def _guarded(mode):
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _GUARD, mode], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_numpy_converters_import_nothing_until_numpy_is_imported_and_then_convert_as_before():
    guarded, unguarded = _guarded("guarded"), _guarded("unguarded")
    assert "pandas" not in guarded["imported"] and "numpy" not in guarded["imported"]
    assert guarded == {**unguarded, "imported": guarded["imported"]}  # the same answers for every argument
    assert guarded["array"] and not guarded["object"]
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:  # control: unguarded, PySpark 4's first ask imports pandas
        assert "pandas" in unguarded["imported"]
