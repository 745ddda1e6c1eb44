"""The `eventtime` command: validate, run, certify, report and list (exit 0 ok, 1 failures, 2 usage)."""
from __future__ import annotations

import argparse
import datetime as _dt
import shlex
import sys
import time
from pathlib import Path
from typing import Any, NoReturn, Sequence

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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

    r = sub.add_parser("run", help="run scenarios on Spark and print a verdict per scenario")
    r.add_argument("paths", nargs="*", metavar="PATH", help="scenario files or directories (default: the bundled suite)")
    r.add_argument("--pipeline", metavar="MODULE:FUNCTION",
                   help="implementation to run (default: every bundled implementation of each scenario's contract)")
    r.add_argument("--master", default=None, type=_master, metavar="URL", help=_MASTER_HELP)
    r.add_argument("--remote", default=None, type=_remote, metavar="sc://HOST:PORT", help=_REMOTE_HELP)
    r.add_argument("--timeout", type=float, default=60.0, help="bound on each wait for Spark, seconds (default 60)")
    r.add_argument("--spark-conf", action="append", metavar="KEY=VALUE", help="extra Spark SQL conf for the queries")
    r.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    r.add_argument("--jobs", type=_jobs, default=1, metavar="N", help=_JOBS_HELP)
    r.add_argument("-q", "--quiet", action="store_true", help="print failures and the totals only")

    c = sub.add_parser("certify", help="run every scenario of a contract against an implementation; "
                                       "print a verdict table and certify or reject it")
    c.add_argument("--contract", action="append", metavar="NAME",
                   help="contract to certify (repeatable; default: every contract)")
    c.add_argument("--pipeline", metavar="MODULE:FUNCTION",
                   help="implementation to certify (needs exactly one --contract; "
                        "default: the bundled implementations of each contract)")
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

    rp = sub.add_parser("report", help="merge results files into an HTML report, a Markdown summary and JUnit XML")
    rp.add_argument("results", nargs="+", metavar="RESULTS.json", help="results files (--json of run/certify)")
    rp.add_argument("--html", metavar="PATH", help="write the HTML conformance report here")
    rp.add_argument("--markdown", metavar="PATH", help="write the Markdown summary (for a pull-request comment)")
    rp.add_argument("--junit", metavar="PATH", help="write JUnit XML (for CI systems)")
    rp.add_argument("--baseline", nargs="+", action="extend", metavar="OLD.json", default=[],
                    help="results to compare against: the summary lists verdicts that changed")
    rp.add_argument("--title", default=None, help="report title")

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
    args = _parser().parse_args(argv)
    try:
        if args.command == "validate":
            return _validate(args.paths)
        if args.command == "run":
            return _run(args)
        if args.command == "certify":
            return _certify(args)
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
                from .contracts import contracts_markdown

                print(contracts_markdown(), end="")
                return EXIT_OK
            return _list()
    except KeyboardInterrupt:
        print("eventtime: interrupted", file=sys.stderr)
        return 130
    return EXIT_USAGE


def _validate(paths: Sequence[str]) -> int:
    from .loader import find_scenario_files, validate_file

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
        problems = validate_file(f)
        for problem in problems:
            print(problem)
        bad += bool(problems)
    print(f"{len(files) - bad} valid, {bad} invalid ({len(files)} file{'s' if len(files) != 1 else ''})")
    return EXIT_FAILED if bad else EXIT_OK


def scenario_files(paths: Sequence[str] | None, *, what: str = "to run",
                   allow_empty: bool = False) -> list[Path] | None:
    """The scenario files under `paths` (the bundled suite when there are none); None once a usage
    error (a missing path; no files, unless `allow_empty`) has been printed."""
    from .loader import find_scenario_files

    if paths:
        files, missing = find_scenario_files(paths)
        for path in missing:
            print(f"eventtime: error: no such file or directory: {path}", file=sys.stderr)
        if missing:
            return None
    else:
        from eventtime.scenarios import SUITE_DIR

        files, _ = find_scenario_files([SUITE_DIR])
    if not files and not allow_empty:
        print(f"eventtime: error: no scenario files (*.scenario.yaml) {what}", file=sys.stderr)
        return None
    return list(files)


def load_scenarios(files: Sequence[Path]) -> tuple[list[Any], int]:
    """Load each file, printing every invalid one with its problems; returns (scenarios, invalid count)."""
    from .loader import ScenarioInvalid, load_scenario

    scenarios, invalid = [], 0
    for f in files:
        try:
            scenarios.append(load_scenario(f, display_path=_display(f)))
        except ScenarioInvalid as exc:
            invalid += 1
            print(exc, file=sys.stderr)
    return scenarios, invalid


