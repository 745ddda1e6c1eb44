"""Shared fixtures for the fast tests (pure Python: no JVM, no Spark session, no pyspark import)."""
from __future__ import annotations

import pytest

# A small valid scenario; the loader tests edit it and check where each problem is reported.
# Line numbers (1-based) are relied upon by the tests:
#   1 scenario   2 description   3 contract   4 params   5 window   6 watermark_delay
#   7 sources    8 events        9 columns   10 event_time
#  11 steps     12 - add        13 events    14 row     15 - process   16 - expect
#  17 no_output 18 watermark
BASE_SCENARIO = """\
scenario: demo
description: A demo.
contract: tumbling_count
params:
  window: 10 seconds
  watermark_delay: 5 seconds
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
steps:
  - add:
      events:
        - [a, "00:00:03"]
  - process
  - expect:
      no_output: true
      watermark: "initial"
"""


@pytest.fixture(scope="session")
def base_scenario() -> str:
    return BASE_SCENARIO


@pytest.fixture
def write_scenario(tmp_path):
    """Write `text` to tmp_path/<name> (creating folders) and return the path."""

    def write(name: str, text: str | bytes):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return write
