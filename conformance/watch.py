"""The loop of `eventtime watch PATH... [--pipeline [CONTRACT=]MODULE:FUNCTION]` (commands/watch.py): an edit-run
loop on one warm Spark session.

The scenarios under PATH run once; then, whenever a file changes, what it affects runs again and
its verdicts are printed as `eventtime run` prints them:
- a scenario file: that scenario;
- a contract file (`*.contract.yaml` under PATH): every scenario;
- a module of your code the pipelines were imported with (a module loaded from a file under the
  working directory, outside any virtual environment, not the kit's own): those modules are reloaded,
  in the order they were first imported, and every scenario runs against the new code.
What runs for a scenario is what `eventtime run` runs (`--pipeline`, the project's bindings,
`commands.files.Project.targets`); a scenario whose contract has no pipeline is said, as `run` says it.
Files are compared by modification time and size, polled every `--poll` seconds; a change runs once
two polls in a row see the same files (a save written in pieces is not run half-done); nothing is
decided by the wait. Ctrl-C stops watching (exit 0); the session, its JVM and its queries stop with the process.
"""
from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["Watcher"]

_Stamp = tuple[int, int]  # (mtime in ns, size)


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _user_modules(root: Path) -> list[Any]:
    """Modules loaded from files under `root` that are not part of an installed environment, in the
    order they were imported (sys.modules keeps it): the user's own code."""
    out = []
    root = root.resolve()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or not file.endswith(".py"):
            continue
        path = Path(file).resolve()
        try:
            path.relative_to(root)
        except ValueError:
            continue
        if any(part in ("site-packages", "dist-packages") or part.startswith(".venv") for part in path.parts):
            continue
        if module.__name__.split(".")[0] == "eventtime":  # the kit itself (an editable install under the root)
            continue
        out.append(module)
    return out


