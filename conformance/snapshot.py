"""Snapshot expectations: write what Spark did into a scenario's `expect` steps, reviewed as a diff.

`eventtime run PATH --snapshot create|fix|all` (pytest: `--eventtime-snapshot=...`) runs the scenarios
on Spark, then edits their files (the faces: `commands/snapshot.py`, `snapshot_pytest.py`):

- `create` fills each check an `expect` asks for without a value (`rows:` left empty, `watermark:`, a
  `batches` entry's `data:`, a bare `expect:` or `expect: {}`, which gets the rows, watermark, dropped
  rows and state size; see `snapshotedit.CHECK_KEYS`);
- `fix` sets each stated value the run disagrees with (the judge decides, as in any run) to what Spark
  did; a list of rows keeps the rows that were right, so the diff names exactly the rows that changed;
- `all` does both.

Before anything is written the unified diff of each file is printed, with one line per change. A file
is written only with `--yes`, or after a yes at the prompt on a terminal; where `CI` is set nothing is
ever written, and where there is no terminal nothing is written without `--yes`: the run fails with the
diff. A file whose run erred, that no implementation applies to, or whose implementations observed
different things is never touched, and neither are a scenario's inputs: edits are made only inside `expect` steps.

Version lines: an `expect` with `on_spark` variants says its common checks hold on the other lines, so
where the common checks applied and disagree, `fix` adds a variant for the running line (`>=X.Y,<X.Y+1`)
instead of changing them; with `--snapshot-on-spark` it does so for every step. A step whose variant
applied has that variant fixed.

Each run of a file (one per implementation) becomes an `Observation` (`observe`): the text it read and
that text with its edits. A file is planned from all its observations (`plan`): the CLI's, or those
pytest-xdist workers sent to the controller (`snapshot_pytest`), so a file is written once, by one process.
"""
from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from . import spec as m
from . import snapshotedit as se
from .results import ERROR, NOT_APPLICABLE, PASSED, ScenarioResult

__all__ = ["MODES", "OPTIONS", "load_scenario", "plan_file", "plan", "observe", "Observation", "Review", "settle",
           "in_ci"]

MODES = ("create", "fix", "all")


@dataclass(frozen=True)
class OptionRules:
    """What each of a snapshot's options does, said once; each face words it with its own names
    (`commands/snapshot.py`: --snapshot, --yes, --snapshot-on-spark; `snapshot_pytest.py`:
    --eventtime-snapshot, --eventtime-snapshot-yes, --eventtime-snapshot-on-spark). --yes and on_spark
    go with a mode (each face refuses them alone); nothing is ever written in CI (`Review.decide`)."""

    mode: str = ("write what Spark observed into the scenarios' expect steps: create (fill checks without a "
                 "value), fix (replace values Spark disagrees with), all; the diff is shown first")
    yes: str = "write without asking (never in CI)"
    on_spark: str = ("write what differs as an on_spark variant for the running Spark line instead of changing "
                     "the checks every line shares")


OPTIONS = OptionRules()


def load_scenario(path: str | Path, *, display_path: str | None = None, contracts: Any = None) -> m.Scenario:
    """`loader.load_scenario`, where a check without a value is not a problem but a hole for `create`
    (the loader reads a placeholder there, on the same line, so every place it reports stays right)."""
    from .loader import load_scenario_text
    from .problems import FileInvalid
    from .loader import load_scenario as load

    try:
        text = _read(Path(path))
    except (OSError, UnicodeDecodeError):
        return load(path, display_path=display_path, contracts=contracts)  # it says what is wrong
    found = se.holes(text)
    if not found:
        return load(path, display_path=display_path, contracts=contracts)
    try:
        return load_scenario_text(se.placeholder_text(text, found), display_path or str(path), contracts=contracts,
                                  file=Path(path))
    except FileInvalid:
        return load(path, display_path=display_path, contracts=contracts)  # its problems, as the file says them


