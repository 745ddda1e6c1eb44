"""The previous version of a run across a change (docs/upgrade.md), for `eventtime run --previous /
--previous-ref` and the pytest options `--eventtime-previous / --eventtime-previous-ref`: a binding per
contract, or each scenario's own binding as a git ref has it (`GitCheckout`): the `crossing.Crossings` of
such a run. Each scenario's run is `runner.run_scenario(crossing=upgrade.NewVersion(...))`; its outcome,
`eventtime.upgrade`. The command line's options are read by its face (`commands/crossings.py`).
"""
from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import spec as m
from .results import ScenarioResult

__all__ = ["parse_previous", "Previous", "GitCheckout", "add_options", "from_options"]


def parse_previous(values: Sequence[str], option: str) -> dict[str, str]:
    """`CONTRACT=MODULE:FUNCTION` values -> {contract: target}; raises SettingsError saying what is wrong
    (a folder-scoped binding, a contract given twice)."""
    from .projectconfig import SettingsError, parse_binding

    out: dict[str, str] = {}
    for value in values:
        contract, under, target = parse_binding(value, option)
        if under is not None:
            raise SettingsError(f"{option}: {value!r}: the previous version is bound per contract, not per folder")
        if out.get(contract, target) != target:
            raise SettingsError(f"{option}: contract {contract!r} is given two previous versions: "
                                f"{out[contract]!r} and {target!r}")
        out[contract] = target
    return out


class Previous:
    """Where each scenario's previous version comes from: a binding per contract (`--previous`), or the
    same binding as the current one, loaded from a git ref (`--previous-ref`). `run` runs a scenario
    across the change; `close` removes the ref's checkout. `repeat`: the options the re-run command of a
    result repeats the change with (the command line's; None: the face's re-run command does not)."""

    def __init__(self, bindings: Mapping[str, str] | None = None, ref: str | None = None, *, root: str | None = None,
                 repeat: tuple[str, str] | None = ("--previous", "--previous-ref")):
        self.bindings, self.ref, self.repeat = dict(bindings or {}), ref, repeat
        self.checkout: GitCheckout | None = GitCheckout(ref, root or os.getcwd()) if ref is not None else None
        self._loaded: dict[str, Any] = {}

    def of(self, scenario: m.Scenario, implementation: Any) -> tuple[Any, str | None]:
        """(the previous version for this scenario run against `implementation`, its name); (None, None)
        when none is bound to its contract (the scenario then runs as usual)."""
        if self.checkout is None:
            target = self.bindings.get(scenario.contract.name)
            return target, target
        from .userpipeline import PipelineError

        if not isinstance(implementation, str):
            raise PipelineError(f"--previous-ref {self.ref}: loads a binding MODULE:FUNCTION (or a script's path) "
                                f"from the ref; {implementation!r} is a callable bound in code")
        if implementation not in self._loaded:
            self._loaded[implementation] = self.checkout.load(implementation)
        loaded = self._loaded[implementation]
        if isinstance(loaded, PipelineError):
            raise loaded
        return loaded, f"{implementation}@{self.ref}"

    def load(self, targets: Sequence[Any]) -> None:
        """The run's bindings' versions at the ref loaded now, before any scenario runs (a binding that does
        not load is said by each scenario bound to it)."""
        from .userpipeline import PipelineError

        checkout = self.checkout
        for target in dict.fromkeys(targets):
            if checkout is not None and isinstance(target, str) and target not in self._loaded:
                try:
                    self._loaded[target] = checkout.load(target)
                except PipelineError as exc:  # said by each scenario bound to it
                    self._loaded[target] = exc

    def run(self, scenario: m.Scenario, target: Any, run: Callable[..., ScenarioResult], **kwargs: Any
            ) -> ScenarioResult:
        """`scenario` run against `target` by `run` from its previous version's checkpoint, or as usual when
        its contract has none; PipelineError when the ref's version does not load."""
        from .upgrade import NewVersion

        previous, name = self.of(scenario, target)
        if previous is None:
            return run(scenario, target, **kwargs)
        if kwargs.get("rerun") and self.repeat is not None:  # its re-run command runs it across the change too
            kwargs["rerun"] += (f" {self.repeat[1]} {shlex.quote(self.ref)}" if self.ref is not None else
                                f" {self.repeat[0]} {shlex.quote(scenario.contract.name + '=' + str(previous))}")
        return run(scenario, target, crossing=NewVersion(previous, name), **kwargs)

    def close(self) -> None:
        if self.checkout is not None:
            self.checkout.remove()


