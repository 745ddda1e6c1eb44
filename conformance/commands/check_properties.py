"""`eventtime check-properties CONTRACT`: a job's properties checked on streams generated from its contract,
with no expected values written (`eventtime.properties`, docs/properties.md)."""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..exitcodes import ExitCode
from .options import _jobs, conf_pairs, contracts_parent, pipelines_parent, positive_int, spark_parent

if TYPE_CHECKING:
    from ..contracts import Contract
    from ..properties import CheckReport

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    from ..properties import PROPERTIES

    c = sub.add_parser("check-properties", parents=[pipelines_parent(), spark_parent(), contracts_parent("the contract")],
                       help="check a job's properties on streams generated from its contract (no expected values)")
    c.add_argument("contract", metavar="CONTRACT",
                   help="a contract's name (found in --contracts, the project's eventtime_contracts, or bundled) "
                        "or its *.contract.yaml file")
    c.add_argument("--property", action="append", dest="properties", metavar="NAME",
                   help=f"a property to check (repeatable; default all: {', '.join(PROPERTIES)}); "
                        "invariant:NAME for one of the contract's invariants")
    c.add_argument("--max-examples", type=positive_int, default=20, metavar="N",
                   help="generated streams per property (Hypothesis's max_examples; default 20)")
    c.add_argument("--seed", type=int, default=None, help="Hypothesis's seed: the same streams on every run")
    c.add_argument("--derandomize", action="store_true",
                   help="streams drawn from a seed fixed by the check itself (Hypothesis's derandomize)")
    c.add_argument("--no-database", action="store_true",
                   help="neither read nor save examples in Hypothesis's database (.hypothesis/ in the working "
                        "directory: a broken property's stream is tried first on the next run)")
    c.add_argument("--delay", metavar="DURATION", default=None,
                   help="the watermark delay the job uses, which late rows are drawn around (default: a "
                        "contract parameter named for it, else 10 seconds)")
    c.add_argument("--no-shrink", action="store_true",
                   help="write the first stream a property breaks on as it was found, without shrinking it (a "
                        "shrink is Spark runs, up to Hypothesis's five-minute limit per property)")
    c.add_argument("--max-events", type=positive_int, default=8, metavar="N", help="events per stream (default 8)")
    c.add_argument("--table", action="append", default=[], metavar="NAME",
                   help="a table the job writes, read back and compared like its path parameters' folders "
                        "(repeatable)")
    c.add_argument("--json", metavar="PATH",
                   help="also write each property's verdict, counts and counterexample as a results file "
                        "(docs/results-format.md), which `eventtime report` merges beside run and certify files")
    c.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help="check N properties at once in one JVM, each on its own session (default 1: one after "
                        "another); the lines, files and verdicts are the same whatever N is")
    c.add_argument("--out", metavar="DIR", default="counterexamples",
                   help="where a broken property's shrunk stream is written as a scenario file (default "
                        "./counterexamples; never written where CI is set)")


def _contract(args: argparse.Namespace, dirs: list[str]) -> tuple[Any, Any, Path] | None:
    from eventtime.scenarios import display_path

    from ..contractfile import load_contract_file
    from ..problems import FileInvalid
    from ..registry import ContractLookup

    given = Path(args.contract)
    try:
        if given.suffix in (".yaml", ".yml") or given.is_file():
            if not given.is_file():
                print(f"eventtime: error: no such contract file: {args.contract}", file=sys.stderr)
                return None
            c = load_contract_file(given, display_path=display_path(given))  # named as `eventtime run` names it
            lookup = ContractLookup([*dirs, str(given.parent)], extra=[c])
            same, why = lookup.resolve(c.name, None)  # as each generated stream finds it: said before Spark starts
            if same is None:
                print(f"eventtime: error: {display_path(given)}: {why}", file=sys.stderr)
                return None
            return c, lookup, given
    except FileInvalid as exc:
        print(exc, file=sys.stderr)
        return None
    lookup = ContractLookup(dirs)
    beside = Path.cwd() / "check-properties"  # contract files in the working directory and above it
    found, reason = lookup.resolve(args.contract, beside)
    if found is None and isinstance(reason, list) and reason:  # its file does not load: its problems, at their lines
        for problem in reason:
            print(problem, file=sys.stderr)
        return None
    if isinstance(reason, str):  # found, but more than once (the places are in the reason)
        print(f"eventtime: error: {reason}", file=sys.stderr)
        return None
    if found is None:
        from ..problems import did_you_mean

        names = lookup.names(beside)
        detail = "; ".join(map(str, reason)) if reason else f"known here: {', '.join(names)}"
        print(f"eventtime: error: unknown contract {args.contract!r}{did_you_mean(args.contract, names)} ({detail})",
              file=sys.stderr)
        return None
    return found, lookup, beside


