"""The one mechanism behind the harness's patches of PySpark classes (`eventtime.harness.threadpatch`, used
by jobio, jobpaths and jobsession): installed while any thread is inside, pyspark's own put back at the
last leave, each thread its own state, nested enters refused or stacked. Plain classes stand in for
PySpark's: the rules are the mechanism's, whatever it patches."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from eventtime.harness.threadpatch import ThreadPatch


class Target:
    def hello(self):
        return "own"

    def bye(self):
        return "own bye"


OWN_HELLO, OWN_BYE = Target.__dict__["hello"], Target.__dict__["bye"]


def _patch(nested=False, extra=()):
    # inside: "patched for STATE"; outside: pyspark's own (`instead`, the wrap jobio and jobsession use)
    patch = ThreadPatch("a greeting", lambda: [(Target, "hello", patch.instead("hello", lambda state, self: (
        f"patched for {state}"))), *extra], nested=nested)
    return patch


def _in_thread(fn):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result(timeout=30)


def test_installed_at_the_first_enter_and_pyspark_own_back_at_the_last_leave_of_any_thread():
    patch = _patch()
    a_in, b_in, a_out, b_out = (threading.Event() for _ in range(4))
    seen = {}

    def a():
        with patch.entered("a"):
            a_in.set()
            b_in.wait(30)
        a_out.set()

    def b():
        a_in.wait(30)
        with patch.entered("b"):
            b_in.set()
            a_out.wait(30)  # a has left; b is still inside
            seen["after a left"] = (Target.__dict__["hello"] is not OWN_HELLO, Target().hello())
        b_out.set()

    assert Target.__dict__["hello"] is OWN_HELLO and not patch.installed
    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen["after a left"] == (True, "patched for b")
    assert Target.__dict__["hello"] is OWN_HELLO and not patch.installed  # the very function, put back


def test_a_thread_that_did_not_enter_gets_pyspark_own_method():
    patch = _patch()
    with patch.entered("scenario 1"):
        assert Target().hello() == "patched for scenario 1"
        assert _in_thread(lambda: Target().hello()) == "own"
        assert _in_thread(patch.current) is None
        assert patch.original(Target(), "hello") is OWN_HELLO
    assert patch.current() is None


def test_a_nested_enter_is_refused_unless_nesting_is_allowed():
    patch = _patch()
    with patch.entered("outer"):
        with pytest.raises(RuntimeError, match="a greeting is already active in this thread"):
            with patch.entered("inner"):
                pass
        assert patch.current() == "outer" and patch.installed  # the refused enter counted nothing
    assert not patch.installed

    stacked = _patch(nested=True)
    with stacked.entered("outer"):
        with stacked.entered("inner"):
            assert Target().hello() == "patched for inner"
        assert Target().hello() == "patched for outer" and stacked.installed
    assert stacked.current() is None and Target.__dict__["hello"] is OWN_HELLO


def test_a_call_under_way_keeps_pyspark_own_method_when_the_last_leave_uninstalls():
    patch = _patch()
    with patch.entered("job"):
        held = Target.__dict__["hello"]  # what another thread's call already resolved
    assert Target.__dict__["hello"] is OWN_HELLO
    assert _in_thread(lambda: held(Target())) == "own"


def test_a_patch_that_cannot_be_made_leaves_none_installed():
    broken = _patch(extra=[(Target, "missing", lambda original: original)])
    with pytest.raises(KeyError):
        with broken.entered("job"):
            pass
    assert Target.__dict__["hello"] is OWN_HELLO and not broken.installed and broken.current() is None
    twice = ThreadPatch("twice", lambda: [(Target, "bye", lambda o: o), (Target, "bye", lambda o: o)])
    with pytest.raises(ValueError, match="Target.bye is patched twice"):
        with twice.entered("job"):
            pass
    assert Target.__dict__["bye"] is OWN_BYE



def test_a_substituted_call_names_the_line_of_the_code_that_made_it_not_the_patchs():
    # jobio's patched methods are threadpatch's: the place an error names passes over its frames too
    import inspect

    from pyspark.sql.streaming.readwriter import DataStreamReader

    from eventtime.harness.jobio import substitution

    reader = object.__new__(DataStreamReader)  # no session: the substitution never reaches pyspark's own
    with substitution(lambda call: call):
        call, line = reader.load("/data/clicks", format="json"), inspect.currentframe().f_lineno
    assert (call.path, call.format) == ("/data/clicks", "json")
    assert (call.place.file, call.place.line) == (__file__, line), call.place
