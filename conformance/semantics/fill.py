"""The model's observations written as scenario `expect` checks: rendered, inserted into a scenario, or filled in place.

Three users: `eventtime expect` prints the checks per expect step; `eventtime expect --write`
replaces the values of a file's expect steps in place (every other byte of the file, comments
included, stays as it was); the Spark differential test inserts an `expect` after every step
that may run batches of a generated scenario, so the file it writes reproduces a disagreement
with `eventtime run`.

Checks are rendered as YAML flow text (`[[a, "00:00:00", "00:00:10", 2]]`, `"00:00:11"`, `0`);
`batches` is a list of flow mappings, one per batch. Values, rows and the layout of a check are
`eventtime.scenariotext`'s, the writer a snapshot of a Spark run uses too.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import yaml

from eventtime.harness.errors import EventtimeError

from .. import spec as m
from ..drive import rows_seen
from ..judge import compared, forwarded_ms, match_rows, statuses_emitted
from ..scenariotext import (Edit, append_checks, apply_edits, block_items, checks_block, flow_list, node_end, row_text,
                            rows_text, time_text, watermark_text)

__all__ = ["model_checks", "insert_expectations", "write_expectations", "WriteError", "state_rows_pinned",
           "expectations_yaml"]

# Steps after which the differential inserts an `expect`: the ones that can run batches.
BATCH_STEPS = ("process", "update", "advance", "start", "restart", "run")
# Contracts whose state size the model does not predict: transformWithState counts its state
# variables and timers its own way (see eventtime.semantics.stateful).
_STATE_ROWS_UNPINNED = frozenset({"hold_timer"})

# What a predicted failure's message contains on every Spark line (the error class is not in the
# message on all of them).
FAILURE_TEXT = {"INVALID_TIMEOUT_TIMESTAMP": '"cannot be earlier than the current watermark"'}

class WriteError(EventtimeError):
    """The model's checks cannot be written into this scenario text (its layout is not one we edit)."""


def state_rows_pinned(scenario: m.Scenario) -> bool:
    """Whether the model predicts `state_rows` for this scenario's contract."""
    return scenario.contract.name not in _STATE_ROWS_UNPINNED


def _rows_text(rows: Sequence[Sequence[Any]], scenario: m.Scenario, step: m.ExpectStep | None) -> str:
    """Output rows as a check of `step` states them: in the columns it compares (`judge.compared`)."""
    columns = compared(step, scenario)
    return rows_text([columns.pick(tuple(r)) for r in rows], columns.types, scenario)


def model_checks(scenario: m.Scenario, since_expect: Sequence[Any], history: Sequence[Any], *,
                 batches: bool = True, step: m.ExpectStep | None = None,
                 watermark_ms: int | None = None) -> dict[str, Any]:
    """What the model observed at one expect step, as checks: key -> flow text (`batches` as a
    list of flow mappings). `since_expect` holds the batches since the previous expect, `history`
    every batch so far. Complete mode gets `output` (the latest table) instead of `rows`. Rows are
    written in the columns the expect `step` compares (None: every output column). `watermark_ms` is the
    query's watermark there (`Simulation.expect_watermarks`; None: what the last batch left)."""
    checks: dict[str, Any] = {}
    mode = scenario.params.get("output_mode", "append")
    scope = "output" if mode == "complete" else "rows"
    checks[scope] = _rows_text(rows_seen(scope, mode, since_expect, history), scenario, step)
    if watermark_ms is None:
        watermark_ms = history[-1].watermark_after_ms or 0 if history else 0
    checks["watermark"] = watermark_text(watermark_ms, scenario)
    checks["dropped"] = str(sum(b.dropped for b in since_expect))
    if state_rows_pinned(scenario):
        checks["state_rows"] = str(history[-1].state_rows if history else 0)
    forwarded = forwarded_ms(since_expect) if history and forwarded_ms(history[-1:]) is not None else None
    if forwarded is not None:  # the dataflow profile: the watermarks the operator forwarded, in order
        checks["watermarks"] = flow_list(time_text(ms * 1000, scenario) for ms in forwarded)
    statuses = statuses_emitted(since_expect) if history and statuses_emitted(history[-1:]) is not None else None
    if statuses is not None and (statuses or (step is not None and step.statuses is not None)):
        checks["statuses"] = flow_list(statuses)  # the stream statuses the operator emitted, in order
    stats = next((b.event_time for b in reversed(since_expect) if b.event_time), None)
    if stats:
        # an avg that depends on the order Spark's tasks finish in is not expected (`avg_range` instead)
        checks["event_time"] = "{" + ", ".join(f"{k}: {time_text(stats[k] * 1000, scenario)}"
                                               for k in ("min", "max", "avg") if k in stats) + "}"
    if batches:
        pinned = state_rows_pinned(scenario)
        checks["batches"] = [
            f"{{data: {'true' if b.has_data else 'false'}, "
            f"watermark_before: {watermark_text(b.watermark_before_ms, scenario)}, "
            f"watermark_after: {watermark_text(b.watermark_after_ms, scenario)}, dropped: {b.dropped}, "
            + (f"state_rows: {b.state_rows}, " if pinned else "")
            + f"rows: {_rows_text(b.rows, scenario, step)}}}"
            for b in since_expect] or "0"
    return checks


