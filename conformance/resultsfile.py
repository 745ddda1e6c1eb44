"""The results file: a versioned JSON record of one run, read back by `eventtime report`.

The format is documented in docs/results-format.md and checked by
conformance/schema/results.schema.json. Keys are only ever added within a format version; a reader
of version N reads every file of version <= N (older files are upgraded on read) and reads a newer
file as far as it can, saying so.
"""
from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import os
import platform
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from eventtime.harness.errors import EventtimeError

from . import spec as m
from .results import ScenarioResult

__all__ = ["FORMAT", "FORMAT_VERSION", "ResultsFileError", "ResultsFile", "scenario_definition",
           "result_record", "build_document", "write_results", "read_results", "project_version", "ResultsWriter",
           "RUNNING"]

FORMAT = "eventtime-results"
FORMAT_VERSION = 1


class ResultsFileError(EventtimeError):
    """A results file that cannot be read: names the file and what is wrong."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def project_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("eventtime-conformance")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def _plain(value: Any) -> Any:
    """A value JSON can hold without loss of meaning: NaN/inf become strings (JSON has no literal)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, _dt.date):
        return value.isoformat()
    return str(value)  # Decimal: its exact text


def _rows(rows: Iterable[Iterable[Any]] | None) -> list[list[Any]] | None:
    return None if rows is None else [[_plain(v) for v in r] for r in rows]


def _ms(micros: int | None) -> int | None:
    return None if micros is None else micros // 1000


def _param(value: Any) -> Any:
    text = getattr(value, "text", None)  # a Duration keeps the text as written
    if text:
        return text
    return _plain(value)


def _step_definition(step: m.Step) -> dict[str, Any]:
    out: dict[str, Any] = {"index": step.index, "kind": step.kind, "line": step.where.line}
    if isinstance(step, (m.AddStep, m.StaticStep)):
        out["rows"] = {name: _rows(rows) for name, rows in step.rows.items()}
    elif isinstance(step, m.GenerateStep):
        g = step.spec
        out["generate"] = {"source": step.source, "rows": g.rows, "batches": g.batches, "seed": g.seed,
                           "keys": g.keys, "start_ms": _ms(g.start), "step_us": g.step,
                           "late_fraction": g.late_fraction, "late_by_us": g.late_by}
    elif isinstance(step, m.AdvanceStep):
        out["by_ms"] = step.by.total_ms
    elif isinstance(step, m.StartStep):
        out["conf"] = dict(step.conf)
    elif isinstance(step, m.ExpectStep):
        exp: dict[str, Any] = {}
        if step.rows:
            exp["rows"] = [{"scope": c.scope, "line": c.where.line, "rows": _rows(c.rows)} for c in step.rows]
            exp["ordered"] = step.ordered
        if step.watermark_us is not None:
            exp["watermark_ms"] = _ms(step.watermark_us)
        if step.dropped is not None:
            exp["dropped"] = step.dropped
        if step.state_rows is not None:
            exp["state_rows"] = step.state_rows
        if step.batch_count is not None:
            exp["batch_count"] = step.batch_count
        if step.batches is not None:
            exp["batches"] = [{k: v for k, v in {
                "line": b.where.line, "data": b.data, "rows": _rows(b.rows),
                "watermark_before_ms": _ms(b.watermark_before_us), "watermark_after_ms": _ms(b.watermark_after_us),
                "dropped": b.dropped, "state_rows": b.state_rows, "updated": b.updated}.items() if v is not None}
                for b in step.batches]
        if step.event_time is not None:
            et = step.event_time
            exp["event_time"] = "none" if et.none else {k: v for k, v in {
                "min_ms": _ms(et.min_us), "max_ms": _ms(et.max_us), "avg_ms": _ms(et.avg_us),
                "watermark_ms": _ms(et.watermark_us)}.items() if v is not None}
        if step.updated is not None:
            exp["updated"] = step.updated
        if step.batch_watermark_us is not None:
            exp["batch_watermark_ms"] = _ms(step.batch_watermark_us)
        if step.operators is not None:
            exp["operators"] = [{k: v for k, v in {
                "line": o.where.line, "position": o.position, "name": o.name, "state_rows": o.state_rows,
                "updated": o.updated, "dropped": o.dropped}.items() if v is not None} for o in step.operators]
        if step.failure is not None:
            f = step.failure
            exp["failure"] = {k: v for k, v in {"error_class": f.error_class, "exception": f.exception,
                                                "message": f.message}.items() if v is not None}
        if step.schema is not None:
            exp["schema"] = [{"name": n, "type": t, "not_null": nn} for n, t, nn in step.schema.columns]
        out["expect"] = exp
    return out


