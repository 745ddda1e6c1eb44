"""Running a plan of (scenario, its file, implementation) pairs, for `run`, `certify` and a snapshot: the
session opened, each result printed and written as it comes, a dead driver replaced, a signal ending the run
with the results so far written, then the results handed on (`AfterRun`): the verdicts, failures, tables
and totals of `run` and `certify`, or a snapshot's review of its files (`commands.snapshot`)."""
from __future__ import annotations

import argparse
import datetime as _dt
import shlex
import sys
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from ..crossing import Crossings, NoCrossing
from ..exitcodes import ExitCode
from ..results import DRIVER_DIED, FAILING, NOT_APPLICABLE
from . import spark as _spark
from .crossings import across
from .files import rerun_command

__all__ = ["execute", "unimportable", "OutputCapture", "AfterRun", "Ran", "Verdicts"]

@dataclass(frozen=True)
class Ran:
    """What the run loop hands on when every pair has run (or the driver died too often to go on)."""

    results: list[Any]  # in the order of the plan
    not_run: list[tuple[str, str, str]]  # (scenario, file, implementation) of each pair without a result
    recovery: Any  # `parallel.Recovery`: the driver deaths and why the run gave up
    version: str  # the Spark version the run started on
    seconds: float
    capture: "OutputCapture | None"  # what each scenario printed, when it was kept


class AfterRun(Protocol):
    """What a run's results are handed to once the loop is done: the verdicts (`Verdicts`, for `run` and
    `certify`), or a snapshot's review of the files (`commands.snapshot`)."""

    @property
    def captures(self) -> bool:
        """Whether what each scenario prints is kept with its result (unless --show-output)."""

    def shows(self, result: Any) -> bool:
        """Whether `result`'s summary line is printed under -q (without -q every line is)."""

    def finish(self, ran: Ran) -> int:
        """Print what the run comes to; the exit code."""


def execute(plan: Sequence[tuple[Any, Path, str]], args: argparse.Namespace, conf: Any, invalid: int,
            certify: bool = False, unbound: int = 0, crossings: Crossings | None = None,
            allowed: frozenset[str] = frozenset(), after: AfterRun | None = None) -> int:
    """Run each (scenario, its file, implementation) of `plan`; `invalid` files and `unbound` scenarios
    (their errors printed already) count against the run. `crossings`: the run across a change each pair
    is run by (`crossings.across`; None: none). A contract
    and implementation with nothing judged fails the run unless `allowed` names its contract
    (`projectconfig.nothing_judged`). `after`: what the results are handed to (default: the verdicts)."""
    from ..parallel import Pair
    from ..resultsfile import ResultsWriter

    if not plan:  # before any Spark starts: nothing would run, and "0 passed" must never read as a success
        why = [f"{invalid} scenario file{'s' if invalid != 1 else ''} invalid"] if invalid else []
        why += [f"{unbound} scenario{'s' if unbound != 1 else ''} with no pipeline bound"] if unbound else []
        print(f"eventtime: error: nothing ran: {', '.join(why) or 'no scenario to run'} (see above)", file=sys.stderr)
        return ExitCode.FAILED if invalid else ExitCode.NO_TESTS_RAN  # an invalid file fails a run, as it always has
    t0 = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    spark, code = _spark.open_session(args)
    if spark is None:
        return code
    version, master = spark.version, _spark.master_of(spark)  # asked once: the driver may die later
    pairs = [Pair(sc, impl, rerun_command(sc, file, impl, args)) for sc, file, impl in plan]
    writer = None
    if args.json:
        writer = ResultsWriter(args.json, tool="certify" if certify else "run", started_at=started_at,
                               command=" ".join(["eventtime"] + [shlex.quote(a) for a in sys.argv[1:]]),
                               master=master)
    recovery = _recovery(args)
    handed: AfterRun = after if after is not None else Verdicts(args, invalid, certify, unbound, allowed)
    capture = OutputCapture(sys.stdout) if handed.captures and not getattr(args, "show_output", False) else None
    runner = across(crossings or NoCrossing())
    if capture is not None:
        runner, sys.stdout = capture.around(runner), capture
    try:
        results, ended = _run_all(pairs, args, spark, conf, recovery, writer, runner, handed.shows)
    finally:
        if capture is not None and sys.stdout is capture:
            sys.stdout = capture.terminal
    seconds = time.monotonic() - t0
    not_run = _not_run(pairs, results)
    reason = ended[0] if ended else (recovery.gave_up if not_run else None)
    if writer is not None:
        writer.finish(reason, not_run)
    if ended:
        print(f"eventtime: {ended[0]}: {len(results)} of {len(pairs)} verdicts"
              + (f" written to {args.json}, marked incomplete" if args.json else ""), file=sys.stderr)
        return ended[1]
    return handed.finish(Ran(results, not_run, recovery, version, seconds, capture))


