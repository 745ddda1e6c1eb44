"""The `eventtime` command: validate, run, certify, report and list (exit status: `exitcodes.ExitCode`,
0 ok, 1 failures, 2 usage, 5 nothing ran, 130 Ctrl-C, 143 SIGTERM, 141 when the reader of its output
went away, e.g. `| head`; `run` and `certify` write their results file before either of 130 and 143)."""
from __future__ import annotations

import argparse
import atexit
import datetime as _dt
import os
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn, Sequence

from .cli_files import load_scenario_files, read_project, rerun_command, scenario_files
from .exitcodes import ExitCode

__all__ = ["console_main", "main"]

# every command's exit status is an ExitCode; these names are kept for the code and tests that use them
EXIT_OK, EXIT_FAILED, EXIT_USAGE = ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE_ERROR
EXIT_NO_TESTS = ExitCode.NO_TESTS_RAN  # pytest's "no tests ran": scenarios were asked for and none ran


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's default exit code is 2 as well; keep the text short
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _conf_pairs(values: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"eventtime: error: --spark-conf takes key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


_MASTER_HELP = "Spark master URL: local[N], local-cluster[W,C,M] or spark://HOST:PORT (default local[2])"


def _master(text: str) -> str:
    from eventtime.harness.cluster import MasterURLError, check_master

    try:
        return check_master(text)
    except MasterURLError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _jobs(text: str) -> int:
    from .parallel import parse_jobs

    try:
        return parse_jobs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_PIPELINE_HELP = ("the pipeline to run: MODULE:FUNCTION for every scenario, or CONTRACT=MODULE:FUNCTION "
                  "(CONTRACT[FOLDER]=... for the scenario files under FOLDER) for one contract's, over the ini key "
                  "eventtime_pipelines pytest reads (repeatable; unbound, a contract of your own runs the "
                  "implementations its file declares, a bundled one its own only for the bundled suite)")
_TIMEOUT_HELP = "bound on each wait for Spark, seconds (default: the ini key eventtime_timeout, else 60)"
_JOBS_HELP = "run N scenario/implementation pairs at once in one JVM, each on its own session (default 1)"


# -- Spark Connect: `--remote sc://HOST:PORT` (or SPARK_REMOTE) instead of a local JVM -----------------------
_REMOTE_HELP = ("run over Spark Connect at this URL, sc://HOST:PORT: the client needs no JVM (default: the "
                "SPARK_REMOTE environment variable when no --master is given)")


def _remote(text: str) -> str:
    from eventtime.harness.connect import check_remote

    try:
        return check_remote(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _remote_of(args: argparse.Namespace) -> str | None:
    """The Connect URL to run on: --remote, else SPARK_REMOTE unless --master asks for a local JVM.
    A bad SPARK_REMOTE or --remote with --master is a usage error (ValueError with the message)."""
    from eventtime.harness.connect import check_remote, remote_from_environment

    remote = getattr(args, "remote", None)
    if remote and getattr(args, "master", None):
        raise ValueError("give either --master (a Spark in this process) or --remote (Spark Connect), not both")
    if remote is None and not getattr(args, "master", None):
        env = remote_from_environment()
        if env:
            try:
                remote = check_remote(env)
            except ValueError as exc:
                raise ValueError(f"SPARK_REMOTE: {exc}") from None
    return remote


def _spark_session(args: argparse.Namespace) -> Any:
    """The session `run` / `certify` use: over Spark Connect when a remote is given (serially: one
    query at a time, since the harness sets query settings on the one Connect session), else local."""
    remote = _remote_of(args)
    if remote is None:
        from eventtime.harness.session import get_session

        return get_session(master=args.master)
    from eventtime.harness.connect import connect_session

    if getattr(args, "jobs", 1) != 1:
        print(f"eventtime: over Spark Connect the pairs run one at a time (--jobs {args.jobs} ignored)",
              file=sys.stderr)
        args.jobs = 1
    return connect_session(remote, timeout=args.timeout)


def _master_of(spark: Any) -> str:
    from eventtime.harness.compat import is_connect

    return "spark connect" if is_connect(spark) else spark.sparkContext.master


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="eventtime", description="Deterministic event-time scenarios for Spark Structured Streaming.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser("validate", help="check scenario files; print file:line:column: message per problem")
    v.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories")
    v.add_argument("--contracts", action="append", default=[], metavar="DIR", help="a folder of *.contract.yaml files, besides those beside or above each scenario (repeatable)")

    r = sub.add_parser("run", help="run scenarios on Spark and print a verdict per scenario")
    r.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or directories (default: the bundled suite)")
    r.add_argument("--pipeline", action="append", metavar="[CONTRACT=]MODULE:FUNCTION", help=_PIPELINE_HELP)
    r.add_argument("--master", default=None, type=_master, metavar="URL", help=_MASTER_HELP)
    r.add_argument("--remote", default=None, type=_remote, metavar="sc://HOST:PORT", help=_REMOTE_HELP)
    r.add_argument("--timeout", type=float, default=None, help=_TIMEOUT_HELP)
    r.add_argument("--spark-conf", action="append", metavar="KEY=VALUE", help="extra Spark SQL conf for the queries")
    r.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    r.add_argument("--jobs", type=_jobs, default=1, metavar="N", help=_JOBS_HELP)
    r.add_argument("-q", "--quiet", action="store_true", help="print failures and the totals only")
    r.add_argument("--contracts", action="append", default=[], metavar="DIR", help="a folder of *.contract.yaml files, besides those beside or above each scenario (repeatable)")
    from .snapshot import add_cli_options

    add_cli_options(r)

    w = sub.add_parser("watch", help="run scenarios, then re-run what a changed scenario, contract or pipeline "
                                     "module affects, on one warm Spark session (Ctrl-C stops)")
    w.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories to watch")
    w.add_argument("--pipeline", action="append", metavar="[CONTRACT=]MODULE:FUNCTION",
                   help=_PIPELINE_HELP + "; the modules of your code under the working directory are watched and reloaded")
    w.add_argument("--master", default=None, type=_master, metavar="URL", help=_MASTER_HELP)
    w.add_argument("--remote", default=None, type=_remote, metavar="sc://HOST:PORT", help=_REMOTE_HELP)
    w.add_argument("--timeout", type=float, default=None, help=_TIMEOUT_HELP)
    w.add_argument("--spark-conf", action="append", metavar="KEY=VALUE", help="extra Spark SQL conf for the queries")
    w.add_argument("--contracts", action="append", default=[], metavar="DIR", help="a folder of *.contract.yaml files, besides those beside or above each scenario (repeatable)")
    w.add_argument("--poll", type=float, default=0.2, metavar="SECONDS",
                   help="how often the files are looked at (default 0.2)")

    c = sub.add_parser("certify", help="run every scenario of a contract against an implementation; "
                                       "print a verdict table and certify or reject it")
    c.add_argument("--contract", action="append", metavar="NAME",
                   help="contract to certify (repeatable; default: every contract)")
    c.add_argument("--pipeline", metavar="[CONTRACT=]MODULE:FUNCTION",
                   help="implementation to certify (MODULE:FUNCTION needs exactly one --contract; "
                        "default: the implementations each contract declares, the bundled ones for a bundled contract)")
    c.add_argument("--scenarios", action="append", metavar="PATH",
                   help="also run these scenario files or directories (those of the contract)")
    c.add_argument("--master", default=None, type=_master, metavar="URL", help=_MASTER_HELP)
    c.add_argument("--remote", default=None, type=_remote, metavar="sc://HOST:PORT", help=_REMOTE_HELP)
    c.add_argument("--timeout", type=float, default=60.0, help="bound on each wait for Spark, seconds (default 60)")
    c.add_argument("--spark-conf", action="append", metavar="KEY=VALUE", help="extra Spark SQL conf for the queries")
    c.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    c.add_argument("--markdown", metavar="PATH", help="also write a Markdown conformance report")
    c.add_argument("--jobs", type=_jobs, default=1, metavar="N", help=_JOBS_HELP)
    c.add_argument("-q", "--quiet", action="store_true", help="print failures, the table and the verdicts only")
    c.add_argument("--contracts", action="append", default=[], metavar="DIR", help="a folder of *.contract.yaml files, besides those beside or above each scenario (repeatable)")

    rp = sub.add_parser("report", help="merge results files into an HTML report, a Markdown summary and JUnit XML")
    rp.add_argument("results", nargs="+", metavar="RESULTS.json", help="results files (--json of run/certify)")
    rp.add_argument("--html", metavar="PATH", help="write the HTML conformance report here")
    rp.add_argument("--markdown", metavar="PATH", help="write the Markdown summary (for a pull-request comment)")
    rp.add_argument("--junit", metavar="PATH", help="write JUnit XML (for CI systems)")
    rp.add_argument("--baseline", nargs="+", action="extend", metavar="OLD.json", default=[],
                    help="results to compare against: the summary lists verdicts that changed")
    rp.add_argument("--title", default=None, help="report title")
    rp.add_argument("--upgrade", nargs=2, metavar=("FROM", "TO"), default=None,
                    help="what changes between two Spark versions of the results: verdicts and, per step, rows, "
                         "watermarks, dropped rows and state (printed; --markdown writes it for a pull request)")

    ls = sub.add_parser("list", help="list contracts, their implementations and the bundled scenarios")
    ls.add_argument("--markdown", action="store_true",
                    help="print the contracts as the Markdown reference (docs/contracts.md)")

    from .semantics.commands import add_parsers as add_model_parsers

    add_model_parsers(sub)  # check-model, expect
    from .cluster_command import add_parser as add_cluster_parser

    add_cluster_parser(sub)  # cluster
    from .connect_command import add_parser as add_connect_parser

    add_connect_parser(sub)  # connect-server
    return p


def main(argv: Sequence[str] | None = None) -> int:
    import signal

    args = _parser().parse_args(argv)
    # SIGTERM unwinds like Ctrl-C (stop the running query, write the results) and exits 143
    _STOP.clear()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    try:
        return _command(args)
    except KeyboardInterrupt:
        print("eventtime: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("eventtime: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def console_main() -> NoReturn:
    """The `eventtime` console script: `main`, then the process ends without the interpreter's
    teardown. What an exit must do is done first, in the order the interpreter does it: threading's
    own exit callbacks run (they wake the workers of every `concurrent.futures` pool, e.g. the Spark
    Connect client's), non-daemon threads are waited for, the exit handlers run (the harness's own:
    temporary folders, a cluster session's stop; a Connect client's; logging's flush) and the standard
    streams are flushed. Unlike the interpreter, the wait for threads is bounded (THREAD_WAIT seconds,
    once before the exit handlers and once after them, for a thread a handler releases): a library's
    thread that never ends must not keep a finished command alive (a Connect run sat idle for minutes
    that way). What is skipped is freeing every imported module and py4j proxy one by one (0.3 s after
    a run: BENCHMARKS.md "The end of a run"), for a JVM that exits by itself when this process's end
    closes its standard input."""
    try:
        code = main()
    except BrokenPipeError:  # the output's reader went away (`eventtime run ... | head`): end as a shell
        code = EXIT_OUTPUT_GONE  # tool ends on SIGPIPE, without a traceback
    _threading_exit()
    left = _join_threads(THREAD_WAIT)
    atexit._run_exitfuncs()  # noqa: SLF001 - the interpreter's own exit step, run where it would run
    if left:
        left = _join_threads(THREAD_WAIT)
    if left:
        print(f"eventtime: ending with {len(left)} thread(s) still running after {2 * THREAD_WAIT:.0f}s of "
              f"waiting for them: {', '.join(t.name for t in left)}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # what is left in the buffer has no reader
            code = EXIT_OUTPUT_GONE
        except (OSError, ValueError):  # e.g. a stream already closed
            code = code or 120  # what the interpreter returns when its final flush fails
    os._exit(code)


THREAD_WAIT = 10.0  # seconds console_main waits for non-daemon threads, before and again after the exit handlers


def _threading_exit() -> None:
    """threading's exit callbacks (`threading._register_atexit`), which the interpreter runs before it
    joins the threads: `concurrent.futures` registers the shutdown of its pools there, without which
    their idle workers wait on their queues for ever. Found by feature detection; where a Python has
    no such list, the bounded join covers it."""
    for call in reversed(list(getattr(threading, "_threading_atexits", ()))):
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - a library's callback must not stop the exit
            print(f"eventtime: a thread exit callback failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _join_threads(seconds: float) -> list[threading.Thread]:
    """Wait at most `seconds` in all for the non-daemon threads to end; those still running."""
    deadline = time.monotonic() + seconds
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]


def _command(args: argparse.Namespace) -> int:
    if args.command == "certify" and os.getcwd() not in sys.path:
        # as `python -m` does: a pipeline module in the folder the command runs in is importable, for
        # --pipeline and a contract's `implementations:` alike (run and watch: cli_files.read_project)
        sys.path.insert(0, os.getcwd())
    if args.command == "validate":
        return _validate(args.paths, args.contracts)
    if args.command == "run":
        return _run(args)
    if args.command == "certify":
        return _certify(args)
    if args.command == "watch":
        return _watch(args)
    if args.command in ("check-model", "expect"):
        from .semantics.commands import run as run_model_command

        return run_model_command(args)
    if args.command == "cluster":
        from .cluster_command import run as run_cluster_command

        return run_cluster_command(args)
    if args.command == "connect-server":
        from .connect_command import run as run_connect_command

        return run_connect_command(args)
    if args.command == "report":
        from .report.command import report_command

        return report_command(args)
    if args.command == "list":
        if args.markdown:
            from .registry import contracts_markdown

            print(contracts_markdown(), end="")
            return EXIT_OK
        return _list()
    return EXIT_USAGE


def _validate(paths: Sequence[str], contract_dirs: Sequence[str] = ()) -> int:
    from .cli_files import read_project
    from .loader import find_scenario_files, validate_file
    from .registry import ContractLookup

    project = read_project(paths, None, contract_dirs, None)  # the contract folders `run` and pytest read
    if project is None:
        return EXIT_USAGE
    lookup = ContractLookup(project.contract_dirs)

    files, missing = find_scenario_files(paths)
    for path in missing:
        print(f"eventtime: error: no such file or directory: {path}", file=sys.stderr)
    if missing:
        return EXIT_USAGE
    if not files:
        print("eventtime: error: no scenario files (*.scenario.yaml) under the given paths", file=sys.stderr)
        return EXIT_USAGE
    bad = 0
    for f in files:
        problems = validate_file(f, contracts=lookup)
        for problem in problems:
            print(problem)
        bad += bool(problems)
    print(f"{len(files) - bad} valid, {bad} invalid ({len(files)} file{'s' if len(files) != 1 else ''})")
    return EXIT_FAILED if bad else EXIT_OK


def _run(args: argparse.Namespace) -> int:
    conf = _conf_pairs(args.spark_conf)
    files = scenario_files(args.paths)
    if files is None:
        return EXIT_USAGE
    project = read_project(args.paths, args.pipeline, args.contracts, args.timeout)
    if project is None:
        return EXIT_USAGE
    args.timeout = project.timeout  # args.contracts stays the command line's: the re-run commands repeat it
    if args.snapshot or args.yes or args.snapshot_on_spark:
        from .snapshot import snapshot_run

        return snapshot_run(args, files, project, conf, _open_session, _unimportable)
    loaded, invalid = load_scenario_files(files, project.contract_dirs)
    plan: list[tuple[Any, Path, str]] = []
    unbound: dict[str, list[Any]] = {}
    for file, sc in loaded:
        targets = project.targets(sc, file)
        if not targets:
            unbound.setdefault(sc.contract.name, []).append(sc)
        plan += [(sc, file, target) for target in targets]
    from .projectconfig import unbound_message

    for scenarios in unbound.values():  # never a green run that tested nobody's code
        more = f" (and {len(scenarios) - 1} more scenario file(s) of it)" if len(scenarios) > 1 else ""
        print(f"eventtime: error: {unbound_message(scenarios[0].contract, scenarios[0].path)}{more}", file=sys.stderr)
    if _unimportable(list(dict.fromkeys(target for _, _, target in plan))):
        return EXIT_USAGE
    return _execute(plan, args, conf, invalid, unbound=sum(map(len, unbound.values())))


def _unimportable(targets: Sequence[str]) -> bool:
    """Whether a pipeline does not import (each such one said, with why)."""
    from .runner import PipelineError, resolve_pipeline

    bad = False
    for target in targets:
        try:
            resolve_pipeline(target)
        except PipelineError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            bad = True
    return bad


def _watch(args: argparse.Namespace) -> int:
    from .watch import watch_command

    if args.poll <= 0:
        print("eventtime: error: --poll must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    if scenario_files(args.paths, what="to watch") is None:
        return EXIT_USAGE
    project = read_project(args.paths, args.pipeline, args.contracts, args.timeout)
    if project is None:
        return EXIT_USAGE
    args.timeout = project.timeout
    conf = _conf_pairs(args.spark_conf)
    spark, code = _open_session(args)  # as run opens it: --remote, SPARK_REMOTE or a local Spark
    if spark is None:
        return code
    return watch_command(args, project, spark, conf)


class Terminated(BaseException):
    """SIGTERM arrived: unwinds the run like Ctrl-C does (a BaseException, so that no `except
    Exception` on the way turns it into a verdict), leaving the results written."""


EXIT_INTERRUPTED, EXIT_TERMINATED = ExitCode.INTERRUPTED, ExitCode.TERMINATED  # 128 + SIGINT, 128 + SIGTERM
EXIT_OUTPUT_GONE = ExitCode.OUTPUT_GONE  # 128 + SIGPIPE: a tool whose output's reader went away (`| head`)
MAX_DEATHS = 3  # driver deaths in a row (no scenario completing in between) before a run gives up


# Why the run must stop, noted by the signal handlers before they raise: the exception a handler
# raises lands in whatever Python code runs at that moment, and some code swallows it (a py4j object's
# finalizer, where Python only prints "Exception ignored"; PySpark 3.x's type parsing, which answers any
# BaseException with its own error). The run loop checks the note after every result.
_STOP: list[tuple[str, int]] = []


def _on_sigterm(signum: int, frame: Any) -> None:
    _STOP.append(("terminated (SIGTERM)", EXIT_TERMINATED))
    if not _in_py4j_finalizer(frame):
        raise Terminated()


def _on_sigint(signum: int, frame: Any) -> None:
    _STOP.append(("interrupted (Ctrl-C)", EXIT_INTERRUPTED))
    if not _in_py4j_finalizer(frame):
        raise KeyboardInterrupt()


def _in_py4j_finalizer(frame: Any) -> bool:
    """Whether the signal came while py4j's finalizer of a Java object ran (a weakref callback):
    an exception raised there is printed with a traceback ("Exception ignored in ...") and lost, so
    the handler only notes the signal and the run stops after the pair it came in."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith("java_gateway.py") and (
                code.co_name.startswith("_garbage_collect") or (code.co_name == "<lambda>" and "wr" in code.co_varnames)):
            return True
        frame = frame.f_back
    return False


def _execute(plan: Sequence[tuple[Any, Path, str]], args: argparse.Namespace, conf: Any, invalid: int,
             certify: bool = False, unbound: int = 0) -> int:
    """Run each (scenario, its file, implementation) of `plan`; `invalid` files and `unbound` scenarios
    (their errors printed already) count against the run."""
    from .parallel import Pair, Recovery
    from .resultsfile import ResultsWriter

    if not plan:  # before any Spark starts: nothing would run, and "0 passed" must never read as a success
        why = [f"{invalid} scenario file{'s' if invalid != 1 else ''} invalid"] if invalid else []
        why += [f"{unbound} scenario{'s' if unbound != 1 else ''} with no pipeline bound"] if unbound else []
        print(f"eventtime: error: nothing ran: {', '.join(why) or 'no scenario to run'} (see above)", file=sys.stderr)
        return EXIT_FAILED if invalid else EXIT_NO_TESTS  # an invalid file fails a run, as it always has
    t0 = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    spark, code = _open_session(args)
    if spark is None:
        return code
    version, master = spark.version, _master_of(spark)  # asked once: the driver may die later
    pairs = [Pair(sc, impl, rerun_command(sc, file, impl, args)) for sc, file, impl in plan]
    writer = None
    if args.json:
        writer = ResultsWriter(args.json, tool="certify" if certify else "run", started_at=started_at,
                               command=" ".join(["eventtime"] + [shlex.quote(a) for a in sys.argv[1:]]),
                               master=master)

    def fresh() -> Any:
        print(f"eventtime: starting a fresh Spark session for the scenarios left "
              f"(driver deaths in a row: {recovery.in_a_row} of at most {recovery.limit})", file=sys.stderr, flush=True)
        session = _start_session(args.master, fresh=True)
        if session is None:
            raise _NoDriver()
        return session

    recovery = Recovery(fresh=fresh, limit=MAX_DEATHS)
    results, ended = _run_all(pairs, args, spark, conf, recovery, writer)
    seconds = time.monotonic() - t0
    not_run = _not_run(pairs, results)
    reason = ended[0] if ended else (recovery.gave_up if not_run else None)
    if writer is not None:
        writer.finish(reason, not_run)
    if ended:
        print(f"eventtime: {ended[0]}: {len(results)} of {len(pairs)} verdicts"
              + (f" written to {args.json}, marked incomplete" if args.json else ""), file=sys.stderr)
        return ended[1]
    failures = [r for r in results if r.status in ("failed", "error")]
    _print_outcome(results, failures, not_run, recovery, certify)
    from .textreport import certification_markdown, totals

    counts = totals(results)
    print()
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
          f"{counts['not_applicable']} not applicable, {invalid} invalid files"
          + (f", {unbound} unbound" if unbound else "")
          + (f", {len(not_run)} not run" if not_run else "")
          + (f", {recovery.deaths} driver death{'s' if recovery.deaths != 1 else ''}" if recovery.deaths else "")
          + f" on Spark {version} in {seconds:.1f}s")
    if getattr(args, "markdown", None):
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(certification_markdown(results, version, seconds))
    return EXIT_FAILED if failures or invalid or unbound or not_run else EXIT_OK


def _open_session(args: Any) -> tuple[Any, int]:
    """(the run's session, EXIT_OK), or (None, the exit code) with the reason printed."""
    from eventtime.harness.stream import HarnessError

    try:
        remote = _remote_of(args)
        # Spark Connect: the client has no driver JVM to lose; a local driver is started (and restarted
        # after a death) by _start_session
        spark = _spark_session(args) if remote is not None else _start_session(args.master)
    except ValueError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None, EXIT_USAGE
    except HarnessError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None, EXIT_FAILED
    return spark, EXIT_OK if spark is not None else EXIT_FAILED


def _run_all(pairs: list[Any], args: Any, spark: Any, conf: Any, recovery: Any, writer: Any
             ) -> tuple[list[Any], tuple[str, int] | None]:
    """Run the pairs, writing and printing each result as it comes: (the results, in the order of
    `pairs`; why the run stopped early and its exit code, or None)."""
    from .parallel import run_pairs
    from .textreport import summary_line

    results: list[Any] = []
    said: set[str] = set()  # the driver deaths whose message has been printed
    try:
        for result in run_pairs(pairs, jobs=args.jobs, session=spark, timeout=args.timeout, conf=conf,
                                recovery=recovery):
            results.append(result)  # in the order of `pairs`, whatever --jobs is
            if writer is not None:
                writer.add(result)
            if not args.quiet or result.status in ("failed", "error"):
                print(summary_line(result), flush=True)
            if result.cause == "driver_died":
                jvm = (result.reason or "").split(")", 1)[0]  # "the Spark driver died: its JVM (pid N"
                if jvm not in said:  # with --jobs, every pair running on that JVM died with it: say it once
                    said.add(jvm)
                    print(f"eventtime: {result.reason}", file=sys.stderr, flush=True)
            if _STOP:  # the signal's exception was swallowed on its way (see _STOP)
                return results, _STOP[0]
    except KeyboardInterrupt:
        return results, ("interrupted (Ctrl-C)", EXIT_INTERRUPTED)
    except Terminated:
        return results, ("terminated (SIGTERM)", EXIT_TERMINATED)
    except _NoDriver:
        return results, (f"the Spark driver died {MAX_DEATHS} times in a row while starting", EXIT_FAILED)
    except Exception as exc:
        if _STOP:  # the signal's exception came out as another error (see _STOP)
            return results, _STOP[0]
        # a bug of the kit: the results so far are written, then the traceback is shown as it is
        if writer is not None:
            writer.finish(f"the kit failed: {type(exc).__name__}: {exc}", _not_run(pairs, results))
        raise
    return results, (_STOP[0] if _STOP else None)  # a signal swallowed during the last pair still ends it so


def _print_outcome(results: list[Any], failures: list[Any], not_run: list[Any], recovery: Any, certify: bool) -> None:
    """Each failure described, the pairs not run, and for certify the verdict tables per contract."""
    from .textreport import certification, describe_failure, verdict_table

    for r in failures:
        print()
        if r.cause == "driver_died":  # its message was printed when it happened: once is enough
            print(f"ERROR {r.scenario.name} ({r.scenario.path}) with {r.implementation}: the Spark driver "
                  f"died under it (the message above says how); re-run: {r.rerun}")
            continue
        print(describe_failure(r))
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


class _NoDriver(Exception):
    """No driver JVM could be started: each died while its session was created."""


def _start_session(master: str | None, fresh: bool = False) -> Any:
    """The run's session (`fresh`: on a new JVM, the last one died); a JVM that dies while the
    session is created is said as any death is and another is started, up to MAX_DEATHS in a row.
    None when none could be started (the deaths have been printed)."""
    from eventtime.harness.session import discard_dead_session, get_session, launch_death

    for _ in range(MAX_DEATHS):
        try:
            if fresh:
                discard_dead_session()
            return _own_sigint(get_session(master=master))
        except Exception as exc:
            death = launch_death(after=exc)
            if death is None:
                raise
            print(f"eventtime: {death.message('while its session was starting')}", file=sys.stderr, flush=True)
            fresh = True
    print(f"eventtime: error: the Spark driver died {MAX_DEATHS} times in a row while starting", file=sys.stderr)
    return None


def _own_sigint(spark: Any) -> Any:
    """Take Ctrl-C back from PySpark: its handler (installed with each SparkContext) cancels jobs
    through py4j from inside the signal handler, on the connection the interrupted call is using
    (py4j then fails with a reentrant call, and the interrupt became an error verdict while the run
    went on). `_on_sigint` notes it and raises KeyboardInterrupt, which unwinds the run; the running
    query is stopped on the way out."""
    import signal

    if _main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
    return spark


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _not_run(pairs: Sequence[Any], results: Sequence[Any]) -> list[tuple[str, str, str]]:
    """(scenario, file, implementation) of each pair without a verdict: `pairs` are yielded in order."""
    return [(p.scenario.name, p.scenario.path, str(p.implementation)) for p in pairs[len(results):]]


def _certify(args: argparse.Namespace) -> int:
    from .projectconfig import DEFAULT_TIMEOUT, SettingsError, parse_binding
    from .registry import CONTRACTS
    from .loader import did_you_mean

    if args.timeout is None:
        args.timeout = DEFAULT_TIMEOUT
    if args.timeout <= 0:
        print("eventtime: error: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    conf = _conf_pairs(args.spark_conf)
    if args.pipeline and "=" in args.pipeline:  # CONTRACT=MODULE:FUNCTION names the contract it certifies
        try:
            contract, under, args.pipeline = parse_binding(args.pipeline, "--pipeline")
        except SettingsError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if under is not None or args.contract not in (None, [contract]):
            print(f"eventtime: error: --pipeline {contract}=...: certify binds one contract, without a folder; "
                  f"give no other --contract", file=sys.stderr)
            return EXIT_USAGE
        args.contract = [contract]
    contracts = args.contract or sorted(CONTRACTS)
    if args.pipeline:
        if len(contracts) != 1 or not args.contract:
            print("eventtime: error: --pipeline certifies one implementation of one contract: "
                  "give exactly one --contract, or --pipeline CONTRACT=MODULE:FUNCTION", file=sys.stderr)
            return EXIT_USAGE
        if _unimportable([args.pipeline]):
            return EXIT_USAGE
    files = scenario_files(None) or []
    if args.scenarios:
        extra = scenario_files(args.scenarios, allow_empty=True)
        if extra is None:
            return EXIT_USAGE
        files = list(dict.fromkeys(files + extra))
    loaded, invalid = load_scenario_files(files, args.contracts)
    known = sorted(set(CONTRACTS) | {sc.contract.name for _, sc in loaded})  # bundled, and those of --scenarios
    for name in contracts:
        if name not in known:
            print(f"eventtime: error: unknown contract {name!r}{did_you_mean(name, known)} (contracts: "
                  f"{', '.join(known)}; a contract of your own comes with its scenarios: --scenarios PATH)",
                  file=sys.stderr)
            return EXIT_USAGE
    chosen = [(file, sc) for file, sc in loaded if sc.contract.name in contracts]
    if not chosen:
        print(f"eventtime: error: no scenarios for contract(s) {', '.join(contracts)}", file=sys.stderr)
        return EXIT_USAGE
    chosen.sort(key=lambda pair: (contracts.index(pair[1].contract.name), pair[1].path))
    # asked for: without --pipeline, certify runs each contract's own implementations
    plan = [(sc, file, impl) for file, sc in chosen
            for impl in ([args.pipeline] if args.pipeline else sc.contract.implementations)]
    return _execute(plan, args, conf, invalid, certify=True)


def _list() -> int:
    from eventtime.scenarios import SUITE_DIR

    from .concepts import CONCEPTS
    from .registry import CONTRACTS
    from .loader import ScenarioInvalid, find_scenario_files, load_scenario

    by_contract: dict[str, list[str]] = {}
    by_concept: dict[str, int] = {}
    files, _ = find_scenario_files([SUITE_DIR])
    for f in files:
        try:
            sc = load_scenario(f)
        except ScenarioInvalid:
            continue
        by_contract.setdefault(sc.contract.name, []).append(f"{sc.name}  [{', '.join(sc.tags)}]")
        for tag in sc.tags:
            by_concept[tag] = by_concept.get(tag, 0) + 1
    for name, contract in sorted(CONTRACTS.items()):
        print(f"{name}: {contract.title}")
        print(f"  sources: {'; '.join(s.name + '(' + ', '.join(c.name + ' ' + c.type for c in s.columns) + ')' for s in contract.sources)}")
        print(f"  params: {', '.join(p.name + ('' if p.required else '=' + str(p.default)) for p in contract.params)}")
        print(f"  output: {', '.join(c.name + ' ' + c.type for c in contract.output)}")
        if contract.requires:
            print(f"  requires: {', '.join(contract.requires)}")
        print(f"  implementations: {', '.join(contract.implementations)}")
        print(f"  scenarios ({len(by_contract.get(name, []))}):")
        for line in by_contract.get(name, []):
            print(f"    - {line}")
    print()
    print(f"concepts ({len(CONCEPTS)}), with the number of bundled scenarios tagged with each:")
    for tag, (what, where) in CONCEPTS.items():
        print(f"  {tag:28} {by_concept.get(tag, 0):3}  {what} ({where})")
    print()
    print(f"{sum(len(v) for v in by_contract.values())} scenarios, {len(CONTRACTS)} contracts")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