def scenario_definition(sc: m.Scenario) -> dict[str, Any]:
    """What a scenario says, enough to draw it without its file: sources, steps, expectations."""
    return {
        "name": sc.name, "file": sc.path, "line": sc.where.line, "contract": sc.contract.name,
        "description": sc.description, "tags": list(sc.tags),
        "params": {k: _param(v) for k, v in sc.params.items()},
        "requires": {"spark": sc.requires_spark, "features": list(sc.requires_features)},
        "sources": [{"name": s.name, "columns": [[c.name, c.type] for c in s.columns], "event_time": s.event_time}
                    for s in sc.sources.values()],
        "output_columns": [[c.name, c.type] for c in sc.output_columns],
        "conf": dict(sc.conf), "timezone": sc.timezone,
        "clock_start_ms": sc.clock_start_us // 1000,
        "trigger_ms": sc.trigger.total_ms if sc.trigger else None,
        "steps": [_step_definition(s) for s in sc.steps],
    }


def result_record(result: ScenarioResult) -> dict[str, Any]:
    """One scenario × implementation verdict, with the scenario's definition attached under `definition`
    (build_document moves definitions to the file's `scenarios` map, one per scenario)."""
    record = _plain(result.to_dict())
    record["runtime"] = _plain(dict(result.runtime))
    record["definition"] = scenario_definition(result.scenario)
    return record


