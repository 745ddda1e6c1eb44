"""A signal whose exception is swallowed on its way (a py4j finalizer, PySpark 3.x's type parsing) still
stops `run`/`certify` with its exit code: the handlers note the signal before they raise."""
from types import SimpleNamespace

import pytest

from eventtime import parallel
from eventtime.commands import execute
from eventtime.commands import spark as cli
from eventtime.commands.spark import Terminated


def _passed(n):
    return SimpleNamespace(status="passed", cause=None, reason=None, n=n)


def _fake_pairs(swallow_at=None, then_raise=False):
    def run_pairs(pairs, **kwargs):
        for i, _ in enumerate(pairs):
            if i == swallow_at:
                try:
                    cli.on_sigterm(15, None)  # noqa: SLF001 - the handler, as the signal would call it
                except BaseException:  # noqa: BLE001 - what a finalizer or PySpark 3.x does with it
                    if then_raise:
                        raise RuntimeError("Py4JError: org does not exist in the JVM") from None
            yield _passed(i)
    return run_pairs


ARGS = SimpleNamespace(jobs=1, timeout=None, quiet=True)


@pytest.fixture(autouse=True)
def _no_stop():
    cli.STOP.clear()  # noqa: SLF001
    yield
    cli.STOP.clear()  # noqa: SLF001


def test_a_swallowed_sigterm_stops_the_run_after_the_pair_it_arrived_in(monkeypatch):
    monkeypatch.setattr(parallel, "run_pairs", _fake_pairs(swallow_at=1))
    results, stopped = execute._run_all(list(range(5)), ARGS, None, None, None, None)  # noqa: SLF001
    assert [r.n for r in results] == [0, 1] and stopped == ("terminated (SIGTERM)", 143)


def test_a_sigterm_turned_into_another_error_stops_the_run_and_is_not_a_kit_bug(monkeypatch):
    monkeypatch.setattr(parallel, "run_pairs", _fake_pairs(swallow_at=2, then_raise=True))
    results, stopped = execute._run_all(list(range(5)), ARGS, None, None, None, None)  # noqa: SLF001
    assert [r.n for r in results] == [0, 1] and stopped == ("terminated (SIGTERM)", 143)


def test_a_swallowed_sigterm_in_the_last_pair_still_ends_the_run_so(monkeypatch):
    monkeypatch.setattr(parallel, "run_pairs", _fake_pairs(swallow_at=4))
    results, stopped = execute._run_all(list(range(5)), ARGS, None, None, None, None)  # noqa: SLF001
    assert len(results) == 5 and stopped == ("terminated (SIGTERM)", 143)


def test_control_without_a_signal_every_pair_runs_and_an_error_is_the_kits(monkeypatch):
    monkeypatch.setattr(parallel, "run_pairs", _fake_pairs())
    results, stopped = execute._run_all(list(range(5)), ARGS, None, None, None, None)  # noqa: SLF001
    assert len(results) == 5 and stopped is None

    def broken(pairs, **kwargs):
        yield _passed(0)
        raise RuntimeError("a bug")

    monkeypatch.setattr(parallel, "run_pairs", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        execute._run_all(list(range(5)), ARGS, None, None, None, None)  # noqa: SLF001


def _as_py4j_finalizer():
    """A function that looks, to the handler, like py4j's finalizer of a Java object."""
    namespace = {}
    source = "def _garbage_collect_object(handler):\n    import sys\n    handler(15, sys._getframe())\n"
    exec(compile(source, "/site-packages/py4j/java_gateway.py", "exec"), namespace)  # noqa: S102
    return namespace["_garbage_collect_object"]


def test_inside_a_py4j_finalizer_the_handler_only_notes_the_signal():
    _as_py4j_finalizer()(cli.on_sigterm)  # noqa: SLF001 - no exception: it would be printed and lost there
    assert cli.STOP == [("terminated (SIGTERM)", 143)]  # noqa: SLF001
    with pytest.raises(Terminated):  # control: anywhere else it raises
        cli.on_sigterm(15, __import__("sys")._getframe())  # noqa: SLF001


def test_ctrl_c_is_noted_and_raised_the_same_way():
    with pytest.raises(KeyboardInterrupt):
        cli.on_sigint(2, __import__("sys")._getframe())  # noqa: SLF001
    assert cli.STOP == [("interrupted (Ctrl-C)", 130)]  # noqa: SLF001
    _as_py4j_finalizer()(cli.on_sigint)  # noqa: SLF001
