"""`eventtime certify`: run every scenario of a contract against an implementation, print a verdict
table per contract and certify or reject each implementation."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from eventtime.harness.waits import DEFAULT_TIMEOUT

from ..exitcodes import ExitCode
from .options import allow_parent, but, conf_pairs, contracts_parent, results_parent, spark_parent

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    c = sub.add_parser("certify", parents=[spark_parent(f"bound on each wait for Spark, seconds (default {DEFAULT_TIMEOUT:g})"),
                                           results_parent(), contracts_parent(), allow_parent()],
                       help="run every scenario of a contract against an implementation; "
                            "print a verdict table and certify or reject it")
    c.add_argument("--contract", action="append", metavar="NAME",
                   help="contract to certify (repeatable; default: every contract)")
    c.add_argument("--pipeline", metavar="[CONTRACT=]MODULE:FUNCTION",
                   help="implementation to certify (MODULE:FUNCTION needs exactly one --contract; "
                        "default: the implementations each contract declares, the bundled ones for a bundled contract)")
    c.add_argument("--scenarios", action="append", metavar="PATH",
                   help="also run these scenario files or directories (those of the contract)")
    c.add_argument("--markdown", metavar="PATH", help="also write a Markdown conformance report")
    c.add_argument("-q", "--quiet", action="store_true", help="print failures, the table and the verdicts only")
    from ..teeth import add_cli_option

    add_cli_option(c)  # --teeth: could each check have failed? (docs/teeth.md)
    from ..previous import add_options

    add_options(c)  # --previous, --previous-ref, --previous-python: certified across a change (docs/upgrade.md)


def run(args: argparse.Namespace) -> int:
    from ..registry import CONTRACTS
    from .execute import execute, unimportable
    from .files import load_scenario_files, scenario_files

    if os.getcwd() not in sys.path:
        # as `python -m` does: a pipeline module in the folder the command runs in is importable, for
        # --pipeline and a contract's `implementations:` alike (run and watch: files.read_project)
        sys.path.insert(0, os.getcwd())
    settled = _settled(args)
    if settled is None:
        return ExitCode.USAGE_ERROR
    args, conf, allowed = settled
    contracts = args.contract or sorted(CONTRACTS)
    if args.pipeline:
        if len(contracts) != 1 or not args.contract:
            print("eventtime: error: --pipeline certifies one implementation of one contract: "
                  "give exactly one --contract, or --pipeline CONTRACT=MODULE:FUNCTION", file=sys.stderr)
            return ExitCode.USAGE_ERROR
        failed_import = unimportable([args.pipeline])
        if failed_import:
            return failed_import
    files = scenario_files(None) or []
    if args.scenarios:
        extra = scenario_files(args.scenarios, allow_empty=True)
        if extra is None:
            return ExitCode.USAGE_ERROR
        files = list(dict.fromkeys(files + extra))
    loaded, invalid = load_scenario_files(files, args.contracts)
    chosen = _chosen(loaded, contracts)
    if chosen is None:
        return ExitCode.USAGE_ERROR
    # asked for: without --pipeline, certify runs each contract's own implementations
    plan = [(sc, file, impl) for file, sc in chosen
            for impl in ([args.pipeline] if args.pipeline else sc.contract.implementations)]
    from .crossings import run_across

    return run_across(args, [str(d) for d in args.contracts or []], [impl for _, _, impl in plan],
                      lambda crossings: execute(plan, args, conf, invalid, certify=True, crossings=crossings,
                                                allowed=allowed))


def _settled(args: argparse.Namespace) -> tuple[argparse.Namespace, dict[str, str], frozenset[str]] | None:
    """The options as certify runs with them (the default timeout; `--pipeline CONTRACT=...` split into its
    contract and binding), the Spark settings and the contracts allowed to judge nothing; None after a
    usage error is printed."""
    from pathlib import Path

    from ..projectconfig import SettingsError, find_ini, parse_binding
    from .files import allowed_unjudged

    if args.timeout is None:
        args = but(args, timeout=DEFAULT_TIMEOUT)
    if args.timeout <= 0:
        print("eventtime: error: --timeout must be a positive number of seconds", file=sys.stderr)
        return None
    conf = conf_pairs(args.spark_conf)
    try:
        ini = find_ini(Path.cwd())
    except SettingsError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None
    allowed = allowed_unjudged(args.allow_not_applicable, ini)
    if allowed is None:
        return None
    if args.pipeline and "=" in args.pipeline:  # CONTRACT=MODULE:FUNCTION names the contract it certifies
        try:
            contract, under, pipeline = parse_binding(args.pipeline, "--pipeline")
        except SettingsError as exc:
            print(f"eventtime: error: {exc}", file=sys.stderr)
            return None
        if under is not None or args.contract not in (None, [contract]):
            print(f"eventtime: error: --pipeline {contract}=...: certify binds one contract, without a folder; "
                  f"give no other --contract", file=sys.stderr)
            return None
        args = but(args, pipeline=pipeline, contract=[contract])
    return args, conf, allowed


def _chosen(loaded: list[tuple[Any, Any]], contracts: list[str]) -> list[tuple[Any, Any]] | None:
    """The loaded scenarios of the contracts certified, in the order of `contracts` then by path; None
    after a usage error is printed (an unknown contract, none of its scenarios)."""
    from ..loader import did_you_mean
    from ..registry import CONTRACTS

    known = sorted(set(CONTRACTS) | {sc.contract.name for _, sc in loaded})  # bundled, and those of --scenarios
    for name in contracts:
        if name not in known:
            print(f"eventtime: error: unknown contract {name!r}{did_you_mean(name, known)} (contracts: "
                  f"{', '.join(known)}; a contract of your own comes with its scenarios: --scenarios PATH)",
                  file=sys.stderr)
            return None
    chosen = [(file, sc) for file, sc in loaded if sc.contract.name in contracts]
    if not chosen:
        print(f"eventtime: error: no scenarios for contract(s) {', '.join(contracts)}", file=sys.stderr)
        return None
    chosen.sort(key=lambda pair: (contracts.index(pair[1].contract.name), pair[1].path))
    return chosen
