"""Snapshots on Spark, through `eventtime run --snapshot` as a user runs it (eventtime.snapshot).

- Bundled scenarios of every kind of check (rows, the whole output in complete mode, batches, event-time
  statistics, several input partitions, a restart, a join with `on_spark` variants, an
  applyInPandasWithState contract, decimals), their values stripped by tools/strip_expectations.py, are
  restored by `--snapshot create --yes` to files that pass and state the original values, with every
  line outside the values as it was. (The whole suite, by hand: docs/scenario-format.md, Snapshots.)
- The same with the pytest option, on one file: the same text as the CLI wrote.
- The example consumer's scenarios (user contracts, a Kafka source, a job's written tables and output
  topic), stripped in a copy of the project, restored the same way.
- In a terminal the question is asked: a no writes nothing, a yes writes the file.
- A changed pipeline: `--snapshot fix` in CI (`CI=1`, even with `--yes`) writes nothing and fails with a
  diff whose removed and added lines are exactly the rows that changed; outside CI it writes them and the
  scenario passes against the changed pipeline (and fails against the old one: the control); with
  `--snapshot-on-spark` the rows go into a variant for this Spark line and the common checks stay.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.strip_expectations import differences, strip_text  # noqa: E402

SUBSET = {  # file -> the implementation that snapshots it
    "tumbling/append-late-row-dropped.scenario.yaml": "tumbling_count=eventtime.pipelines.reference:tumbling_count",
    "tumbling/complete-mode.scenario.yaml": None,
    "tumbling/event-time-avg-running-double.scenario.yaml": None,
    "partitions/one-partition-runs-ahead.scenario.yaml": None,
    "restart/restart-keeps-window-exactly-once.scenario.yaml": None,
    "join/outer-row-evicted-on-arrival.scenario.yaml": "interval_join=eventtime.pipelines.reference:interval_join",
    "stateful/inactivity-timeout-fires-strictly-after.scenario.yaml":
        "inactivity_timeout=eventtime.pipelines.stateful:inactivity_timeout",
    "sum/duplicates-and-nulls-update.scenario.yaml": "tumbling_sum=eventtime.pipelines.reference:tumbling_sum",
    "session/merge-bridge-append.scenario.yaml": "session_count=eventtime.pipelines.reference:session_count",
}
BINDINGS = [arg for binding in SUBSET.values() if binding for arg in ("--pipeline", binding)]


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **more}


def _eventtime(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eventtime.cli", *args], cwd=cwd, env=_env(**env),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)


def _strip_into(files: dict[Path, Path]) -> None:
    for original, copy in files.items():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(strip_text(original.read_text()))


# a `batches:` without a value is filled with every batch (what `batches: N` counts, and their fields)
_FILLED_BATCH = re.compile(r"\n *- \{data: , watermark_before: , watermark_after: , dropped: , state_rows: , rows: \}")


def _restored(original: Path, copy: Path, contracts: list[Path] | None = None) -> None:
    """`copy` states the values of `original`, and strips to the same text (comments, layout and inputs kept;
    a batch count is restored as the batches themselves)."""
    from eventtime.loader import load_scenario
    from eventtime.registry import ContractLookup

    lookup = ContractLookup(contracts or [])
    assert differences(load_scenario(original, contracts=lookup), load_scenario(copy, contracts=lookup)) == []
    assert _FILLED_BATCH.sub("", strip_text(copy.read_text())) == strip_text(original.read_text()), copy


def test_stripped_bundled_scenarios_are_restored_by_create(tmp_path):
    files = {ROOT / "scenarios" / name: tmp_path / "suite" / name for name in SUBSET}
    _strip_into(files)
    stripped = {copy: copy.read_text() for copy in files.values()}
    proc = _eventtime("run", "suite", *BINDINGS, "--snapshot", "create", "--yes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"wrote {len(SUBSET)} files" in proc.stdout
    assert "event_time.avg" not in proc.stdout  # one partition: the average is exact, and written
    for original, copy in files.items():
        assert copy.read_text() != stripped[copy]
        _restored(original, copy)
    again = _eventtime("run", "suite", *BINDINGS, "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(SUBSET)} passed, 0 failed" in again.stdout

    # the pytest option writes the same text
    one = tmp_path / "plugin" / "complete-mode.scenario.yaml"
    _strip_into({ROOT / "scenarios" / "tumbling" / "complete-mode.scenario.yaml": one})
    plugin = subprocess.run([sys.executable, "-m", "pytest", str(one), "-p", "no:cacheprovider", "-q",
                             "--eventtime-pipeline", SUBSET["tumbling/append-late-row-dropped.scenario.yaml"],
                             "--eventtime-snapshot", "create", "--eventtime-snapshot-yes"],
                            cwd=tmp_path / "plugin", env=_env(), capture_output=True, text=True, timeout=900)
    assert "wrote 1 file" in plugin.stdout, plugin.stdout + plugin.stderr
    assert one.read_text() == (tmp_path / "suite" / "tumbling" / "complete-mode.scenario.yaml").read_text()


@pytest.mark.any_line  # the writer filling stripped files is the kit's own; the consumer's tox runs its two lines
def test_the_consumer_scenarios_are_restored_by_create(tmp_path):
    source = ROOT / "examples" / "consumer"
    project = tmp_path / "consumer"
    shutil.copytree(source, project, ignore=shutil.ignore_patterns("__pycache__", ".tox", "*.egg-info"))
    originals = sorted((source / "tests" / "scenarios").rglob("*.scenario.yaml"))
    assert len(originals) >= 10
    files = {f: project / f.relative_to(source) for f in originals}
    _strip_into(files)
    proc = _eventtime("run", "tests/scenarios", "--snapshot", "create", "--yes", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for original, copy in files.items():
        _restored(original, copy, [source / "contracts"])
    again = _eventtime("run", "tests/scenarios", "-q", cwd=project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(originals)} passed, 0 failed" in again.stdout


SCENARIO = """scenario: snapshot-fix
description: two keys' windows; the changed pipeline counts key b one more
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s, output_mode: append}
steps:
  - add:
      events: [[a, "00:00:01"], [b, "00:00:02"], [c, "00:00:03"], [b, "00:00:12"]]
  - process
  - expect:
      watermark: "00:00:07"   # 00:00:12 - 5 s
  - add:
      events: [[a, "00:00:30"]]
  - process
  - expect:
      rows:
        - [a, "00:00:00", "00:00:10", 1]
        - [b, "00:00:00", "00:00:10", 1]   # b's first window
        - [c, "00:00:00", "00:00:10", 1]
        - [b, "00:00:10", "00:00:20", 1]
      watermark: "00:00:25"
