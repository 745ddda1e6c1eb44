"""`eventtime.parallel` without Spark: --jobs values, result order, one session per worker thread."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from eventtime.cli import main
from eventtime.parallel import MAX_JOBS, Pair, observable, parse_jobs, run_pairs


@pytest.mark.parametrize("text, jobs", [("1", 1), (" 3 ", 3), (str(MAX_JOBS), MAX_JOBS), (2, 2)])
def test_parse_jobs_accepts_whole_numbers_in_range(text, jobs):
    assert parse_jobs(text) == jobs


@pytest.mark.parametrize("text", ["0", "-1", str(MAX_JOBS + 1), "two", "1.5", ""])
def test_parse_jobs_says_what_it_accepts(text):
    with pytest.raises(ValueError, match=f"--jobs takes a whole number from 1 to {MAX_JOBS}"):
        parse_jobs(text)


@pytest.mark.parametrize("command", ["run", "certify"])
def test_cli_rejects_a_bad_jobs_value_as_usage_error(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--jobs", "0"])
    assert exc.value.code == 2
    assert "--jobs takes a whole number from 1 to" in capsys.readouterr().err


class FakeSessions:
    """Stand-in for isolated Spark sessions: records which thread made and activated which session."""

    def __init__(self):
        self.lock = threading.Lock()
        self.made: list[tuple[str, str]] = []
        self.active: dict[str, str] = {}

    def isolated(self, base):
        with self.lock:
            name = f"clone{len(self.made) + 1}-of-{base}"
            self.made.append((threading.current_thread().name, name))
            return name

    def activate(self, session):
        with self.lock:
            self.active[threading.current_thread().name] = session


def _pairs(n):
    return [Pair(SimpleNamespace(name=f"s{i}"), f"impl{i}", rerun=f"rerun {i}") for i in range(n)]


def test_results_come_in_the_order_given_even_when_later_pairs_finish_first():
    pairs = _pairs(6)
    first_may_finish = threading.Event()
    finished: list[str] = []
    lock = threading.Lock()

    def runner(scenario, impl, *, session, rerun, conf):
        if scenario.name == "s0":  # the first pair waits until every other one is done
            assert first_may_finish.wait(10), "the other pairs did not finish while the first was running"
        with lock:
            finished.append(scenario.name)
            if len(finished) == len(pairs) - 1:
                first_may_finish.set()
        return SimpleNamespace(name=scenario.name, impl=impl, session=session, rerun=rerun, conf=conf)

    sessions = FakeSessions()
    results = list(run_pairs(pairs, jobs=3, session="base", conf={"k": "v"}, runner=runner, sessions=sessions))
    assert [r.name for r in results] == [f"s{i}" for i in range(6)]
    assert finished[-1] == "s0"
    assert [(r.impl, r.rerun, r.conf) for r in results] == [(f"impl{i}", f"rerun {i}", {"k": "v"}) for i in range(6)]
    # one isolated session per worker thread, never the caller's; the caller's is active again at the end
    threads = [t for t, _ in sessions.made]
    assert len(threads) == len(set(threads)) <= 3
    assert {r.session for r in results} <= {s for _, s in sessions.made}
    assert sessions.active[threading.current_thread().name] == "base"


def test_one_job_runs_in_the_calling_thread_on_the_given_session():
    seen = []

    def runner(scenario, impl, *, session, rerun, conf, timeout):
        seen.append((threading.current_thread().name, session, timeout))
        return scenario.name

    sessions = FakeSessions()
    assert list(run_pairs(_pairs(3), jobs=1, session="base", timeout=5.0, runner=runner,
                          sessions=sessions)) == ["s0", "s1", "s2"]
    assert seen == [(threading.current_thread().name, "base", 5.0)] * 3
    assert sessions.made == []


def test_a_failing_runner_surfaces_at_its_place_in_the_order():
    def runner(scenario, impl, *, session, rerun, conf):
        if scenario.name == "s1":
            raise RuntimeError("boom")
        return scenario.name

    results = run_pairs(_pairs(5), jobs=2, session="base", runner=runner, sessions=FakeSessions())
    assert next(results) == "s0"
    with pytest.raises(RuntimeError, match="boom"):
        next(results)
    assert list(results) == []


def test_observable_drops_timings_and_compares_rows_as_a_multiset():
    a = {"status": "passed", "seconds": 1.2, "rerun": "x", "runtime": {"master": "local[2]"},
         "steps": [{"seconds": 0.3, "watermark_ms": 5,
                    "batches": [{"rows": [[2, "b"], [1, "a"]], "duration_ms": 40, "dropped": 1}]}]}
    b = {"status": "passed", "seconds": 9.9, "rerun": "y", "runtime": {"master": "local[4]"},
         "steps": [{"seconds": 2.0, "watermark_ms": 5,
                    "batches": [{"rows": [[1, "a"], [2, "b"]], "duration_ms": 900, "dropped": 1}]}]}
    assert observable(a) == observable(b)
    b["steps"][0]["batches"][0]["dropped"] = 0
    assert observable(a) != observable(b)
