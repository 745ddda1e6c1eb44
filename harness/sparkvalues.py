"""Rows between the kit's plain Python values and Spark, for every type Spark's DDL can write.

The kit's values: integers, floats, Decimal, str, bool, bytes, datetime.date; timestamps (with or
without a zone) as epoch microseconds (int); arrays as sequences, maps as sequences of (key, value)
pairs (or dicts), structs as sequences of their fields in order. Into Spark they travel as one Arrow
record batch (`arrow_payload`) or as Python objects for `createDataFrame` (`to_spark_python`); out of
Spark, `read_back_exprs` turns every timestamp, at any depth, into epoch microseconds inside Spark
(UTC, whatever the session's time zone) and `from_spark_python` turns Rows, lists, dicts and
bytearrays into tuples and bytes. Nothing here imports pyspark or pyarrow until it is called.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Sequence

__all__ = ["parse_schema", "arrow_payload", "to_spark_python", "positional_schema", "read_back_exprs", "from_spark_python"]

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def parse_schema(columns: Sequence[tuple[str, str]]) -> Any:
    """The StructType of (name, Spark DDL type) columns; names may hold any character."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    return StructType([StructField(name, _parse_datatype_string(ddl), True) for name, ddl in columns])


def _arrow_type(dt: Any) -> Any:
    import pyarrow as pa
    from pyspark.sql import types as T

    simple = {T.ByteType: pa.int8, T.ShortType: pa.int16, T.IntegerType: pa.int32, T.LongType: pa.int64,
              T.FloatType: pa.float32, T.DoubleType: pa.float64, T.StringType: pa.string,
              T.BooleanType: pa.bool_, T.BinaryType: pa.binary, T.DateType: pa.date32}
    for cls, make in simple.items():
        if isinstance(dt, cls):
            return make()
    if isinstance(dt, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if type(dt).__name__ == "TimestampNTZType":
        return pa.timestamp("us")
    if isinstance(dt, T.DecimalType):
        return pa.decimal128(dt.precision, dt.scale)
    if isinstance(dt, T.ArrayType):
        return pa.list_(_arrow_type(dt.elementType))
    if isinstance(dt, T.MapType):
        return pa.map_(_arrow_type(dt.keyType), _arrow_type(dt.valueType))
    if isinstance(dt, T.StructType):
        return pa.struct([pa.field(f.name, _arrow_type(f.dataType)) for f in dt.fields])
    raise TypeError(f"no Arrow type for Spark type {dt.simpleString()}")


def _to_arrow_value(value: Any, dt: Any) -> Any:
    """Arrow takes the kit's values as they are (ints for timestamps), except structs (dicts by name)
    and maps (lists of pairs)."""
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(dt, T.ArrayType):
        return [_to_arrow_value(v, dt.elementType) for v in value]
    if isinstance(dt, T.MapType):
        pairs = value.items() if isinstance(value, dict) else value
        return [(_to_arrow_value(k, dt.keyType), _to_arrow_value(v, dt.valueType)) for k, v in pairs]
    if isinstance(dt, T.StructType):
        return {f.name: _to_arrow_value(v, f.dataType) for f, v in zip(dt.fields, value)}
    return value


def arrow_payload(schema: Any, rows: Sequence[Sequence[Any]]) -> bytes:
    """Rows as one serialized Arrow record batch (the IPC message without the schema), column by column.
    Columns are named by position (`_0`, `_1`, ...): Spark reads them by position, so duplicate or odd
    names travel unchanged."""
    import pyarrow as pa

    arrays = []
    for i, field in enumerate(schema.fields):
        values = [_to_arrow_value(row[i], field.dataType) for row in rows]
        arrays.append(pa.array(values, _arrow_type(field.dataType)))
    batch = pa.RecordBatch.from_arrays(arrays, names=[f"_{i}" for i in range(len(arrays))])
    return batch.serialize().to_pybytes()


def to_spark_python(value: Any, dt: Any) -> Any:
    """A value as PySpark's `createDataFrame` takes it (timestamps as aware or naive datetimes)."""
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(dt, T.TimestampType):
        return _EPOCH_UTC + _dt.timedelta(microseconds=value)
    if type(dt).__name__ == "TimestampNTZType":
        return _EPOCH + _dt.timedelta(microseconds=value)
    if isinstance(dt, T.ArrayType):
        return [to_spark_python(v, dt.elementType) for v in value]
    if isinstance(dt, T.MapType):
        pairs = value.items() if isinstance(value, dict) else value
        return {to_spark_python(k, dt.keyType): to_spark_python(v, dt.valueType) for k, v in pairs}
    if isinstance(dt, T.StructType):
        return tuple(to_spark_python(v, f.dataType) for f, v in zip(dt.fields, value))
    if isinstance(dt, T.BinaryType):
        return bytearray(value)
    return value


def _has_timestamp(dt: Any) -> bool:
    from pyspark.sql import types as T

    if isinstance(dt, T.TimestampType):
        return True
    if isinstance(dt, T.ArrayType):
        return _has_timestamp(dt.elementType)
    if isinstance(dt, T.MapType):
        return _has_timestamp(dt.keyType) or _has_timestamp(dt.valueType)
    if isinstance(dt, T.StructType):
        return any(_has_timestamp(f.dataType) for f in dt.fields)
    return False


def _micros(expr: str, dt: Any, depth: int = 0) -> str:
    """A SQL expression of `expr` with every (zoned) timestamp inside replaced by its epoch micros."""
    from pyspark.sql import types as T

    if not _has_timestamp(dt):
        return expr
    if isinstance(dt, T.TimestampType):
        return f"unix_micros({expr})"
    x, k, v = f"x{depth}", f"k{depth}", f"v{depth}"
    if isinstance(dt, T.ArrayType):
        return f"transform({expr}, {x} -> {_micros(x, dt.elementType, depth + 1)})"
    if isinstance(dt, T.MapType):
        keyed = (f"transform_keys({expr}, ({k}, {v}) -> {_micros(k, dt.keyType, depth + 1)})"
                 if _has_timestamp(dt.keyType) else expr)
        return (f"transform_values({keyed}, ({k}, {v}) -> {_micros(v, dt.valueType, depth + 1)})"
                if _has_timestamp(dt.valueType) else keyed)
    assert isinstance(dt, T.StructType)
    fields = ", ".join(f"'{f.name.replace(chr(39), chr(92) + chr(39))}', "
                       f"{_micros(f'{expr}.`' + f.name.replace('`', '``') + '`', f.dataType, depth + 1)}"
                       for f in dt.fields)
    return f"if({expr} IS NULL, NULL, named_struct({fields}))"


def positional_schema(schema: Any) -> Any:
    """`schema` with its fields named `_0`, `_1`, ... by position (types and nullability kept): what
    `read_back_exprs` selects from."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f"_{i}", f.dataType, f.nullable) for i, f in enumerate(schema.fields)])


def read_back_exprs(schema: Any) -> list[str]:
    """SELECT expressions over a DataFrame whose columns were renamed `_0`, `_1`, ... (by position, so
    duplicate names are no problem) that give every timestamp as epoch microseconds."""
    return [f"{_micros(f'`_{i}`', f.dataType)} AS `_{i}`" for i, f in enumerate(schema.fields)]


def from_spark_python(value: Any, dt: Any) -> Any:
    """A collected value (after `read_back_exprs`) as the kit's plain value: tuples for arrays and
    structs, (key, value) pairs for maps, bytes for binary, epoch micros for timestamps without zone."""
    from pyspark.sql import types as T

    if value is None:
        return None
    if isinstance(dt, T.ArrayType):
        return tuple(from_spark_python(v, dt.elementType) for v in value)
    if isinstance(dt, T.MapType):
        return tuple((from_spark_python(k, dt.keyType), from_spark_python(v, dt.valueType))
                     for k, v in value.items())
    if isinstance(dt, T.StructType):
        return tuple(from_spark_python(v, f.dataType) for f, v in zip(dt.fields, value))
    if isinstance(dt, T.BinaryType):
        return bytes(value)
    if type(dt).__name__ == "TimestampNTZType" and isinstance(value, _dt.datetime):
        return (value - _EPOCH) // _dt.timedelta(microseconds=1)
    return value
