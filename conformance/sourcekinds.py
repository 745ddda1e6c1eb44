"""Source kinds: the shape of a source's DataFrame and how a scenario row becomes a row of it.

A source is one of three kinds:

- `rows` (the default): the typed columns the contract or scenario declares; a row gives each column.
- `kafka`: exactly the columns Spark's Kafka source reads (`KAFKA_COLUMNS`, plus `headers` when the
  source says `headers: true`, as Spark adds it only with `includeHeaders=true`). A row gives the
  record: `value` (a mapping or list, written as compact JSON; text; `{base64: ...}` bytes; null),
  optional `key` (the same forms), `partition` (default 0), `timestamp` (default: the scenario's
  processing-time clock at the `add`, as a producer stamps CreateTime) and `headers`. The topic is
  the source's; offsets count per partition in arrival order over the whole scenario.
- `text`: one `value string` column, as Spark's text source reads a file of lines; a row is a
  string, or a mapping or list written as one JSON line.

The payload is not parsed here: a value that is not the job's JSON is an ordinary row.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from eventtime.harness.errors import EventtimeError

from .coltypes import _describe  # how a value is named in messages, as column values are
from .contracts import Column

__all__ = ["SOURCE_KINDS", "KAFKA_COLUMNS", "KAFKA_HEADERS", "TEXT_COLUMNS", "RowProblem", "PayloadReader",
           "source_columns", "KAFKA_ROW_KEYS"]

SOURCE_KINDS = ("rows", "kafka", "text")

# Spark's Kafka source schema (Structured Streaming + Kafka Integration Guide, "Reading Data from Kafka").
KAFKA_COLUMNS = (Column("key", "binary"), Column("value", "binary"), Column("topic", "string"),
                 Column("partition", "int"), Column("offset", "long"), Column("timestamp", "timestamp"),
                 Column("timestampType", "int"))
KAFKA_HEADERS = Column("headers", "array<struct<key:string,value:binary>>")
TEXT_COLUMNS = (Column("value", "string"),)
KAFKA_ROW_KEYS = ("value", "key", "partition", "timestamp", "headers")
CREATE_TIME = 0  # Kafka's TimestampType.CREATE_TIME: the producer's stamp
MAX_PARTITION = 2 ** 31 - 1


def source_columns(kind: str, *, headers: bool = False) -> tuple[Column, ...]:
    """The columns of a `kafka` or `text` source's DataFrame."""
    if kind == "kafka":
        return KAFKA_COLUMNS + ((KAFKA_HEADERS,) if headers else ())
    if kind == "text":
        return TEXT_COLUMNS
    raise ValueError(f"a {kind!r} source declares its own columns")


class RowProblem(EventtimeError, ValueError):
    """A row that is not a record of its source; `path` is where (`key`: the key at the end of it)."""

    def __init__(self, message: str, path: tuple = (), *, key: bool = False):
        super().__init__(message)
        self.message = message
        self.path = path
        self.key = key


def _json_text(raw: Any, path: tuple) -> str:
    try:
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise RowProblem("JSON has no NaN or infinity: quote the number or leave it out", path) from None