# -- inserting expect steps (generated scenarios) --------------------------------------------------------
def insert_expectations(sim: Any) -> str:
    """The simulated scenario's text with an `expect` holding the model's checks after every step that
    can run batches (process, advance, start, restart) and at the end; existing expects are kept.
    Where the model predicts that the query fails, a `failure` check follows that step instead,
    and nothing more is inserted."""
    sc: m.Scenario = sim.scenario
    lines = list(sc.lines)
    inserts: list[tuple[int, list[str]]] = []  # (after line number, lines)
    since_expect: list[Any] = []
    history: list[Any] = []
    last = sim.steps[-1].step if sim.steps else None
    failure = sim.failure
    for obs in sim.steps:
        since_expect += obs.batches
        history += obs.batches
        if isinstance(obs.step, m.ExpectStep):
            since_expect = []
            continue
        failing = failure is not None and obs.index == failure.index
        if obs.step is None or (obs.kind not in BATCH_STEPS and obs.step is not last and not failing):
            continue
        text = sc.lines[obs.step.where.line - 1]
        dash = len(text) - len(text.lstrip())
        if not text.lstrip().startswith("-"):
            raise WriteError(f"{obs.step.where}: a step whose list dash is not on its first line")
        end = sc.step_text(obs.step)[-1][0]
        if failing:  # the query fails here; nothing after it runs
            assert failure is not None
            inserts.append((end, [" " * dash + "- expect:",
                                  " " * (dash + 4) + f"failure: {{message: {FAILURE_TEXT[failure.error_class]}}}"]))
            break
        block = [" " * dash + "- expect:"] + checks_block(model_checks(sc, since_expect, history, watermark_ms=obs.watermark_ms), dash + 4)
        inserts.append((end, block))
        since_expect = []
    for after, block in reversed(inserts):
        lines[after:after] = block
    return "\n".join(lines) + "\n"


# -- filling expect steps in place -----------------------------------------------------------------------
def _expect_nodes(text: str) -> list[yaml.MappingNode]:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    steps = next((v for k, v in root.value if k.value == "steps"), None)
    out = []
    for item in steps.value if isinstance(steps, yaml.SequenceNode) else []:
        if isinstance(item, yaml.MappingNode) and item.value and item.value[0][0].value == "expect":
            body = item.value[0][1]
            if not isinstance(body, yaml.MappingNode):
                raise WriteError(f"line {body.start_mark.line + 1}: an expect step whose checks are not a mapping")
            out.append(body)
    return out


def _value_text(value: Any, key_column: int, block: bool) -> str:
    """`: value` for a key at `key_column`; a list is written as block items (two deeper) when
    `block`, else as one flow sequence."""
    if isinstance(value, list):
        return ":" + block_items(value, key_column + 2) if block and value else ": " + flow_list(value)
    return ": " + value


def _same_rows(expected: Sequence[tuple], actual: Sequence[tuple], step: m.ExpectStep, sc: m.Scenario,
               ordered: bool) -> bool:
    """Whether a file's rows already say what the model observed, as the judge compares them (`actual`
    holds whole output rows)."""
    columns = compared(step, sc)
    return not any(match_rows(expected, [columns.pick(r) for r in actual], ordered=ordered, types=columns.types,
                              rel_tol=step.tolerance))


