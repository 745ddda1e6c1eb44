"""The seed examples the first audit of issue 48 found not yet written as scenarios: each bundled
scenario passes `check-model`, and a control (one value changed) fails it; the model's rule each needs
is shown on its own."""
from __future__ import annotations

from pathlib import Path

import pytest

from eventtime.loader import load_scenario, load_scenario_text
from eventtime.semantics import check_scenario

FOLDER = Path(__file__).resolve().parents[2] / "scenarios" / "dataflow"


def _bundled(name: str) -> tuple[str, str]:
    path = FOLDER / f"{name}.scenario.yaml"
    return str(path), path.read_text(encoding="utf-8")


def _passes_and_control_fails(name: str, old: str, new: str) -> list:
    """The bundled scenario passes; with `old` replaced (once) by `new` it fails: the failures."""
    path, text = _bundled(name)
    sc = load_scenario(path)
    assert f"seed {name[4:7]}" in " ".join(sc.description.split())
    assert check_scenario(sc).status == "passed"
    assert text.count(old) >= 1, old
    result = check_scenario(load_scenario_text(text.replace(old, new, 1), path))
    assert result.status == "failed"
    return [f for s in result.steps for f in s.failures]


# -- 1. seed 001 "With Punctuated Watermarks": the PunctuatedAssigner -----------------------------------------

def test_punctuated_assigner_emits_after_marker_elements_only_when_larger():
    failures = _passes_and_control_fails(
        "seed001-punctuated-assigner",  # control: the marker at 00:00:08 (below 00:00:10) said to be emitted
        '      rows: [[a, "00:00:00", "00:00:10", 1, dropped, "00:00:08"]]\n      watermark: "00:00:10"\n'
        '      watermarks: []',
        '      rows: [[a, "00:00:00", "00:00:10", 1, dropped, "00:00:08"]]\n      watermark: "00:00:10"\n'
        '      watermarks: ["00:00:08"]')
    assert [f.check for f in failures] == ["watermarks"]