class Watcher:
    """Runs the scenarios under `paths` and re-runs what a changed file affects (see the module doc)."""

    def __init__(self, paths: Sequence[str], *, pipeline: str | None, contract_dirs: Sequence[str],
                 run: Callable[[Any, Any], Any], say: Callable[[str], None] = print, root: Path | None = None,
                 targets: Callable[[Any, Path], list[str]] | None = None, allowed: frozenset[str] = frozenset()):
        self.paths = list(paths)
        self.pipeline = pipeline  # one pipeline for every scenario, else `targets` chooses per scenario
        self.targets = targets  # (scenario, its file) -> the 'module:function's it runs against
        self.contract_dirs = list(contract_dirs)
        self.run_one = run  # (scenario, pipeline function or None) -> ScenarioResult
        self.say = say
        self.root = root or Path.cwd()
        self.stamps: dict[Path, _Stamp | None] = {}
        self.module_stamps: dict[str, _Stamp | None] = {}
        self.pending: Any = None  # what the last poll saw
        self.fn: Any = None
        self.allowed = allowed  # contracts that may have nothing judged (projectconfig.nothing_judged)
        self.latest: dict[tuple[Path, str], Any] = {}  # (scenario file, implementation) -> its latest result
        self._left_out: list[Path] = []  # unreviewed counterexamples not watched (said when it changes)

    # -- what is watched --------------------------------------------------------------------------
    def _files(self) -> tuple[list[Path], list[Path]]:
        from .contractfile import CONTRACT_SUFFIXES
        from .loader import find_scenario_files

        scenarios, _ = find_scenario_files(self.paths)
        scenarios = self._reviewed(scenarios)
        contracts: list[Path] = []
        for folder in [Path(p) for p in self.paths if Path(p).is_dir()] + [Path(d) for d in self.contract_dirs]:
            contracts += [f for f in folder.rglob("*") if f.name.endswith(CONTRACT_SUFFIXES)]
        for f in scenarios:  # a contract beside a scenario file given by name
            contracts += [c for c in f.parent.iterdir() if c.name.endswith(CONTRACT_SUFFIXES)]
        return sorted(set(scenarios)), sorted(set(contracts))

    def _reviewed(self, scenarios: list[Path]) -> list[Path]:
        """`scenarios` but the counterexamples check-properties wrote and nobody has moved (eventtime.counterexamples),
        said whenever what is left out changes; a file named on the command line is watched."""
        from eventtime.scenarios import display_path

        from .counterexamples import left_out_note, named, unreviewed

        left_out = [f for f in scenarios if unreviewed(f) and not named(f, self.paths, Path.cwd())]
        if left_out and left_out != self._left_out:
            self.say(f"eventtime: {left_out_note(left_out, (display_path(f.parent) for f in left_out))}")
        self._left_out = left_out
        return [f for f in scenarios if f not in left_out]

    def _module_files(self) -> dict[str, Path]:
        return {m.__name__: Path(m.__file__) for m in _user_modules(self.root)} if self._users_code else {}

    @property
    def _users_code(self) -> bool:
        """Whether the user's own code is run (and so watched and reloaded)."""
        return self.pipeline is not None or self.targets is not None

    # -- one round ---------------------------------------------------------------------------------
    def _resolve(self, reload: bool) -> bool:
        from .userpipeline import PipelineError, resolve_pipeline

        if not self._users_code:
            return True
        try:
            if reload:
                for module in _user_modules(self.root):
                    importlib.reload(module)
            if self.pipeline is not None:
                self.fn = resolve_pipeline(self.pipeline)
        except PipelineError as exc:
            self.say(f"eventtime: error: {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - the user's module raised while it was reloaded
            from .userpipeline import user_frames

            frames = user_frames(exc)
            self.say(f"eventtime: error: reloading {self.pipeline or 'your modules'} raised {type(exc).__name__}: {exc}"
                     + (f"\n{frames}" if frames else ""))
            return False
        return True

    def _run(self, files: Sequence[Path]) -> None:
        from eventtime.scenarios import display_path

        from .loader import load_scenario
        from .problems import FileInvalid
        from .projectconfig import unbound_message
        from .registry import ContractLookup
        from .results import FAILING
        from .textreport import describe_failure, summary_line, totals_line

        if self.pipeline is not None and self.fn is None:  # its import failed: said above, nothing to run
            self.say(f"{self.pipeline} does not import (see above): fix it and save; watching (Ctrl-C stops)")
            return
        lookup = ContractLookup(self.contract_dirs)
        started = time.monotonic()
        counts: dict[str, int] = {}
        invalid = unbound = 0
        for path in files:
            for key in [k for k in self.latest if k[0] == path]:  # its results of an earlier round
                del self.latest[key]
            try:
                scenario = load_scenario(path, display_path=display_path(path), contracts=lookup)
            except FileInvalid as exc:
                invalid += 1
                self.say(str(exc))
                continue
            targets: list[Any] = ([self.fn] if self.pipeline else self.targets(scenario, path) if self.targets
                                  else list(scenario.contract.implementations))
            if not targets:
                unbound += 1
                self.say(f"eventtime: error: {unbound_message(scenario.contract, scenario.path)}")
            self._watch_bound(targets)
            for target in targets:
                result = self.run_one(scenario, target)
                self.latest[(path, str(target))] = result
                counts[result.status] = counts.get(result.status, 0) + 1
                self.say(summary_line(result))
                if result.status in FAILING:
                    self.say(describe_failure(result))
        unjudged = self._unjudged()
        self.say(f"{totals_line(counts, invalid, unbound)}"
                 + (f", {len(unjudged)} with nothing judged" if unjudged else "")
                 + f" in {time.monotonic() - started:.1f}s; watching (Ctrl-C stops)")

    def _unjudged(self) -> list[Any]:
        """The contracts and implementations with nothing judged in the latest results of the files still
        watched (one edited scenario runs alone; the rule is over all of them), each said as an error."""
        from .projectconfig import nothing_judged
        from .results import NOT_APPLICABLE

        for key in [k for k in self.latest if not k[0].exists()]:
            del self.latest[key]
        unjudged = nothing_judged(((r.scenario.contract.name, r.implementation, r.scenario.name, r.scenario.path,
                                    r.status != NOT_APPLICABLE, r.reason) for r in self.latest.values()), self.allowed)
        for group in unjudged:
            self.say(f"ERROR {group.message('--allow-not-applicable')}")
        return unjudged

    def _watch_bound(self, targets: Sequence[Any]) -> None:
        """Import the modules a scenario's bindings name (the project's `eventtime_pipelines`, `--pipeline
        CONTRACT=...`) before it runs, and watch those of the user's code from then on: they are imported
        only here, after the first look at the files, so an edit to one would otherwise never be seen."""
        from .userpipeline import resolve_pipeline

        for target in targets:
            if isinstance(target, str) and not target.endswith(".py"):
                try:
                    resolve_pipeline(target)
                except Exception:  # noqa: BLE001 - its run says why, at its line
                    pass
        for name, path in self._module_files().items():
            self.module_stamps.setdefault(name, _stamp(path))

    def first_round(self) -> None:
        scenarios, contracts = self._files()
        self.stamps = {f: _stamp(f) for f in scenarios + contracts}
        self._resolve(reload=False)
        self.module_stamps = {name: _stamp(path) for name, path in self._module_files().items()}
        self._run(scenarios)

    def changed(self) -> list[Path] | None:
        """What to run now: the scenario files to re-run ([] when nothing changed); None when a
        change affects every scenario (a contract file or a module of the pipeline's code).
        A change counts once the files look the same on two polls in a row: an editor that writes
        a file in several pieces (truncate, then write) is not run half-saved."""
        scenarios, contracts = self._files()
        now = {f: _stamp(f) for f in scenarios + contracts}
        modules = {name: _stamp(path) for name, path in self._module_files().items()}
        if (now, modules) != self.pending:
            self.pending = (now, modules)
            return []
        every = any(now.get(c) != self.stamps.get(c) for c in contracts) or any(
            modules.get(name) != stamp for name, stamp in self.module_stamps.items())
        edited = [f for f in scenarios if now[f] != self.stamps.get(f)]
        self.stamps = now
        if every:
            return None
        return edited

    def one_round(self) -> bool:
        """Checks once; runs what changed. Returns whether anything ran."""
        edited = self.changed()
        if edited == []:
            return False
        if edited is None:
            scenarios, _ = self._files()
            reload = self._users_code
            if not self._resolve(reload=reload):
                self.fn = None
            self.module_stamps = {name: _stamp(path) for name, path in self._module_files().items()}
            self._run(scenarios)
        else:
            self._run(edited)
        return True

    def loop(self, poll: float, rounds: int | None = None) -> None:
        done = 0
        while rounds is None or done < rounds:
            self.one_round()
            done += 1
            time.sleep(poll)  # how often files are looked at; no verdict depends on it
