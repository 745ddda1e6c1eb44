"""What changes for your scenarios when Spark moves from one version to another (`eventtime report
--upgrade FROM TO`): per scenario × implementation run on both, the verdicts and, per step, the
observations that differ (rows written, watermark, dropped rows, state rows, batches), with the
scenario's file and the step's line; "no change" is said, not left out. Beside them, the runs across the
two versions (`eventtime run --previous-python`: the steps before a restart on FROM, the rest on TO from
its checkpoint), each with its outcome: restarts, differs, cannot restart (Spark's error class)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from eventtime.harness.errors import EventtimeError

from ..results import NOT_APPLICABLE
from ..resultsfile import ResultsFile
from .differences import behaviour_details
from ..textreport import short_name
from .merge import Matrix, Row, VersionColumn

__all__ = ["Upgrade", "UpgradeError", "Restart", "upgrade", "upgrade_text", "upgrade_markdown", "restarts_across",
           "is_across"]


class UpgradeError(EventtimeError, ValueError):
    """FROM or TO names no version of the results given."""


@dataclass(frozen=True)
class Entry:
    row: Row
    before: str  # the verdict on FROM
    after: str  # the verdict on TO
    details: tuple[str, ...]  # the observations that differ, per step

    @property
    def changed(self) -> bool:
        return self.before != self.after or bool(self.details)


@dataclass(frozen=True)
class Restart:
    """One run across Spark lines: a scenario's steps before its restart on one Spark, the rest on another."""

    scenario: str
    implementation: str
    where: str  # the restart step's file:line
    source: str  # the Spark that wrote the checkpoint
    target: str  # the Spark that restarted from it
    outcome: str | None  # restarts | differs | cannot_restart | previous_differs; None: no outcome (the reason)
    what: str  # Spark's error class (or exception) for cannot_restart; else the verdict's reason, if any
    applicable: bool = True  # False: the scenario could not run across the lines (`what` says why)

    @property
    def words(self) -> str:
        if not self.applicable:
            return "not applicable"
        return {"restarts": "restarts", "differs": "restarts, outputs differ", "cannot_restart": "cannot restart",
                "previous_differs": f"does not pass on {self.source} before the restart"}.get(
                    self.outcome or "", "no outcome")


def is_across(results: ResultsFile) -> bool:
    """Whether a results file holds runs across Spark lines (`eventtime run --previous-python`)."""
    return any((r.get("upgrade") or {}).get("across") == "spark" for r in results.results)


def restarts_across(files: Sequence[ResultsFile]) -> list[Restart]:
    """The runs across Spark lines in `files` (a scenario without a restart has none)."""
    out = []
    for f in files:
        for r in f.results:
            record = r.get("upgrade") or {}
            if record.get("across") != "spark":
                continue
            what = record.get("error_class") or record.get("exception") or (
                "" if record.get("outcome") == "restarts" else (r.get("reason") or "").splitlines()[0] if r.get("reason") else "")
            out.append(Restart(r["scenario"], r["implementation"], str(record.get("restart_where") or r.get("file") or "?"),
                               str(record.get("previous_spark") or "?"),
                               str(r.get("spark_version") or (r.get("runtime") or {}).get("spark_version") or "?"),
                               record.get("outcome"), what, r.get("status") != NOT_APPLICABLE))
    return out


@dataclass(frozen=True)
class Upgrade:
    source: VersionColumn
    target: VersionColumn
    entries: tuple[Entry, ...]
    only_before: tuple[Row, ...]  # run on FROM only
    only_after: tuple[Row, ...]  # run on TO only
    restarts: tuple[Restart, ...] = ()  # runs across the two versions, from a checkpoint of FROM on TO

    @property
    def changed(self) -> list[Entry]:
        return [e for e in self.entries if e.changed]


def _column(matrix: Matrix, version: str, flag: str) -> VersionColumn:
    found = [c for c in matrix.columns if version in (c.key, c.spark_version)]
    if len(found) == 1:
        return found[0]
    known = ", ".join(c.key for c in matrix.columns) or "none"
    if not found:
        raise UpgradeError(f"--upgrade {flag} {version}: no results for Spark {version} (the files hold {known})")
    raise UpgradeError(f"--upgrade {flag} {version}: several results files hold Spark {version} ({known}); "
                       "give the column's name")