def _portable(command: str | None) -> str | None:
    """The command line with paths under the working directory made relative: a report says what
    was run without naming the machine it ran on."""
    if not command:
        return command
    cwd = str(Path.cwd().resolve())
    return command.replace(cwd + "/", "").replace(cwd, ".")


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def build_document(records: Iterable[Mapping[str, Any]], *, tool: str, command: str | None = None,
                   started_at: str | None = None, seconds: float | None = None,
                   master: str | None = None, properties: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The whole file: run metadata (gathered from the records' runtime info), the results and, from
    `check-properties`, the properties checked (`CheckReport.records`; the key is left out when none)."""
    scenarios: dict[str, Any] = {}
    results = []
    for rec in records:
        rec = dict(rec)
        definition = rec.pop("definition", None)
        if definition is not None:
            scenarios.setdefault(definition["name"], definition)
        results.append(rec)
    results.sort(key=lambda r: (r.get("contract", ""), r.get("scenario", ""), r.get("implementation", "")))

    checked = sorted((dict(p) for p in properties),
                     key=lambda p: (p.get("contract", ""), p.get("implementation", ""), p.get("property", "")))

    def one(key: str) -> Any:
        values = sorted({str(r["runtime"][key]) for r in [*results, *checked] if (r.get("runtime") or {}).get(key)})
        return values[0] if len(values) == 1 else (values or None)

    run = {
        "tool": tool, "command": _portable(command), "project_version": project_version(),
        "spark_version": one("spark_version"), "pyspark_version": one("pyspark_version"),
        "java_version": one("java_version"), "master": master or one("master"),
        "python_version": platform.python_version(), "platform": platform.platform(terse=True),
        "started_at": started_at or utc_now(), "finished_at": utc_now(),
        "seconds": None if seconds is None else round(seconds, 3),
    }
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, "run": run, "counts": counts,
                "scenarios": dict(sorted(scenarios.items())), "results": results}
    if checked:
        document["properties"] = checked
    return document


def write_results(path: str | Path, document: Mapping[str, Any]) -> Path:
    """Write the file atomically: a reader (or a run that ends mid-write) sees the old file or the
    new one, never half of one. The text goes to a temporary file in the same directory, is flushed
    to disk, and replaces the file in one rename."""
    return _write_text(path, json.dumps(document, indent=1, allow_nan=False) + "\n")


def _write_text(path: str | Path, text: str) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return out


# The reason an incomplete file gives while its run is still going: what a reader sees if the
# process that writes it is killed outright (SIGKILL), when nothing is left to say otherwise.
RUNNING = "the run was still going when this file was last written (the process ended without finishing it)"


class ResultsWriter:
    """The results file of a run, written as the run goes: after every verdict, marked incomplete
    until `finish` (with no reason: complete) or `finish(reason)` (incomplete, saying why).

    Each record is turned into JSON text once, when it is added, and every write splices those
    texts into the document: the same file `write_results(build_document(...))` writes, without
    encoding the whole run again at every verdict (the indented encoder is pure Python: a
    200-result file took ~0.25 s to encode, each time)."""

    def __init__(self, path: str | Path, *, tool: str, command: str | None, started_at: str,
                 master: str | None = None):
        self.path, self.tool, self.command, self.started_at, self.master = path, tool, command, started_at, master
        self._results: list[tuple[tuple[str, str, str], str, dict[str, Any]]] = []  # (order, text, summary)
        self._definitions: dict[str, str] = {}
        self._t0 = time.monotonic()

    def add(self, result: ScenarioResult) -> None:
        record = result_record(result)
        definition = record.pop("definition")
        self._definitions.setdefault(definition["name"], _nested(definition))
        order = (record.get("contract", ""), record.get("scenario", ""), record.get("implementation", ""))
        summary = {k: record.get(k) for k in ("status", "runtime")}
        self._results.append((order, _nested(record), summary))
        self._write({"reason": RUNNING})

    def finish(self, reason: str | None = None, not_run: Iterable[tuple[str, str, str]] = ()) -> Path:
        """The last write. `reason`: why the run ended before its end (None: it completed).
        `not_run`: (scenario, file, implementation) of each pair the run did not get to."""
        incomplete = None
        if reason is not None:
            incomplete = {"reason": reason,
                          "not_run": [{"scenario": s, "file": f, "implementation": i} for s, f, i in not_run]}
        return self._write(incomplete)

    def _write(self, incomplete: Mapping[str, Any] | None) -> Path:
        document = build_document([summary for _, _, summary in self._results], tool=self.tool,
                                  command=self.command, started_at=self.started_at,
                                  seconds=time.monotonic() - self._t0, master=self.master)
        document["scenarios"], document["results"] = _SCENARIOS, _RESULTS
        if incomplete is not None:
            document["incomplete"] = dict(incomplete)
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
        scenarios = ("{\n" + ",\n".join(f"  {json.dumps(name)}: {self._definitions[name]}"
                                          for name in sorted(self._definitions)) + "\n }") if self._definitions else "{}"
        results = ("[\n" + ",\n".join("  " + t for _, t, _ in sorted(self._results, key=lambda r: r[0]))
                   + "\n ]") if self._results else "[]"
        text = text.replace(json.dumps(_SCENARIOS), scenarios, 1).replace(json.dumps(_RESULTS), results, 1)
        return _write_text(self.path, text)


_SCENARIOS, _RESULTS = "\u0000scenarios", "\u0000results"  # placeholders no real value can hold


def _nested(value: Any) -> str:
    """`value` as JSON text indented as a value one level inside the document (indent 1)."""
    return json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n  ")


@dataclass
class ResultsFile:
    """A results file read back, upgraded to the current format version."""

    path: str
    run: dict[str, Any]
    scenarios: dict[str, Any]
    results: list[dict[str, Any]]
    format_version: int
    warnings: list[str]
    incomplete: dict[str, Any] | None = None  # the run ended before its end: {"reason", "not_run"}
    properties: list[dict[str, Any]] = field(default_factory=list)  # check-properties' entries, one per property

    @property
    def spark_version(self) -> str:
        v = self.run.get("spark_version")
        return ", ".join(v) if isinstance(v, list) else (v or "unknown")


def _upgrade_v0(doc: dict[str, Any]) -> dict[str, Any]:
    """Files written before the format was versioned: `{"spark_version": ..., "results": [...]}`
    with no run metadata and no scenario definitions."""
    version = doc.get("spark_version")
    return {"format": FORMAT, "format_version": 0,
            "run": {"tool": None, "spark_version": version, "project_version": None},
            "scenarios": {}, "results": [dict(r, runtime={"spark_version": r.get("spark_version") or version})
                                         if isinstance(r, dict) else r for r in doc.get("results", [])]}


def read_results(path: str | Path) -> ResultsFile:
    """Read a results file of any format version; a clear ResultsFileError when it is not one."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsFileError(name, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ResultsFileError(name, "not UTF-8 text; a results file is JSON") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(name, f"line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ResultsFileError(name, "not an eventtime results file (no 'results' list)")
    warnings: list[str] = []
    if "format_version" not in doc:
        doc = _upgrade_v0(doc)
    elif doc.get("format") != FORMAT or not isinstance(doc.get("format_version"), int):
        raise ResultsFileError(name, f"not an eventtime results file (format {doc.get('format')!r})")
    elif doc["format_version"] > FORMAT_VERSION:
        warnings.append(f"{name}: written in results format {doc['format_version']}, newer than this "
                        f"reader's {FORMAT_VERSION}; fields it does not know are ignored")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("scenario", "implementation",
                                                                                   "status")):
            raise ResultsFileError(name, f"result #{i + 1} lacks 'scenario', 'implementation' or 'status'")
        r.setdefault("runtime", {})
        r.setdefault("steps", [])
    properties = doc.get("properties") or []
    if not isinstance(properties, list):
        raise ResultsFileError(name, "'properties' is not a list")
    for i, p in enumerate(properties):
        if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("contract", "implementation",
                                                                                   "property", "verdict")):
            raise ResultsFileError(name, f"property #{i + 1} lacks 'contract', 'implementation', 'property' or "
                                         "'verdict'")
        p.setdefault("runtime", {})
    incomplete = doc.get("incomplete")
    if incomplete is not None:
        if not isinstance(incomplete, dict) or not isinstance(incomplete.get("reason"), str):
            raise ResultsFileError(name, "'incomplete' is not an object with a 'reason'")
        not_run = incomplete.get("not_run") or []
        warnings.append(f"{name}: an incomplete run ({incomplete['reason']}): {len(doc['results'])} verdicts"
                        + (f", {len(not_run)} scenario × implementation pairs not run" if not_run else ""))
    return ResultsFile(name, dict(doc.get("run") or {}), dict(doc.get("scenarios") or {}), doc["results"],
                       int(doc["format_version"]), warnings, incomplete, properties)
