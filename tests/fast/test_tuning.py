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


# Run in a fresh interpreter (no JVM: the user's first `F.lit` fails for want of a SparkContext, after
# PySpark's own imports): which modules that first call imports, with and without the import thread.
_FIRST_USE = r'''
import json, sys
from pyspark.sql import functions as F
from eventtime.harness import coldstart as hs

first = set(sys.modules)
if sys.argv[1] == "meanwhile":
    thread = hs.import_first_use_modules_meanwhile()
    thread.join(120)
    assert not thread.is_alive()
    assert hs.import_first_use_modules_meanwhile() is None  # once per process
second = set(sys.modules)
try:
    F.lit(1)  # the user's first call
except Exception:
    pass
print(json.dumps({"by_thread": sorted(second - first), "by_first_call": sorted(set(sys.modules) - second)}))
'''


def _in_a_fresh_interpreter(code, *args):
    """What `code`, run by a new Python (no JVM, nothing imported yet), prints as JSON on its last line."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _first_use_imports(mode):
    return _in_a_fresh_interpreter(_FIRST_USE, mode)


def test_what_pysparks_first_calls_import_is_imported_on_the_thread_not_by_the_users_call():
    alone = _first_use_imports("alone")
    meanwhile = _first_use_imports("meanwhile")
    assert not [m for m in meanwhile["by_first_call"] if m.split(".")[0] in ("pandas", "pyarrow", "pyspark")]
    assert "pyspark.testing.utils" in meanwhile["by_thread"]
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:  # control: alone, PySpark 4's first lit imports pandas
        assert "pandas" in alone["by_first_call"] and "pandas" in meanwhile["by_thread"]


_GUARD = r'''
import json, sys
import pyspark.sql  # registers PySpark's converters, as any session's import does
from py4j import protocol
from eventtime.harness import coldstart as hs

if sys.argv[1] == "guarded":
    hs.numpy_converters_ask_only_with_numpy()
before = set(sys.modules)
took_object = [c.can_convert(object()) for c in protocol.INPUT_CONVERTER]
imported = sorted(set(sys.modules) - before)
import numpy as np
took_array = any(c.can_convert(np.array([1, 2])) for c in protocol.INPUT_CONVERTER)
took_scalar = any(c.can_convert(np.int64(1)) for c in protocol.INPUT_CONVERTER)
print(json.dumps({"imported": imported, "object": any(took_object), "array": took_array, "scalar": took_scalar}))
'''


def _guarded(mode):
    return _in_a_fresh_interpreter(_GUARD, mode)


def test_numpy_converters_import_nothing_until_numpy_is_imported_and_then_convert_as_before():
    guarded, unguarded = _guarded("guarded"), _guarded("unguarded")
    assert "pandas" not in guarded["imported"] and "numpy" not in guarded["imported"]
    assert guarded == {**unguarded, "imported": guarded["imported"]}  # the same answers for every argument
    assert guarded["array"] and not guarded["object"]
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:  # control: unguarded, PySpark 4's first ask imports pandas
        assert "pandas" in unguarded["imported"]


_ONCE_LAUNCHED = r'''
import json, subprocess, sys
from pyspark import java_gateway
from eventtime.harness import coldstart as hs

seen = {}
with hs.first_use_imports_once_launched():
    seen["before_launch"] = "pyspark.testing.utils" in sys.modules or hs.first_use_thread() is not None
    proc = java_gateway.Popen([sys.executable, "-c", "pass"], preexec_fn=lambda: None)  # as PySpark launches
    proc.wait(60)
    thread = hs.first_use_thread()
    seen["thread_after_launch"] = thread is not None
    thread.join(120)
    seen["imported"] = "pyspark.testing.utils" in sys.modules
seen["restored"] = java_gateway.Popen is subprocess.Popen
print(json.dumps(seen))
'''


def test_first_use_imports_start_only_once_the_jvm_process_is_started():
    assert _in_a_fresh_interpreter(_ONCE_LAUNCHED) == {
        "before_launch": False, "thread_after_launch": True, "imported": True, "restored": True}
