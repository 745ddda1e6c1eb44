"""Static inputs: a table or a folder a query reads with `spark.read` (a dimension table joined with a
stream, a reference file), written with given rows as a batch job writes it.

The query reads them as it does in production, through Spark's own batch readers: the kit writes the
data, never stands in for the read. So what a running query sees after a `replace` is what Spark
shows it: a file listing taken when the query started, a table read anew in each `foreachBatch`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .sparkvalues import parse_schema, to_spark_python

__all__ = ["StaticInput"]


class StaticInput:
    """One static input: a table (`table`, in the session's current database) or a folder (`path`, in
    `format`, written with the writer `options` its reader expects, e.g. a CSV header)."""

    def __init__(self, spark: Any, name: str, columns: Sequence[tuple[str, str]], *, table: str | None = None,
                 path: str | None = None, format: str = "parquet", options: Mapping[str, str] | None = None):
        if (table is None) == (path is None):
            raise ValueError("a static input is a table or a path")
        self.spark, self.name, self.columns = spark, name, list(columns)
        self.table, self.path, self.format, self.options = table, path, format, dict(options or {})

    def replace(self, rows: Sequence[Sequence[Any]]) -> None:
        """Overwrite the table or folder with `rows` (timestamps as epoch microseconds), in one file."""
        schema = parse_schema(self.columns)
        frame = self.spark.createDataFrame(
            [tuple(to_spark_python(v, f.dataType) for v, f in zip(r, schema.fields)) for r in rows], schema)
        writer = frame.coalesce(1).write.mode("overwrite").options(**self.options)
        if self.table is not None:
            writer.saveAsTable(self.table)
        else:
            writer.format(self.format).save(self.path)
