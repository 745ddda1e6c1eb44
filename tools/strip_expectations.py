"""Strip the expectation values from scenario files, keeping the checks' names: what `--snapshot create` fills.

    python tools/strip_expectations.py FILE_OR_DIR... [--out DIR] [--variants]
    python tools/strip_expectations.py --compare ORIGINAL_DIR RESTORED_DIR [--contracts DIR]


Each check of each `expect` step (rows, output, last_batch, watermark, dropped, state_rows, batches,
event_time, schema, records, updated, batch_watermark, operators, state) keeps its key and loses its
value (`watermark:`); a `batches` or `operators` list keeps its entries and their field names
(`- {data: , rows: }`), an `event_time` mapping its statistics' names, a `state` check its operator,
side and variable and the fields its rows name (`rows: [{key.id: , key.ts: }]`);
`no_output: true` becomes `rows:`. Everything else stays as written: inputs, comments, `failure`
checks (a snapshot never writes those), and `on_spark` variants unless `--variants` is given (a run on
one Spark line fills only the variant of that line). Files are changed in place, or written under
`--out` with their paths relative to the folder given. Exit status 0, or 2 for a path that does not
exist. `--compare` loads each scenario of the first folder and its namesake in the second and prints
every expectation value that differs (exit status 1 if any does): a restored suite must state the
original values, in whatever form it writes them. The snapshot tests use it (tests/spark/test_snapshot.py): a stripped scenario restored by
`eventtime run --snapshot create` must state the original values.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

import yaml

from eventtime import spec as m
from eventtime.scenariotext import node_end
from eventtime.snapshotedit import (BATCH_KEYS, CHECK_KEYS, EVENT_TIME_KEYS, OPERATOR_KEYS, Edit, apply_edits, compose,
                                    expect_bodies)

__all__ = ["strip_text", "differences", "main"]


def _value_span(text: str, key: yaml.Node, value: yaml.Node, flow: bool) -> tuple[int, int]:
    """The characters of a value: in a block mapping from just after its key's colon (the space before
    it, and a block collection's lines below), in a flow mapping the value itself."""
    if flow and not _is_block(value):
        return value.start_mark.index, node_end(value)
    return text.index(":", key.end_mark.index) + 1, node_end(value)


def _is_block(node: yaml.Node) -> bool:
    return isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) and not node.flow_style and bool(node.value)


def _strip_body(text: str, body: yaml.Node, variants: bool) -> list[Edit]:
    if not isinstance(body, yaml.MappingNode):
        return []
    edits = []
    for k, v in body.value:
        if k.value == "on_spark" and variants and isinstance(v, yaml.MappingNode):
            for _, variant in v.value:
                edits += _strip_body(text, variant, variants)
        elif k.value == "no_output":
            edits.append(Edit(k.start_mark.index, node_end(v), "rows: " if body.flow_style else "rows:"))
        elif k.value in ("batches", "operators") and isinstance(v, yaml.SequenceNode):
            fields = BATCH_KEYS if k.value == "batches" else OPERATOR_KEYS
            for item in v.value:
                if isinstance(item, yaml.MappingNode):
                    edits += [Edit(*_value_span(text, fk, fv, bool(item.flow_style)), "")
                              for fk, fv in item.value if fk.value in fields]
        elif k.value == "state" and isinstance(v, yaml.MappingNode):
            edits += _strip_state(text, v)
        elif k.value == "event_time" and isinstance(v, yaml.MappingNode):
            edits += [Edit(*_value_span(text, fk, fv, bool(v.flow_style)), "")
                      for fk, fv in v.value if fk.value in EVENT_TIME_KEYS]
        elif k.value in CHECK_KEYS:
            edits.append(Edit(*_value_span(text, k, v, bool(body.flow_style)), ""))
    return edits


def _strip_state(text: str, state: yaml.MappingNode) -> list[Edit]:
    """A `state` check's rows become one row naming their fields without values (`[{key.id: , key.ts: }]`,
    what `create` fills with every row on those fields); rows naming no field (`[]`), a `rows:` hole."""
    edits = []
    for k, v in state.value:
        if k.value != "rows" or not isinstance(v, yaml.SequenceNode):
            continue
        fields = list(dict.fromkeys(str(fk.value) for item in v.value if isinstance(item, yaml.MappingNode)
                                    for fk, _ in item.value))
        template = " [{" + ", ".join(f"{f}: " for f in fields) + "}]" if fields else ""
        start, end = _value_span(text, k, v, bool(state.flow_style))
        edits.append(Edit(start, end, template.lstrip(" ") if state.flow_style and fields else template))
    return edits


def strip_text(text: str, *, variants: bool = False) -> str:
    """The scenario text with its expectation values removed (see the module's docstring)."""
    root = compose(text)
    edits: list[Edit] = []
    for _, body in expect_bodies(root).values() if root is not None else ():
        edits += _strip_body(text, body, variants)
    return apply_edits(text, edits)


def _rows(check: m.RowsCheck) -> list[str]:
    return sorted(repr(r) for r in check.rows)


