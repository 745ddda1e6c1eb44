"""The scenario files a command reads (the paths on its command line, or the bundled suite), the
project's settings it reads with them (`eventtime.projectconfig`, the file pytest reads) and what
runs for each scenario.

Shared by the commands (`run`, `certify`, `watch`, `validate`, `check-model`); problems are printed for a
person (a missing path, no files, each invalid file with its problems), never raised.
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..projectconfig import (ALLOW_NA_KEY, DEFAULT_TIMEOUT, IniFile, SettingsError, allowed_not_applicable,
                            contract_folders, default_targets, find_ini, is_path_target, is_target, nearest, parse_binding,
                            parse_bindings, path_from, positive_seconds)

__all__ = ["scenario_files", "load_scenarios", "load_scenario_files", "Project", "read_project", "rerun_command", "run_command",
           "allowed_unjudged"]


def scenario_files(paths: Sequence[str] | None, *, what: str = "to run",
                   allow_empty: bool = False) -> list[Path] | None:
    """The scenario files under `paths` (the bundled suite when there are none); None once a usage
    error (a missing path; no files, unless `allow_empty`) has been printed."""
    from ..loader import find_scenario_files

    if paths:
        files, missing = find_scenario_files(paths)
        for path in missing:
            print(f"eventtime: error: no such file or directory: {path}", file=sys.stderr)
        if missing:
            return None
        files = _reviewed(files, paths)
    else:
        from eventtime.scenarios import SUITE_DIR

        files, _ = find_scenario_files([SUITE_DIR])
    if not files and not allow_empty:
        print(f"eventtime: error: no scenario files (*.scenario.yaml) {what}", file=sys.stderr)
        return None
    return list(files)


def _reviewed(files: list[Path], paths: Sequence[str]) -> list[Path]:
    """`files` but the counterexamples `check-properties` wrote that a folder walk found (said on stderr, as the
    pytest plugin says them in its summary: eventtime.counterexamples); a file named on the command line runs."""
    from eventtime.scenarios import display_path

    from ..counterexamples import left_out_note, named, unreviewed

    left_out = [f for f in files if unreviewed(f) and not named(f, paths, Path.cwd())]
    if left_out:
        print(f"eventtime: {left_out_note(left_out, (display_path(f.parent) for f in left_out))}", file=sys.stderr)
    return [f for f in files if f not in left_out]


def load_scenarios(files: Sequence[Path], contract_dirs: Sequence[str | Path] = ()) -> tuple[list[Any], int]:
    """Load each file, printing every invalid one with its problems; returns (scenarios, invalid count).
    Contracts are found beside or above each file, in `contract_dirs`, registered or bundled."""
    loaded, invalid = load_scenario_files(files, contract_dirs)
    return [sc for _, sc in loaded], invalid


def load_scenario_files(files: Sequence[Path], contract_dirs: Sequence[str | Path] = ()
                        ) -> tuple[list[tuple[Path, Any]], int]:
    """As load_scenarios, with each scenario's file: ([(file, scenario)], invalid count)."""
    from eventtime.scenarios import display_path

    from ..loader import load_scenario
    from ..problems import FileInvalid
    from ..registry import ContractLookup

    lookup = ContractLookup(contract_dirs)
    scenarios, invalid = [], 0
    for f in files:
        try:
            scenarios.append((Path(f), load_scenario(f, display_path=display_path(f), contracts=lookup)))
        except FileInvalid as exc:
            invalid += 1
            print(exc, file=sys.stderr)
    return scenarios, invalid


@dataclass
class Project:
    """What a `run` or `watch` applies, the command line over the project's file (see projectconfig)."""

    root: Path  # the settings file's folder (the working directory without one): bindings' folders start here
    pipeline: str | None = None  # `--pipeline MODULE:FUNCTION`: every scenario runs against it
    cli_bindings: dict = field(default_factory=dict)  # `--pipeline CONTRACT[FOLDER]=MODULE:FUNCTION`
    file_bindings: dict = field(default_factory=dict)  # the file's eventtime_pipelines
    contract_dirs: list[str] = field(default_factory=list)  # the file's eventtime_contracts, then --contracts
    timeout: float = DEFAULT_TIMEOUT
    ini: IniFile | None = None

    def targets(self, scenario: Any, file: Path) -> list[str]:
        """The implementations `scenario` (read from `file`) runs against; [] when nothing is bound to its
        contract and it has no implementations of its own to run (projectconfig.default_targets)."""
        if self.pipeline:
            return [self.pipeline]
        name = scenario.contract.name
        bound = nearest(self.cli_bindings, name, file, self.root)  # as typed: a script's path from here
        if not bound:
            bound = nearest(self.file_bindings, name, file, self.root)
            if bound and is_path_target(bound) and not os.path.isabs(bound):
                # the file's script path is from the project's root, as pytest reads it: from here, that is
                bound = path_from(self.root, bound, relative=True)
        return [bound] if bound else list(default_targets(scenario.contract, file))


