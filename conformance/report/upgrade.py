"""What changes for your scenarios when Spark moves from one version to another (`eventtime report
--upgrade FROM TO`): per scenario × implementation run on both, the verdicts and, per step, the
observations that differ (rows written, watermark, dropped rows, state rows, batches), with the
scenario's file and the step's line; "no change" is said, not left out."""
from __future__ import annotations

from dataclasses import dataclass
from eventtime.harness.errors import EventtimeError

from .differences import behaviour_details
from .merge import Matrix, Row, VersionColumn

__all__ = ["Upgrade", "UpgradeError", "upgrade", "upgrade_text", "upgrade_markdown"]


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
class Upgrade:
    source: VersionColumn
    target: VersionColumn
    entries: tuple[Entry, ...]
    only_before: tuple[Row, ...]  # run on FROM only
    only_after: tuple[Row, ...]  # run on TO only

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


def upgrade(matrix: Matrix, source: str, target: str) -> Upgrade:
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
    return Upgrade(before, after, tuple(entries), tuple(only_before), tuple(only_after))


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
    return "\n".join(out) + "\n"
