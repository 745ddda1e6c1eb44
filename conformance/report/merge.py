"""Merges results files into one matrix: a row per scenario × implementation, a column per Spark version."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from packaging.version import InvalidVersion, Version

from ..results import FAILING, NOT_APPLICABLE, PROPERTY_FAILING, STATUSES, judged_ways
from ..resultsfile import ResultsFile, ResultsFileError, read_results
from ..textreport import certification_verdict, short_name, verdict_mark

__all__ = ["VersionColumn", "Cell", "Row", "PropertyEntry", "Matrix", "merge", "read_all", "STATUSES"]



@dataclass(frozen=True)
class VersionColumn:
    """One Spark version; split per file when two files hold the same scenario on that version."""

    key: str
    spark_version: str
    files: tuple[str, ...]


@dataclass
class Cell:
    """One scenario × implementation verdict on one Spark version, with what each step observed."""

    status: str
    reason: str | None
    notes: list[str]
    seconds: float | None
    rerun: str | None
    steps: list[dict[str, Any]]
    file: str
    runtime: dict[str, Any]

    @property
    def mark(self) -> str:
        return verdict_mark(self.status)

    @property
    def failed(self) -> bool:
        return self.status in FAILING

    @property
    def applicable(self) -> bool:
        return self.status != NOT_APPLICABLE


@dataclass
class Row:
    contract: str
    scenario: str
    implementation: str
    file: str | None
    tags: list[str]
    definition: dict[str, Any] | None
    cells: dict[str, Cell] = field(default_factory=dict)  # VersionColumn.key -> Cell

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.contract, self.scenario, self.implementation)

    @property
    def short_impl(self) -> str:
        return short_name(self.implementation)

    @property
    def anchor(self) -> str:
        """A stable id for links and the HTML element of this row."""
        return "s-" + re.sub(r"[^A-Za-z0-9_-]+", "-", f"{self.scenario}--{self.short_impl}").strip("-")


@dataclass
class PropertyEntry:
    """One property `check-properties` checked for a contract's implementation on one Spark version: its
    verdict, on how many generated streams it held, and its shrunk counterexample (a results file's
    `properties` entry, docs/results-format.md)."""

    contract: str
    implementation: str
    prop: str
    title: str
    verdict: str
    held_on: int
    spark_version: str
    file: str
    record: dict[str, Any]  # the entry as written: not_judged, run_errors, error, counterexample, settings

    @property
    def failed(self) -> bool:
        return self.verdict in PROPERTY_FAILING

    @property
    def short_impl(self) -> str:
        return short_name(self.implementation)

    @property
    def summary(self) -> str:
        """The verdict in words, as `check-properties` prints it."""
        r = self.record
        reasons = r.get("not_judged") or []
        not_judged = sum(int(n.get("count") or 0) for n in reasons)
        tail = (f", not judged on {not_judged} (" + "; ".join(f"{n.get('count')}: {n.get('reason')}" for n in reasons[:3])
                + ")") if not_judged else ""
        if self.verdict == "does_not_apply":
            return f"does not apply: {r.get('does_not_apply') or ''}"
        if self.verdict == "not_checked":
            return f"not checked: {r.get('not_checked') or ''}"
        if self.verdict == "broken":
            shrunk = f"; shrinking tried {r['shrink_tried']} smaller stream(s)" if r.get("shrink_tried") else ""
            return f"BROKEN; held on {self.held_on} stream(s) before it broke{tail}{shrunk}"
        if self.verdict == "judged_nothing":
            return f"judged on no generated stream{tail}: nothing was checked"
        return f"held on {self.held_on} generated stream(s){judged_ways(r.get('judged_by'))}{tail}"


def _property_entries(files: Sequence[ResultsFile]) -> list[PropertyEntry]:
    out = []
    for rf in files:
        for p in rf.properties:
            out.append(PropertyEntry(p["contract"], p["implementation"], p["property"], str(p.get("title") or ""),
                                     p["verdict"], int(p.get("held_on") or 0), _result_version(rf, p), rf.path, p))
    return sorted(out, key=lambda e: (e.contract, e.implementation, e.prop, version_key(e.spark_version)))


@dataclass
class Matrix:
    files: list[ResultsFile]
    columns: list[VersionColumn]
    rows: list[Row]
    warnings: list[str]
    properties: list[PropertyEntry] = field(default_factory=list)  # check-properties' verdicts, beside the rows

    def counts(self, column: str) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for row in self.rows:
            cell = row.cells.get(column)
            if cell is not None:
                out[cell.status] = out.get(cell.status, 0) + 1
        return out

    @property
    def contracts(self) -> list[str]:
        return sorted({r.contract for r in self.rows})

    @property
    def tags(self) -> list[str]:
        return sorted({t for r in self.rows for t in r.tags})

    def certification(self) -> list[tuple[str, str, dict[str, str]]]:
        """(contract, implementation, column -> CERTIFIED | REJECTED | NOT APPLICABLE) per pair."""
        groups: dict[tuple[str, str], list[Row]] = {}
        for row in self.rows:
            groups.setdefault((row.contract, row.implementation), []).append(row)
        out = []
        for (contract, impl), rows in sorted(groups.items()):
            per = {}
            for col in self.columns:
                statuses = [r.cells[col.key].status for r in rows if col.key in r.cells]
                if statuses:
                    per[col.key] = certification_verdict(statuses)
            out.append((contract, impl, per))
        return out


def version_key(version: str) -> tuple:
    """Sort Spark versions as versions (3.5.9 < 4.0.0 < 4.3.0); anything unparsable after, by text."""
    try:
        return (0, Version(version), version)
    except InvalidVersion:
        return (1, Version("0"), version)


def read_all(paths: Iterable[str | Path]) -> list[ResultsFile]:
    """Read every file, checking the parts the report draws from (ResultsFileError names the file)."""
    files = []
    for path in paths:
        try:
            rf = read_results(path)
        except (TypeError, ValueError, AttributeError) as exc:  # a JSON shape the reader did not expect
            raise ResultsFileError(str(path), f"not a well-formed results file ({exc})") from None
        _check(rf)
        _check_properties(rf)
        files.append(rf)
    return files


def _need(cond: bool, rf: ResultsFile, where: str, what: str) -> None:
    if not cond:
        raise ResultsFileError(rf.path, f"{where}: {what}")


def _check(rf: ResultsFile) -> None:
    """The nested structure the report walks: lists where lists are expected, numbers where numbers are."""
    for i, r in enumerate(rf.results):
        where = f"result #{i + 1} ({r['scenario']})"
        _need(isinstance(r["steps"], list), rf, where, "'steps' is not a list")
        _need(isinstance(r["runtime"], dict), rf, where, "'runtime' is not an object")
        _need(isinstance(r.get("tags") or [], list) and all(isinstance(t, str) for t in r.get("tags") or []),
              rf, where, "'tags' is not a list of strings")
        _need(isinstance(r.get("notes") or [], list), rf, where, "'notes' is not a list")
        _need(r.get("seconds") is None or isinstance(r["seconds"], (int, float)), rf, where,
              "'seconds' is not a number")
        for j, step in enumerate(r["steps"]):
            at = f"{where}, steps[{j}]"
            _need(isinstance(step, dict), rf, at, "a step is not an object")
            _need(isinstance(step.get("index", 0), int), rf, at, "'index' is not an integer")
            _need(isinstance(step.get("batches", []), list), rf, at, "'batches' is not a list")
            _need(isinstance(step.get("failures", []), list), rf, at, "'failures' is not a list")
            for k, b in enumerate(step.get("batches", [])):
                bat = f"{at}.batches[{k}]"
                _need(isinstance(b, dict), rf, bat, "a batch is not an object")
                _need(isinstance(b.get("rows", []), list) and all(isinstance(x, list) for x in b.get("rows", [])),
                      rf, bat, "'rows' is not a list of rows")
                for key in ("watermark_before_ms", "watermark_after_ms", "dropped", "state_rows", "input_rows"):
                    _need(b.get(key) is None or isinstance(b[key], int), rf, bat, f"'{key}' is not an integer")
            for k, f in enumerate(step.get("failures", [])):
                _need(isinstance(f, dict), rf, f"{at}.failures[{k}]", "a failure is not an object")
                for key in ("missing", "unexpected"):
                    rows = f.get(key) or []
                    _need(isinstance(rows, list) and all(isinstance(x, list) for x in rows), rf,
                          f"{at}.failures[{k}]", f"'{key}' is not a list of rows")
    for name, d in rf.scenarios.items():
        at = f"scenarios[{name!r}]"
        _need(isinstance(d, dict), rf, at, "not an object")
        _need(isinstance(d.get("steps", []), list) and all(isinstance(s, dict) for s in d.get("steps", [])),
              rf, at, "'steps' is not a list of objects")
        _need(isinstance(d.get("sources", []), list) and all(isinstance(s, dict) for s in d.get("sources", [])),
              rf, at, "'sources' is not a list of objects")
        for s in d.get("steps", []):
            if s.get("kind") == "add":
                rows = s.get("rows")
                _need(isinstance(rows, dict) and all(isinstance(v, list) for v in rows.values()), rf,
                      f"{at}, step {s.get('index')}", "'rows' is not a map of source to rows")


def _check_properties(rf: ResultsFile) -> None:
    """What the report reads of each `properties` entry (read_results checked its names and verdict)."""
    for i, p in enumerate(rf.properties):
        where = f"property #{i + 1} ({p['property']})"
        _need(isinstance(p.get("held_on", 0), int), rf, where, "'held_on' is not an integer")
        for key, inner in (("not_judged", "reason"), ("run_errors", "message")):
            items = p.get(key) or []
            _need(isinstance(items, list) and all(isinstance(x, dict) and isinstance(x.get(inner), str)
                                                  and isinstance(x.get("count"), int) for x in items),
                  rf, where, f"'{key}' is not a list of {{{inner}, count}}")
        ce = p.get("counterexample")
        _need(ce is None or (isinstance(ce, dict) and isinstance(ce.get("text"), str)
                             and isinstance(ce.get("why", []), list)), rf, where,
              "'counterexample' is not an object with a 'text'")
        _need(isinstance(p["runtime"], dict), rf, where, "'runtime' is not an object")


def _result_version(rf: ResultsFile, r: Mapping[str, Any]) -> str:
    v = (r.get("runtime") or {}).get("spark_version") or r.get("spark_version") or rf.spark_version
    return str(v)


def _file_labels(files: Sequence[ResultsFile]) -> dict[str, str]:
    names = [Path(f.path).name for f in files]
    return {f.path: (Path(f.path).name if names.count(Path(f.path).name) == 1 else f.path) for f in files}


def merge(files: Sequence[ResultsFile]) -> Matrix:
    """One matrix from any number of files. Files of one Spark version share a column unless two of
    them hold the same scenario × implementation; then each such file gets its own column."""
    warnings = [w for f in files for w in f.warnings]
    by_version: dict[str, list[tuple[ResultsFile, dict[str, Any]]]] = {}
    for rf in files:
        for r in rf.results:
            by_version.setdefault(_result_version(rf, r), []).append((rf, r))
    labels = _file_labels(files)
    columns: list[VersionColumn] = []
    placed: list[tuple[str, ResultsFile, dict[str, Any]]] = []  # (column key, file, result)
    for version in sorted(by_version, key=version_key):
        entries = by_version[version]
        owners: dict[tuple[str, str], set[str]] = {}
        for rf, r in entries:
            owners.setdefault((r["scenario"], r["implementation"]), set()).add(rf.path)
        paths = sorted({rf.path for rf, _ in entries}, key=lambda p: [f.path for f in files].index(p))
        if any(len(o) > 1 for o in owners.values()):
            for p in paths:
                key = f"{version} ({labels[p]})"
                columns.append(VersionColumn(key, version, (p,)))
                placed += [(key, rf, r) for rf, r in entries if rf.path == p]
        else:
            columns.append(VersionColumn(version, version, tuple(paths)))
            placed += [(version, rf, r) for rf, r in entries]

    rows: dict[tuple[str, str], Row] = {}
    for key, rf, r in placed:
        rk = (r["scenario"], r["implementation"])
        definition = rf.scenarios.get(r["scenario"])
        row = rows.get(rk)
        if row is None:
            row = rows[rk] = Row(contract=str(r.get("contract") or (definition or {}).get("contract") or "?"),
                                 scenario=r["scenario"], implementation=r["implementation"],
                                 file=r.get("file"), tags=list(r.get("tags") or []), definition=definition)
        elif row.definition is None and definition is not None:
            row.definition = definition
        if key in row.cells:
            warnings.append(f"{rf.path}: {r['scenario']} [{r['implementation']}] on Spark {key} appears twice; "
                            "the later result is shown")
        row.cells[key] = Cell(status=r["status"], reason=r.get("reason"), notes=list(r.get("notes") or []),
                              seconds=r.get("seconds"), rerun=r.get("rerun"), steps=r["steps"], file=rf.path,
                              runtime=dict(r.get("runtime") or {}))
    ordered = sorted(rows.values(), key=lambda row: row.key)
    return Matrix(files=list(files), columns=columns, rows=ordered, warnings=warnings,
                  properties=_property_entries(files))
