"""`eventtime list [--markdown]`: the contracts, their implementations and the bundled scenarios."""
from __future__ import annotations

import argparse
from typing import Any

from ..exitcodes import ExitCode

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    ls = sub.add_parser("list", help="list contracts, their implementations and the bundled scenarios")
    ls.add_argument("--markdown", action="store_true",
                    help="print the contracts as the Markdown reference (docs/contracts.md)")


def run(args: argparse.Namespace) -> int:
    if args.markdown:
        from ..registry import contracts_markdown

        print(contracts_markdown(), end="")
        return ExitCode.OK
    return _list()


def _list() -> int:
    from eventtime.scenarios import SUITE_DIR

    from ..concepts import CONCEPTS
    from ..registry import CONTRACTS
    from ..loader import find_scenario_files, load_scenario
    from ..problems import FileInvalid

    by_contract: dict[str, list[str]] = {}
    by_concept: dict[str, int] = {}
    files, _ = find_scenario_files([SUITE_DIR])
    for f in files:
        try:
            sc = load_scenario(f)
        except FileInvalid:
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
    return ExitCode.OK

