"""Renders results for a terminal: one line per scenario, and a readable account of each failure."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .contracts import Contract
from .judge import format_value
from .spec import ExpectStep, checked_contract, checked_query
from .results import DRIVER_DIED, ERROR, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, CheckFailure, ScenarioResult, StepResult
from .timeparse import format_relative

__all__ = ["summary_line", "describe_failure", "verdict_table", "totals", "totals_line", "short_name", "certification",
           "certification_markdown", "verdict_mark", "certification_verdict"]

_MARK = {PASSED: "PASS", FAILED: "FAIL", ERROR: "ERROR", NOT_APPLICABLE: "N/A"}


def verdict_mark(status: str) -> str:
    """`passed` -> `PASS`, `failed` -> `FAIL`, `error` -> `ERROR`, `not_applicable` -> `N/A`."""
    return _MARK.get(status, status)


def certification_verdict(statuses: Iterable[str]) -> str:
    """CERTIFIED when every scenario that applies passed and at least one applied; else REJECTED
    (something failed or errored) or NOT APPLICABLE (nothing applied)."""
    statuses = list(statuses)
    if any(s in (FAILED, ERROR) for s in statuses):
        return "REJECTED"
    return "CERTIFIED" if PASSED in statuses else "NOT APPLICABLE"


def summary_line(result: ScenarioResult) -> str:
    extra = f"{len(result.steps) - 1} steps, {result.batches} batches, {result.seconds:.1f}s"
    if not result.steps or (len(result.steps) == 1 and result.status == ERROR):
        # it ended before its first step (a pipeline that does not import or raises when the query
        # starts, a session refused): the implicit start is all it has, if that
        why = (result.reason or (result.steps[0].message if result.steps else None) or "").strip()
        first = why.splitlines()[0] if why else ""
        if result.cause == DRIVER_DIED:  # its message, printed once after the line, says how
            first = "the Spark driver died (below)"
        extra = "stopped before its first step" + (f": {first[:157]}..." if len(first) > 160 else
                                                   f": {first}" if first else "")
    if result.status == NOT_APPLICABLE:
        extra = result.reason or ""
    from .upgrade import outcome_words

    change = outcome_words(result)  # a run across a change: its outcome first
    extra = f"{change}; {extra}" if change else extra
    return f"{_MARK.get(result.status, result.status):5} {result.scenario.name}  [{result.implementation}]  ({extra})"


def _table(columns: Sequence[str], types: Sequence[str], rows: Iterable[tuple], result: ScenarioResult,
           indent: str) -> list[str]:
    cells = [[format_value(v, t, result.scenario) for v, t in zip(row, types)] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = [indent + " | ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += [indent + " | ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return lines


def _batch_line(b, result: ScenarioResult) -> str:
    date = result.scenario.date

    def wm(ms):
        return "initial" if not ms else format_relative(ms * 1000, date=date)

    kind = "data" if b.has_data else "no-data"
    return (f"batch {b.batch_id} ({kind}, {b.input_rows} in, {len(b.rows)} out, watermark {wm(b.watermark_before_ms)}"
            f" -> {wm(b.watermark_after_ms)}, dropped {b.dropped}, state {b.state_rows})")


def _failure_lines(f: CheckFailure, result: ScenarioResult, indent: str, contract: Contract) -> list[str]:
    lines = [f"{indent}{f.where}: {f.message}"]
    lines += [f"{indent}  {line}" for line in f.explanation.splitlines()]
    if f.missing or f.unexpected:
        cols = f.columns or tuple(c.name for c in contract.output)
        by_name = {c.name: c.type for c in contract.output}  # `columns:` / `ignore:` compare some, in their order
        types = list(f.types) or ([by_name[c] for c in cols] if all(c in by_name for c in cols)
                                  else [c.type for c in contract.output])
        if f.missing:
            lines.append(f"{indent}  missing (expected, not produced):")
            lines += _table(cols, types, f.missing, result, indent + "    ")
        if f.unexpected:
            lines.append(f"{indent}  unexpected (produced, not expected):")
            lines += _table(cols, types, f.unexpected, result, indent + "    ")
    return lines


def describe_failure(result: ScenarioResult) -> str:
    """What went wrong, where in the file, what Spark did around it, and how to re-run it."""
    sc = result.scenario
    lines = [f"{_MARK.get(result.status)} {sc.name} ({sc.path}) with {result.implementation}"]
    if result.reason and (not result.failed_steps or result.cause == DRIVER_DIED):  # its message names the step
        lines.append(f"  {result.reason}")
    elif result.upgrade is not None and result.upgrade.get("outcome") and result.reason:
        # across a change: which version ran where, and Spark's whole refusal (the schemas it compared)
        lines += [f"  {line}" for line in result.reason.splitlines()]
    # the batches no expect has looked at yet: an expect closes those of the query it checks (a job's
    # queries each have their own "since the previous expect"), as the runner does
    jobs = {b.query for s in result.steps for b in s.batches} - {None}
    unseen: list = []

    def close(named: str | None) -> None:
        if not jobs or len(jobs) == 1:
            unseen.clear()
        elif named in jobs:
            unseen[:] = [b for b in unseen if b.query != named]

    def named_by(index: int) -> str | None:
        src = next((s for s in sc.steps if s.index == index), None)
        return checked_query(src) if isinstance(src, ExpectStep) else None
    for step in result.steps:
        if step.status not in (FAILED, ERROR):
            unseen += step.batches
            if step.kind == "expect" and step.status != SKIPPED:
                close(named_by(step.index))
            continue
        named = named_by(step.index)
        lines += _failed_step_lines(step, result, unseen + list(step.batches), jobs, named)
        unseen += step.batches
        if step.kind == "expect":
            close(named)
    if result.notes:  # what the run did not exercise or could not apply: part of reading a failure
        lines.append("  notes:")
        lines += [f"    {note}" for note in result.notes]
    if result.rerun:
        lines.append(f"  re-run: {result.rerun}")
    return "\n".join(lines)


def _failed_step_lines(step: StepResult, result: ScenarioResult, batches: list, jobs: set, named: str | None) -> list[str]:
    """A failed step: its place and text in the file, what failed, the watermark, and the batches run
    since the previous expect (`batches`; of the query it checks, `named`, in a job of several)."""
    sc = result.scenario
    lines = [f"  step {step.index} `{step.kind}` at {step.where}: {step.status}"]
    src = [s for s in sc.steps if s.index == step.index]
    for n, text in (sc.step_text(src[0]) if src else []):
        lines.append(f"    {n:>4} | {text}")
    if step.message:
        lines.append(f"    {step.message}")
    contract = checked_contract(sc.contract, src[0]) if src and isinstance(src[0], ExpectStep) else sc.contract
    for f in step.failures:
        lines += _failure_lines(f, result, "    ", contract)
    wm = step.watermark_ms
    if wm is None and any(b.query is not None for s in result.steps for b in s.batches):
        lines.append("    watermark now: one per query of the job (an expect with `query:` shows that query's)")
    else:
        lines.append(f"    watermark now: {'initial' if not wm else format_relative(wm * 1000, date=sc.date)}")
    queries = {b.query for b in batches}
    if len(jobs) > 1 and named in jobs:  # a job's queries: the one the check looks at
        batches, queries = [b for b in batches if b.query == named], {named}
    of = f" of query {named!r}" if len(jobs) > 1 and named in jobs else ""
    if batches:
        lines.append("    batches since the previous expect" + (f" (query {named!r})" if named is not None
                                                                 and queries == {named} else "") + ":")
        lines += [f"      {'' if len(queries) == 1 else f'query {b.query!r}: '}{_batch_line(b, result)}"
                  for b in batches]
    else:
        lines.append(f"    no micro-batch ran since the previous expect{of}")
    return lines


def totals(results: Sequence[ScenarioResult]) -> dict[str, int]:
    out = {PASSED: 0, FAILED: 0, ERROR: 0, NOT_APPLICABLE: 0}
    for r in results:
        out[r.status] = out.get(r.status, 0) + 1
    return out


def totals_line(counts: Mapping[str, int], invalid: int, unbound: int = 0) -> str:
    """A run's totals as `run`, `certify` and `watch` print them: 'N passed, N failed, N errors, N not
    applicable, N invalid files', then ', N unbound' when scenarios had no pipeline."""
    return (f"{counts.get(PASSED, 0)} passed, {counts.get(FAILED, 0)} failed, {counts.get(ERROR, 0)} errors, "
            f"{counts.get(NOT_APPLICABLE, 0)} not applicable, {invalid} invalid files"
            + (f", {unbound} unbound" if unbound else ""))


