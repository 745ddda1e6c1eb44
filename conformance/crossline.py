"""A new Spark across a restart (docs/upgrade.md, *A new Spark*): the steps of a scenario before its first
`start`/`restart` run on the Spark of another Python environment (the *earlier side*, its own process and
JVM), the rest on this one's, from the same checkpoint.

The earlier side is a child process, `PYTHON -m eventtime.crossline --serve`, started once per run and
given one scenario at a time: it runs the scenario's steps up to the restart in a run folder the parent
chose, leaves that folder (the checkpoint, the paths the query wrote) where it is, stops its query as a
restart does, and hands back through a file what the parent cannot read from the folder: each step's
verdict and batches, the sink's history and the number of starts. The parent then runs the whole
scenario in the same folder: the steps before the restart are not run again on Spark (their verdicts and
batches are the earlier side's) but their inputs are added to this side's sources again, one offset per
add as the earlier side added them, so the restarted query finds the offsets its checkpoint names and
reads what it had not committed, as at any restart (`stream.MemorySource.replayed_in`). From the restart
on, it runs as usual; the outcome is `upgrade.upgrade_verdict`'s, as for a new version of the job.

A job runs this way too: its paths are kept in the same run folder on both sides, each of its queries
restarts from its own checkpoint with the batches the earlier side handed over, the tables it made there
are made again on this side over the same folders (as external tables: the catalog is the earlier
side's process's, the data is in the run folder), and the records it published to its output topics
are handed over with them.

Limits: Spark Connect is not run this way, nor a job with a query that reads a topic another of its
queries publishes to (the reader's offsets are the earlier process's); the scenario's binding is
imported by its name on both sides, so it must be installed in both.
"""
from __future__ import annotations

import atexit
import json
import os
import pickle
import selectors
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from eventtime.harness.errors import EventtimeError
from eventtime.harness.waits import DEFAULT_TIMEOUT

from . import spec as m
from .crossing import Straight
from .results import ERROR, NOT_APPLICABLE, SKIPPED, ScenarioResult, StepResult

__all__ = ["EarlierSpark", "CrossLineError", "crossings", "main", "Resume", "Keep"]

# The earlier side answers on its own line; anything else the child prints goes to its log.
_DONE = "eventtime-crossline-done "
# This process's Spark, which the other environment must not inherit: its Python workers would run this
# environment's PySpark against the other's JVM.
_THIS_SPARK = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "PYTHONHOME", "VIRTUAL_ENV")
_STARTUP_SECONDS = 300.0  # a JVM's start on a loaded machine, on top of the scenario's own bound
_PROBE = ("import json, sys\n"
          "out = {'python': sys.version.split()[0]}\n"
          "try:\n"
          "    import pyspark\n"
          "    out['pyspark'] = pyspark.__version__\n"
          "except Exception as exc:\n"
          "    out['no_pyspark'] = f'{type(exc).__name__}: {exc}'\n"
          "try:\n"
          "    from importlib.metadata import version\n"
          "    import eventtime.crossline\n"
          "    out['eventtime'] = version('eventtime-conformance')\n"
          "except Exception as exc:\n"
          "    out['no_eventtime'] = f'{type(exc).__name__}: {exc}'\n"
          "print(json.dumps(out))\n")


class CrossLineError(EventtimeError):
    """The earlier side cannot run: its environment, or its process, said why."""


def _kit_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("eventtime-conformance")
    except PackageNotFoundError:
        return "unknown"


