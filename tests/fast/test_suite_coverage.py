"""The standard suite covers what it claims: every concept, every contract, documented rules."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from eventtime.concepts import CONCEPTS, GUIDE_SECTIONS, SEED_TEXTS
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


# `Spark guide, "Section"`, `Spark guide ("A", "B")`, `the Spark guide's "Section" and "Other"`
_GUIDE = re.compile(r'(?:Spark guide|Programming Guide)(?:\'s)?\s*[,(:]?\s*((?:(?:,\s*|\s+and\s+|\s*/\s*)?"[^"]+")+)')
_SEED = re.compile(r"\bseeds? (\d{3}(?:(?:, | and )\d{3})*)\b")
_OTHER_REFERENCES = ("Spark SQL reference", "Spark configuration", "API docs")


def citation_problems(description: str) -> list[str]:
    """What is wrong with where a description says its rule is documented: a guide section or a seed
    text that does not exist, or no citation at all."""
    text = " ".join(description.split())
    sections = [t for m in _GUIDE.finditer(text) for t in re.findall(r'"([^"]+)"', m.group(1))]
    seeds = [n for m in _SEED.finditer(text) for n in re.findall(r"\d{3}", m.group(1))]
    problems = [f"Spark guide section {t!r} is not in eventtime.concepts.GUIDE_SECTIONS"
                for t in sections if t not in GUIDE_SECTIONS]
    problems += [f"seed {n} is not a seed text (eventtime.concepts.SEED_TEXTS)" for n in seeds if n not in SEED_TEXTS]
    if not sections and not seeds and not any(ref in text for ref in _OTHER_REFERENCES):
        problems.append('names no source: a Spark guide section (Spark guide, "Output Modes"), a seed text '
                        f"(seed 000) or one of {', '.join(_OTHER_REFERENCES)}")
    return problems


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
def test_every_description_says_where_the_rule_is_documented(sc):
    assert citation_problems(sc.description) == [], sc.path


@pytest.mark.parametrize("description, problem", [
    ('As the seed says, rows are late.', "names no source"),  # a bare word is no citation
    ('Spark guide, "Late Data Handling": rows are late.', "'Late Data Handling' is not in"),
    ('Flink drops them (seed 009).', "seed 009 is not a seed text"),
    ('Spark guide ("Output Modes", "Watermarks Explained").', "'Watermarks Explained' is not in"),
])
def test_a_citation_that_names_nothing_real_is_refused(description, problem):
    """Control for the check above: it can fail."""
    problems = citation_problems(description)
    assert len(problems) == 1 and problem in problems[0], problems
    assert citation_problems(description.replace("009", "002").replace("Late Data Handling", "Output Modes")
                             .replace("Watermarks Explained", "Triggers").replace("the seed says", "seed 000 says")
                             ) == []


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_every_concept_has_a_scenario(concept):
    assert any(concept in sc.tags for sc in SCENARIOS), f"no bundled scenario is tagged {concept!r}"


@pytest.mark.parametrize("contract", sorted(CONTRACTS))
def test_every_contract_has_scenarios(contract):
    assert any(sc.contract.name == contract for sc in SCENARIOS), f"no bundled scenario for contract {contract!r}"


def test_at_least_ten_contracts_with_implementations():
    assert len(CONTRACTS) >= 10
    for c in CONTRACTS.values():
        if c.model_only:  # judged by the model only, and says why: no implementation to run
            assert not c.implementations and c.model_only.strip(), c.name
            continue
        assert c.reference and ":" in c.reference
        assert len(set(c.implementations)) == len(c.implementations)
    assert [c.name for c in CONTRACTS.values() if c.model_only] == []  # every bundled contract has a Spark run


def test_docs_contracts_md_is_generated_from_the_registry():
    from pathlib import Path

    from eventtime.registry import contracts_markdown

    doc = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"
    assert doc.read_text() == contracts_markdown(), (
        "docs/contracts.md is stale: regenerate it with `eventtime list --markdown > docs/contracts.md`")