def run(args: argparse.Namespace) -> int:
    from eventtime.scenarios import display_path

    from ..projectconfig import unbound_message
    from ..properties import PROPERTIES, wanted_properties
    from .execute import unimportable
    from .files import read_project
    from .spark import open_session

    project = read_project([], args.pipeline, args.contracts, args.timeout)
    if project is None:
        return ExitCode.USAGE_ERROR
    found = _contract(args, project.contract_dirs)
    if found is None:
        return ExitCode.USAGE_ERROR
    contract, lookup, place = found
    try:  # the same rule as properties= in code, said before Spark starts
        properties = wanted_properties(args.properties or list(PROPERTIES), contract)
    except ValueError as exc:
        print(f"eventtime: error: --property: {exc}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    refused = _refused(contract, args.delay)
    if refused is not None:  # said before Spark starts
        print(f"eventtime: error: {refused}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    conf = conf_pairs(args.spark_conf)
    targets = project.targets(SimpleNamespace(contract=contract), place)
    if not targets:
        # the contract's file, named as `eventtime run` names a file (`place` is where bindings are looked up from)
        shown = contract.where.file if contract.where is not None else display_path(place)
        print(f"eventtime: error: {unbound_message(contract, shown)}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    failed_import = unimportable(targets)  # the rule `eventtime run` follows: a job not there is a usage error
    if failed_import:
        return failed_import
    if args.remote is not None:
        print("eventtime: error: check-properties re-runs batches from a checkpoint on this machine: not over "
              "Spark Connect (--remote)", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    spark, code = open_session(args)
    if spark is None:
        return code
    return _check_targets(args, spark, SimpleNamespace(contract=contract, lookup=lookup, place=place, conf=conf,
                                                     timeout=project.timeout), properties, targets)


def _check_targets(args: argparse.Namespace, spark: Any, given: SimpleNamespace, properties: list[str],
                   targets: list[str]) -> int:
    """Check each target's properties; with --json, write every property's entry once all were checked.
    `given`: the contract, its lookup and place, the Spark conf and the waits' timeout."""
    from eventtime.harness.backend import backend_for

    from ..properties import check_properties
    from ..resultsfile import build_document, utc_now, write_results

    contract = given.contract
    failed, records, started_at, t0 = False, [], utc_now(), time.monotonic()
    for target in targets:
        print(f"eventtime: {contract.name} against {target}: {', '.join(properties)}", flush=True)
        try:
            report = check_properties(
                contract, target, session=spark, properties=properties, lookup=given.lookup,
                max_examples=args.max_examples, seed=args.seed, derandomize=args.derandomize,
                database=None if args.no_database else "default", delay=args.delay, max_events=args.max_events,
                tables=args.table, out_dir=args.out, timeout=given.timeout, conf=given.conf or None,
                shrink=not args.no_shrink, jobs=args.jobs,
                progress=lambda line: print(line, flush=True))
        except ValueError as exc:  # a contract whose streams cannot be generated, a bad --delay
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return ExitCode.USAGE_ERROR
        _say_counterexamples(report, contract.name, target, args, given.place)
        print(f"eventtime: {contract.name} against {target}: {report.tally()}", flush=True)
        failed = failed or not report.held
        if args.json:  # the Spark it ran on, asked while the session lives
            records += report.records(backend_for(spark).runtime(), {**_settings(args), "delay": report.delay})
    if args.json:
        write_results(args.json, build_document(
            [], tool="check-properties", command=" ".join(["eventtime"] + [shlex.quote(a) for a in sys.argv[1:]]),
            started_at=started_at, seconds=time.monotonic() - t0, properties=records))
        print(f"eventtime: wrote {args.json}", flush=True)
    return ExitCode.FAILED if failed else ExitCode.OK


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a results file records beside each property: what reproduces the streams."""
    return {"max_examples": args.max_examples, "seed": args.seed, "derandomize": args.derandomize,
            "max_events": args.max_events, "delay": args.delay, "shrink": not args.no_shrink}


def _refused(contract: Contract, delay: str | None) -> str | None:
    """Why no stream can be checked for `contract` with this `--delay` (None: they can); said before
    Spark starts."""
    from ..strategies import not_generated

    refused = not_generated(contract)
    if refused is None and delay is not None:
        from ..timeparse import TimeFormatError, parse_duration

        try:
            parse_duration(delay)
        except (TimeFormatError, ValueError) as exc:
            refused = f"--delay {delay!r}: {exc}"
    return refused


def _say_counterexamples(report: CheckReport, contract: str, target: str, args: Any, place: Path) -> None:
    """Each broken property's shrunk stream: where it was written and how to run it again, else its text."""
    from eventtime.scenarios import display_path

    from ..snapshot import in_ci
    from .files import run_command

    for p in report.properties:
        if p.counterexample is not None and p.written is None:
            why = "CI is set: not written" if in_ci() else "not written"
            print(f"eventtime: {p.prop}: the shrunk stream ({why}):\n{p.counterexample.text}", flush=True)
        elif p.written is not None:
            # a contract given as a file is found by its folder (a scenario under --out is not beside it)
            beside = [display_path(place.parent)] if place.suffix in (".yaml", ".yml") else []
            print(f"eventtime: reproduce: {run_command(display_path(p.written), contract, target, args, beside)}",
                  flush=True)
