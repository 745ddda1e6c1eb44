"""Column types: Spark's type system as scenarios and contracts write it, in one table.

A type is written as Spark's DDL writes it (`bigint`, `decimal(12,2)`, `array<string>`,
`map<string, int>`, `struct<page: string, n: long>`, nested to any depth; case does not matter).
Each `ColumnType` knows its Spark DDL, how YAML writes its values, its canonical Python value, how to
compare, print and put that value in JSON. The loader, the JSON schema's checks, the harness (through
`ddl`), the judge, the reports and the generator all read this table.

Canonical values (what rows hold everywhere in the kit; hashable, so rows compare as multisets):

| type | canonical value | YAML |
| --- | --- | --- |
| byte, short, int, long | int (range checked) | a whole number |
| float, double | float | a number, `.nan`, `.inf`, `-.inf` |
| decimal(p,s) | decimal.Decimal, exact | a number or a quoted number (never read through a float) |
| string | str | text (quote numbers: `"42"`) |
| boolean | bool | true / false |
| binary | bytes | text (UTF-8) or `{base64: "..."}` |
| date | datetime.date | `2024-01-01` |
| timestamp, timestamp_ntz | int, epoch microseconds | `HH:MM:SS[.f]` on the scenario's date, or ISO-8601 |
| array<T> | tuple | a list |
| map<K,V> | MapValue (entries sorted, order-free equality) | a mapping, or a list of [key, value] pairs |
| struct<...> | tuple of the fields, in order | a mapping by field name, or a list by position |

`null` is allowed anywhere a value is.
"""
from __future__ import annotations

import base64
import binascii
import difflib
import datetime as _dt
import decimal
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

from eventtime.harness.errors import EventtimeError

__all__ = ["ColumnType", "TypeSyntaxError", "ValueProblem", "MapValue", "parse_type", "INTEGRAL_RANGES",
           "format_value", "values_equal"]

INTEGRAL_RANGES = {"byte": 8, "short": 16, "int": 32, "long": 64}  # bits
_ALIASES = {
    "byte": "byte", "tinyint": "byte", "short": "short", "smallint": "short", "int": "int", "integer": "int",
    "long": "long", "bigint": "long", "float": "float", "real": "float", "double": "double",
    "string": "string", "boolean": "boolean", "binary": "binary", "date": "date",
    "timestamp": "timestamp", "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp_ntz",
}
_SPARK_NAMES = {"byte": "tinyint", "short": "smallint", "long": "bigint"}
_DECIMAL_NAMES = ("decimal", "dec", "numeric")
_MAX_PRECISION = 38
REL_TOL = 1e-9


class TypeSyntaxError(EventtimeError, ValueError):
    """A type that is not Spark DDL the kit reads; the message says what and where in the text."""


class ValueProblem(EventtimeError, ValueError):
    """A value that does not fit its type. `path` is where inside the value (list index, field name)."""

    def __init__(self, message: str, path: tuple = ()):
        super().__init__(message)
        self.message = message
        self.path = path


class MapValue(tuple):
    """A map's entries as (key, value) pairs, sorted so that two maps with the same entries are equal."""

    @classmethod
    def of(cls, pairs: Sequence[tuple[Any, Any]]) -> "MapValue":
        return cls(sorted(pairs, key=lambda kv: _sort_key(kv[0])))

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self) + "}"


def _sort_key(value: Any) -> tuple:
    return (value is None, type(value).__name__, repr(value))


def _read_date(raw: Any, parse_date: Callable[[Any], _dt.date], path: tuple) -> _dt.date:
    """A date as YAML read it (a date object) or as a literal `parse_date` reads."""
    if isinstance(raw, _dt.date) and not isinstance(raw, _dt.datetime):
        return raw
    try:
        return parse_date(raw)
    except ValueError as exc:
        message = str(exc)
        raise ValueProblem(message if repr(raw) in message else f"{raw!r} is not a date: {message}",
                           path) from None