@dataclass
class Planned:
    """What a snapshot does to one file: its new text, the changes said one per line, or why not."""

    path: Path
    shown: str
    text: str
    new: str | None = None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refused: str | None = None

    @property
    def changed(self) -> bool:
        return self.refused is None and self.new is not None and self.new != self.text

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.text.splitlines(keepends=True),
                                            (self.new or "").splitlines(keepends=True),
                                            fromfile=f"a/{self.shown}", tofile=f"b/{self.shown}"))


def _read(path: Path) -> str:
    """The file's text as it is, line ends included (`\r\n` stays: the loader's places count it)."""
    return path.read_bytes().decode("utf-8")


def _spark_line(version: str | None) -> str | None:
    """`>=X.Y,<X.Y+1`: the Spark line of a version, as an `on_spark` specifier."""
    parts = (version or "").split("-")[0].split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return f">={parts[0]}.{parts[1]},<{parts[0]}.{int(parts[1]) + 1}"


@dataclass
class Observation:
    """What one run (a scenario file and one implementation) would make of its file: the text it read
    and that text with its edits, or why it makes nothing. Plain data: a pytest-xdist worker sends its
    observations to the controller, which plans each file from all of them (`plan`) and writes it once."""

    path: str  # the file, absolute
    shown: str  # the file as the run reports it
    implementation: str
    status: str
    text: str  # the file's text when the run's edits were made
    new: str | None = None  # the text with this run's edits
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    erred: str | None = None  # why nothing is written: the run erred, or the file changed while it ran
    reason: str | None = None  # why it does not apply (status not_applicable)

    def to_dict(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_dict(cls, data: dict) -> "Observation":
        return cls(**data)


def observe(path: Path, shown: str, result: ScenarioResult, mode: str, *, on_spark: bool = False) -> Observation:
    """What the run `result` of the file at `path` would write there."""
    text = _read(path)
    obs = Observation(str(path.resolve()), shown, result.implementation, result.status, text)
    if result.status == ERROR or result.cause is not None:
        obs.erred = f"its run erred ({result.implementation}): {result.reason or 'see above'}"
        return obs
    if result.status == NOT_APPLICABLE:  # nothing observed
        obs.reason = result.reason
        return obs
    if tuple(se.placeholder_text(text, se.holes(text)).splitlines()) != result.scenario.lines:
        obs.erred = "the file changed while it ran; run the snapshot again"
        return obs
    edits, obs.changes, obs.notes = _result_edits(text, result, mode, on_spark)
    if "\r\n" in text:  # lines added in the file's own line ends
        edits = [se.Edit(e.start, e.end, e.text.replace("\n", "\r\n")) for e in edits]
    obs.new = se.apply_edits(text, edits)
    return obs


def plan_file(path: Path, shown: str, results: Sequence[ScenarioResult], mode: str, *, on_spark: bool = False,
              contracts: Any = None) -> Planned:
    """The snapshot of one scenario file from its runs (one per implementation)."""
    return plan(path, shown, [observe(path, shown, r, mode, on_spark=on_spark) for r in results], mode,
                contracts=contracts)


def plan(path: Path, shown: str, observations: Sequence[Observation], mode: str, *, contracts: Any = None,
         unfinished: int = 0) -> Planned:
    """The snapshot of one scenario file from what each of its runs observed (`unfinished`: runs of it
    that ended without an observation, such as on an xdist worker that crashed)."""
    text = _read(path)
    plan = Planned(path, shown, text)
    for o in observations:
        if o.erred is not None and not o.erred.startswith("the file changed"):
            plan.refused = o.erred
            return plan
    if unfinished:
        plan.refused = f"{unfinished} of its runs ended without what they observed (see the failures above)"
        return plan
    applicable = [o for o in observations if o.status != NOT_APPLICABLE]
    if not applicable:  # nothing observed; an implementation that does not apply observes nothing either
        plan.refused = f"not applicable ({observations[0].implementation}): {observations[0].reason}"
        return plan
    if any(o.erred is not None or o.text != text for o in applicable):
        plan.refused = "the file changed while it ran; run the snapshot again"
        return plan
    texts: dict[str, list[str]] = {}
    for o in sorted(applicable, key=lambda o: o.implementation):
        assert o.new is not None
        texts.setdefault(o.new, []).append(o.implementation)
        plan.changes, plan.notes = o.changes, sorted(set(plan.notes) | set(o.notes))
    if len(texts) > 1:
        plan.refused = ("its implementations observed different things (" + "; ".join(
            ", ".join(impls) for impls in texts.values()) + "): snapshot one with --pipeline")
        return plan
    plan.new = next(iter(texts)) if texts else text
    left = se.holes(plan.new)
    if left and mode != "fix":
        lines = ", ".join(str(se.line_of(plan.new, h.start)) for h in left)
        plan.notes.append(f"{shown}: still without a value at line(s) {lines} (an on_spark variant of another "
                          "Spark line, or a value this run cannot say): give or remove them; until then the file "
                          "runs only under --snapshot")
    if plan.changed:
        problem = _still_valid(plan, contracts)
        if problem:
            plan.refused = f"the edited file would not load ({problem}); nothing written (a bug of the kit: report it)"
    return plan


def _still_valid(plan: Planned, contracts: Any) -> str | None:
    from .loader import load_scenario_text
    from .problems import FileInvalid

    assert plan.new is not None
    try:
        load_scenario_text(se.placeholder_text(plan.new, se.holes(plan.new)), plan.shown, contracts=contracts,
                           file=plan.path)
    except FileInvalid as exc:
        return str(exc.problems[0]) if exc.problems else str(exc)
    return None


def _result_edits(text: str, result: ScenarioResult, mode: str, on_spark: bool
                  ) -> tuple[list[se.Edit], list[str], list[str]]:
    root = se.compose(text)
    bodies = se.expect_bodies(root)
    edits: list[se.Edit] = []
    changes: list[str] = []
    notes: list[str] = []
    steps = {s.index: s for s in result.scenario.steps}
    for sr in result.steps:
        observed = getattr(sr, "observed", None)
        step = steps.get(sr.index)
        if observed is None or not isinstance(step, m.ExpectStep) or sr.index not in bodies:
            continue
        key, body = bodies[sr.index]
        variant = getattr(step, "_spark_variant", None)
        if variant is not None:
            key, body = _variant_node(body, variant)
        contract = m.checked_contract(result.scenario.contract, step)
        scenario = result.scenario if contract is result.scenario.contract else replace(result.scenario, contract=contract)
        unjudged: frozenset[str] = getattr(observed, "unjudged", frozenset())
        if "state_rows" in unjudged:
            unjudged |= frozenset(se.WITH_STATE_ROWS)
        view = se.ExpectView(scenario, step, observed, unjudged=unjudged, failed=frozenset(f.check for f in sr.failures))
        step_edits: list[se.Edit] = []
        if mode in ("create", "all"):
            made = se.create_edits(text, body, key, view)
            step_edits += made.edits  # the diff shows what was filled; the notes what was left out
        if mode in ("fix", "all"):
            made = se.fix_edits(text, body, view)
            if made.edits and variant is None and isinstance(body, yaml.MappingNode) and (
                    on_spark or any(k.value == "on_spark" for k, _ in body.value)):
                spec = _spark_line(result.spark_version)
                if spec is not None:
                    edit = se.variant_edit(text, body, view, spec)
                    made = se.StepEdits([edit], [f"line {se.line_of(text, key.start_mark.index)}: on_spark: + "
                                                 f"{spec!r} (what this step observes on Spark {result.spark_version})"])
            step_edits += made.edits
            changes += made.changes
        edits += step_edits
        notes += [f"{result.scenario.path}:{sr.where.line if sr.where else '?'}: {n}" for n in view.notes]
    return edits, changes, notes


def _variant_node(body: yaml.Node, spec: str) -> tuple[yaml.Node, yaml.Node]:
    variants = next(v for k, v in body.value if k.value == "on_spark")
    return next((k, v) for k, v in variants.value if k.value == spec)


# -- review and writing ------------------------------------------------------------------------------------
def in_ci() -> bool:
    """Whether this runs in CI: `CI` set to anything but empty, 0 or false."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@dataclass
class Review:
    """The planned files: printed as diffs, then written as the user says (`decide`)."""

    plans: list[Planned]
    mode: str
    out: Callable[[str], None] = print

    @property
    def changed(self) -> list[Planned]:
        return [p for p in self.plans if p.changed]

    def show(self) -> None:
        for plan in self.plans:
            if plan.refused:
                self.out(f"eventtime: snapshot: {plan.shown}: not touched: {plan.refused}")
        for plan in self.changed:
            self.out("")
            self.out(plan.diff().rstrip("\n"))
            for change in plan.changes:
                self.out(f"  {plan.shown}: {change}")
        notes = sorted({n for p in self.plans for n in p.notes})
        for note in notes:
            self.out(f"  note: {note}")
        if self.plans and not self.changed and not any(p.refused for p in self.plans):
            self.out(f"eventtime: snapshot ({self.mode}): nothing to change")

    def decide(self, yes: bool, ask: Callable[[str], str] | None) -> tuple[bool, str]:
        """(write?, why): never in CI; with `yes`; else by the answer to `ask` (None: no terminal)."""
        files = len(self.changed)
        if not files:
            return False, "nothing to write"
        if in_ci():
            return False, (f"not written: CI is set, and a snapshot is never written in CI; review the diff above and "
                           f"run the snapshot where you can, or write the {files} file(s) by hand")
        if yes:
            return True, "--yes"
        if ask is None:
            return False, "not written: no terminal to ask; review the diff above, then run again with --yes"
        answer = ask(f"Write the snapshot to {files} file{'s' if files != 1 else ''}? [y/N] ").strip().lower()
        return answer in ("y", "yes"), "answered" if answer in ("y", "yes") else "not written: answered no"

    def write(self) -> list[str]:
        written = []
        for plan in self.changed:
            assert plan.new is not None
            plan.path.write_bytes(plan.new.encode("utf-8"))
            written.append(plan.shown)
        return written


def terminal_prompt() -> Callable[[str], str] | None:
    """`input`, where there is a terminal to ask on."""
    try:
        if sys.stdin.isatty() and sys.stdout.isatty():
            return input
    except (AttributeError, ValueError):
        pass
    return None


def settle(review: Review, results: Sequence[ScenarioResult | Observation], yes: bool,
           ask: Callable[[str], str] | None, out: Callable[[str], None] = print) -> bool:
    """Show the review, write as decided; whether the run is settled (every scenario passed, or its file
    was written with no check left failing that the snapshot does not change)."""
    review.show()
    write, why = review.decide(yes, ask)
    written = set(review.write()) if write else set()
    if written:
        names = sorted(written)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        out(f"eventtime: snapshot ({review.mode}): wrote {len(written)} file{'s' if len(written) != 1 else ''}: "
            f"{shown}; run them again to see them pass")
    elif review.changed:
        out(f"eventtime: snapshot ({review.mode}): {why}")
    plans = {p.shown: p for p in review.plans}
    for r in results:
        plan = plans.get(r.shown if isinstance(r, Observation) else r.scenario.path)
        if r.status == NOT_APPLICABLE and (plan is None or not plan.refused):
            continue  # as in any run: neither passed nor failed
        if r.status == PASSED and (plan is None or not plan.changed):
            continue
        if plan is None or plan.refused or plan.shown not in written:
            return False
    return True