@dataclass(frozen=True)
class Verdicts:
    """`run` and `certify`: each failure described, the tables (certify), --teeth, the totals and the
    Markdown report; the run fails on a failure, an invalid file, an unbound scenario, a pair not run, a
    contract with nothing judged (unless `allowed`) or a toothless check."""

    args: Any
    invalid: int
    certify: bool = False
    unbound: int = 0
    allowed: frozenset[str] = frozenset()
    captures: bool = True

    def shows(self, result: Any) -> bool:
        return result.status in FAILING

    def finish(self, ran: Ran) -> int:
        args, results, not_run = self.args, ran.results, ran.not_run
        failures = [r for r in results if r.status in FAILING]
        _print_outcome(results, failures, not_run, ran.recovery, self.certify, ran.capture)
        toothless = _print_teeth(results, args) if getattr(args, "teeth", False) else 0
        unjudged = _print_totals(results, args, self.allowed, self.invalid, self.unbound, toothless, not_run,
                                 ran.recovery, f" on Spark {ran.version} in {ran.seconds:.1f}s")
        if getattr(args, "markdown", None):
            from ..textreport import certification_markdown

            Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
            Path(args.markdown).write_text(certification_markdown(results, ran.version, ran.seconds))
        return (ExitCode.FAILED if failures or self.invalid or self.unbound or not_run or unjudged or toothless
                else ExitCode.OK)


def _print_totals(results: list[Any], args: Any, allowed: frozenset[str], invalid: int, unbound: int, toothless: int,
                  not_run: list[Any], recovery: Any, where: str) -> int:
    """Each contract and implementation with nothing judged (an error unless `allowed`, then a note), and
    the totals line last; how many judged nothing and were not allowed to."""
    from ..projectconfig import nothing_judged
    from ..textreport import totals, totals_line

    records = [(r.scenario.contract.name, r.implementation, r.scenario.name, r.scenario.path,
                r.status != NOT_APPLICABLE, r.reason) for r in results]
    unjudged = nothing_judged(records, allowed)
    for group in unjudged:  # never a green run that tested nobody's code
        print()
        print(f"ERROR {group.message('--allow-not-applicable')}")
    allowed_unjudged = [g for g in nothing_judged(records) if g not in unjudged]
    for group in allowed_unjudged:  # a green that judged nothing of a contract says so, though allowed
        print(f"note: contract {group.contract!r} [{group.implementation}]: nothing judged, as "
              "--allow-not-applicable allows")
    print()
    print(totals_line(totals(results), invalid, unbound)
          + (f", {len(unjudged)} with nothing judged" if unjudged else "")
          + (f", {len(allowed_unjudged)} with nothing judged (allowed)" if allowed_unjudged else "")
          + (f", {toothless} with vacuous or weak checks (--teeth)" if toothless else "")
          + (f", {len(not_run)} not run" if not_run else "")
          + (f", {recovery.deaths} driver death{'s' if recovery.deaths != 1 else ''}" if recovery.deaths else "")
          + where)
    return len(unjudged)


