"""A folder a job wrote, read back as it was written.

A check of what a job wrote (`expect: {written: PATH}`) must read the folder the way the job's writer
wrote it, or it judges something else: Spark's CSV writer writes no header unless told (a reader that
expects one takes the first row for names, so a one-row file reads as no rows); its separator, quote,
null and timestamp formats are the writer's options; a partitioned folder's partition values are text
in folder names (`date=2024-01-01`, `hour=10`) that Spark's reader types by inference unless given a
schema. So a folder is read with:

- the writer's format and options (`WrittenWith`, recorded when the job's file sink or batch write
  wrote it), the reader ignoring the ones that only concern writing;
- a schema: the written DataFrame's columns in their written order and types (CSV is positional), its
  `partitionBy` columns typed as written, never inferred. For a folder the kit did not see written,
  the contract's declared columns and types (CSV: in their declared order; parquet/ORC: the files' own
  data columns), partition columns as declared (else text).

`cross_check` compares what was read with the rows the kit handed the job's file sink (each batch it
wrote), so that a disagreement is the kit's own error, never a verdict on the job.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

from .jobpaths import WrittenWith

__all__ = ["ReadBackMismatch", "read_folder", "cross_check", "partition_columns"]


class ReadBackMismatch(RuntimeError):
    """What the kit read back from a folder disagrees with the rows it handed the sink that wrote it: a
    bug of the kit's (not an EventtimeError, which is a person's to fix), reported at the step."""


def partition_columns(folder: str) -> tuple[str, ...]:
    """The partition columns of a folder as its layout names them (`a=1/b=x/part-...`), outermost first."""
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        if any(not f.startswith(("_", ".")) for f in files):
            rel = os.path.relpath(top, folder)
            if rel == ".":
                return ()
            return tuple(part.split("=", 1)[0] for part in rel.split(os.sep) if "=" in part)
    return ()


def read_folder(spark: Any, folder: str, fmt: str, how: WrittenWith | None,
                declared: Sequence[tuple[str, str]]) -> Any:
    """The DataFrame of `folder` read in `fmt` as `how` wrote it (None: the kit did not see it written;
    `declared`, the contract's (name, DDL type) columns, then give the schema). Its columns: the data
    columns, then the partition columns."""
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    own = how if how is not None and how.format == fmt else None
    parts = own.partition_by if own is not None else partition_columns(folder)
    types = {name: _parse_datatype_string(ddl) for name, ddl in declared}
    if own is not None:
        written = {f.name: f for f in own.schema.fields}
        data = [StructField(f.name, f.dataType, True) for f in own.schema.fields if f.name not in parts]
        partition = [StructField(p, written[p].dataType if p in written else types.get(p, StringType()), True)
                     for p in parts]
    else:
        if fmt in ("parquet", "orc"):  # self-describing files: their own data columns
            inferred = spark.read.format(fmt).load(folder).schema
            data = [StructField(f.name, f.dataType, True) for f in inferred.fields if f.name not in parts]
        elif fmt == "text":
            data = [StructField("value", StringType(), True)]
        else:
            data = [StructField(name, types[name], True) for name, _ in declared if name not in parts]
        partition = [StructField(p, types.get(p, StringType()), True) for p in parts]
    reader = spark.read.format(fmt).schema(StructType(data + partition))
    if own is not None and own.options:
        reader = reader.options(**own.options)
    return reader.load(folder)


def _same(read: Any, handed: Any, timestamp: bool) -> bool:
    if read == handed:
        return True
    if isinstance(read, float) and isinstance(handed, float) and read != read and handed != handed:
        return True  # NaN
    # a text format keeps a timestamp to its format's precision (Spark's default: milliseconds)
    return (timestamp and isinstance(read, int) and isinstance(handed, int)
            and any(read == handed - handed % unit for unit in (1_000, 1_000_000)))


def cross_check(frame: Any, how: WrittenWith, folder: str) -> None:
    """Raise ReadBackMismatch when the rows read from `frame` (as `read_folder` read a folder the job's
    file sink wrote) are not the rows the kit handed that sink, batch by batch."""
    from .stream import read_rows

    if how.handed is None:
        return
    fields = list(how.schema.fields)
    timestamps = [f.dataType.typeName() in ("timestamp", "timestamp_ntz") for f in fields]
    handed = [r for batch in sorted(how.handed) for r in how.handed[batch]]
    names = ", ".join(f.name for f in fields)
    written = (f"{folder} ({how.format}, options {how.options or '{}'}, partitionBy {list(how.partition_by)}; "
               f"columns {names})")
    try:
        read = read_rows(frame.select(*[f"`{f.name}`" for f in fields]))
    except Exception as exc:  # noqa: BLE001 - columns the reading lost: the kit's error too
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReadBackMismatch(f"the kit could not read the columns back from {written}: {first}; it handed the "
                               f"job's {how.format} sink {len(handed)} row(s) in the batches it wrote. {_KITS}") from None
    left = list(handed)
    unmatched: list[tuple] = []
    if len(read) == len(handed) and len(read) <= 5000:
        for row in read:
            at = next((i for i, h in enumerate(left)
                       if all(_same(a, b, t) for a, b, t in zip(row, h, timestamps))), None)
            if at is None:
                unmatched.append(row)
            else:
                left.pop(at)
    if len(read) != len(handed) or unmatched:
        shown = (f"; read but not handed: {unmatched[:3]}, handed but not read: {left[:3]}" if unmatched else "")
        raise ReadBackMismatch(f"the kit read {len(read)} row(s) back from {written} but handed the job's "
                               f"{how.format} sink {len(handed)} row(s) in the batches it wrote{shown}. {_KITS}")


_KITS = "This is the kit's error in reading the folder back, not a verdict on the job: please report it"
