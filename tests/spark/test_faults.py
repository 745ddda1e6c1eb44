"""Faults of a run's surroundings become verdicts naming the cause: a checkpoint directory that becomes
unwritable mid-run, a full temporary directory, py4j's callback server failing. Each test runs
`eventtime run` in its own process (its own JVM, its own temporary directory) on four small scenarios
with a pipeline that injects the fault (`tests.spark.pipelines.breaks_surroundings`, which says how),
and checks what a person and the results file get: the verdict names the cause, the run goes on,
every verdict is in the file, no Python traceback, within a bound.

The full file systems are real: a small tmpfs mounted as the run's temporary directory, in a mount
namespace of the run's own (`unshare -Urm`, no privileges needed where user namespaces are allowed;
skipped, saying so, where they are not).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.any_line]  # CI runs it on the newest line (tests/README.md)

ROOT = Path(__file__).parents[2]
SCENARIOS = ["restart/restart-keeps-window-exactly-once", "tumbling/append-late-row-dropped",
             "tumbling/out-of-order-across-batches", "tumbling/window-bounds"]
NAMES = ["restart-keeps-window-exactly-once", "tumbling-append-late-row-dropped",
         "tumbling-out-of-order-across-batches", "tumbling-window-bounds"]
PIPELINE = "tests.spark.pipelines:breaks_surroundings"
# seconds: a backstop against a hang, never a measure of speed (no timed tests): the kit bounds each of
# its own waits (DEFAULT_TIMEOUT), so a run that is only slow ends by itself. Four scenarios and a JVM
# start took over 240 s at a 1-minute load average of 29 on two cores (the suite beside a copy of itself
# and a warm-kill benchmark), all of them judged correctly; 600 s is the hang bound of test_bounds.py.
BOUND = 600
TMPFS = "size=4m,nr_inodes=1000"  # room for one scenario's checkpoint, little more
SECOND = 4  # `KIND:4`: the fault hits the query of the second scenario (the first builds three)


def _can_mount(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    done = subprocess.run([unshare, "-Urm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"],
                          capture_output=True)
    return done.returncode == 0


def _run(tmp_path, fault, *, tmpfs=False):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for i, name in enumerate(SCENARIOS):  # numbered so they run in this order
        (folder / f"{i}-{name.split('/')[1]}.scenario.yaml").write_text(
            (ROOT / "scenarios" / f"{name}.scenario.yaml").read_text())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "EVENTTIME_TEST_FAULT": fault, "TMPDIR": str(tmp),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "eventtime.cli", "run", str(folder), "--pipeline", PIPELINE,
               "--json", str(tmp_path / "results.json")]
    if tmpfs:
        command = ["unshare", "-Urm", "sh", "-c", f'mount -t tmpfs -o {TMPFS} tmpfs "$0" && exec "$@"', str(tmp),
                   *command]
    try:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run did not end within {BOUND}s")
    text = done.stdout + done.stderr
    # no traceback of Python, of py4j's Python side or of the kit (Spark's own log of a failed
    # query, a Java stack, goes to the JVM's stderr as for any query that fails)
    assert "Traceback" not in text and "Py4JNetworkError" not in text and "Py4JJavaError" not in text, text[-4000:]
    assert "ConnectionRefusedError" not in text, text[-4000:]
    data = json.loads((tmp_path / "results.json").read_text())
    schema = json.loads(resources.files("conformance").joinpath("schema/results.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator(schema).validate(data)
    assert "incomplete" not in data, data.get("incomplete")  # every verdict is in the file
    assert [r["scenario"] for r in data["results"]] == NAMES
    return done.returncode, text, {r["scenario"]: r for r in data["results"]}, str(tmp)


def _verdicts(results):
    return {name: (r["status"], r.get("cause")) for name, r in results.items()}


@pytest.mark.parametrize("build, scenario, step", [(SECOND, NAMES[1], "step 2 (process)"),
                                                   (3, NAMES[0], "step 8 (start)")],
                         ids=["mid-step", "during-a-restart"])
def test_a_checkpoint_directory_that_becomes_unwritable_is_an_error_naming_it(tmp_path, build, scenario, step):
    rc, text, results, tmp = _run(tmp_path, f"checkpoint:{build}")
    assert rc == 1, text[-3000:]
    assert _verdicts(results) == {n: ("error", "checkpoint_unwritable") if n == scenario else ("passed", None)
                                  for n in NAMES}, text[-3000:]
    reason = results[scenario]["reason"]
    assert reason.startswith(f"{step}: the checkpoint directory {tmp}/eventtime-"), reason
    assert "/checkpoint could not be written: FileAlreadyExistsException: " in reason, reason
    assert reason.endswith("/checkpoint/commits"), reason  # Spark's words name what could not be written
    assert "could not be written" in text


def test_a_full_temporary_directory_is_an_error_saying_no_space_left_there(tmp_path):
    if not _can_mount(tmp_path):
        pytest.skip("cannot mount a small tmpfs in a user namespace here (unshare -Urm)")
    rc, text, results, tmp = _run(tmp_path, f"fill:{SECOND}", tmpfs=True)
    assert rc == 1, text[-3000:]
    # the filler is removed when the next query is built: the scenarios after it pass
    assert _verdicts(results) == {n: ("error", "no_space") if n == NAMES[1] else ("passed", None)
                                  for n in NAMES}, text[-3000:]
    reason = results[NAMES[1]]["reason"]
    assert reason.startswith(f"step 2 (process): no space left in {tmp} (it holds the query's checkpoint "), reason
    assert "No space left on device" in reason and "TMPDIR" in reason, reason


def test_a_temporary_directory_that_takes_no_new_file_fails_every_scenario_after_it_saying_so(tmp_path):
    if not _can_mount(tmp_path):
        pytest.skip("cannot mount a small tmpfs in a user namespace here (unshare -Urm)")
    rc, text, results, tmp = _run(tmp_path, f"inodes:{SECOND}", tmpfs=True)
    assert rc == 1, text[-3000:]
    # nothing frees the files: every later scenario runs, and each says why it cannot be judged
    assert _verdicts(results) == {n: ("passed", None) if n == NAMES[0] else ("error", "no_space")
                                  for n in NAMES}, text[-3000:]
    for name in NAMES[1:]:
        assert f"no space left in {tmp}" in results[name]["reason"], results[name]["reason"]


def test_a_callback_server_that_fails_mid_step_is_an_error_and_the_next_scenario_gets_a_new_one(tmp_path):
    rc, text, results, tmp = _run(tmp_path, f"callback:{SECOND}")
    assert rc == 1, text[-3000:]
    # without the new callback server each later scenario fails at its first trigger (connection refused)
    assert _verdicts(results) == {n: ("error", "callback_server_failed") if n == NAMES[1] else ("passed", None)
                                  for n in NAMES}, text[-3000:]
    reason = results[NAMES[1]]["reason"]
    assert reason.startswith("step 2 (process): the Python callback server stopped: the JVM could not call back "
                             "into Python (Py4JException: "), reason
    assert any("callback server had stopped" in note for note in results[NAMES[2]]["notes"]), results[NAMES[2]]
    assert "Error while waiting for a connection" not in text  # py4j's own log of it, with its traceback


def test_a_temporary_directory_that_cannot_be_written_at_all_is_an_error_naming_it(spark, tmp_path, monkeypatch):
    from eventtime.loader import load_scenario
    from eventtime.runner import run_scenario
    from eventtime.scenarios import SUITE_DIR

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))  # mkdtemp: NotADirectoryError, for real
    scenario = load_scenario(Path(SUITE_DIR) / "tumbling" / "window-bounds.scenario.yaml")
    result = run_scenario(scenario, session=spark)
    assert (result.status, result.cause) == ("error", "checkpoint_unwritable")
    assert result.reason.startswith(f"the temporary directory {blocker / 'tmp'} could not be written"), result.reason
    monkeypatch.undo()
    assert run_scenario(scenario, session=spark).status == "passed"  # the control: the same, writable
