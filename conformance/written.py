"""What a run's queries wrote, read back for `expect: {written: ...}`: a table, a `kind: path` parameter's
folder, or a path the job names (kept to the run folder, `jobpaths.kept_path`), read in the format its
sink wrote it and cross-checked against what was written (`readback`), as rows of the contract's
output columns. A folder that holds nothing Spark's readers would read is no rows, and a check of a path
no query of the job named in the whole run is the kit's error at its line, never a verdict."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from eventtime.harness.jobpaths import FILES, PathOutside, kept_path, named_paths, written_paths, written_with
from eventtime.harness.readback import cross_check, read_folder

from . import spec as m
from .contracts import Contract
from .userpipeline import PipelineError

__all__ = ["Written", "nothing_written"]


class Written:
    """The folders and tables of one run's scenario, read as the queries wrote them. `writers()`: the
    writer of each query of the job at its latest start (a pipeline's: none)."""

    def __init__(self, scenario: m.Scenario, workdir: str, writers: Callable[[], Iterable[Any]]):
        self.scenario, self.workdir, self._writers = scenario, workdir, writers
        self.unwritten: list[tuple[m.WrittenCheck, str]] = []  # `written:` checks of a path not named so far

    def path_conf(self) -> dict[str, str]:
        """The Spark settings of the contract's `kind: path` parameters: a folder of this run's own each."""
        return {p.conf: self.path(p.name) for p in self.scenario.contract.params if p.kind == "path" and p.conf}

    def path(self, param: str) -> str:
        return str(Path(self.workdir) / "paths" / param)

    def folder(self, name: str) -> str:
        """The folder `expect: {written: NAME}` reads: a `kind: path` parameter's, else the path NAME as
        the job writes it, kept to this run as the job's own paths are (`jobpaths.kept_path`)."""
        spec = self.scenario.contract.param(name)
        return (self.path(name) if spec is not None and spec.kind == "path"
                else kept_path(name, self.workdir, record=False))

    def _unnamed(self, check: m.WrittenCheck, folder: str) -> None:
        """Remember a `written: PATH` that read as no rows while the job had named no such path so far:
        at the end of the run it is an error if the job never named it (`unwritten`), since a misspelt path
        would otherwise pass `rows: []`."""
        if self.scenario.contract.param(str(check.path)) is not None:
            return
        if not self._names(folder):
            self.unwritten.append((check, folder))

    def _names(self, folder: str) -> bool:
        """Whether the job has named `folder`, a folder inside it or one that holds it (to write or read)."""
        named = named_paths(self.workdir)
        return any(n == folder or n.startswith(folder + os.sep) or folder.startswith(n + os.sep) for n in named)

    def unwritten_error(self, check: m.WrittenCheck, folder: str) -> str | None:
        """At the end of the run: why `written: PATH` names a path no query of the job wrote or named in the
        whole run, naming the paths it does write (None when it did name it, or wrote something there)."""
        if self._names(folder) or not nothing_written(folder):
            return None
        files = os.path.join(self.workdir, FILES)
        names = sorted(os.path.relpath(n, files) if n.startswith(files + os.sep) else n
                       for n in written_paths(self.workdir))
        writes = ("it writes " + ", ".join(names)) if names else "it writes no path (its sinks are tables, topics " \
            "or a batch function that writes none)"
        return (f"{check.where}: `written: {check.path}` names a path no query of the job writes ({writes}): is it "
                "spelt as the job writes it? A check of a path nothing writes would pass `rows: []` whatever the job "
                "did (docs/jobs.md, *Where the job writes*)")

    def format(self, folder: str) -> str:
        """The format the job writes `folder` in (`written:` without `format:`): its file sink's or batch
        write's, else parquet."""
        how = written_with(self.workdir, folder)
        if how is not None:
            return how.format
        for writer in self._writers():
            if writer is not None and writer.path and writer.table is None:
                try:
                    if kept_path(writer.path, self.workdir, record=False) == folder:
                        return writer.format or "parquet"
                except PathOutside:
                    continue
        return "parquet"

    def rows(self, spark: Any, check: m.WrittenCheck, contract: Contract) -> list[tuple]:
        """The rows a job left in a table or a path parameter's folder, as rows of `contract`'s output
        columns (by name; a column the table lacks is None), only those with `check.filter`'s values."""
        from eventtime.harness.stream import read_rows

        what = f"table {check.table!r}" if check.table is not None else f"the folder of {check.path!r}"
        if check.table is not None:
            spark.catalog.refreshTable(check.table)  # the job wrote it from the query's session: no stale listing
            frame = spark.table(check.table)
        else:
            folder = self.folder(str(check.path))
            if nothing_written(folder):
                self._unnamed(check, folder)
                return []
            fmt = check.format or self.format(folder)
            how = written_with(self.workdir, folder)
            frame = read_folder(spark, folder, fmt, how, [(c.name, c.ctype.ddl) for c in contract.output])
            if how is not None and how.format == fmt:
                cross_check(frame, how, str(check.path))  # ReadBackMismatch: the kit's error, not a verdict
        names = list(contract.output_names)
        present = [n for n in names if n in frame.columns]
        wanted = [n for n, _ in check.filter if n not in present]
        if wanted:
            raise PipelineError(f"{what} has no column {', '.join(map(repr, wanted))} to filter on "
                                f"(it has {', '.join(frame.columns)})")
        types = {c.name: c.ctype for c in contract.output}
        if check.table is None:  # in the output's types (a partition column as written, a CSV's text)
            frame = frame.selectExpr(*[f"CAST(`{c}` AS {types[c].ddl}) AS `{c}`" for c in present])
        rows = [dict(zip(present, r)) for r in read_rows(frame.select(*[f"`{c}`" for c in present]))]
        rows = [r for r in rows if all(types[n].equal(types[n].canonical(r[n]), v) for n, v in check.filter)]
        return [tuple(r.get(n) for n in names) for r in rows]


def nothing_written(folder: str) -> bool:
    """Whether a folder holds nothing Spark's readers would read: it does not exist, or it has Spark's
    file sink log (`_spark_metadata`) and that log records no file, or it has no data file at all
    (readers skip names starting with `_` or `.`: `_SUCCESS`, `.crc` files). Such a folder reads as
    no rows, not as the schema error Spark raises for it."""
    if not os.path.isdir(folder):
        return not os.path.exists(folder)
    log = os.path.join(folder, "_spark_metadata")
    if os.path.isdir(log):  # readers then read the files the log records, and only those
        return not any(_records_a_file(os.path.join(log, name)) for name in os.listdir(log)
                       if name.split(".")[0].isdigit() and not name.endswith(".crc"))
    for _, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        if any(not f.startswith(("_", ".")) for f in files):
            return False
    return True


def _records_a_file(entry: str) -> bool:
    """Whether one file of a `_spark_metadata` log (a version line, then one JSON object per line)
    adds a file."""
    with open(entry, encoding="utf-8") as fh:
        lines = fh.read().splitlines()[1:]
    return any(line.strip().startswith("{") and json.loads(line).get("action") == "add" for line in lines)