class GitCheckout:
    """A git ref checked out beside the working tree (`git worktree add --detach` into a temporary folder),
    and pipelines loaded from it in isolation from the current code: the binding's top-level package
    (or module) is imported anew from the checkout, under its own name, then the current one is put back
    in `sys.modules`. Limits (docs/upgrade.md): only that package comes from the ref; a module the old
    code imports later (inside a function, while the query is built) or that Spark's Python workers
    import by name is the current one."""

    def __init__(self, ref: str, start: str):
        from .userpipeline import PipelineError

        self.ref = ref
        self.root = Path(self._git(["rev-parse", "--show-toplevel"], start,
                                   f"--previous-ref {ref}: {start} is not in a git repository").strip())
        self._git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], str(self.root),
                  f"--previous-ref {ref}: no commit {ref!r} in the git repository {self.root}")
        self.folder = Path(tempfile.mkdtemp(prefix="eventtime-previous-"))
        try:
            self._git(["worktree", "add", "--detach", str(self.folder / "tree"), ref], str(self.root),
                      f"--previous-ref {ref}: git cannot check out {ref!r}")
        except PipelineError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.tree = self.folder / "tree"
        atexit.register(self.remove)

    @staticmethod
    def _git(args: list[str], cwd: str, what: str) -> str:
        from .userpipeline import PipelineError

        try:
            done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PipelineError(f"{what} ({exc})") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise PipelineError(what + (f" (git: {said[-1]})" if said else ""))
        return done.stdout

    def remove(self) -> None:
        """Remove the checkout (and git's record of it); nothing when it is gone already."""
        if not self.folder.exists():
            return
        subprocess.run(["git", "worktree", "remove", "--force", str(self.tree)], cwd=str(self.root),
                       capture_output=True, timeout=120, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=str(self.root), capture_output=True, timeout=120, check=False)

    def load(self, target: str) -> Any:
        """The pipeline `target` names, as the ref has it; raises PipelineError saying why not."""
        from .userpipeline import PipelineError, _is_pipeline_ref, resolve_pipeline

        if target.endswith(":__main__"):
            raise PipelineError(f"--previous-ref {self.ref}: a script job bound as a module ({target}) is run by "
                                "its name, which is the current code's; bind it by its path (jobs/job.py)")
        if _is_pipeline_ref(target):  # a Spark Declarative Pipeline: the same spec (or folder) at the ref
            then = self._in_tree(Path(os.path.abspath(target)), target)
            if not then.exists():
                raise PipelineError(f"--previous-ref {self.ref}: {target} does not exist at {self.ref}")
            at_ref = str(then) + ("/" if then.is_dir() else "")  # a folder is bound with its `/`
            return resolve_pipeline(at_ref)
        if target.endswith(".py"):
            then = self._in_tree(Path(os.path.abspath(target)), target)
            if not then.is_file():
                raise PipelineError(f"--previous-ref {self.ref}: {target} does not exist at {self.ref}")
            return resolve_pipeline(str(then))
        module_name = target.partition(":")[0] if ":" in target else target.rpartition(".")[0]
        top = module_name.split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        if spec is None or (spec.origin is None and not spec.submodule_search_locations):
            raise PipelineError(f"--previous-ref {self.ref}: cannot find module {top!r} of {target} in the current "
                                "code (is the project installed, or its folder on PYTHONPATH?)")
        where = Path(next(iter(spec.submodule_search_locations)) if spec.submodule_search_locations
                     else str(spec.origin))
        base = self._in_tree(where.parent, target)  # the folder the package (or module) is imported from
        if not (base / where.name).exists():
            raise PipelineError(f"--previous-ref {self.ref}: {top!r} ({where.relative_to(self.root)}) does not "
                                f"exist at {self.ref}")
        mine = {k: sys.modules.pop(k) for k in list(sys.modules) if k == top or k.startswith(top + ".")}
        sys.path.insert(0, str(base))
        importlib.invalidate_caches()
        try:
            return resolve_pipeline(target)
        finally:
            for k in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
                del sys.modules[k]  # the ref's modules live on in the functions that use them
            sys.modules.update(mine)
            sys.path.remove(str(base))
            importlib.invalidate_caches()

    def _in_tree(self, now: Path, target: str) -> Path:
        """Where `now` (a path in the current working tree) is in the ref's checkout."""
        from .userpipeline import PipelineError

        try:
            return self.tree / now.resolve().relative_to(self.root.resolve())
        except ValueError:
            raise PipelineError(f"--previous-ref {self.ref}: {target} is loaded from {now}, outside the git "
                                f"repository {self.root}: only the repository's own code has a previous version "
                                "there") from None


def add_options(parser: Any, *, binding_only: bool = False) -> None:
    """`eventtime run`'s (and certify's) options of a run across a change; `binding_only`: `--previous`
    alone (watch: a git ref's or another environment's version would not follow the edits it re-runs)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--previous", action="append", default=[], metavar="CONTRACT=MODULE:FUNCTION",
                       help="run each scenario of CONTRACT up to its first start/restart with this previous version, "
                            "then restart from its checkpoint with the current one (repeatable; docs/upgrade.md)")
    if binding_only:
        return
    group.add_argument("--previous-ref", metavar="REF", default=None,
                       help="the previous version is each scenario's own binding as the git ref REF has it "
                            "(e.g. origin/main in a pull request's CI; docs/upgrade.md)")
    group.add_argument("--previous-python", metavar="PATH", default=None,
                       help="a new Spark: run each scenario up to its first start/restart on the Spark of another "
                            "environment (its python, e.g. .venv-spark35/bin/python), then restart from its "
                            "checkpoint on this one (docs/upgrade.md)")


def from_options(previous: Sequence[str], ref: str | None, option: str = "--previous",
                 repeat: tuple[str, str] | None = ("--previous", "--previous-ref")) -> Previous | None:
    """The run's Previous from the options (None: no run across a change; `repeat`: `Previous`'s); raises
    SettingsError or PipelineError saying what is wrong."""
    if ref is not None:
        return Previous(ref=ref, repeat=repeat)
    bindings = parse_previous(previous, option)
    return Previous(bindings, repeat=repeat) if bindings else None