def _records(check: m.TopicCheck) -> list[str]:
    def headers(h: Any) -> Any:
        return list(h.items()) if isinstance(h, dict) else [tuple(p) for p in h] if h is not None else None
    out = [repr((r.value, r.key, headers(r.headers), r.partition or None)) for r in check.records]
    return out if check.ordered else sorted(out)


def _checks(step: m.ExpectStep) -> dict[str, Any]:
    """An expect's expectation values, in a form that does not depend on how they are written."""
    out: dict[str, Any] = {f"rows.{c.scope}": _rows(c) for c in step.rows}
    out.update(watermark=step.watermark_us, dropped=step.dropped, state_rows=step.state_rows,
               batch_count=step.batch_count, failure=None if step.failure is None else dataclasses.replace(
                   step.failure, where=None))
    if step.batches is not None:
        out["batches"] = [(b.data, None if b.rows is None else sorted(map(repr, b.rows)), b.watermark_before_us,
                           b.watermark_after_us, b.dropped, b.state_rows) for b in step.batches]
    if step.event_time is not None:
        out["event_time"] = "none" if step.event_time.none else (
            step.event_time.min_us, step.event_time.max_us, step.event_time.avg_us, step.event_time.watermark_us)
    if step.batches is not None:
        out["batches.updated"] = [b.updated for b in step.batches]
    out.update(updated=step.updated, batch_watermark=step.batch_watermark_us)
    if step.operators is not None:
        out["operators"] = [(o.name, o.state_rows, o.updated, o.dropped) for o in step.operators]
    if step.state is not None:  # values as written (their types are Spark's, known on Spark only)
        out["state"] = (step.state.operator, step.state.side, step.state.variable, step.state.columns,
                        sorted(map(repr, step.state.rows)))
    if step.schema is not None:
        out["schema"] = [(n, t) for n, t, _ in step.schema.columns]  # nullability: not written (see snapshotedit)
    if step.topic is not None:
        out["records"] = _records(step.topic)
    return out


def differences(original: m.Scenario, restored: m.Scenario) -> list[str]:
    """Each expectation value of `original` that `restored` does not state the same (`file:line: what`)."""
    out = []
    for a, b in zip(original.steps, restored.steps):
        if not isinstance(a, m.ExpectStep):
            continue
        if not isinstance(b, m.ExpectStep):
            out.append(f"{original.path}:{a.where.line}: the restored step is not an expect")
            continue
        for (spec, va), (_, vb) in zip((("", a), *a.variants), (("", b), *b.variants)):
            want, got = _checks(va), _checks(vb)
            if want.get("batch_count") is not None and "batches" in got:  # a count restored as the batches themselves
                got["batch_count"] = len(got["batches"])
            for key in want:
                if want[key] != got.get(key):
                    out.append(f"{original.path}:{a.where.line}: {spec + ' ' if spec else ''}{key}: "
                               f"{want[key]!r} != {got.get(key)!r}")
    if len(original.steps) != len(restored.steps):
        out.append(f"{original.path}: {len(original.steps)} steps, restored {len(restored.steps)}")
    return out


def compare(original_dir: Path, restored_dir: Path, contract_dirs: list[str] | None = None) -> int:
    from eventtime.loader import ScenarioInvalid, load_scenario
    from eventtime.registry import ContractLookup

    lookup = ContractLookup(contract_dirs or [])

    files = sorted(original_dir.rglob("*.scenario.y*ml"))
    bad = 0
    for file in files:
        twin = restored_dir / file.relative_to(original_dir)
        try:
            found = differences(load_scenario(file, contracts=lookup), load_scenario(twin, contracts=lookup))
        except ScenarioInvalid as exc:
            found = [str(exc)]
        for line in found:
            print(line)
        bad += bool(found)
    print(f"{len(files) - bad} of {len(files)} restored with the original values")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or folders")
    parser.add_argument("--out", metavar="DIR", help="write the stripped files here instead of in place")
    parser.add_argument("--variants", action="store_true", help="also strip the on_spark variants")
    parser.add_argument("--contracts", action="append", default=[], metavar="DIR",
                        help="with --compare: a folder of *.contract.yaml files the scenarios name")
    parser.add_argument("--compare", action="store_true",
                        help="compare the expectation values of the scenarios in two folders (original, restored)")
    args = parser.parse_args(argv)
    if args.compare:
        if len(args.paths) != 2:
            parser.error("--compare takes two folders: the original and the restored")
        return compare(Path(args.paths[0]), Path(args.paths[1]), args.contracts)
    count = 0
    for given in map(Path, args.paths):
        if not given.exists():
            print(f"strip_expectations: no such file or folder: {given}", file=sys.stderr)
            return 2
        files = [given] if given.is_file() else sorted(given.rglob("*.scenario.y*ml"))
        for file in files:
            stripped = strip_text(file.read_bytes().decode("utf-8"), variants=args.variants)
            target = file if args.out is None else Path(args.out) / (
                file.relative_to(given) if given.is_dir() else file.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(stripped.encode("utf-8"))
            count += 1
    print(f"stripped {count} scenario file{'s' if count != 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