def _batch_field_edits(seq: yaml.SequenceNode, since_expect: Sequence[Any], step: m.ExpectStep,
                       sc: m.Scenario) -> list[Edit]:
    """Edits that set each field a `batches` entry has to the model's batch, leaving the fields the
    author chose (and the comments after the entries) alone; values that already agree keep their text."""
    edits = []
    for item, b, want in zip(seq.value, since_expect, step.batches or ()):
        if not isinstance(item, yaml.MappingNode):
            raise WriteError(f"line {item.start_mark.line + 1}: a `batches` entry that is not a mapping")
        model = {
            "data": ("true" if b.has_data else "false", want.data == b.has_data),
            "rows": (_rows_text(b.rows, sc, step), want.rows is not None and _same_rows(want.rows, b.rows, step, sc, False)),
            "watermark_before": (watermark_text(b.watermark_before_ms, sc),
                                 want.watermark_before_us is not None and want.watermark_before_us // 1000 == b.watermark_before_ms),
            "watermark_after": (watermark_text(b.watermark_after_ms, sc),
                                want.watermark_after_us is not None and want.watermark_after_us // 1000 == b.watermark_after_ms),
            "dropped": (str(b.dropped), want.dropped == b.dropped),
            "state_rows": (str(b.state_rows), want.state_rows == b.state_rows or not state_rows_pinned(sc)),
        }
        for k, v in item.value:
            text, agrees = model.get(k.value, ("", True))
            if not agrees:
                edits.append(Edit(k.end_mark.index, node_end(v), ": " + text))
    return edits


def _is_block_list(node: yaml.Node) -> bool:
    return isinstance(node, yaml.SequenceNode) and not node.flow_style


def write_expectations(sim: Any, text: str | None = None) -> str:
    """The scenario's text with every expect step's checks set to what the model observed there.

    Checks the step has are replaced (`no_output: true` becomes `rows` when the model writes
    rows; `batches: N` stays a count; a list written one item per line stays so); `rows` (or
    `output` in complete mode), `watermark`, and under the spark profile `dropped` and
    `state_rows`, are appended when missing, at the indentation of the step's other checks. Nothing else changes: not the other
    lines, not the comments after the values replaced. `ordered` and `failure` are left alone,
    and so is a check the model has no value for (`event_time` where no batch read rows,
    `state_rows` of a contract whose state size it does not predict). `text` is the file's text
    (default: the lines the scenario was loaded from)."""
    sc: m.Scenario = sim.scenario
    if text is None:
        text = "\n".join(sc.lines) + ("\n" if sc.lines else "")
    observed = sim.observed_by_expects()
    nodes = _expect_nodes(text)
    if len(nodes) != len(observed):
        raise WriteError(f"found {len(nodes)} expect steps in the text, the scenario has {len(observed)}")
    edits: list[Edit] = []
    for node, (step, since_expect, history), now in zip(nodes, observed, sim.expect_watermarks()):
        if step.failure is None:
            edits += _expect_edits(text, node, _ModelView(sc, step, since_expect, history, now), sim.profile)
    return apply_edits(text, edits)


class _ModelView:
    """What the model observed at one expect step, as the texts and rows a file's checks are set to."""

    def __init__(self, sc: m.Scenario, step: m.ExpectStep, since_expect: Sequence[Any], history: Sequence[Any],
                 watermark_ms: int):
        self.sc, self.step, self.since_expect, self.history = sc, step, since_expect, history
        self.watermark_ms = watermark_ms
        mode = sc.params.get("output_mode", "append")
        self.complete = mode == "complete"
        self.checks: dict[str, Any] = model_checks(sc, since_expect, history, step=step, watermark_ms=watermark_ms)
        self.rows = {scope: rows_seen(scope, mode, since_expect, history) for scope in ("rows", "last_batch", "output")}
        columns = compared(step, sc)
        self.row_lists = {scope: [row_text(columns.pick(r), columns.types, sc) for r in rows]
                          for scope, rows in self.rows.items()}

    def already(self) -> set[str]:
        """The checks whose written value already says what the model observed (kept as written)."""
        step = self.step
        same = {c.scope for c in step.rows if _same_rows(c.rows, self.rows[c.scope], step, self.sc, step.ordered)}
        if step.watermark_us is not None and step.watermark_us // 1000 == self.watermark_ms:
            same.add("watermark")  # as the author wrote it (`initial`, a date, a comment)
        if step.watermarks is not None and [us // 1000 for us in step.watermarks] == forwarded_ms(self.since_expect):
            same.add("watermarks")
        if step.statuses is not None and list(step.statuses) == statuses_emitted(self.since_expect):
            same.add("statuses")
        low, high = step.watermark_range or (None, None)
        now = self.watermark_ms * 1000
        if step.watermark_range is not None and (low is None or now >= low) and (high is None or now <= high):
            same.add("watermark")  # a range the model's watermark is in stays a range
        return same

    def value(self, key: str) -> Any:
        return self.row_lists[key] if key in self.row_lists else self.checks[key]


def _expect_edits(text: str, node: yaml.MappingNode, view: _ModelView, profile: str) -> list[Edit]:
    """The edits of one expect step: its checks replaced, then the missing ones appended."""
    present = {k.value: (k, v) for k, v in node.value}
    edits = _replaced(present, view, block=not node.flow_style)
    wanted = ["output" if view.complete else "rows", "watermark"]
    if profile == "spark":  # the dataflow profile's metrics are not what a Spark run reports
        wanted += ["dropped", "state_rows"]
    missing = [c for c in wanted if c not in present and not (c == "rows" and "no_output" in present)
               and (c in view.row_lists or c in view.checks)]
    if missing:
        edits.append(append_checks(text, node, [(c, view.value(c)) for c in missing]))
    return edits


def _replaced(present: Mapping[str, tuple[yaml.Node, yaml.Node]], view: _ModelView,
              block: bool) -> list[Edit]:
    """Edits that set each check the step has to the model's value, leaving alone `ordered`, `failure`,
    a check the model has no value for, and one whose value already agrees."""
    step, since_expect, sc, checks = view.step, view.since_expect, view.sc, view.checks
    already = view.already()
    edits: list[Edit] = []
    for key, (k, v) in present.items():
        column = k.start_mark.column
        if key in already:
            continue
        if key == "no_output":
            if view.row_lists["rows"]:  # the model writes rows here: `no_output: true` becomes `rows`
                edits.append(Edit(k.start_mark.index, node_end(v), "rows" + _value_text(view.row_lists["rows"], column, False)))
            continue
        if key in view.row_lists:
            new: Any = view.row_lists[key]
            as_block = block and _is_block_list(v)
        elif key == "batches" and isinstance(v, yaml.SequenceNode) and len(v.value) == len(since_expect):
            edits += _batch_field_edits(v, since_expect, step, sc)  # same batches: field by field
            continue
        elif key == "batches" and isinstance(v, yaml.ScalarNode):
            if step.batch_count == len(since_expect):
                continue
            new, as_block = str(len(since_expect)), False
        elif key == "batches":
            new, as_block = (checks["batches"] if since_expect else []), block
        elif key == "event_time" and isinstance(v, yaml.MappingNode) and "event_time" in checks:
            stats = next(b.event_time for b in reversed(since_expect) if b.event_time)
            for fk, fv in v.value:  # only the statistics the author checks
                if fk.value in stats and getattr(step.event_time, f"{fk.value}_us", None) != stats[fk.value] * 1000:
                    edits.append(Edit(fk.end_mark.index, node_end(fv), ": " + time_text(stats[fk.value] * 1000, sc)))
            continue
        elif key in checks:
            new, as_block = checks[key], False
        else:
            continue  # ordered, failure, or a check the model has no value for
        edits.append(Edit(k.end_mark.index, node_end(v), _value_text(new, column, as_block)))
    return edits


def expectations_yaml(sim: Any) -> str:
    """Every `expect` step of the simulated scenario, filled with what the model observed there:
    rows (or the whole table in complete mode), watermark, dropped, state rows, event-time
    statistics and the batches, one YAML block per step, headed by its file:line."""
    sc = sim.scenario
    out = [f"# {sc.path}: what the model ({sim.profile} profile) observes at each expect step", ""]
    for (step, since_expect, history), now in zip(sim.observed_by_expects(), sim.expect_watermarks()):
        lines = [f"# {sc.path}:{step.where.line}", "  - expect:"] + checks_block(
            model_checks(sc, since_expect, history, watermark_ms=now), 6)
        out += lines + [""]
    return "\n".join(out)