def _recovery(args: Any) -> Any:
    """How the run goes on after a driver death: on a fresh session, said, up to MAX_DEATHS in a row."""
    from ..parallel import Recovery

    def fresh() -> Any:
        print(f"eventtime: starting a fresh Spark session for the scenarios left "
              f"(driver deaths in a row: {recovery.in_a_row} of at most {recovery.limit})", file=sys.stderr, flush=True)
        session = _spark.start_session(args.master, fresh=True)
        if session is None:
            raise _spark.NoDriver()
        return session

    recovery = Recovery(fresh=fresh, limit=_spark.MAX_DEATHS)
    return recovery


def _print_teeth(results: list[Any], args: argparse.Namespace) -> int:
    """`--teeth`: each passing run's checks judged again with mutated expectations (`eventtime.teeth`),
    a line per run (with -q only the runs with a vacuous or weak check) and the totals; how many runs
    had a vacuous or weak check."""
    from ..teeth import examine, report_lines, totals_line

    examined = [examine(r) for r in results]
    print()
    for result, teeth in zip(results, examined):
        if result.status == NOT_APPLICABLE:
            continue
        if not args.quiet or teeth.toothless:
            for line in report_lines(teeth, result.scenario.lines):
                print(line)
    print(totals_line(examined))
    return sum(1 for t in examined if t.toothless)


def _run_all(pairs: list[Any], args: Any, spark: Any, conf: Any, recovery: Any, writer: Any, runner: Any = None,
             shows: Callable[[Any], bool] = lambda r: r.status in FAILING
             ) -> tuple[list[Any], tuple[str, int] | None]:
    """Run the pairs, writing and printing each result as it comes (under -q those `shows` picks): (the
    results, in the order of `pairs`; why the run stopped early and its exit code, or None)."""
    from ..parallel import run_pairs
    from ..textreport import summary_line

    results: list[Any] = []
    said: set[str] = set()  # the driver deaths whose message has been printed
    try:
        for result in run_pairs(pairs, jobs=_spark.jobs_of(args, spark), session=spark, timeout=args.timeout, conf=conf,
                                recovery=recovery, runner=runner):
            results.append(result)  # in the order of `pairs`, whatever --jobs is
            if writer is not None:
                writer.add(result)
            if not args.quiet or shows(result):
                print(summary_line(result), flush=True)
            if result.cause == DRIVER_DIED:
                jvm = (result.reason or "").split(")", 1)[0]  # "the Spark driver died: its JVM (pid N"
                if jvm not in said:  # with --jobs, every pair running on that JVM died with it: say it once
                    said.add(jvm)
                    print(f"eventtime: {result.reason}", file=sys.stderr, flush=True)
            if _spark.STOP:  # the signal's exception was swallowed on its way (see _spark.STOP)
                return results, _spark.STOP[0]
    except KeyboardInterrupt:
        return results, ("interrupted (Ctrl-C)", ExitCode.INTERRUPTED)
    except _spark.Terminated:
        return results, ("terminated (SIGTERM)", ExitCode.TERMINATED)
    except _spark.NoDriver:
        return results, (f"the Spark driver died {_spark.MAX_DEATHS} times in a row while starting", ExitCode.FAILED)
    except Exception as exc:
        if _spark.STOP:  # the signal's exception came out as another error (see _spark.STOP)
            return results, _spark.STOP[0]
        # a bug of the kit: the results so far are written, then the traceback is shown as it is
        if writer is not None:
            writer.finish(f"the kit failed: {type(exc).__name__}: {exc}", _not_run(pairs, results))
        raise
    return results, (_spark.STOP[0] if _spark.STOP else None)  # a signal swallowed during the last pair still ends it so


