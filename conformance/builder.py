"""Scenarios written in Python instead of YAML, run on the same harness and judged the same way.

    s = ScenarioBuilder("tumbling_count", pipeline=my_count, params={"window": "10s", "watermark_delay": "5s"})
    s.add(events=[("a", "00:00:03"), ("a", "00:00:07")])
    s.process()
    s.expect(no_output=True, watermark="00:00:02")
    s.run()          # raises AssertionError with the failing step, the row diff and the batches

The builder writes the same document a scenario file holds and checks it with the same loader, so
a mistake (an unknown parameter, a row of the wrong width) is reported the same way.
"""
from __future__ import annotations

import base64
import datetime as _dt
import decimal
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from eventtime.harness.jobio import shown_file
from eventtime.harness.waits import DEFAULT_TIMEOUT

__all__ = ["ScenarioBuilder"]


def _plain(value: Any) -> Any:
    """A value as a scenario file writes it (the builder writes the same document a file holds)."""
    if isinstance(value, decimal.Decimal):
        return str(value)  # exact: a decimal column reads its text
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return value.isoformat()
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value.isoformat(sep="T")
        return value.astimezone(_dt.timezone.utc).isoformat(sep="T").replace("+00:00", "Z")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "interval") and hasattr(value, "total_us"):  # a Duration
        return value.interval
    return value


