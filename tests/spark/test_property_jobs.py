"""`check_properties(..., jobs=3)` against `jobs=1` on one contract and seed (derandomized, no database): the
same verdicts, the same counts of streams held on and not judged, the same counterexamples, and the seeded bug
(a `foreachBatch` that appends, from a `main()` that makes its own session) found by both; the properties ran
at once, each on its own isolated session of the one SparkContext."""
from __future__ import annotations

import re

import pytest

from eventtime import properties as P
from eventtime.properties import check_properties

from tests.spark.test_properties import CONTRACT, FEW

pytestmark = pytest.mark.spark

PROPS = ["no-query-dies", "exactly-once-rerun", "restart-transparency", "bounded-state"]


@pytest.fixture
def contract(tmp_path):
    from eventtime.contractfile import load_contract_file

    (tmp_path / "page_windows.contract.yaml").write_text(CONTRACT)
    return load_contract_file(tmp_path / "page_windows.contract.yaml")


def _seen(report):
    return [(p.prop, p.verdict, p.held_on, dict(p.not_judged), dict(p.run_errors),
             None if p.counterexample is None else p.counterexample.text) for p in report.properties]


def test_three_at_a_time_gives_the_report_one_at_a_time_gives_and_finds_the_seeded_bug(spark, contract,
                                                                                        monkeypatch):
    sessions: dict[str, set] = {}
    real = P._Check.run

    def noting(self, report, session):  # which session each property ran on
        sessions.setdefault(report.prop, set()).add(id(session))
        return real(self, report, session)

    monkeypatch.setattr(P._Check, "run", noting)
    lines: dict[int, list[str]] = {1: [], 3: []}
    reports = {n: check_properties(contract, "tests.spark.jobs_properties:main", session=spark, properties=PROPS,
                                   max_examples=4, jobs=n, progress=lines[n].append, **FEW) for n in (1, 3)}
    one, three = reports[1], reports[3]
    assert _seen(one) == _seen(three), (one.describe(), three.describe())
    # how many smaller streams Hypothesis tries while it shrinks depends on time (its shrinker skips slow passes):
    # the count is left out, the rest of each line must be the same
    assert [_untimed(line) for line in lines[1]] == [_untimed(line) for line in lines[3]]
    verdicts = {p.prop: p.verdict for p in three.properties}
    assert verdicts == {"no-query-dies": "held", "exactly-once-rerun": "broken", "restart-transparency": "held",
                        "bounded-state": "does_not_apply"}, three.describe()
    assert not three.held and all(p.held_on >= 1 for p in three.properties if p.verdict == "held")
    ran = [p for p in PROPS if p != "bounded-state"]
    assert all(len(sessions[p]) == 2 for p in ran)  # the caller's session with jobs=1, a worker's with jobs=3
    assert all(id(spark) in sessions[p] for p in ran)  # with jobs=1, each ran on the caller's session ...
    assert all(len(sessions[p]) == 2 for p in ran)  # ... with jobs=3 on a worker's isolated one


def _untimed(line: str) -> str:
    return re.sub(r"shrinking tried \d+ smaller", "shrinking tried N smaller", line)