@dataclass(frozen=True)
class ColumnType:
    """One Spark type. `kind` is a scalar name (`long`, `decimal`, `timestamp`, ...) or `array`, `map`,
    `struct`; `args` hold decimal (precision, scale), the element, key/value or field types."""

    kind: str
    precision: int = 0
    scale: int = 0
    element: "ColumnType | None" = None
    key: "ColumnType | None" = None
    value: "ColumnType | None" = None
    fields: tuple[tuple[str, "ColumnType"], ...] = ()

    # -- names ------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """How the kit writes the type (and compares types): `long`, `decimal(12,2)`, `array<string>`."""
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind == "array":
            assert self.element is not None
            return f"array<{self.element.name}>"
        if self.kind == "map":
            assert self.key is not None and self.value is not None
            return f"map<{self.key.name},{self.value.name}>"
        if self.kind == "struct":
            return "struct<" + ",".join(f"{_quote(n)}:{t.name}" for n, t in self.fields) + ">"
        return self.kind

    @property
    def ddl(self) -> str:
        """The type in Spark's DDL (what `spark.createDataFrame(..., schema)` and `CAST` accept)."""
        if self.kind in _SPARK_NAMES:
            return _SPARK_NAMES[self.kind]
        if self.kind == "array":
            assert self.element is not None
            return f"array<{self.element.ddl}>"
        if self.kind == "map":
            assert self.key is not None and self.value is not None
            return f"map<{self.key.ddl},{self.value.ddl}>"
        if self.kind == "struct":
            return "struct<" + ",".join(f"`{n.replace('`', '``')}`:{t.ddl}" for n, t in self.fields) + ">"
        return self.name

    def __str__(self) -> str:
        return self.name

    def contains(self, predicate: Callable[["ColumnType"], bool]) -> bool:
        if predicate(self):
            return True
        return any(t.contains(predicate) for t in self.children())

    def children(self) -> list["ColumnType"]:
        return [t for t in (self.element, self.key, self.value) if t is not None] + [t for _, t in self.fields]

    # -- values -----------------------------------------------------------------------------------
    def read(self, raw: Any, *, parse_time: Callable[[Any], int], parse_date: Callable[[Any], _dt.date],
             float_text: Callable[[tuple], str | None] = lambda path: None, path: tuple = ()) -> Any:
        """The canonical value of `raw` as YAML (or Python) wrote it; raises ValueProblem with the path
        inside the value where it does not fit. `parse_time` reads a timestamp literal (scenario date and
        zone applied), `float_text(path)` gives the text of a number YAML read as a float."""
        if raw is None:
            return None
        k = self.kind
        if k in INTEGRAL_RANGES:
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise ValueProblem(f"expected a whole number, got {_describe(raw)}", path)
            bits = INTEGRAL_RANGES[k]
            if not -(2 ** (bits - 1)) <= raw < 2 ** (bits - 1):
                raise ValueProblem(f"{raw} is out of range for {k} "
                                   f"({-(2 ** (bits - 1))} to {2 ** (bits - 1) - 1})", path)
            return raw
        if k in ("float", "double"):
            if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                raise ValueProblem(f"expected a number, got {_describe(raw)}", path)
            return float(raw)
        if k == "decimal":
            return self._read_decimal(raw, float_text(path), path)
        if k == "string":
            if not isinstance(raw, str):
                raise ValueProblem(f"expected text, got {_describe(raw)} (quote it)", path)
            return raw
        if k == "boolean":
            if not isinstance(raw, bool):
                raise ValueProblem(f"expected true or false, got {_describe(raw)}", path)
            return raw
        if k == "binary":
            return self._read_binary(raw, path)
        if k == "date":
            return _read_date(raw, parse_date, path)
        if k in ("timestamp", "timestamp_ntz"):
            try:
                return parse_time(raw)
            except ValueError as exc:
                raise ValueProblem(str(exc), path) from None
        reader: dict[str, Any] = dict(parse_time=parse_time, parse_date=parse_date, float_text=float_text)
        if k == "array":
            assert self.element is not None
            if not isinstance(raw, (list, tuple)):
                raise ValueProblem(f"expected a list for {self.name}, got {_describe(raw)}", path)
            return tuple(self.element.read(v, path=path + (i,), **reader) for i, v in enumerate(raw))
        if k == "map":
            return self._read_map(raw, path, reader)
        if k == "struct":
            return self._read_struct(raw, path, reader)
        raise ValueProblem(f"no reader for type {self.name}", path)  # pragma: no cover - table complete

    def _read_map(self, raw: Any, path: tuple, reader: dict[str, Any]) -> MapValue:
        """A map from a YAML mapping or a list of [key, value] pairs: no null key, no key twice."""
        assert self.key is not None and self.value is not None
        if isinstance(raw, dict):
            items = [(self.key.read(key, path=path + (key,), **reader),
                      self.value.read(v, path=path + (key,), **reader)) for key, v in raw.items()]
        elif isinstance(raw, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in raw):
            items = [(self.key.read(p[0], path=path + (i, 0), **reader),
                      self.value.read(p[1], path=path + (i, 1), **reader)) for i, p in enumerate(raw)]
        else:
            raise ValueProblem(f"expected a mapping (or a list of [key, value] pairs) for {self.name}, "
                               f"got {_describe(raw)}", path)
        if any(key is None for key, _ in items):
            raise ValueProblem("a map key cannot be null", path)
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueProblem("a map has the same key twice", path)
        return MapValue.of(items)

    def _read_struct(self, raw: Any, path: tuple, reader: dict[str, Any]) -> tuple:
        """A struct from a mapping by field name (every field given) or a list by position."""
        names = [n for n, _ in self.fields]
        if isinstance(raw, dict):
            extra = [key for key in raw if key not in names]
            if extra:
                raise ValueProblem(f"{self.name} has no field {extra[0]!r} (fields: {', '.join(names)})",
                                   path + (extra[0],))
            missing = [n for n in names if n not in raw]
            if missing:
                raise ValueProblem(f"field{'s' if len(missing) > 1 else ''} {', '.join(missing)} of "
                                   f"{self.name} not given (write null for a null field)", path)
            return tuple(t.read(raw[n], path=path + (n,), **reader) for n, t in self.fields)
        if isinstance(raw, (list, tuple)):
            if len(raw) != len(self.fields):
                raise ValueProblem(f"{self.name} has {len(self.fields)} fields, the list gives {len(raw)}",
                                   path)
            return tuple(t.read(v, path=path + (i,), **reader) for i, ((_, t), v) in
                         enumerate(zip(self.fields, raw)))
        raise ValueProblem(f"expected a mapping by field name (or a list by position) for {self.name}, "
                           f"got {_describe(raw)}", path)

    def _read_decimal(self, raw: Any, text: str | None, path: tuple) -> decimal.Decimal:
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str, decimal.Decimal)):
            raise ValueProblem(f"expected a decimal number, got {_describe(raw)}", path)
        written = text if isinstance(raw, float) and text is not None else raw
        if isinstance(written, float):  # a float from Python code: its shortest repr, never its binary value
            written = repr(written)
        try:
            value = decimal.Decimal(str(written).strip())
        except decimal.InvalidOperation:
            raise ValueProblem(f"{raw!r} is not a decimal number", path) from None
        if not value.is_finite():
            raise ValueProblem(f"{raw!r} is not a finite decimal number", path)
        exponent = value.as_tuple().exponent
        assert isinstance(exponent, int)
        if -exponent > self.scale:
            raise ValueProblem(f"{written} has more than {self.scale} digit{'s' if self.scale != 1 else ''} "
                               f"after the point for {self.name}", path)
        # in a context that holds every digit: the default one (28 digits) is narrower than decimal(38,s)
        exact = decimal.Context(prec=len(value.as_tuple().digits) + self.scale + 1)
        quantized = value.quantize(decimal.Decimal(1).scaleb(-self.scale), context=exact)
        digits = len(quantized.as_tuple().digits)
        if digits > self.precision and quantized != 0:
            raise ValueProblem(f"{written} does not fit {self.name} (at most {self.precision - self.scale} "
                               "digits before the point)", path)
        return quantized

    def _read_binary(self, raw: Any, path: tuple) -> bytes:
        if isinstance(raw, (bytes, bytearray)):
            return bytes(raw)
        if isinstance(raw, str):
            return raw.encode("utf-8")
        if isinstance(raw, dict) and list(raw) == ["base64"] and isinstance(raw["base64"], str):
            try:
                return base64.b64decode(raw["base64"], validate=True)
            except (binascii.Error, ValueError):
                raise ValueProblem("not valid base64", path + ("base64",)) from None
        raise ValueProblem(f"expected text or {{base64: ...}} for binary, got {_describe(raw)}", path)

    def canonical(self, value: Any) -> Any:
        """The canonical form of a value Spark gave back (lists, dicts, Rows, bytearrays, datetimes as
        the harness returns them); timestamps are already epoch microseconds."""
        if value is None:
            return None
        k = self.kind
        if k == "array":
            assert self.element is not None
            return tuple(self.element.canonical(v) for v in value)
        if k == "map":
            assert self.key is not None and self.value is not None
            pairs = value.items() if isinstance(value, dict) else value
            return MapValue.of([(self.key.canonical(a), self.value.canonical(b)) for a, b in pairs])
        if k == "struct":
            return tuple(t.canonical(v) for (_, t), v in zip(self.fields, value))
        if k == "binary":
            return bytes(value)
        if k in ("float", "double"):
            return float(value)
        if k == "decimal" and not isinstance(value, decimal.Decimal):
            return decimal.Decimal(str(value))
        return value

    def to_json(self, value: Any) -> Any:
        """The value in a results file: exact and readable (decimals and dates as text, binary as base64)."""
        if value is None:
            return None
        k = self.kind
        if k == "decimal":
            return str(value)
        if k == "date":
            return value.isoformat()
        if k == "binary":
            return {"base64": base64.b64encode(value).decode("ascii")}
        if k in ("float", "double") and not math.isfinite(value):
            return repr(value)  # 'nan', 'inf', '-inf': JSON has no such numbers
        if k == "array":
            assert self.element is not None
            return [self.element.to_json(v) for v in value]
        if k == "map":
            assert self.key is not None and self.value is not None
            return [[self.key.to_json(a), self.value.to_json(b)] for a, b in value]
        if k == "struct":
            return {n: t.to_json(v) for (n, t), v in zip(self.fields, value)}
        return value

    def format(self, value: Any, format_time: Callable[[int], str], *, quote_text: bool = True) -> str:
        """How a value reads in messages and reports (`format_time` prints epoch microseconds; text is
        quoted in the terminal, where a number and a numeric string must differ, and plain in reports)."""
        if value is None:
            return "null"
        k = self.kind
        if k in ("timestamp", "timestamp_ntz") and isinstance(value, int) and not isinstance(value, bool):
            return format_time(value)
        if k == "string" and isinstance(value, str):
            return repr(value) if quote_text else value
        if k == "date" and isinstance(value, _dt.date):
            return value.isoformat()
        if k == "decimal":
            return str(value)
        if k == "binary" and isinstance(value, (bytes, bytearray)):
            return repr(bytes(value))
        if k == "array" and isinstance(value, (list, tuple)):
            assert self.element is not None
            return "[" + ", ".join(self.element.format(v, format_time, quote_text=quote_text) for v in value) + "]"
        if k == "map" and isinstance(value, (list, tuple)):
            assert self.key is not None and self.value is not None
            return "{" + ", ".join(f"{self.key.format(a, format_time, quote_text=quote_text)}: "
                                   f"{self.value.format(b, format_time, quote_text=quote_text)}"
                                   for a, b in value) + "}"
        if k == "struct" and isinstance(value, (list, tuple)):
            return "{" + ", ".join(f"{n}: {t.format(v, format_time, quote_text=quote_text)}"
                                   for (n, t), v in zip(self.fields, value)) + "}"
        return str(value)

    def equal(self, a: Any, b: Any, rel_tol: float = REL_TOL) -> bool:
        """Whether two canonical values are the same: exact, except float/double within `rel_tol`
        (NaN equals NaN) and a value of another Python type is never equal (a double 1.0 is not a
        long 1)."""
        if a is None or b is None:
            return a is None and b is None
        k = self.kind
        if k in ("float", "double"):
            if not (_number(a) and _number(b)) or not (isinstance(a, float) and isinstance(b, float)):
                return False
            if math.isnan(a) or math.isnan(b):
                return math.isnan(a) and math.isnan(b)
            return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-12)
        if k in INTEGRAL_RANGES or k in ("timestamp", "timestamp_ntz"):
            return type(a) is int and type(b) is int and a == b
        if k == "decimal":
            return isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal) and a == b
        if k == "array":
            assert self.element is not None
            return len(a) == len(b) and all(self.element.equal(x, y, rel_tol) for x, y in zip(a, b))
        if k == "map":
            assert self.key is not None and self.value is not None
            return len(a) == len(b) and all(self.key.equal(ka, kb, rel_tol) and self.value.equal(va, vb, rel_tol)
                                            for (ka, va), (kb, vb) in zip(a, b))
        if k == "struct":
            return len(a) == len(b) and all(t.equal(x, y, rel_tol) for (_, t), x, y in zip(self.fields, a, b))
        return type(a) is type(b) and a == b

    @property
    def approximate(self) -> bool:
        """Whether values of this type compare within a tolerance (so rows cannot be hashed to match)."""
        return self.contains(lambda t: t.kind in ("float", "double"))


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _describe(raw: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "text", list: "a list",
            dict: "a mapping", tuple: "a list"}.get(type(raw), type(raw).__name__)
    return f"{kind} {raw!r}"


