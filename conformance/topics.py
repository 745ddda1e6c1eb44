"""Output topics: what a job's Kafka sink publishes, kept as Kafka keeps it, and the `topic:` check.

A job's `writeStream.format("kafka")` query publishes each micro-batch's rows as records (Spark's Kafka
sink: a `value` column, optional `key`, `headers`, `partition` and `topic` columns, the `topic` option
overriding the column). Under the kit the records land in `Topics`, one log per topic: appended in the
order they are sent, offsets counted per partition from 0, never taken back. Like Spark's Kafka sink,
the kit's is at-least-once: a batch that runs again after a crash publishes its records again. A
record without a partition goes to partition 0 (the kit's topics have one partition: Kafka's
partitioner, which hashes the key over the topic's partition count, has no count to work with here).

A query of the same job that reads the topic (`readStream.format("kafka").option("subscribe", T)`) gets
each record as it is published, through a listener (`subscribe`), in the same step.

`expect: {topic: T, records: [...]}` compares what topic T holds after the step, as a multiset (or in
order with `ordered: true`): each expected record gives `value` and may give `key`, `headers` and
`partition`. A value or key written as a mapping or list is compared with the record's bytes read as
JSON; text with the bytes read as UTF-8; `{base64: ...}` with the bytes; null with no bytes. `key` is
always compared (absent: null); `headers` and `partition` when any expected record gives them.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .spec import ExpectedRecord, TopicCheck
from .results import CheckFailure

__all__ = ["Record", "Topics", "judge_records", "describe_record"]


@dataclass(frozen=True)
class Record:
    """One record as Kafka holds it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None


@dataclass
class Topics:
    """The topics a job publishes to in one scenario run (it outlives the job's restarts, as Kafka does)."""

    records: dict[str, list[Record]] = field(default_factory=dict)
    listeners: dict[str, list[Callable[[list[Record]], None]]] = field(default_factory=dict)

    def publish(self, topic: str, sent: Sequence[tuple[bytes | None, bytes | None, tuple, int | None]],
                timestamp_ms: int | None) -> None:
        """Append (key, value, headers, partition) records to `topic`, in order; then tell its readers."""
        log = self.records.setdefault(topic, [])
        added = []
        for key, value, headers, partition in sent:
            part = partition or 0
            offset = sum(1 for r in log if r.partition == part)
            record = Record(topic, part, offset, key, value, tuple(headers), timestamp_ms)
            log.append(record)
            added.append(record)
        for listener in self.listeners.get(topic, []):
            listener(added)

    def subscribe(self, topic: str, listener: Callable[[list[Record]], None]) -> None:
        self.listeners.setdefault(topic, []).append(listener)


def _payload_equal(expected: Any, actual: bytes | None) -> bool:
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, dict) and list(expected) == ["base64"]:
        return base64.b64decode(expected["base64"]) == actual
    if isinstance(expected, str):
        return actual == expected.encode("utf-8")
    try:
        return json.loads(actual.decode("utf-8")) == expected  # a mapping, list, number or boolean: as JSON
    except (UnicodeDecodeError, ValueError):
        return False


def _headers_equal(expected: Any, actual: tuple[tuple[str, bytes | None], ...]) -> bool:
    pairs = list(expected.items()) if isinstance(expected, dict) else [tuple(p) for p in expected or ()]
    return len(pairs) == len(actual) and all(k == ak and _payload_equal(v, av)
                                             for (k, v), (ak, av) in zip(pairs, actual))


def _matches(expected: ExpectedRecord, actual: Record, fields: tuple[str, ...]) -> bool:
    return (_payload_equal(expected.key, actual.key) and _payload_equal(expected.value, actual.value)
            and ("headers" not in fields or _headers_equal(expected.headers, actual.headers))
            and ("partition" not in fields or (expected.partition or 0) == actual.partition))


def _shown(payload: bytes | None) -> str:
    if payload is None:
        return "null"
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return "{base64: " + base64.b64encode(payload).decode("ascii") + "}"


def describe_record(record: Record, fields: tuple[str, ...]) -> str:
    parts = [f"key: {_shown(record.key)}", f"value: {_shown(record.value)}"]
    if "headers" in fields:
        parts.append("headers: {" + ", ".join(f"{k}: {_shown(v)}" for k, v in record.headers) + "}")
    if "partition" in fields:
        parts.append(f"partition: {record.partition}")
    return f"[{record.partition}:{record.offset}] " + ", ".join(parts)


def _describe_expected(record: ExpectedRecord, fields: tuple[str, ...]) -> str:
    parts = [f"key: {json.dumps(record.key)}", f"value: {json.dumps(record.value)}"]
    parts += [f"{f}: {json.dumps(getattr(record, f))}" for f in fields[2:]]
    return ", ".join(parts)


def judge_records(check: TopicCheck, actual: Sequence[Record]) -> list[CheckFailure]:
    """Whether the topic holds exactly the expected records (in order with `ordered`)."""
    fields = check.fields
    if check.ordered:
        wrong = [i for i, (e, a) in enumerate(zip(check.records, actual)) if not _matches(e, a, fields)]
        if not wrong and len(check.records) == len(actual):
            return []
        first = wrong[0] if wrong else min(len(check.records), len(actual))
        lines = [f"topic {check.topic!r} holds {len(actual)} records, expected {len(check.records)} in this order; "
                 f"the first difference is record {first + 1}:"]
        if first < len(check.records):
            lines.append(f"  expected: {_describe_expected(check.records[first], fields)}")
        if first < len(actual):
            lines.append(f"  actual:   {describe_record(actual[first], fields)}")
        return [CheckFailure("records", check.where, "\n".join(lines))]
    unmatched = list(actual)
    missing = []
    for expected in check.records:
        hit = next((i for i, a in enumerate(unmatched) if _matches(expected, a, fields)), None)
        if hit is None:
            missing.append(expected)
        else:
            unmatched.pop(hit)
    if not missing and not unmatched:
        return []
    lines = [f"topic {check.topic!r}: {len(missing)} missing, {len(unmatched)} unexpected "
             f"(compared on {', '.join(fields)})"]
    lines += [f"  missing (expected, not published): {_describe_expected(e, fields)}" for e in missing]
    lines += [f"  unexpected (published, not expected): {describe_record(a, fields)}" for a in unmatched]
    return [CheckFailure("records", check.where, "\n".join(lines))]