def _print_outcome(results: list[Any], failures: list[Any], not_run: list[Any], recovery: Any, certify: bool,
                   capture: OutputCapture | None = None) -> None:
    """Each failure described (with what its scenario printed, when it was captured), the pairs not
    run, and for certify the verdict tables per contract."""
    from ..textreport import certification, describe_failure, verdict_table

    for r in failures:
        print()
        if r.cause == DRIVER_DIED:  # its message was printed when it happened: once is enough
            print(f"ERROR {r.scenario.name} ({r.scenario.path}) with {r.implementation}: the Spark driver "
                  f"died under it (the message above says how); re-run: {r.rerun}")
        else:
            print(describe_failure(r))
        printed = capture.printed(r) if capture is not None else ""
        if printed:
            lines = printed.rstrip("\n").splitlines()
            print(f"  what it printed ({len(lines)} line{'s' if len(lines) != 1 else ''} of stdout; --show-output "
                  "prints it as it comes):")
            for line in lines:
                print(f"  | {line}")
    if not_run:
        print()
        print(f"{len(not_run)} not run: {recovery.gave_up}")
        for name, _file, impl in not_run:
            print(f"  {name}  [{impl}]")
    if certify:
        for contract in dict.fromkeys(r.scenario.contract.name for r in results):
            print()
            print(f"contract {contract}:")
            print(verdict_table([r for r in results if r.scenario.contract.name == contract]))
        print()
        for (contract, impl), verdict in certification(results).items():
            print(f"{verdict:14} {contract}  [{impl}]")
    if failures:  # the JVM's own lines are kept out of the terminal; the totals line after this stays the last
        from eventtime.harness.driverlog import driver_log

        log = driver_log()
        if log is not None and log.mark() > 0:
            print(f"the Spark driver's log (its errors and warnings during the run): {log.keep()}")


class OutputCapture:
    """What each scenario prints to stdout (a job's `print`s, `df.show()`, its foreachBatch function's),
    kept with its result instead of burying the verdict lines, as pytest captures a test's output: the
    run shows it with a failing scenario only (`--show-output`: as it comes, not captured). Installed as
    `sys.stdout` for the run. A write belongs to the scenario its thread runs; a write of another thread
    (a foreachBatch function runs in py4j's thread) to the scenario running then, or with several
    running (`--jobs`), to each of them; the kit's own lines, printed between or beside the scenarios,
    go to the terminal."""

    def __init__(self, terminal: Any):
        import threading

        self.terminal = terminal
        self._lock = threading.Lock()
        self._running: dict[int, list[str]] = {}  # thread -> the output of the scenario it runs
        self._kept: dict[int, str] = {}  # id(result) -> what its scenario printed
        self._kit = threading.get_ident()  # the thread printing the verdicts

    def around(self, runner: Any) -> Any:
        """`runner` with what each call prints kept for its result."""
        import threading

        def run(*args: Any, **kwargs: Any) -> Any:
            ident, text = threading.get_ident(), list[str]()
            with self._lock:
                self._running[ident] = text
            try:
                result = runner(*args, **kwargs)
            finally:
                with self._lock:
                    del self._running[ident]
            self._kept[id(result)] = "".join(text)
            return result
        return run

    def printed(self, result: Any) -> str:
        return self._kept.get(id(result), "")

    def write(self, text: str) -> int:
        import threading

        ident = threading.get_ident()
        with self._lock:
            own = self._running.get(ident)
            targets = [own] if own is not None else [] if ident == self._kit else list(self._running.values())
            for target in targets:
                target.append(text)
        if not targets:
            return self.terminal.write(text)
        return len(text)

    def flush(self) -> None:
        self.terminal.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno: the terminal's
        return getattr(self.terminal, name)


def _not_run(pairs: Sequence[Any], results: Sequence[Any]) -> list[tuple[str, str, str]]:
    """(scenario, file, implementation) of each pair without a verdict: `pairs` are yielded in order."""
    return [(p.scenario.name, p.scenario.path, str(p.implementation)) for p in pairs[len(results):]]


def unimportable(targets: Sequence[str]) -> int:
    """Whether a pipeline does not import, as the exit code to end with (0: every one imports); each
    such one is said with why: a module that is not there is a usage error, a module whose own code
    raised while it was imported fails the run, said at the user's file:line (never the kit's frames)."""
    from ..userpipeline import PipelineError, PipelineImportError, resolve_pipeline

    codes = set()
    for target in targets:
        try:
            resolve_pipeline(target)
        except PipelineError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            codes.add(ExitCode.FAILED if isinstance(exc, PipelineImportError) else ExitCode.USAGE_ERROR)
    return ExitCode.USAGE_ERROR if ExitCode.USAGE_ERROR in codes else ExitCode.FAILED if codes else ExitCode.OK
