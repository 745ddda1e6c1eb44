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
from typing import Any, Mapping

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
    if hasattr(value, "interval") and hasattr(value, "total_micros"):  # a Duration
        return value.interval
    return value


class ScenarioBuilder:
    """Accumulates steps; `run()` runs them on Spark and raises AssertionError if an expectation fails."""

    def __init__(self, contract: Any, *, pipeline: Any = None, params: Mapping[str, Any] | None = None,
                 sources: Mapping[str, Any] | None = None, conf: Mapping[str, Any] | None = None,
                 clock: Mapping[str, Any] | None = None, name: str | None = None, date: str | None = None,
                 session: Any = None, timeout: float = 60.0, contracts: Any = None,
                 on_result: Any = None):
        """`contract`: a Contract, or a name looked up as a scenario file beside the calling test would
        look it up (contract files in the test's folder and above it, in `contracts`' folders (a
        ContractLookup), registered, bundled)."""
        from pathlib import Path

        from eventtime.contracts import Contract
        from eventtime.registry import ContractLookup

        self.origin_file, self.origin_line = _caller()
        self.origin = f"{self.origin_file}:{self.origin_line}"
        extra = [contract] if isinstance(contract, Contract) else []
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
            "description": f"Written in Python at {self.origin}.",
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
            s.name: {"columns": {c.name: c.type for c in s.columns},
                     **({"event_time": s.event_time} if s.event_time else {})}
            for s in self.contract.sources}
        self.steps: list[Any] = []
        self.result: Any = None

    # -- steps ------------------------------------------------------------------------------------
    def add(self, source: str | None = None, rows: Any = None, **by_source: Any) -> "ScenarioBuilder":
        """`add("events", [...])` or `add(events=[...], other=[...])`: one micro-batch's worth of rows."""
        if source is not None:
            by_source = {source: rows, **by_source}
        self.steps.append({"add": _plain(by_source)})
        return self

    def process(self) -> "ScenarioBuilder":
        self.steps.append("process")
        return self

    def advance(self, by: Any) -> "ScenarioBuilder":
        self.steps.append({"advance": _plain(by)})
        return self

    def stop(self) -> "ScenarioBuilder":
        self.steps.append("stop")
        return self

    def start(self, conf: Mapping[str, Any] | None = None, *, new_session: bool = False) -> "ScenarioBuilder":
        self.steps.append(_start_step("start", conf, new_session))
        return self

    def restart(self, conf: Mapping[str, Any] | None = None, *, new_session: bool = False) -> "ScenarioBuilder":
        """Stop and start again from the checkpoint; `new_session=True` starts in another SparkSession."""
        self.steps.append(_start_step("restart", conf, new_session))
        return self

    def expect(self, **checks: Any) -> "ScenarioBuilder":
        """Checks as in a scenario file: rows, output, last_batch, no_output, ordered, watermark,
        dropped, state_rows, batches, event_time, failure."""
        self.steps.append({"expect": _plain(checks)})
        return self

    # -- running ----------------------------------------------------------------------------------
    def yaml(self) -> str:
        import yaml

        return yaml.safe_dump({**self.doc, "steps": self.steps}, sort_keys=False, allow_unicode=True)

    def run(self) -> Any:
        from eventtime.loader import load_scenario_text
        from eventtime.runner import run_scenario
        from eventtime.textreport import describe_failure

        from pathlib import Path

        scenario = load_scenario_text(self.yaml(), path=f"<scenario built at {self.origin}>", contracts=self.lookup,
                                      file=Path(self.origin_file))
        self.result = run_scenario(scenario, self.pipeline, session=self.session, timeout=self.timeout)
        if self.on_result is not None:
            self.on_result(self.result)
        if self.result.status in ("failed", "error"):
            raise AssertionError(describe_failure(self.result) + "\n  as YAML:\n"
                                 + "\n".join(f"    {n:>4} | {line}" for n, line in enumerate(self.yaml().splitlines(), 1)))
        return self.result

    def __enter__(self) -> "ScenarioBuilder":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.run()


def _caller() -> tuple[str, int]:
    """The file and line of the code that built the scenario: the first frame outside this package
    (a test calling the `eventtime_scenario` fixture, or code calling ScenarioBuilder directly)."""
    import os

    own = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(own):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


def _start_step(kind: str, conf: Mapping[str, Any] | None, new_session: bool) -> Any:
    body: dict[str, Any] = {}
    if conf:
        body["conf"] = _plain(dict(conf))
    if new_session:
        body["session"] = "new"
    return {kind: body} if body else kind