class EarlierSpark:
    """The earlier side of a run across Spark lines: another environment's Python (`--previous-python`), the
    `crossing.Crossings` of such a run: `run` runs one scenario across the lines; `close` ends the child."""

    def __init__(self, python: str, *, option: str = "--previous-python", contract_dirs: Sequence[str] = (),
                 startup: float = _STARTUP_SECONDS):
        self.python, self.option, self.contract_dirs = python, option, [str(d) for d in contract_dirs]
        self.startup = startup  # added to a scenario's bound: the earlier side's JVM starts in it
        self.spark, self.label = self._probe()
        self._child: subprocess.Popen[str] | None = None
        self._log: Path | None = None
        self._lock = threading.Lock()  # one scenario at a time on the earlier side (`--jobs` threads share it)
        atexit.register(self.close)

    def _probe(self) -> tuple[str, str]:
        """(the other environment's PySpark version, how a verdict names it); CrossLineError saying
        what is missing."""
        where = f"{self.option} {self.python}"
        if not os.path.exists(self.python):
            raise CrossLineError(f"{where}: no such file (give the python of another environment, e.g. "
                                 ".venv-spark35/bin/python)")
        if os.path.isdir(self.python) or not os.access(self.python, os.X_OK):
            raise CrossLineError(f"{where}: not an executable file (give the environment's bin/python)")
        try:
            done = subprocess.run([self.python, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                                  env=_environment())
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CrossLineError(f"{where}: cannot run it ({exc})") from None
        lines = done.stdout.strip().splitlines()
        try:
            said = json.loads(lines[-1]) if lines else None
        except ValueError:
            said = None
        if done.returncode != 0 or not isinstance(said, dict):
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            raise CrossLineError(f"{where}: is not a Python that runs ({tail[0] if tail else 'no output'})")
        if "no_pyspark" in said:
            raise CrossLineError(f"{where}: that environment has no pyspark ({said['no_pyspark']}); install the "
                                 "earlier Spark line there (pip install pyspark==3.5.3)")
        if "no_eventtime" in said:
            raise CrossLineError(f"{where}: that environment has no eventtime ({said['no_eventtime']}); install the "
                                 "kit there too (pip install eventtime-conformance, the same version as here)")
        if said["eventtime"] != _kit_version():
            raise CrossLineError(f"{where}: that environment has eventtime-conformance {said['eventtime']}, this one "
                                 f"{_kit_version()}: the two sides hand over the run in the kit's own terms, so "
                                 "install the same version in both")
        return str(said["pyspark"]), f"Spark {said['pyspark']}"

    # -- the child process ------------------------------------------------------------------------
    def _start_child(self) -> subprocess.Popen[str]:
        if self._child is not None and self._child.poll() is None:
            return self._child
        if self._log is not None:  # the log of a child that ended: its last lines were said with its error
            self._log.unlink(missing_ok=True)
        fd, log = tempfile.mkstemp(prefix="eventtime-crossline-", suffix=".log")
        self._log = Path(log)
        with os.fdopen(fd, "w") as err:
            self._child = subprocess.Popen([self.python, "-m", "eventtime.crossline", "--serve"], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=err, text=True, cwd=os.getcwd(),
                                           env=_environment())
        return self._child

    def _log_tail(self, lines: int = 15) -> str:
        try:
            text = self._log.read_text(errors="replace") if self._log is not None else ""
        except OSError:
            return ""
        tail = [line for line in text.splitlines() if line.strip()][-lines:]
        return ("; its last lines:\n  " + "\n  ".join(tail)) if tail else ""

    def _ask(self, request: Path, seconds: float) -> None:
        """Give the child one request file and wait, at most `seconds`, for its answer line."""
        child = self._start_child()
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(str(request) + "\n")
            child.stdin.flush()
        except OSError:  # it ended before it read the request
            raise self._ended(child) from None
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as sel:
            sel.register(child.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._end_child(kill=True)
                    raise CrossLineError(f"the earlier side ({self.label}) did not finish the steps before the "
                                         f"restart within {seconds:.0f} s; it was stopped{self._log_tail()}")
                if not sel.select(timeout=min(left, 5.0)):
                    continue
                line = child.stdout.readline()
                if not line:
                    raise self._ended(child)
                if line.startswith(_DONE):
                    return

    def _ended(self, child: subprocess.Popen[str]) -> CrossLineError:
        """The error of a child that closed its end of the pipes (it ended, or is ending: bounded)."""
        try:
            code: int | str = child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=30)
            code = "none (it closed its output and was stopped)"
        self._child = None
        return CrossLineError(f"the earlier side's process ({self.label}, {self.python}) ended with exit code {code} "
                              f"while it ran the steps before the restart{self._log_tail()}")

    def _end_child(self, kill: bool = False) -> None:
        """End the child: at the end of its input, bounded; `kill`: at once (it did not answer in time)."""
        child, self._child = self._child, None
        if child is None or child.poll() is not None:
            return
        try:
            if kill:
                raise OSError("not waited for")
            assert child.stdin is not None
            child.stdin.close()  # the child ends at the end of its input
            child.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait(timeout=30)

    def close(self) -> None:
        self._end_child()
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    # -- one scenario -----------------------------------------------------------------------------
    def load(self, targets: Sequence[Any]) -> None:
        return None  # the earlier side imports each binding by its name when it runs its scenario

    def run(self, scenario: m.Scenario, target: Any, run: Callable[..., ScenarioResult] | None = None, *,
            previous: str | None = None, at: int | None = None, **kwargs: Any) -> ScenarioResult:
        """See `_run`; a result not applicable is marked as one of a run across the lines (`_marked`)."""
        from .upgrade import restart_step

        result = self._run(scenario, target, run, previous=previous, at=at, **kwargs)
        restart = restart_step(scenario) if at is None else next((s for s in crossings(scenario) if s.index == at), None)
        return self._marked(result, restart, kwargs)

    def _run(self, scenario: m.Scenario, pipeline: Any, run: Callable[..., ScenarioResult] | None = None, *,
             previous: str | None = None, at: int | None = None, **kwargs: Any) -> ScenarioResult:
        """`scenario` run with its steps before the restart on the earlier side, the rest here, against
        `pipeline` (a binding MODULE:FUNCTION, imported by its name on both sides; None: the contract's
        reference), by `run` (default `runner.run_scenario`) given this side's crossing (`Resume`).
        `previous`: a previous version of the job, which the earlier side runs instead (a new job and a
        new Spark at once). `at`: the step where this side takes over, one of `crossings`
        (default: the first `start`/`restart` of the whole query). `kwargs`: `run_scenario`'s."""
        implementation = pipeline
        from .runner import run_scenario
        from .upgrade import NO_RESTART, restart_step

        target = implementation if isinstance(implementation, str) or implementation is None else None
        name = str(implementation if isinstance(implementation, str) else getattr(
            implementation, "__qualname__", implementation)) if implementation is not None else scenario.contract.reference
        restart = restart_step(scenario) if at is None else next((s for s in crossings(scenario) if s.index == at), None)
        if at is not None and restart is None:
            return _said(scenario, name, ERROR, f"step {at} is not a start, restart or scheduled run of the whole query "
                                                f"(those are steps {[s.index for s in crossings(scenario)]})", kwargs)
        if restart is None:
            return _said(scenario, name, NOT_APPLICABLE, f"not a run across Spark lines: the scenario {NO_RESTART}",
                         kwargs)
        if kwargs.get("session") is not None:  # over Spark Connect: said before the earlier side runs anything
            from eventtime.harness.compat import compat_for

            refused = _refusal(False, compat_for(kwargs["session"]))
            if refused:
                return _said(scenario, name, NOT_APPLICABLE, refused, kwargs)
        if implementation is not None and target is None:
            return _said(scenario, name, ERROR, f"{self.option}: the earlier side imports the pipeline by its name; "
                                                f"{implementation!r} is a callable bound in code (bind MODULE:FUNCTION)",
                         kwargs, self, restart)
        if kwargs.get("rerun"):
            kwargs["rerun"] += f" {self.option} {shlex.quote(self.python)}"
        folder, started = Path(tempfile.mkdtemp(prefix="eventtime-crossline-")), time.monotonic()
        try:
            try:
                handover = self._before(scenario, previous or target or scenario.contract.reference, restart.index,
                                        folder, kwargs)
            except CrossLineError as exc:
                return _said(scenario, name, ERROR, str(exc), kwargs, self, restart)
            if handover.get("reads_topics"):
                read = ", ".join(handover["reads_topics"])
                return _said(scenario, name, NOT_APPLICABLE, f"a job whose queries read the topics {read} it publishes "
                             "to is not run across Spark lines: the reader's offsets are the earlier side's process's "
                             "(docs/upgrade.md, *A new Spark*)", kwargs)
            if handover["status"] == NOT_APPLICABLE or not handover["steps"]:
                status = NOT_APPLICABLE if handover["status"] == NOT_APPLICABLE else ERROR
                return _said(scenario, name, status, f"on the earlier side ({self.label}): {handover['reason']}", kwargs,
                             self, restart)
            result = (run or run_scenario)(scenario, implementation, crossing=Resume(self, handover, restart,
                                                                                     str(folder / "run")), **kwargs)
            result.seconds = time.monotonic() - started  # both sides
            return result
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _marked(self, result: ScenarioResult, restart: Any, kwargs: Mapping[str, Any]) -> ScenarioResult:
        """A result that did not run across the lines (not applicable) still says it was of a run across
        them, for the upgrade summary, which lists it with its reason rather than leaving it out."""
        if result.status == NOT_APPLICABLE and result.upgrade is None:
            result.upgrade = {"previous": self.label, "restart_step": restart.index if restart is not None else None,
                              "restart_where": str(restart.where) if restart is not None else None, "outcome": None,
                              "across": "spark", "previous_spark": self.spark, "previous_python": self.python}
        if result.spark_version is None and kwargs.get("session") is not None:
            try:
                result.spark_version = kwargs["session"].version
            except Exception:  # noqa: BLE001 - a dead session: the result keeps no version
                pass
        return result

    def _before(self, scenario: m.Scenario, target: str, until: int, folder: Path, kwargs: Mapping[str, Any]
                ) -> dict[str, Any]:
        """Run the steps before step `until` on the earlier side in `folder`/run; what it hands over."""
        timeout = float(kwargs.get("timeout") or DEFAULT_TIMEOUT)
        request = {"text": "\n".join(scenario.lines), "display": scenario.path, "file": str(_scenario_file(scenario)),
                   "contract_dirs": self.contract_dirs, "pipeline": target, "until": until,
                   "workdir": str(folder / "run"), "conf": dict(kwargs.get("conf") or {}), "timeout": timeout,
                   "answer": str(folder / "handover.pickle")}
        asked = folder / "request.json"
        asked.write_text(json.dumps(request), encoding="utf-8")
        os.makedirs(folder / "run")
        with self._lock:
            self._ask(asked, self.startup + timeout * max(1, until))
        answer = folder / "handover.pickle"
        if not answer.exists():
            raise CrossLineError(f"the earlier side ({self.label}) handed nothing over for {scenario.path}"
                                 f"{self._log_tail()}")
        with open(answer, "rb") as fh:
            handover: dict[str, Any] = pickle.load(fh)
        if handover.get("crashed"):
            raise CrossLineError(f"the earlier side ({self.label}) failed on {scenario.path}: {handover['crashed']}")
        return handover


def crossings(scenario: m.Scenario) -> list[Any]:
    """The steps where a run across Spark lines can hand over: each `start`/`restart` of the whole query
    and each scheduled `run` (a start from the checkpoint too)."""
    return [s for s in scenario.steps if (isinstance(s, m.StartStep) and s.query is None) or isinstance(s, m.RunStep)]


def _environment() -> dict[str, str]:
    """The other environment's process environment: this one's, without what names this one's Spark, with
    this process's own folders of code on PYTHONPATH (the project's, pytest's rootdir: where a binding is
    imported from), not its installed packages."""
    from eventtime.harness.cluster import child_environment

    env = {k: v for k, v in child_environment().items() if k not in _THIS_SPARK}
    installed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    own = [p for p in dict.fromkeys(os.path.realpath(p or os.getcwd()) for p in sys.path)
           if os.path.isdir(p) and not any(p == i or p.startswith(i + os.sep) for i in installed)
           and not {"site-packages", "dist-packages"} & set(Path(p).parts)]
    env["PYTHONPATH"] = os.pathsep.join(own + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _said(scenario: m.Scenario, name: str, status: str, reason: str, kwargs: Mapping[str, Any],
          earlier: EarlierSpark | None = None, restart: m.StartStep | None = None) -> ScenarioResult:
    """A result that says why the run did not happen; an error of a run across Spark lines says so in its
    `upgrade` record (no outcome), for the report."""
    result = ScenarioResult(scenario, name, status, rerun=kwargs.get("rerun"))
    result.reason = reason
    if status == ERROR and earlier is not None and restart is not None:
        result.upgrade = {"previous": earlier.label, "restart_step": restart.index, "restart_where": str(restart.where),
                          "outcome": None, "across": "spark", "previous_spark": earlier.spark,
                          "previous_python": earlier.python}
    return result


def _scenario_file(scenario: m.Scenario) -> Path:
    """The scenario's file (a bundled one is shown as `scenarios/...`, wherever the suite is installed)."""
    from eventtime.scenarios import SUITE_DIR

    shown = Path(scenario.path)
    if not shown.exists() and shown.parts[:1] == ("scenarios",):
        return Path(SUITE_DIR, *shown.parts[1:])
    return shown.resolve()


# -- this side: the run from the restart on -----------------------------------------------------------
class Resume(Straight):
    """This side's crossing (`crossing.Crossing`): the earlier side's run folder, its steps before the
    restart (verdicts, batches, history) taken as they were, the outcome at the end; the folder is removed
    with the run, as any run's."""

    def __init__(self, earlier: EarlierSpark, handover: dict[str, Any], restart: Any, folder: str):
        self.earlier, self.handover, self.restart, self.folder = earlier, handover, restart, folder

    def refuses(self, result: ScenarioResult, job: bool, compat: Any) -> bool:
        return _refused(result, job, compat)

    def workdir(self) -> str:
        return self.folder

    def entered(self, database: Any) -> None:
        """The scenario's own database, current on this side: the earlier side's tables made again in it,
        over the folders their data is in (external tables; CREATE TABLE of a managed one over a folder
        that holds files is refused)."""
        for ddl in self.handover.get("tables", ()):
            database.spark.sql(ddl)

    def around(self, driver: Any, steps: Any) -> tuple[Any, Any]:
        earlier: dict[int, StepResult] = {s.index: s for s in self.handover["steps"]}
        run = steps.query_run
        if self.handover.get("queries") is not None:  # a job's queries: each gets its own at the restart
            run.handed_over = dict(self.handover["queries"])
        else:
            run.history.update({b.batch_id: b for b in self.handover["history"]})
            run.runs = self.handover["runs"]
        topics = getattr(steps.build, "topics", None)
        if topics is not None:  # what the job published before the restart is in the topic, as in Kafka
            for topic, records in self.handover.get("topics", {}).items():
                topics.records.setdefault(topic, []).extend(records)
        replay = _Replay(driver, {i: list(s.batches) for i, s in earlier.items()}, self.restart.index)
        return replay, _Taken(steps, earlier, replay)

    def finish(self, result: ScenarioResult, steps: Any) -> None:
        from .upgrade import PREVIOUS_DIFFERS, upgrade_verdict

        result.notes.extend(f"on the earlier side ({self.earlier.label}): {n}" for n in self.handover.get("notes", ())
                            if n not in result.notes)
        upgrade_verdict(result, self.earlier.label, self.restart, steps.failure, steps.failure_consumed)
        assert result.upgrade is not None
        if result.upgrade.get("outcome") == PREVIOUS_DIFFERS and result.reason:  # said of Spark, not of the job
            result.reason = result.reason.replace(f"the scenario does not describe the previous version "
                                                  f"({self.earlier.label})", f"on the earlier side ({self.earlier.label})",
                                                  1).replace("so it says nothing of the change",
                                                             "so the run says nothing of the new Spark", 1)
        result.upgrade.update({"across": "spark", "previous_spark": self.earlier.spark,
                               "previous_python": self.earlier.python})


def _refusal(job: bool, compat: Any) -> str | None:
    """Why a run cannot cross Spark lines (None: it can). A job can: its paths are in the run folder both
    sides share, and its tables are made again on this side (`Resume.entered`)."""
    if compat.connect:
        return "a run across Spark lines hands the checkpoint over on this machine, which Spark Connect does not"
    return None


def _refused(result: ScenarioResult, job: bool, compat: Any) -> bool:
    """`_refusal`, said by the result as not applicable (either side's `Crossing.refuses`)."""
    refused = _refusal(job, compat)
    if refused:
        result.status, result.reason = NOT_APPLICABLE, refused
    return refused is not None


class _Replay:
    """The step driver on this side: before the restart, the inputs go to this side's sources (their
    offsets are the checkpoint's) and each step's batches are the earlier side's; from it, the real driver."""

    def __init__(self, driver: Any, batches: dict[int, list[Any]], restart: int):
        self.driver, self.batches, self.restart = driver, batches, restart
        self.at = 0  # the step being run (0: the implicit start)

    def _earlier(self) -> list[Any]:
        return self.batches.pop(self.at, [])  # a step's batches once, at its first call (a generate's several)

    def start(self, conf: Mapping[str, str], *, new_session: bool = False, query: str | None = None) -> list[Any]:
        if self.at >= self.restart:
            return self.driver.start(conf, new_session=new_session, query=query)
        self.driver.write_statics()
        return self._earlier()

    def add(self, source: str, rows: Any, partitions: Any) -> None:
        self.driver.add(source, rows, partitions)

    def replace_static(self, name: str, rows: Any) -> None:
        self.driver.replace_static(name, rows)

    def process(self) -> list[Any]:
        return self.driver.process() if self.at >= self.restart else self._earlier()

    def advance(self, ms: int) -> list[Any]:
        if self.at >= self.restart:
            return self.driver.advance(ms)
        self.driver.run.advance_stopped(ms)  # this side's clock where the earlier side's was
        return self._earlier()

    def stop(self, query: str | None = None) -> None:
        if self.at >= self.restart:
            self.driver.stop(query)

    def uncommit_last(self, query: str | None = None) -> None:
        self.driver.uncommit_last(query)


class _Taken:
    """The step handler on this side: a step before the restart takes the earlier side's verdict."""

    def __init__(self, steps: Any, earlier: dict[int, StepResult], replay: _Replay):
        self.steps, self.earlier, self.replay = steps, earlier, replay

    def skips(self, step: m.Step) -> bool:
        self.replay.at = step.index
        return bool(self.steps.skips(step))

    def run(self, step: m.Step | None, action: Any) -> list[Any]:
        self.replay.at = 0 if step is None else step.index
        batches: list[Any] = self.steps.run(step, action)
        if self.replay.at < self.replay.restart:
            self._take(self.replay.at)
        return batches

    def expect(self, step: m.ExpectStep, since_expect: list[Any]) -> bool:
        if step.index >= self.replay.restart:
            return bool(self.steps.expect(step, since_expect))
        return self._take(step.index)

    def _take(self, index: int) -> bool:
        """The earlier side's verdict of step `index` in this run's; False when it was not judged there."""
        then, now = self.earlier.get(index), self.steps.current
        if then is None:
            return False
        for name in ("status", "message", "batches", "failures", "watermark_ms", "seconds"):
            setattr(now, name, getattr(then, name))
        if then.status == ERROR:  # the earlier side's query failed: nothing after it says anything of the restart
            self.steps.fatal = True
        return then.status != SKIPPED


# -- the earlier side: the child process --------------------------------------------------------------
class Keep(Straight):
    """The earlier side's crossing (`crossing.Crossing`): run in the folder the parent chose and leave it
    there, with the scenario's tables and its `written:` checks, for this side to go on from."""

    def __init__(self, folder: str):
        self.folder = folder
        self.run: Any = None
        self.steps: Any = None
        self.database: Any = None

    def refuses(self, result: ScenarioResult, job: bool, compat: Any) -> bool:
        return _refused(result, job, compat)  # said before anything runs, on either side

    def workdir(self) -> str:
        return self.folder

    def entered(self, database: Any) -> None:
        self.database = database

    def around(self, driver: Any, steps: Any) -> tuple[Any, Any]:
        self.run, self.steps = steps.query_run, steps
        return driver, steps

    def ended(self, steps: Any) -> None:
        return None  # the earlier side runs only part of the scenario: the other side settles what was written

    def leave(self, build: Any, workdir: str) -> None:
        build.leave(drop=False)  # its tables, and the folder, are the other side's to go on from


def _serve_one(request_file: str) -> None:
    """Run one request's steps before the restart; write what is handed over to its answer file."""
    from dataclasses import replace

    from .loader import load_scenario_text
    from .registry import ContractLookup
    from .runner import run_scenario

    request = json.loads(Path(request_file).read_text(encoding="utf-8"))
    answer: dict[str, Any]
    try:
        scenario = load_scenario_text(request["text"], request["display"], file=Path(request["file"]),
                                      contracts=ContractLookup(request["contract_dirs"]))
        before = replace(scenario, steps=tuple(s for s in scenario.steps if s.index < request["until"]))
        keep = Keep(request["workdir"])
        result = run_scenario(before, request["pipeline"], timeout=request["timeout"], conf=request["conf"],
                              crossing=keep)
        for step in result.steps:
            step.observed = None  # what a snapshot writes: not handed over
        run = keep.run
        group = run is not None and hasattr(run, "query_runs")  # a job's queries (`QueryGroup`)
        answer = {"status": result.status, "reason": result.reason, "steps": result.steps, "notes": result.notes,
                  "history": list(run.history.values()) if run is not None and not group else [],
                  "runs": run.runs if run is not None and not group else 0, "spark": result.spark_version,
                  "queries": {name: (list(r.history.values()), r.runs) for name, r in run.query_runs.items()} if group
                  else None}
        topics = getattr(getattr(keep.steps, "build", None), "topics", None)
        if topics is not None:
            answer["topics"] = {topic: list(records) for topic, records in topics.records.items()}
            answer["reads_topics"] = sorted(topics.listeners)
        if keep.database is not None:
            answer["tables"] = _tables(keep.database)
        data = pickle.dumps(answer, protocol=4)
    except Exception as exc:  # noqa: BLE001 - said to the parent, which names the scenario
        import traceback

        traceback.print_exc()
        data = pickle.dumps({"crashed": f"{type(exc).__name__}: {exc}"}, protocol=4)
    Path(request["answer"]).write_bytes(data)


def _tables(database: Any) -> list[str]:
    """The tables of the scenario's database on the earlier side, each as the DDL that makes it again on
    this side over the same folder: its columns, format, partitioning and location."""
    spark, out = database.spark, []
    for table in spark.catalog.listTables(database.name):
        if getattr(table, "isTemporary", False):
            continue
        full = f"`{database.name}`.`{table.name}`"
        info = {str(r[0]).strip(): r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {full}").collect() if r[0]}
        columns = spark.catalog.listColumns(f"{database.name}.{table.name}")
        ddl = (f"CREATE TABLE IF NOT EXISTS `{table.name}` ("
               + ", ".join(f"`{c.name}` {c.dataType}" for c in columns) + f") USING {info.get('Provider') or 'parquet'}")
        parts = [c.name for c in columns if c.isPartition]
        if parts:
            ddl += " PARTITIONED BY (" + ", ".join(f"`{p}`" for p in parts) + ")"
        if info.get("Location"):
            ddl += " LOCATION '" + str(info["Location"]).replace("'", "\\'") + "'"
        out.append(ddl)
        if parts:  # the partitions the earlier side wrote, found in the folder
            out.append(f"ALTER TABLE `{table.name}` RECOVER PARTITIONS")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m eventtime.crossline --serve`: read request files' paths from stdin, one per line, and
    answer each on stdout; ends at the end of stdin."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["--serve"]:
        print("usage: python -m eventtime.crossline --serve (started by eventtime run --previous-python)",
              file=sys.stderr)
        return 2
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else prints (Spark, the user's code) goes to the log, not the answers
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if line.strip():
            _serve_one(line.strip())
            answers.write(_DONE + line.strip() + "\n")
            answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
