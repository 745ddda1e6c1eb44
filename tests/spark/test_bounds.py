"""Every wait on the user's code is bounded and names it (docs/reliability.md, *No hangs*): a pipeline's
function that loops while it builds its DataFrame is stopped at the run's timeout, in both faces (the
console script, pytest in a user's project), naming the function, where it is defined and the line it
had reached; a job's foreachBatch function that never returns is named and stopped the same way. After
either, nothing of it is left running: no thread in the user's code, no active query, and the next
scenario on the session passes. Bounds are the run's own timeout; the subprocesses' timeouts only keep
a regression from hanging the suite (they are what fails without the fix)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from eventtime import run_scenario
from eventtime.harness.jobio import shown_file
from eventtime.textreport import describe_failure

from tests.spark.test_job_ends import CONTRACT as JOB_CONTRACT  # a one-query job's contract
from tests.spark.test_job_ends import ONE  # one click

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # the kit's own machinery (tests/README.md)

HANG_BOUND = 600  # seconds before a child run counts as hung (its own bound on the pipeline is 10 s)

CONTRACT = textwrap.dedent("""\
    contract: page_clicks
    description: Who clicked which page.
    sources: {clicks: {columns: "page string, ts timestamp", event_time: ts}}
    output: {columns: "page string, ts timestamp"}
    """)

SCENARIO = textwrap.dedent("""\
    scenario: one-click
    description: one click, out as it came
    contract: page_clicks
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {rows: [[home, "00:00:01"]]}
    """)

# a pipeline that waits for a flag nobody sets under test, while it builds its DataFrame
LOOPING = textwrap.dedent("""\
    import os
    import time


    def transform(clicks):
        while not os.path.exists(os.environ.get("READY_FLAG", "/nonexistent/ready")):
            time.sleep(0.2)
        return clicks
    """)

# run after the scenario in the same pytest process (collected after it): nothing of it left running
AFTER = textwrap.dedent("""\
    import sys
    import threading


    def test_nothing_of_the_stopped_pipeline_is_left_running(eventtime_spark):
        assert [q.name for q in eventtime_spark.streams.active] == []
        in_job = [t for t, f in sys._current_frames().items() for f in [f] if "looping_job.py" in str(
            [x.f_code.co_filename for x in _stack(f)])]
        assert in_job == [], in_job
        assert not [t.name for t in threading.enumerate() if t.name == "eventtime-bound"]


    def _stack(frame):
        while frame is not None:
            yield frame
            frame = frame.f_back
    """)


def _project(root: Path, flag: Path) -> dict[str, str]:
    (root / "page_clicks.contract.yaml").write_text(CONTRACT)
    (root / "one.scenario.yaml").write_text(SCENARIO)
    (root / "looping_job.py").write_text(LOOPING)
    (root / "test_zz_after.py").write_text(AFTER)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n'
                                         'eventtime_pipelines = ["page_clicks = looping_job:transform"]\n')
    return {**{k: v for k, v in os.environ.items() if k != "EVENTTIME_DRIVER_LOG"}, "READY_FLAG": str(flag)}


def _says_where(text: str, root: Path) -> None:
    """The job's lines named from the run's working folder (`root`), where the job file is."""
    assert "pipeline looping_job:transform: its function transform (" in text, text
    assert "(looping_job.py:5) did not return the query's DataFrame within 10s" in text, text
    assert "was stopped at looping_job.py:6 (in transform)" in text \
        or "was stopped at looping_job.py:7 (in transform)" in text, text  # the loop's lines


def test_the_console_script_stops_a_pipeline_looping_while_it_builds_its_dataframe(tmp_path):
    env = _project(tmp_path, tmp_path / "never")
    done = subprocess.run([str(Path(sys.executable).with_name("eventtime")), "run", "one.scenario.yaml",
                           "--timeout", "10"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=HANG_BOUND)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR one-click  [looping_job:transform]" in done.stdout, done.stdout
    _says_where(done.stdout, tmp_path)
    # control: with its flag there, the same pipeline returns and the scenario passes (a wide bound: its
    # triggers are waited for, and a loaded machine must not fail it)
    (tmp_path / "ready").write_text("")
    env["READY_FLAG"] = str(tmp_path / "ready")
    ok = subprocess.run([str(Path(sys.executable).with_name("eventtime")), "run", "one.scenario.yaml", "--timeout",
                         "120"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_BOUND)
    assert ok.returncode == 0 and "PASS  one-click" in ok.stdout, ok.stdout + ok.stderr


def test_pytest_stops_a_pipeline_looping_while_it_builds_its_dataframe_and_leaves_nothing_running(tmp_path):
    env = _project(tmp_path, tmp_path / "never")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA",
                           "--eventtime-timeout", "10"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=HANG_BOUND)
    out = done.stdout
    assert done.returncode == 1, out[-4000:] + done.stderr[-2000:]
    assert "1 failed, 1 passed" in out.splitlines()[-1], out[-3000:]
    assert "PASSED test_zz_after.py::test_nothing_of_the_stopped_pipeline_is_left_running" in out, out[-3000:]
    _says_where(out, tmp_path)


def batch_waits_forever(batch, batch_id):
    done = False
    while not done:  # waits for something nobody does under test
        time.sleep(0.05)


def batch_never_returns(spark):
    from tests.spark.jobs_of_queries import _clicks

    _clicks(spark).writeStream.foreachBatch(batch_waits_forever).start()


def test_a_foreach_batch_function_that_never_returns_is_named_and_stopped(spark, contract_beside):
    from tests.spark import jobs_of_queries as jobs

    # the bound must outlast the start's own first trigger on a loaded machine: only batch 0's never ends
    result = run_scenario(contract_beside(JOB_CONTRACT)(ONE), batch_never_returns, session=spark, timeout=40)
    assert result.status == "error", describe_failure(result)
    text = describe_failure(result)
    where = shown_file(__file__)
    defined = batch_waits_forever.__code__.co_firstlineno
    assert "timed out after 40s waiting for trigger for batch 0: the job's foreachBatch function " \
           f"batch_waits_forever ({where}:{defined}) was still running batch 0 at {where}:" in text, text
    assert "(in batch_waits_forever); it was stopped there" in text, text
    # nothing of it left running: no thread in its code, no active query, and the session still works
    assert not [t for t, f in sys._current_frames().items() if _in(f, "batch_waits_forever")]
    assert [q.name for q in spark.streams.active] == []
    assert not [t.name for t in threading.enumerate() if t.name == "eventtime-bound"]
    again = run_scenario(contract_beside(JOB_CONTRACT)(ONE), jobs.to_json_files, session=spark)
    assert again.status == "passed", describe_failure(again)


def _in(frame, function: str) -> bool:
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False