def _run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        print("eventtime: error: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    conf = _conf_pairs(args.spark_conf)
    files = scenario_files(args.paths)
    if files is None:
        return EXIT_USAGE
    scenarios, invalid = load_scenarios(files)
    if args.pipeline:
        from .runner import PipelineError, resolve_pipeline

        try:
            resolve_pipeline(args.pipeline)
        except PipelineError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    return _execute(scenarios, args, conf, invalid)


def _display(path: Path) -> str:
    from eventtime.scenarios import display_path

    return display_path(path)


def _execute(scenarios, args, conf, invalid: int, certify: bool = False) -> int:
    from .parallel import Pair, run_pairs
    from .textreport import (certification, certification_markdown, describe_failure, summary_line, totals,
                             verdict_table)

    t0 = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    from eventtime.harness.stream import HarnessError

    try:
        spark = _spark_session(args)
    except ValueError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except HarnessError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    pairs = [Pair(sc, impl, "eventtime run " + shlex.quote(sc.path) + f" --pipeline {shlex.quote(impl)}")
             for sc in scenarios for impl in ([args.pipeline] if args.pipeline else sc.contract.implementations)]
    results = []
    for result in run_pairs(pairs, jobs=args.jobs, session=spark, timeout=args.timeout, conf=conf):
        results.append(result)  # in the order of `pairs`, whatever --jobs is
        if not args.quiet or result.status in ("failed", "error"):
            print(summary_line(result), flush=True)
    seconds = time.monotonic() - t0
    failures = [r for r in results if r.status in ("failed", "error")]
    for r in failures:
        print()
        print(describe_failure(r))
    if certify:
        for contract in dict.fromkeys(r.scenario.contract.name for r in results):
            print()
            print(f"contract {contract}:")
            print(verdict_table([r for r in results if r.scenario.contract.name == contract]))
        print()
        for (contract, impl), verdict in certification(results).items():
            print(f"{verdict:14} {contract}  [{impl}]")
    counts = totals(results)
    print()
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
          f"{counts['not_applicable']} not applicable, {invalid} invalid files "
          f"on Spark {spark.version} in {seconds:.1f}s")
    if args.json:
        from .resultsfile import build_document, result_record, write_results

        write_results(args.json, build_document(
            [result_record(r) for r in results], tool="certify" if certify else "run", started_at=started_at,
            command=" ".join(["eventtime"] + [shlex.quote(a) for a in sys.argv[1:]]), seconds=seconds,
            master=_master_of(spark)))
    if getattr(args, "markdown", None):
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(certification_markdown(results, spark.version, seconds))
    return EXIT_FAILED if failures or invalid else EXIT_OK


def _certify(args: argparse.Namespace) -> int:
    from .contracts import CONTRACTS
    from .loader import did_you_mean
    from .runner import PipelineError, resolve_pipeline

    if args.timeout <= 0:
        print("eventtime: error: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    conf = _conf_pairs(args.spark_conf)
    contracts = args.contract or sorted(CONTRACTS)
    for name in contracts:
        if name not in CONTRACTS:
            print(f"eventtime: error: unknown contract {name!r}{did_you_mean(name, CONTRACTS)} "
                  f"(contracts: {', '.join(sorted(CONTRACTS))})", file=sys.stderr)
            return EXIT_USAGE
    if args.pipeline:
        if len(contracts) != 1 or not args.contract:
            print("eventtime: error: --pipeline certifies one implementation of one contract: "
                  "give exactly one --contract", file=sys.stderr)
            return EXIT_USAGE
        try:
            resolve_pipeline(args.pipeline)
        except PipelineError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    files = scenario_files(None) or []
    if args.scenarios:
        extra = scenario_files(args.scenarios, allow_empty=True)
        if extra is None:
            return EXIT_USAGE
        files = list(dict.fromkeys(files + extra))
    loaded, invalid = load_scenarios(files)
    scenarios = [sc for sc in loaded if sc.contract.name in contracts]
    if not scenarios:
        print(f"eventtime: error: no scenarios for contract(s) {', '.join(contracts)}", file=sys.stderr)
        return EXIT_USAGE
    scenarios.sort(key=lambda sc: (contracts.index(sc.contract.name), sc.path))
    return _execute(scenarios, args, conf, invalid, certify=True)


def _list() -> int:
    from eventtime.scenarios import SUITE_DIR

    from .concepts import CONCEPTS
    from .contracts import CONTRACTS
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
