"""`eventtime run --teeth` end to end through the console script, on Spark: a passing scenario with a
vacuous check is reported at its file:line and fails the run; the same run without `--teeth` is green
(the control: the green that could not have failed). The rule itself is tested without Spark in
`tests/fast/test_teeth_mutations.py`."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

HEAD = """\
    description: d
    contract: tumbling_count
    params: {window: 10 seconds, watermark_delay: 5 seconds, output_mode: append}
    sources:
      events:
        columns: {key: string, ts: timestamp}
        event_time: ts
    steps:
      - add:
          events: [[a, "00:00:03"], [a, "00:00:07"]]
      - process
      - expect: {no_output: true, watermark: "00:00:02", state_rows: 1}
      - add:
          events: [[a, "00:00:16"]]
"""
CONTROL = textwrap.dedent("    scenario: control-vacuous\n" + HEAD + """\
      - expect: {no_output: true}
      - process
      - expect:
          rows: [[a, "00:00:00", "00:00:10", 2]]
          watermark: "00:00:11"
""")
CLEAN = textwrap.dedent("    scenario: clean\n" + HEAD + """\
      - process
      - expect:
          rows: [[a, "00:00:00", "00:00:10", 2]]
          watermark: "00:00:11"
""")


def _eventtime(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "eventtime"
    return subprocess.run([str(script), "run", "--pipeline", "eventtime.pipelines.reference:tumbling_count",
                           "scenarios", *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CI": "1"})


def test_a_vacuous_check_is_reported_at_its_line_and_fails_the_run(tmp_path: Path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "control.scenario.yaml").write_text(CONTROL)
    (tmp_path / "scenarios" / "clean.scenario.yaml").write_text(CLEAN)
    teeth = _eventtime(tmp_path, "--teeth")
    out = teeth.stdout
    assert teeth.returncode == 1, out + teeth.stderr
    assert "PASS  clean" in out and "PASS  control-vacuous" in out, out  # both runs pass...
    lines = out.splitlines()
    # ...and the one with `no_output` right after an `add` is toothless, at its line
    assert any(line.startswith("TOOTHLESS control-vacuous  [eventtime.pipelines.reference:tumbling_count]  "
                               "(6 checks, ") and line.endswith(", 1 vacuous)") for line in lines), out
    assert ("  scenarios/control.scenario.yaml:16:25: vacuous `no_output`: no step since the previous expect "
            "can run a micro-batch") in out, out
    assert any(line.startswith("TEETH clean  [eventtime.pipelines.reference:tumbling_count]  (5 checks, ")
               and line.endswith(", 0 vacuous)") for line in lines), out
    assert any(line.startswith("teeth: 11 checks, ") and ", 1 vacuous, 0 weak in 2 passing runs; judged in "
               in line for line in lines), out
    assert ", 1 with vacuous or weak checks (--teeth) on Spark " in out, out  # the totals say why it is red
    # the control: without --teeth the same run is green
    plain = _eventtime(tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "TOOTHLESS" not in plain.stdout and "teeth:" not in plain.stdout