def short_name(implementation: str) -> str:
    """`pkg.module:function` -> `module:function` (enough to tell bundled implementations apart)."""
    module, sep, fn = implementation.rpartition(":")
    return f"{module.rsplit('.', 1)[-1]}:{fn}" if sep else implementation


def verdict_table(results: Sequence[ScenarioResult]) -> str:
    """A scenario x implementation table of verdicts."""
    impls = list(dict.fromkeys(r.implementation for r in results))
    names = sorted({r.scenario.name for r in results})
    cell = {(r.scenario.name, r.implementation): _MARK.get(r.status, r.status) for r in results}
    short = [short_name(i) for i in impls]
    width = max([len("scenario")] + [len(n) for n in names])
    widths = [max(len(s), 5) for s in short]
    lines = ["scenario".ljust(width) + "  " + "  ".join(s.ljust(w) for s, w in zip(short, widths))]
    for n in names:
        lines.append(n.ljust(width) + "  " + "  ".join(cell.get((n, i), "-").ljust(w) for i, w in zip(impls, widths)))
    return "\n".join(lines)


def certification(results: Sequence[ScenarioResult]) -> dict[tuple[str, str], str]:
    """(contract, implementation) -> CERTIFIED | REJECTED | NOT APPLICABLE.

    Certified: every scenario of the contract that applies passed, and at least one applied.
    """
    groups: dict[tuple[str, str], list[ScenarioResult]] = {}
    for r in results:
        groups.setdefault((r.scenario.contract.name, r.implementation), []).append(r)
    return {key: certification_verdict(r.status for r in rs) for key, rs in groups.items()}