def read_project(paths: Sequence[str] | None, pipelines: Sequence[str] | None, contract_dirs: Sequence[str],
                 timeout: float | None) -> Project | None:
    """The settings of a run over `paths`: the file pytest would read for them (found from their common
    folder, or the working directory) under the command line's options. None once a usage error has
    been printed. The file's `pythonpath` folders and the working directory go on the import path, so
    `--pipeline`, a binding and a contract's `implementations:` import the same modules."""
    try:
        start = Path(os.path.commonpath([os.path.abspath(p) for p in paths])) if paths else Path.cwd()
        ini = find_ini(start)
        project = Project(root=ini.root if ini else Path.cwd(), ini=ini)
        for value in pipelines or ():
            if "=" in value:
                contract, under, target = parse_binding(value, "--pipeline")
                known = project.cli_bindings.get((contract, under))
                if known is not None and known[0] != target:
                    raise SettingsError(f"--pipeline: contract {contract!r} is bound twice: {known[1]!r} and {value!r}")
                project.cli_bindings[(contract, under)] = (target, value)
            elif not is_target(value):
                raise SettingsError(f"--pipeline: {value!r} is neither MODULE:FUNCTION (every scenario) nor "
                                    "CONTRACT=MODULE:FUNCTION (the scenarios of one contract)")
            elif project.pipeline not in (None, value):
                raise SettingsError(f"--pipeline: {project.pipeline!r} and {value!r} both for every scenario; give "
                                    "one, or bind each contract: --pipeline CONTRACT=MODULE:FUNCTION")
            else:
                project.pipeline = value
        if ini is not None:
            project.file_bindings = parse_bindings(ini.lines("eventtime_pipelines"), ini.where("eventtime_pipelines"))
            project.contract_dirs = [str(p) for p in contract_folders(ini.paths("eventtime_contracts"),
                                                                     ini.where("eventtime_contracts"))]
        project.contract_dirs += list(contract_dirs)
        _check_bound_contracts(project, ini, paths or ())
        if timeout is not None:
            project.timeout = positive_seconds(timeout, "--timeout")
        elif ini is not None and ini.text("eventtime_timeout") is not None:
            project.timeout = positive_seconds(ini.text("eventtime_timeout"), ini.where("eventtime_timeout"))
    except SettingsError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None
    for entry in [*(ini.paths("pythonpath") if ini else []), Path.cwd()]:
        if str(entry) not in sys.path:  # as `python -m` does for the working directory, pytest for pythonpath
            sys.path.insert(0, str(entry))
    return project


def allowed_unjudged(given: Sequence[str] | None, ini: IniFile | None) -> frozenset[str] | None:
    """The contracts a run may leave with nothing judged: `--allow-not-applicable` and the project file's
    eventtime_allow_not_applicable (projectconfig.nothing_judged); None once a usage error is printed."""
    try:
        out = allowed_not_applicable(given or (), "--allow-not-applicable")
        if ini is not None:
            out |= allowed_not_applicable(ini.lines(ALLOW_NA_KEY), ini.where(ALLOW_NA_KEY))
    except SettingsError as exc:
        print(f"eventtime: error: {exc}", file=sys.stderr)
        return None
    return out


def _check_bound_contracts(project: Project, ini: Any, paths: Sequence[str]) -> None:
    """A binding of a contract nobody declares is a usage error with the closest name, as pytest's
    (`projectconfig.unknown_contract_message`): a misspelt name would leave its scenarios unbound. Known:
    the bundled and registered contracts, the contract files under the project's root, under each PATH
    and beside each folder above a PATH (where a scenario's contract is looked up), and in the contract
    folders."""
    from ..contractfile import CONTRACT_SUFFIXES
    from ..projectconfig import contracts_under, unknown_contract_message
    from ..registry import CONTRACTS, declared_name, registered_contracts

    bound = [(c, "--pipeline") for c, _ in project.cli_bindings]
    if ini is not None:
        bound += [(c, ini.where("eventtime_pipelines")) for c, _ in project.file_bindings]
    if not bound:
        return
    known = set(CONTRACTS) | set(registered_contracts()) | contracts_under(project.root.resolve())
    for folder in project.contract_dirs:
        if Path(folder).is_dir():
            known |= contracts_under(Path(folder).resolve())
    for given in paths:
        start = Path(given).resolve()
        if start.is_dir():
            known |= contracts_under(start)
        for above in start.parents:
            try:
                known |= {declared_name(f) for f in above.iterdir() if f.name.endswith(CONTRACT_SUFFIXES)}
            except OSError:  # a folder that cannot be listed declares nothing we can see
                continue
    for contract, where in bound:
        message = unknown_contract_message(contract, where, known, str(project.root))
        if message is not None:
            raise SettingsError(message)


def rerun_command(scenario: Any, file: Path | None, implementation: str, args: Any) -> str:
    """`eventtime run` of this one scenario and implementation, as it runs pasted in this folder: the
    file as it is named if that names it from here (else its absolute path), and `run_command`'s rest."""
    file = file or Path(scenario.path)
    path = scenario.path if Path(scenario.path).resolve() == file.resolve() else str(file.resolve())
    return run_command(path, scenario.contract.name, implementation, args)


def run_command(path: str, contract: str, implementation: str, args: Any, more_contracts: Sequence[str] = ()) -> str:
    """`eventtime run PATH` with its pipeline and the options that decide its verdict (contract folders,
    `more_contracts` after them, Spark settings, the timeout): one form for every command that says how
    to run a file again."""
    # a spec, folder or script is bound to a contract by name (`--pipeline CONTRACT=path/`); a function alone
    words = ["eventtime", "run", path, "--pipeline", f"{contract}={implementation}"
             if is_path_target(implementation) and "=" not in implementation else implementation]
    for folder in dict.fromkeys([*map(str, getattr(args, "contracts", ()) or ()), *more_contracts]):
        words += ["--contracts", folder]
    for pair in getattr(args, "spark_conf", None) or ():
        words += ["--spark-conf", pair]
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout != DEFAULT_TIMEOUT:
        words += ["--timeout", f"{timeout:g}"]
    return " ".join(shlex.quote(w) for w in words)