"""

CHANGED = '''"""tumbling_count, changed: key b is counted one more."""
from pyspark.sql import functions as F

from eventtime.pipelines.reference import tumbling_count as reference


def tumbling_count(sources, params):
    out = reference(sources, params)
    return out.withColumn("count", F.when(F.col("key") == "b", F.col("count") + 1).otherwise(F.col("count")))
'''


@pytest.mark.any_line  # the fix diff and the CI rule are the kit's own, of a count the same on every line
def test_a_changed_pipeline_gives_a_fix_diff_of_exactly_its_rows(tmp_path):
    (tmp_path / "changed.py").write_text(CHANGED)
    path = tmp_path / "fix.scenario.yaml"
    path.write_text(SCENARIO)
    changed = ["--pipeline", "tumbling_count=changed:tumbling_count"]
    reference = ["--pipeline", "tumbling_count=eventtime.pipelines.reference:tumbling_count"]
    assert _eventtime("run", path.name, *reference, "-q", cwd=tmp_path).returncode == 0  # the file is right

    ci = _eventtime("run", path.name, *changed, "--snapshot", "fix", "--yes", cwd=tmp_path, CI="true")
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert path.read_text() == SCENARIO  # nothing written
    assert "never written in CI" in ci.stdout
    diff = [line for line in ci.stdout.splitlines() if line.startswith(("+", "-")) and line[:3] not in ("+++", "---")]
    assert diff == ['-        - [b, "00:00:00", "00:00:10", 1]   # b\'s first window',
                    '+        - [b, "00:00:00", "00:00:10", 2]   # b\'s first window',
                    '-        - [b, "00:00:10", "00:00:20", 1]',
                    '+        - [b, "00:00:10", "00:00:20", 2]'], ci.stdout

    written = _eventtime("run", path.name, *changed, "--snapshot", "fix", "--yes", cwd=tmp_path)
    assert written.returncode == 0, written.stdout + written.stderr
    assert path.read_text() == SCENARIO.replace('"00:00:10", 1]   # b', '"00:00:10", 2]   # b').replace(
        '[b, "00:00:10", "00:00:20", 1]', '[b, "00:00:10", "00:00:20", 2]')
    assert _eventtime("run", path.name, *changed, "-q", cwd=tmp_path).returncode == 0
    assert _eventtime("run", path.name, *reference, "-q", cwd=tmp_path).returncode == 1  # the control

    path.write_text(SCENARIO)  # the line's own variant instead
    variant = _eventtime("run", path.name, *changed, "--snapshot", "fix", "--snapshot-on-spark", "--yes", cwd=tmp_path)
    assert variant.returncode == 0, variant.stdout + variant.stderr
    text = path.read_text()
    assert text.startswith(SCENARIO)  # the common checks as they were
    import pyspark  # the line the child ran on: this environment's

    major, minor = pyspark.__version__.split(".")[:2]
    assert f'">={major}.{minor},<{major}.{int(minor) + 1}": {{rows: [' in text
    assert _eventtime("run", path.name, *changed, "-q", cwd=tmp_path).returncode == 0


def _in_a_terminal(args: list[str], cwd: Path, answer: str) -> tuple[int, str]:
    """Run `eventtime ARGS` on a pseudo-terminal, answering the snapshot's question with `answer`."""
    import pty
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: eventtime on the terminal
        os.chdir(cwd)
        os.execve(sys.executable, [sys.executable, "-m", "eventtime.cli", *args], _env())
    out, asked, deadline = b"", False, time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child ended and closed the terminal
            break
        if not chunk:
            break
        out += chunk
        if not asked and b"[y/N]" in out:
            os.write(fd, answer.encode() + b"\n")
            asked = True
    _, status = os.waitpid(pid, 0)
    assert asked, out.decode(errors="replace")
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


