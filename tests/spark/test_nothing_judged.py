"""A green run means the user's code was judged: a contract and pipeline whose every scenario is not
applicable fails the run, naming each scenario and why, through every face (`eventtime run`, `eventtime
certify`, pytest), unless the user says it is expected (`--allow-not-applicable CONTRACT`, pytest's
`--eventtime-allow-not-applicable`, the ini key `eventtime_allow_not_applicable`).

The project is a user's, run as a user runs it (the console script, pytest in a child process): one
contract (`tumbling_count`) bound to a pipeline whose `@implementation(supports=...)` excludes every
scenario, one (`session_count`, the control) bound to a pipeline that is judged and passes, and a
scenario of it that requires a newer Spark (not applicable there, which is no failure: its contract had
something judged)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment

from tests.lines import console_script

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # the kit's rule, the same on every line

TIMEOUT = 600  # seconds for one command, a JVM start included, on a loaded machine

JOBS = textwrap.dedent("""\
    from pyspark.sql import functions as F

    from eventtime import implementation


    @implementation(supports={"window": ["7 days"]})
    def count_updates(events, window, watermark_delay):
        return (events.withWatermark("ts", watermark_delay)
                .groupBy("key", F.window("ts", window)).agg(F.count(F.lit(1)).alias("count"))
                .select("key", F.col("window.start").alias("window_start"),
                        F.col("window.end").alias("window_end"), "count"))


    def count(events, window, watermark_delay):
        return count_updates(events, window, watermark_delay)
    """)

APPEND = textwrap.dedent("""\
    scenario: NAME
    description: Two events of one key in a window, written once the watermark passes its end.
    contract: tumbling_count
    params: {window: 10s, watermark_delay: 5s, output_mode: append}
    steps:
      - add: {events: [[a, "00:00:03"], [a, "00:00:07"]]}
      - add: {events: [[b, "00:00:30"]]}
      - process
      - expect:
          rows: [[a, "00:00:00", "00:00:10", 2]]
    """)


def _project(root: Path) -> None:
    """A user's project: `orders` scenarios of tumbling_count bound to the pipeline that excludes them all,
    `clicks` scenarios of it under a folder bound to the one that takes them (one of which needs Spark 99)."""
    (root / "jobs.py").write_text(JOBS)
    for folder, names in (("orders", ("first", "second")), ("clicks", ("judged", "future"))):
        (root / "tests" / folder).mkdir(parents=True)
        for name in names:
            text = APPEND.replace("NAME", f"{folder}-{name}")
            if name == "future":
                text = text.replace("steps:", "requires: {spark: '>=99'}\nsteps:")
            (root / "tests" / folder / f"{name}.scenario.yaml").write_text(text)
    (root / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.pytest.ini_options]
        testpaths = ["tests"]
        eventtime_pipelines = [
            "tumbling_count = jobs:count_updates",
            "tumbling_count[tests/clicks] = jobs:count",
        ]
        """))


def _run(words: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = child_environment(PYTHONPATH=os.pathsep.join(filter(None, [str(cwd), os.environ.get("PYTHONPATH")])))
    env.pop("CI", None)
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def test_eventtime_run_fails_when_a_bound_pipeline_had_nothing_judged_unless_allowed(tmp_path):
    _project(tmp_path)
    done = _run([*console_script(), "run"], tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "PASS  clicks-judged  [jobs:count]" in out, out
    assert ("ERROR contract 'tumbling_count' [jobs:count_updates]: nothing judged: all 2 of its scenarios were not "
            "applicable") in out, out
    for name in ("orders-first", "orders-second"):
        assert (f"  {name} (tests/orders/{name.split('-')[1]}.scenario.yaml): the implementation supports window "
                "7 days, the scenario uses 10") in out, out
    assert "say so: --allow-not-applicable tumbling_count" in out, out
    assert "[jobs:count]: nothing judged" not in out, out  # the control: a scenario of it judged, one needing Spark 99
    assert "1 passed, 0 failed, 0 errors, 3 not applicable, 0 invalid files, 1 with nothing judged" in out, out

    allowed = _run([*console_script(), "run", "--allow-not-applicable", "tumbling_count"], tmp_path)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "ERROR contract" not in allowed.stdout, allowed.stdout
    # allowed, but a green that judged nothing of it still says so, beside the totals
    assert ("note: contract 'tumbling_count' [jobs:count_updates]: nothing judged, as --allow-not-applicable "
            "allows") in allowed.stdout, allowed.stdout
    assert "1 with nothing judged (allowed)" in allowed.stdout, allowed.stdout


def test_eventtime_certify_fails_an_implementation_with_nothing_judged(tmp_path):
    _project(tmp_path)
    words = [*console_script(), "certify", "--pipeline", "tumbling_count=jobs:count_updates",
             "--scenarios", "tests/orders"]
    done = _run(words, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out  # the bundled suite of the contract runs too: none of it applies either
    assert "NOT APPLICABLE tumbling_count  [jobs:count_updates]" in out, out
    assert "ERROR contract 'tumbling_count' [jobs:count_updates]: nothing judged" in out, out
    with open(tmp_path / "pyproject.toml", "a") as fh:  # said in the project's settings instead
        fh.write('eventtime_allow_not_applicable = ["tumbling_count"]\n')
    allowed = _run(words, tmp_path)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_pytest_fails_the_run_when_a_bound_pipeline_had_nothing_judged_unless_allowed(tmp_path):
    _project(tmp_path)
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs"]
    done = _run(pytest_cmd, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    # the items keep pytest's skips; the run gets one failure naming the contract, each scenario and why
    assert "1 failed, 1 passed, 3 skipped" in out, out
    assert "nothing judged [tumbling_count] [jobs:count_updates]" in out, out
    assert "orders-second (tests/orders/second.scenario.yaml): the implementation supports window 7 days" in out
    assert "say so: --eventtime-allow-not-applicable tumbling_count" in out, out

    allowed = _run([*pytest_cmd, "--eventtime-allow-not-applicable", "tumbling_count"], tmp_path)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "1 passed, 3 skipped" in allowed.stdout, allowed.stdout