def _quote(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"`{name.replace('`', '``')}`"


# -- the DDL reader ------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<quoted>`(?:[^`]|``)*`)|(?P<number>\d+)"
                    r"|(?P<punct>[<>(),:]))")


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise TypeSyntaxError(f"unexpected {text[pos:].strip()[:1]!r} at character {pos + 1} of {text!r}")
            kind = m.lastgroup or ""
            value = m.group(kind)
            if kind == "quoted":
                value = value[1:-1].replace("``", "`")
            self.tokens.append((kind, value, m.start(kind) + 1))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            raise TypeSyntaxError(f"{self.text!r} ends early" + (f": expected {expected!r}" if expected else ""))
        if expected is not None and tok[1] != expected:
            raise TypeSyntaxError(f"expected {expected!r} at character {tok[2]} of {self.text!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def type(self) -> ColumnType:
        kind, word, at = self.take()
        if kind != "word":
            raise TypeSyntaxError(f"expected a type name at character {at} of {self.text!r}, found {word!r}")
        name = word.lower()
        if name in _ALIASES:
            return ColumnType(_ALIASES[name])
        if name in _DECIMAL_NAMES:
            return self._decimal()
        if name in ("varchar", "char"):
            self.take("(")
            self._int()
            self.take(")")
            return ColumnType("string")
        if name == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return ColumnType("array", element=element)
        if name == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            if key.contains(lambda t: t.kind == "map"):
                raise TypeSyntaxError(f"a map key cannot be a map in {self.text!r}")
            return ColumnType("map", key=key, value=value)
        if name == "struct":
            return self._struct()
        known = sorted(set(_ALIASES) | {"decimal(p,s)", "array<T>", "map<K,V>", "struct<name: T, ...>"})
        close = difflib.get_close_matches(name, sorted(_ALIASES) + list(_DECIMAL_NAMES) + ["array", "map", "struct"],
                                          n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TypeSyntaxError(f"unknown type {word!r}{hint} (types: {', '.join(known)})")

    def _decimal(self) -> ColumnType:
        """`decimal`, `decimal(p)` or `decimal(p,s)` (the name already read)."""
        precision, scale = 10, 0
        if self.peek() and self.peek()[1] == "(":  # type: ignore[index]
            self.take("(")
            precision = self._int()
            if self.peek() and self.peek()[1] == ",":  # type: ignore[index]
                self.take(",")
                scale = self._int()
            self.take(")")
        if not 1 <= precision <= _MAX_PRECISION or not 0 <= scale <= precision:
            raise TypeSyntaxError(f"decimal({precision},{scale}) in {self.text!r}: precision is 1 to "
                                  f"{_MAX_PRECISION} and scale 0 to the precision")
        return ColumnType("decimal", precision=precision, scale=scale)

    def _struct(self) -> ColumnType:
        """`struct<name: T, ...>` (the name already read): at least one field, no field twice."""
        self.take("<")
        fields: list[tuple[str, ColumnType]] = []
        if self.peek() and self.peek()[1] == ">":  # type: ignore[index]
            raise TypeSyntaxError(f"a struct needs at least one field in {self.text!r}")
        while True:
            fkind, fname, fat = self.take()
            if fkind not in ("word", "quoted"):
                raise TypeSyntaxError(f"expected a field name at character {fat} of {self.text!r}")
            if self.peek() and self.peek()[1] == ":":  # type: ignore[index]
                self.take(":")
            if any(n == fname for n, _ in fields):
                raise TypeSyntaxError(f"struct field {fname!r} appears twice in {self.text!r}")
            fields.append((fname, self.type()))
            if self.peek() and self.peek()[1] == ",":  # type: ignore[index]
                self.take(",")
                continue
            self.take(">")
            return ColumnType("struct", fields=tuple(fields))

    def _int(self) -> int:
        kind, value, at = self.take()
        if kind != "number":
            raise TypeSyntaxError(f"expected a number at character {at} of {self.text!r}, found {value!r}")
        return int(value)


@lru_cache(maxsize=4096)
def parse_type(text: str) -> ColumnType:
    """The ColumnType of a Spark DDL type string; raises TypeSyntaxError saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise TypeSyntaxError(f"a column type is a Spark DDL type such as 'string' or 'decimal(12,2)', not {text!r}")
    reader = _Reader(text)
    result = reader.type()
    rest = reader.peek()
    if rest is not None:
        raise TypeSyntaxError(f"unexpected {rest[1]!r} at character {rest[2]} of {text!r}")
    return result


def format_value(value: Any, type_name: str | None, format_time: Callable[[int], str], *,
                 quote_text: bool = True) -> str:
    """One value as the judge, the terminal and the reports print it; `type_name` None: by Python type."""
    if type_name:
        try:
            return parse_type(type_name).format(value, format_time, quote_text=quote_text)
        except TypeSyntaxError:
            pass
    if value is None:
        return "null"
    return repr(value) if isinstance(value, str) and quote_text else str(value)


def values_equal(a: Any, b: Any, type_name: str | None, rel_tol: float = REL_TOL) -> bool:
    if type_name:
        return parse_type(type_name).equal(a, b, rel_tol)
    return a == b