@pytest.mark.any_line  # the question and the answer are the kit's own; CI asks on the newest line
def test_in_a_terminal_the_snapshot_is_written_after_a_yes(tmp_path):
    path = tmp_path / "complete-mode.scenario.yaml"
    _strip_into({ROOT / "scenarios" / "tumbling" / "complete-mode.scenario.yaml": path})
    stripped = path.read_text()
    args = ["run", path.name, "--pipeline", SUBSET["tumbling/append-late-row-dropped.scenario.yaml"], "--snapshot",
            "create", "-q"]
    code, said = _in_a_terminal(args, tmp_path, "n")
    assert code == 1 and "not written: answered no" in said
    assert path.read_text() == stripped
    code, said = _in_a_terminal(args, tmp_path, "y")
    assert code == 0 and "wrote 1 file" in said, said
    _restored(ROOT / "scenarios" / "tumbling" / "complete-mode.scenario.yaml", path)


@pytest.mark.any_line  # how the controller gathers the workers' observations is the kit's own
def test_under_xdist_the_files_are_written_once_by_the_controller(tmp_path):
    """`pytest -n 2 --eventtime-snapshot`: a file's two implementations run on different workers (xdist
    deals fewer than four items round robin); the controller writes the file once, restored to the
    original values, and (the control) leaves a file whose implementations observed different things
    on the two workers untouched, naming both."""
    contract = (ROOT / "scenarios" / "tumbling_count.contract.yaml").read_text().split("implementations:")[0]
    (tmp_path / "changed.py").write_text(CHANGED)
    for name, second in (("agree", "eventtime.pipelines.sql:tumbling_count"), ("differ", "changed:tumbling_count")):
        suite = tmp_path / name
        suite.mkdir()
        (suite / f"{name}.contract.yaml").write_text(
            contract.replace("contract: tumbling_count", f"contract: {name}")
            + f"implementations: [eventtime.pipelines.reference:tumbling_count, {second}]\n")
        original = tmp_path / f"{name}.scenario.yaml"
        original.write_text(SCENARIO.replace("contract: tumbling_count", f"contract: {name}"))
        _strip_into({original: suite / original.name})
        stripped = (suite / original.name).read_text()
        proc = subprocess.run([sys.executable, "-m", "pytest", name, "-n", "2", "-v", "-p", "no:cacheprovider",
                               "--eventtime-snapshot", "create", "--eventtime-snapshot-yes"],
                              cwd=tmp_path, env=_env(PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)])),
                              capture_output=True, text=True, timeout=900)
        said = proc.stdout + proc.stderr
        workers = {m.group(1) for m in re.finditer(rf"\[(gw\d)\] .*{name}\.scenario\.yaml::", said)}
        assert workers == {"gw0", "gw1"}, said  # the two runs of the file: on two workers
        assert proc.returncode == 1, said  # the items ran with holes: they fail, as in one process
        if name == "agree":
            assert said.count("wrote 1 file: agree/agree.scenario.yaml") == 1, said
            _restored(original, suite / original.name, [suite])
        else:  # the control: nothing written
            assert ("differ/differ.scenario.yaml: not touched: its implementations observed different things "
                    "(changed:tumbling_count; eventtime.pipelines.reference:tumbling_count)") in said, said
            assert (suite / original.name).read_text() == stripped