def upgrade(matrix: Matrix, source: str, target: str, across: Sequence[ResultsFile] = ()) -> Upgrade:
    """The changes from `source` to `target` in `matrix`; `across`: results files of runs across Spark lines,
    whose runs from a checkpoint of `source` on `target` are listed beside them (UpgradeError: none are)."""
    before, after = _column(matrix, source, "FROM"), _column(matrix, target, "TO")
    if before == after:
        raise UpgradeError(f"--upgrade {source} {target}: FROM and TO are the same results ({before.key}); give two "
                           f"versions, or two columns of one version by name (e.g. '{before.spark_version} (a.json)')")
    entries: list[Entry] = []
    only_before: list[Row] = []
    only_after: list[Row] = []
    for row in matrix.rows:
        a, b = row.cells.get(before.key), row.cells.get(after.key)
        if a is None and b is None:
            continue
        if a is None or b is None:
            (only_after if a is None else only_before).append(row)
            continue
        entries.append(Entry(row, a.mark, b.mark, tuple(behaviour_details(row, [before, after]))))
    restarts = restarts_across(across)
    chosen = [r for r in restarts if r.source == before.spark_version and r.target == after.spark_version]
    if restarts and not chosen:
        pairs = ", ".join(sorted({f"{r.source} -> {r.target}" for r in restarts}))
        raise UpgradeError(f"--upgrade {source} {target}: the runs across Spark lines given restart {pairs}, "
                           f"none from a checkpoint of {before.spark_version} on {after.spark_version}")
    return Upgrade(before, after, tuple(entries), tuple(only_before), tuple(only_after), tuple(chosen))


def _runs(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


def _across_counts(up: Upgrade) -> str:
    counts: dict[str, int] = {}
    for r in up.restarts:
        counts[r.words] = counts.get(r.words, 0) + 1
    return ", ".join(f"{n} {w}" for w, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _where(row: Row) -> str:
    line = (row.definition or {}).get("line")
    return f"{row.file}:{line}" if row.file and line else (row.file or "?")


def upgrade_text(up: Upgrade) -> str:
    """The summary for a terminal."""
    lines = [f"Upgrade from Spark {up.source.key} to {up.target.key}: {len(up.entries)} scenario runs on both, "
             f"{len(up.changed)} changed"]
    for entry in up.entries:
        if not entry.changed:
            continue
        r = entry.row
        verdict = f"{entry.before} -> {entry.after}" if entry.before != entry.after else f"{entry.after} on both"
        lines.append(f"  {r.scenario} [{r.short_impl}] ({_where(r)}): {verdict}")
        lines += [f"    {d}" for d in entry.details]
    unchanged = len(up.entries) - len(up.changed)
    lines.append(f"  no change: {unchanged} of {len(up.entries)}" if up.changed
                 else f"  no change in any of the {len(up.entries)}")
    for label, rows in ((f"only on {up.source.key}", up.only_before), (f"only on {up.target.key}", up.only_after)):
        if rows:
            lines.append(f"  {label}: " + ", ".join(f"{r.scenario} [{r.short_impl}]" for r in rows))
    if up.restarts:  # the runs not applicable across the lines are listed too, each with why: never left out
        lines.append(f"Restarted on Spark {up.target.spark_version} from checkpoints of {up.source.spark_version}: "
                     f"{_runs(len(up.restarts))}, {_across_counts(up)}")
        for run in up.restarts:
            if run.outcome != "restarts":
                lines.append(f"  {run.scenario} [{short_name(run.implementation)}] (restart at {run.where}): "
                             f"{run.words}" + (f": {run.what}" if run.what else ""))
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def upgrade_markdown(up: Upgrade, title: str | None = None) -> str:
    """The summary as Markdown, for a pull-request comment."""
    out = [f"## {title or f'Spark {up.source.key} → {up.target.key}: what changes for these scenarios'}", ""]
    out.append(f"{len(up.entries)} scenario runs on both versions; **{len(up.changed)} changed**, "
               f"{len(up.entries) - len(up.changed)} unchanged.")
    out.append("")
    if up.changed:
        out += ["| scenario | implementation | file | " + f"{up.source.key} | {up.target.key} | what changed |",
                "|---|---|---|---|---|---|"]
        for entry in up.changed:
            r = entry.row
            what = "<br>".join(_md(d) for d in entry.details) or "the verdict only"
            out.append(f"| {_md(r.scenario)} | {_md(r.short_impl)} | `{_md(_where(r))}` | {entry.before} | "
                       f"{entry.after} | {what} |")
    else:
        out.append("No change: every scenario got the same verdict and observed the same rows, watermarks, "
                   "dropped rows and state on both versions.")
    for label, rows in ((f"Only on {up.source.key}", up.only_before), (f"Only on {up.target.key}", up.only_after)):
        if rows:
            out += ["", f"{label}: " + ", ".join(f"`{_md(r.scenario)}` [{_md(r.short_impl)}]" for r in rows)]
    if up.restarts:
        out += ["", f"### Restarted on Spark {up.target.spark_version} from checkpoints of {up.source.spark_version}", "",
                f"{_runs(len(up.restarts))} across the two: {_across_counts(up)}.", "",
                "| scenario | implementation | restart at | outcome | Spark says |", "|---|---|---|---|---|"]
        out += [f"| {_md(r.scenario)} | {_md(short_name(r.implementation))} | `{_md(r.where)}` | {r.words} | "
                f"{_md(r.what)} |" for r in up.restarts]
    return "\n".join(out) + "\n"
