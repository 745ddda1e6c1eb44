"""The standard suite covers what it claims: every concept, every contract, documented rules."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from eventtime.concepts import CONCEPTS
from eventtime.registry import CONTRACTS
from eventtime.loader import find_scenario_files, load_scenario
from eventtime.scenarios import SUITE_DIR

SCENARIOS = [load_scenario(p) for p in find_scenario_files([SUITE_DIR])[0]]


def test_the_suite_has_at_least_60_scenarios():
    assert len(SCENARIOS) >= 60, len(SCENARIOS)


def test_scenario_names_are_unique():
    dup = [n for n, c in Counter(s.name for s in SCENARIOS).items() if c > 1]
    assert not dup


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_every_tag_is_a_known_concept(sc):
    unknown = [t for t in sc.tags if t not in CONCEPTS]
    assert not unknown, f"{sc.path}: tags not in conformance/concepts.py: {unknown}"


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_every_description_says_where_the_rule_is_documented(sc):
    assert re.search(r"Spark guide|Programming Guide|seed|Spark SQL reference|Spark configuration|API docs", sc.description), (
        f"{sc.path}: the description must name where its rule is documented (a Spark guide section or a seed file)")


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_every_concept_has_a_scenario(concept):
    assert any(concept in sc.tags for sc in SCENARIOS), f"no bundled scenario is tagged {concept!r}"


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_every_contract_has_scenarios(contract):
    assert any(sc.contract.name == contract for sc in SCENARIOS), f"no bundled scenario for contract {contract!r}"


def test_at_least_ten_contracts_with_implementations():
    assert len(CONTRACTS) >= 10
    for c in CONTRACTS.values():
        assert c.reference and ":" in c.reference
        assert len(set(c.implementations)) == len(c.implementations)


def test_docs_contracts_md_is_generated_from_the_registry():
    from pathlib import Path

    from eventtime.registry import contracts_markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"
    assert doc.read_text() == contracts_markdown(), (
        "docs/contracts.md is stale: regenerate it with `eventtime list --markdown > docs/contracts.md`")