def _payload(raw: Any, path: tuple, what: str) -> bytes | None:
    """A key, value or header value: null, text (UTF-8), `{base64: ...}`, or a mapping or list as JSON."""
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw.encode("utf-8")
    if isinstance(raw, dict) and list(raw) == ["base64"]:
        if not isinstance(raw["base64"], str):
            raise RowProblem(f"{what}: `base64` takes text", path + ("base64",))
        try:
            return base64.b64decode(raw["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise RowProblem(f"{what}: not valid base64", path + ("base64",)) from None
    if isinstance(raw, (dict, list)):
        return _json_text(raw, path).encode("utf-8")
    if what == "header value":
        raise RowProblem(f"a header value is text, {{base64: ...}} or null, not {_describe(raw)} (quote it)", path)
    return _json_text(raw, path).encode("utf-8")  # a bare number or boolean is valid JSON too


@dataclass
class PayloadReader:
    """Reads the rows of a `kafka` or `text` source, in arrival order, for one scenario.

    `read_time` reads a timestamp literal (the scenario's date and zone); `offsets` holds each
    (source, partition)'s next offset, so that offsets count on across the scenario's steps."""

    read_time: Callable[[Any], int]
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)

    def row(self, kind: str, source: str, topic: str, headers: bool, raw: Any, now_us: int, path: tuple) -> tuple:
        if kind == "text":
            return (self._text(raw, path),)
        return self._kafka(source, topic, headers, raw, now_us, path)

    def _text(self, raw: Any, path: tuple) -> str | None:
        if raw is None or isinstance(raw, str):
            return raw
        if isinstance(raw, (dict, list)):
            return _json_text(raw, path)
        raise RowProblem(f"a text row is a line of text, or a mapping or list written as one JSON line, "
                         f"not {_describe(raw)} (quote it)", path)

    def _kafka(self, source: str, topic: str, headers: bool, raw: Any, now_us: int, path: tuple) -> tuple:
        if not isinstance(raw, dict):
            raise RowProblem(f"a kafka record is a mapping with `value` and optional "
                             f"{', '.join(k for k in KAFKA_ROW_KEYS if k != 'value')}, not {_describe(raw)}",
                             path)
        allowed = KAFKA_ROW_KEYS if headers else tuple(k for k in KAFKA_ROW_KEYS if k != "headers")
        for key in raw:
            if key not in allowed:
                hint = (" (the source reads no headers: say `headers: true` on the source)" if key == "headers"
                        else " (the topic is the source's `topic`; offsets are counted)"
                        if key in ("topic", "offset") else "")
                raise RowProblem(f"a kafka record has no key {key!r}{hint} (keys: {', '.join(allowed)})",
                                 path + (key,), key=True)
        if "value" not in raw:
            raise RowProblem("a kafka record needs `value` (write `value: null` for a tombstone)", path)
        value = _payload(raw["value"], path + ("value",), "value")
        key = _payload(raw.get("key"), path + ("key",), "key")
        partition = raw.get("partition", 0)
        if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition <= MAX_PARTITION:
            raise RowProblem(f"`partition` is a whole number from 0, not {partition!r}", path + ("partition",))
        stamp = now_us
        if "timestamp" in raw:
            try:
                stamp = self.read_time(raw["timestamp"])
            except ValueError as exc:
                raise RowProblem(f"`timestamp`: {exc}", path + ("timestamp",)) from None
        record = (key, value, topic, partition, self._next_offset(source, partition), stamp, CREATE_TIME)
        return record + (self._headers(raw.get("headers"), path + ("headers",)),) if headers else record

    def _headers(self, raw: Any, path: tuple) -> tuple:
        """Headers as a mapping {key: value} or a list of [key, value] pairs (a key may repeat)."""
        if raw is None:
            return ()
        if isinstance(raw, dict):
            pairs: list[tuple[tuple, Any, Any]] = [((k,), k, v) for k, v in raw.items()]
        elif isinstance(raw, list) and all(isinstance(p, list) and len(p) == 2 for p in raw):
            pairs = [((i, 1), p[0], p[1]) for i, p in enumerate(raw)]
        else:
            raise RowProblem("`headers` is a mapping {key: value} or a list of [key, value] pairs", path)
        out = []
        for inner, key, value in pairs:
            if not isinstance(key, str):
                raise RowProblem(f"a header key is text, not {key!r}", path + inner[:1])
            out.append((key, _payload(value, path + inner, "header value")))
        return tuple(out)

    def _next_offset(self, source: str, partition: int) -> int:
        offset = self.offsets.get((source, partition), 0)
        self.offsets[(source, partition)] = offset + 1
        return offset
