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
