"""`check_properties(..., jobs=N)` without Spark: the runs shared by the properties (one per text, however many
threads ask), and the lines told in the order of the properties whatever order they finish in."""
from __future__ import annotations

import threading

import pytest

from eventtime import properties as P
from eventtime.parallel import parse_jobs

BOUND = 60.0  # a bound on each wait of these tests, never reached when they pass: no result depends on time


class _Held:
    """A stand-in observe that blocks until released, counting its calls per text."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, text: str) -> object:
        with self.lock:
            self.calls[text] = self.calls.get(text, 0) + 1
        self.started.set()
        assert self.release.wait(BOUND)
        return object()


def _ask_from_threads(runs: P._SharedRuns, observe, text: str, n: int) -> tuple[list, list[threading.Thread]]:
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(runs.get(text, observe))) for _ in range(n)]
    for t in threads:
        t.start()
    return got, threads


def test_a_text_asked_by_several_threads_at_once_is_run_once_and_all_get_that_run():
    runs, observe = P._SharedRuns(timeout=BOUND), _Held()
    got, threads = _ask_from_threads(runs, observe, "stream A", 4)
    assert observe.started.wait(BOUND)
    observe.release.set()
    for t in threads:
        t.join(BOUND)
    assert observe.calls == {"stream A": 1}
    assert len(got) == 4 and all(g is got[0] for g in got)
    assert runs.get("stream A", observe) is got[0] and observe.calls == {"stream A": 1}  # kept
    runs.get("stream B", observe)
    assert observe.calls == {"stream A": 1, "stream B": 1}  # another text: its own run


def test_without_the_shared_runs_each_thread_would_run_the_text_itself():
    """The control: the stand-in counts every call, so the test above could fail."""
    observe = _Held()
    observe.release.set()
    threads = [threading.Thread(target=observe, args=("stream A",)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
    assert observe.calls == {"stream A": 3}


def test_a_run_that_raised_is_not_kept_the_next_asker_runs_it_again():
    runs, calls = P._SharedRuns(timeout=BOUND), []

    def observe(text: str) -> object:
        calls.append(text)
        if len(calls) == 1:
            raise P._KitError("the driver died")
        return "observed"

    with pytest.raises(P._KitError):
        runs.get("s", observe)
    assert runs.get("s", observe) == "observed" and calls == ["s", "s"]


def test_a_wait_for_another_threads_run_is_bounded_and_says_so():
    runs, observe = P._SharedRuns(timeout=BOUND), _Held()
    got, threads = _ask_from_threads(runs, observe, "s", 1)
    assert observe.started.wait(BOUND)
    runs.wait = 0.0  # the owner is held until released: the bound is what ends the wait, whatever the time
    with pytest.raises(P._KitError, match="waited 0 seconds for the run of a generated stream another property"):
        runs.get("s", observe)
    observe.release.set()
    threads[0].join(BOUND)
    assert observe.calls == {"s": 1} and len(got) == 1


class _Sessions:
    def isolated(self, base):
        return f"isolated of {base}"

    def activate(self, session):
        pass


class _StandInCheck:
    """`_Check`'s face to `_run_checks`: property `a` ends only once `d` ended (out of order on purpose)."""

    def __init__(self) -> None:
        self.d_done = threading.Event()
        self.sessions: dict[str, str] = {}

    def first_line(self, report):
        return report.describe() if report.does_not_apply is not None else f"checking {report.prop}"

    def run(self, report, session):
        self.sessions[report.prop] = session
        if report.prop == "a":
            assert self.d_done.wait(BOUND)
        report.held_on = len(report.prop)
        if report.prop == "d":
            self.d_done.set()
        return report


def _reports():
    return [P.PropertyReport("a"), P.PropertyReport("b", does_not_apply="no reason"), P.PropertyReport("c"),
            P.PropertyReport("d")]


EXPECTED = ["checking a", "a: held on 1 generated stream(s)", "b: does not apply: no reason", "checking c",
            "c: held on 1 generated stream(s)", "checking d", "d: held on 1 generated stream(s)"]


@pytest.mark.parametrize("jobs", [1, 3])
def test_each_propertys_lines_are_told_together_in_the_order_of_the_properties(jobs):
    check, lines = _StandInCheck(), []
    if jobs == 1:
        check.d_done.set()  # one at a time, `a` runs first: it cannot wait for `d`
    P._run_checks(check, _reports(), jobs, "base", lines.append, None, sessions=_Sessions())  # type: ignore[arg-type]
    assert lines == EXPECTED
    assert set(check.sessions) == {"a", "c", "d"}  # `b` does not apply: not run
    expected_session = "base" if jobs == 1 else "isolated of base"
    assert set(check.sessions.values()) == {expected_session}


def test_jobs_takes_what_eventtime_run_jobs_takes():
    assert parse_jobs("3") == 3
    with pytest.raises(ValueError, match="--jobs takes a whole number from 1 to"):
        P.check_properties(None, "m:f", session=None, jobs=0)  # type: ignore[arg-type]


def test_the_command_takes_jobs_by_eventtime_runs_rule_and_hands_it_to_the_check(capsys, tmp_path, monkeypatch):
    from eventtime.cli import main
    from eventtime.commands import spark

    with pytest.raises(SystemExit) as exc:
        main(["check-properties", "page_windows", "--jobs", "0"])
    assert exc.value.code == 2 and "--jobs takes a whole number from 1 to 16, got 0" in capsys.readouterr().err
    given: list = []

    def check(contract, target, *, properties, jobs, **kwargs):
        given.append(jobs)
        return P.CheckReport(contract.name, [P.PropertyReport(p, held_on=1) for p in properties])

    monkeypatch.chdir(tmp_path)
    (tmp_path / "page_windows.contract.yaml").write_text(
        "contract: page_windows\ndescription: d\nsources:\n  clicks:\n    columns: \"page string, ts timestamp\"\n"
        "    event_time: ts\noutput:\n  columns: \"page string, clicks bigint\"\n")
    monkeypatch.setattr(spark, "open_session", lambda args: (object(), 0))
    monkeypatch.setattr(P, "check_properties", check)
    for argv, jobs in ((["--jobs", "3"], 3), ([], 1)):
        assert main(["check-properties", "page_windows.contract.yaml", "--pipeline", "page_windows=json:loads",
                     "--property", "no-query-dies", *argv]) == 0, capsys.readouterr()
        assert given[-1] == jobs