class ScenarioBuilder:
    """Accumulates steps; `run()` runs them on Spark and raises AssertionError if an expectation fails."""

    def __init__(self, contract: Any, *, pipeline: Any = None, params: Mapping[str, Any] | None = None,
                 sources: Mapping[str, Any] | None = None, conf: Mapping[str, Any] | None = None,
                 clock: Mapping[str, Any] | None = None, name: str | None = None, date: str | None = None,
                 session: Any = None, timeout: float = DEFAULT_TIMEOUT, contracts: Any = None,
                 on_result: Any = None):
        """`contract`: a Contract, or a name looked up as a scenario file beside the calling test would
        look it up (contract files in the test's folder and above it, in `contracts`' folders (a
        ContractLookup), registered, bundled)."""
        from pathlib import Path

        from eventtime.contracts import Contract
        from eventtime.registry import ContractLookup

        self._origin = _caller()
        self.origin_file, self.origin_line = self._origin.file, self._origin.line
        self.origin = f"{self.origin_file}:{self.origin_line}"
        extra = [*(contracts.extra.values() if contracts is not None else ()),
                 *([contract] if isinstance(contract, Contract) else [])]
        self.lookup = ContractLookup(contracts.dirs if contracts is not None else (), extra=extra)
        if isinstance(contract, Contract):
            self.contract = contract
        else:
            found, reason = self.lookup.resolve(str(contract), Path(self.origin_file))
            if found is None:
                from eventtime.problems import did_you_mean

                names = self.lookup.names(Path(self.origin_file))
                detail = reason if isinstance(reason, str) else (
                    "; ".join(map(str, reason)) if reason else f"known here: {', '.join(names)}")
                raise ValueError(f"unknown contract {contract!r}{did_you_mean(str(contract), names)} ({detail})")
            self.contract = found
        self.pipeline = pipeline
        self.on_result = on_result  # called with each ScenarioResult (the pytest fixture records it)
        self.session = session
        self.timeout = timeout
        self.doc: dict[str, Any] = {
            "scenario": name or f"python-{self.contract.name.replace('_', '-')}",
            "description": f"Written in Python at {shown_file(self.origin_file)}:{self.origin_line}.",
            "contract": self.contract.name,
        }
        if params:
            self.doc["params"] = _plain(dict(params))
        if date:
            self.doc["date"] = date
        if conf:
            self.doc["conf"] = _plain(dict(conf))
        if clock:
            self.doc["clock"] = _plain(dict(clock))
        self.doc["sources"] = _plain(dict(sources)) if sources else {
            s.name: ({"columns": {c.name: c.type for c in s.columns}} if s.kind == "rows" else
                     {"kind": s.kind, **({"topic": s.topic, "headers": s.headers} if s.kind == "kafka" else {})})
            | ({"event_time": s.event_time} if s.event_time else {})
            for s in self.contract.sources}
        self.steps: list[Any] = []
        self._step_origins: list[_Origin] = []  # the test's code that wrote each step
        self.result: Any = None

    # -- steps ------------------------------------------------------------------------------------
    def _step(self, step: Any) -> "ScenarioBuilder":
        self.steps.append(step)
        self._step_origins.append(_caller())
        return self

    def add(self, source: str | None = None, rows: Any = None, **by_source: Any) -> "ScenarioBuilder":
        """`add("events", [...])` or `add(events=[...], other=[...])`: one micro-batch's worth of rows."""
        if source is not None:
            by_source = {source: rows, **by_source}
        return self._step({"add": _plain(by_source)})

    def process(self) -> "ScenarioBuilder":
        return self._step("process")

    def advance(self, by: Any) -> "ScenarioBuilder":
        return self._step({"advance": _plain(by)})

    def stop(self) -> "ScenarioBuilder":
        return self._step("stop")

    def start(self, conf: Mapping[str, Any] | None = None, *, new_session: bool = False) -> "ScenarioBuilder":
        return self._step(_start_step("start", conf, new_session))

    def restart(self, conf: Mapping[str, Any] | None = None, *, new_session: bool = False) -> "ScenarioBuilder":
        """Stop and start again from the checkpoint; `new_session=True` starts in another SparkSession."""
        return self._step(_start_step("restart", conf, new_session))

    def run_available_now(self) -> "ScenarioBuilder":
        """A scheduled run as `trigger(availableNow=True)` runs the query: from the checkpoint, what is there, stop."""
        return self._step({"run": "available_now"})

    def expect(self, **checks: Any) -> "ScenarioBuilder":
        """Checks as in a scenario file: rows, output, last_batch, no_output, ordered, watermark,
        dropped, state_rows, batches, event_time, failure, schema."""
        return self._step({"expect": _plain(checks)})

    # -- running ----------------------------------------------------------------------------------
    def yaml(self) -> str:
        import yaml

        return yaml.safe_dump({**self.doc, "steps": self.steps}, sort_keys=False, allow_unicode=True)

    def build(self) -> Any:
        """The Scenario the steps make, checked by the loader; every place in it (a step, a problem)
        is the line of the test that wrote it, and a failing step shows that code."""
        import bisect
        import dataclasses
        import linecache
        from pathlib import Path

        from eventtime.loader import load_scenario_text
        from eventtime.problems import Where
        from eventtime.yamlsource import load_yaml

        text = self.yaml()
        starts = [load_yaml(text).at(("steps", i)).line for i in range(len(self.steps))]
        shown = shown_file(self._origin.file)

        def relocate(line: int, column: int) -> Where:
            i = bisect.bisect_right(starts, line) - 1  # the step whose YAML holds the line, else the header
            origin = self._step_origins[i] if i >= 0 else self._origin
            return Where(shown, origin.line, origin.column)

        scenario = load_scenario_text(text, path=shown, contracts=self.lookup, file=Path(self._origin.file),
                                      relocate=relocate)
        spans: dict[int, int] = {}
        for origin in (self._origin, *self._step_origins):
            spans[origin.line] = max(spans.get(origin.line, origin.line), origin.end_line)
        lines = tuple(line.rstrip("\n") for line in linecache.getlines(self._origin.file))
        return dataclasses.replace(scenario, lines=lines, spans=spans)

    def run(self) -> Any:
        __tracebackhide__ = True  # pytest: the failure is the test's, not this method's
        from eventtime.runner import run_scenario
        from eventtime.results import FAILING
        from eventtime.textreport import describe_failure

        self.result = run_scenario(self.build(), self.pipeline, session=self.session, timeout=self.timeout)
        if self.on_result is not None:
            self.on_result(self.result)
        if self.result.status in FAILING:
            raise AssertionError(describe_failure(self.result))
        return self.result

    def __enter__(self) -> "ScenarioBuilder":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        __tracebackhide__ = True
        if exc_type is None:
            self.run()


@dataclass(frozen=True)
class _Origin:
    """Where in the caller's code a scenario or a step was written: the call's first and last line."""

    file: str
    line: int
    end_line: int
    column: int


def _caller() -> _Origin:
    """The code that built the scenario or a step: the first frame outside this package (a test
    calling the `eventtime_scenario` fixture, or code calling ScenarioBuilder directly)."""
    import inspect
    import os

    own = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(own):
        frame = frame.f_back
    positions = getattr(inspect.getframeinfo(frame, context=0), "positions", None)  # Python 3.11+
    line = positions.lineno if positions is not None and positions.lineno else frame.f_lineno
    end = positions.end_lineno if positions is not None and positions.end_lineno else line
    column = positions.col_offset + 1 if positions is not None and positions.col_offset is not None else 1
    return _Origin(frame.f_code.co_filename, line, max(end, line), column)


def _start_step(kind: str, conf: Mapping[str, Any] | None, new_session: bool) -> Any:
    body: dict[str, Any] = {}
    if conf:
        body["conf"] = _plain(dict(conf))
    if new_session:
        body["session"] = "new"
    return {kind: body} if body else kind