def certification_markdown(results: Sequence[ScenarioResult], spark_version: str, seconds: float) -> str:
    """A Markdown summary of a certification run: verdict per contract and implementation, then
    the scenario table per contract, then the failures."""
    lines = [f"# Conformance report: Spark {spark_version}", ""]
    counts = totals(results)
    lines.append(f"{counts[PASSED]} passed, {counts[FAILED]} failed, {counts[ERROR]} errors, "
                 f"{counts[NOT_APPLICABLE]} not applicable; {seconds:.1f}s.")
    lines += ["", "| contract | implementation | verdict | passed | failed | error | not applicable |",
              "|---|---|---|---|---|---|---|"]
    verdicts = certification(results)
    for (contract, impl), verdict in sorted(verdicts.items()):
        rs = [r for r in results if r.scenario.contract.name == contract and r.implementation == impl]
        c = totals(rs)
        lines.append(f"| {contract} | `{impl}` | **{verdict}** | {c[PASSED]} | {c[FAILED]} | {c[ERROR]} | "
                     f"{c[NOT_APPLICABLE]} |")
    for contract in sorted({r.scenario.contract.name for r in results}):
        rs = [r for r in results if r.scenario.contract.name == contract]
        impls = list(dict.fromkeys(r.implementation for r in rs))
        lines += ["", f"## {contract}", "",
                  "| scenario | tags | " + " | ".join(f"`{short_name(i)}`" for i in impls) + " |",
                  "|---|---|" + "---|" * len(impls)]
        for name in sorted({r.scenario.name for r in rs}):
            row = {r.implementation: r for r in rs if r.scenario.name == name}
            first = next(iter(row.values()))
            cells = []
            for i in impls:
                r = row.get(i)
                cells.append("-" if r is None else _MARK.get(r.status, r.status)
                             + (f" ({r.reason})" if r.status == NOT_APPLICABLE and r.reason else ""))
            lines.append(f"| {name} | {', '.join(first.scenario.tags)} | " + " | ".join(cells) + " |")
        notes = sorted({f"`{short_name(r.implementation)}`: {n}" for r in rs for n in r.notes})
        if notes:
            lines += [""] + [f"- {n}" for n in notes]
    failures = [r for r in results if r.status in (FAILED, ERROR)]
    if failures:
        lines += ["", "## Failures", ""]
        for r in failures:
            lines += ["```", describe_failure(r), "```", ""]
    return "\n".join(lines) + "\n"
