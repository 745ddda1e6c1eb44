"""Which contract a name means: bundled contract files, the user's contract files, contracts from Python.

A scenario's `contract: NAME` is looked up, in this order:
1. `*.contract.yaml` files in the scenario file's folder and each folder above it, up to the project's
   root (the first folder holding `pyproject.toml`, `setup.cfg`, `tox.ini` or `.git`);
2. `*.contract.yaml` files in the folders given with `--contracts DIR` (CLI) or `eventtime_contracts` (ini);
3. contracts registered from Python (`register_contract(Contract)`, the pytest hook
   `pytest_eventtime_contracts`);
4. the bundled contracts (`eventtime list`), whose files sit in the bundled suite's folder.
A name is one contract: two files (or a file and a registered contract) that declare one name are an
error naming both places, and a user's contract cannot take a bundled contract's name, so the
executable model of a bundled contract never writes expectations for someone else's pipeline.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from eventtime.harness.errors import EventtimeError

from .contractfile import CONTRACT_SUFFIXES, ContractInvalid, load_contract_file
from .contracts import Contract, ValueRange
from .problems import Problem

__all__ = ["CONTRACTS", "get_contract", "register_contract", "registered_contracts", "ContractLookup",
           "ContractConflict", "contracts_markdown", "bundled_contract_files"]

_ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "tox.ini", ".git")


class ContractConflict(EventtimeError, ValueError):
    """Two places declare one contract name."""


def bundled_contract_files() -> list[Path]:
    from eventtime.scenarios import SUITE_DIR

    return sorted(p for p in Path(SUITE_DIR).iterdir() if p.name.endswith(CONTRACT_SUFFIXES))


class _Bundled(Mapping[str, Contract]):
    """The bundled contracts, read from their files on first use."""

    _loaded: dict[str, Contract] | None = None

    def _all(self) -> dict[str, Contract]:
        if self._loaded is None:
            from eventtime.scenarios import display_path

            loaded: dict[str, Contract] = {}
            for path in bundled_contract_files():
                contract = load_contract_file(path, display_path=display_path(path), bundled=True)
                if contract.name in loaded:  # pragma: no cover - the suite's own files
                    raise ContractConflict(f"bundled contract {contract.name!r} is declared twice")
                loaded[contract.name] = contract
            self._loaded = loaded
        return self._loaded

    def __getitem__(self, name: str) -> Contract:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


CONTRACTS: Mapping[str, Contract] = _Bundled()
_REGISTERED: dict[str, Contract] = {}


def register_contract(contract: Contract) -> Contract:
    """Make `contract` known by its name to every scenario loaded in this process (e.g. from a
    conftest.py); a name already bundled or registered as another contract is a ContractConflict."""
    if not isinstance(contract, Contract):
        raise TypeError(f"register_contract takes an eventtime Contract, not {type(contract).__name__}")
    if contract.name in CONTRACTS and CONTRACTS[contract.name] is not contract:
        raise ContractConflict(f"contract {contract.name!r} is bundled; give yours a name of its own")
    known = _REGISTERED.get(contract.name)
    if known is not None and known != contract:
        raise ContractConflict(f"contract {contract.name!r} is registered twice, with different declarations")
    _REGISTERED[contract.name] = contract
    return contract


def registered_contracts() -> dict[str, Contract]:
    return dict(_REGISTERED)


def get_contract(name: str) -> Contract | None:
    """A bundled or registered contract by name (no file search: see ContractLookup)."""
    return _REGISTERED.get(name) or CONTRACTS.get(name)


def _project_root(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        if any((folder / marker).exists() for marker in _ROOT_MARKERS):
            return folder
    return None


class ContractLookup:
    """Finds contracts for scenario files: near the file, in configured folders, registered, bundled."""

    def __init__(self, dirs: Sequence[str | Path] = (), extra: Iterable[Contract] = ()):
        self.dirs = [Path(d) for d in dirs]
        self.extra = {c.name: c for c in extra}
        self._files: dict[Path, Contract | ContractInvalid] = {}

    def _load(self, path: Path) -> Contract | ContractInvalid:
        path = path.resolve()
        if path not in self._files:
            from eventtime.scenarios import SUITE_DIR, display_path

            bundled = path.parent == Path(SUITE_DIR).resolve()
            try:
                self._files[path] = load_contract_file(path, display_path=display_path(path), bundled=bundled)
            except ContractInvalid as exc:
                self._files[path] = exc
        return self._files[path]

    def _folders(self, scenario_path: Path | None) -> list[Path]:
        folders: list[Path] = []
        if scenario_path is not None:
            start = scenario_path.resolve().parent
            root = _project_root(start)
            for folder in [start, *start.parents]:
                folders.append(folder)
                if folder == root:
                    break
            if root is None:  # outside any project: the scenario's own folder only
                folders = folders[:1]
        folders += [d.resolve() for d in self.dirs]
        return list(dict.fromkeys(folders))

    def candidates(self, scenario_path: Path | None) -> dict[str, list[tuple[str, Contract | ContractInvalid]]]:
        """Every contract name visible from `scenario_path`, with each place that declares it."""
        found: dict[str, list[tuple[str, Contract | ContractInvalid]]] = {}
        for folder in self._folders(scenario_path):
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                if path.name.endswith(CONTRACT_SUFFIXES) and path.is_file():
                    loaded = self._load(path)
                    name = loaded.name if isinstance(loaded, Contract) else declared_name(path)
                    found.setdefault(name, []).append((str(path), loaded))
        for source in (self.extra, _REGISTERED):
            for name, contract in source.items():
                found.setdefault(name, []).append(("registered from Python", contract))
        for name, contract in CONTRACTS.items():
            places = found.setdefault(name, [])
            if not any(c is contract or (isinstance(c, Contract) and c.bundled) for _, c in places):
                places.append(("bundled", contract))
        return found

    def resolve(self, name: str, scenario_path: Path | None) -> tuple[Contract | None, list[Problem] | str | None]:
        """(the contract, None), or (None, the reason: problems of its file, or a message)."""
        places = self.candidates(scenario_path).get(name)
        if not places:
            return None, None
        distinct: list[tuple[str, Contract | ContractInvalid]] = []
        for place, c in places:
            if not any(c is other or (isinstance(c, Contract) and c == other) for _, other in distinct):
                distinct.append((place, c))
        if len(distinct) > 1:
            bundled = any(isinstance(c, Contract) and c.bundled for _, c in distinct)
            where = "; ".join(_shown(p) for p, _ in distinct)
            if bundled:
                return None, (f"contract {name!r} is bundled and also declared in {where}: give your contract a "
                              "name of its own")
            return None, f"contract {name!r} is declared in more than one place: {where}"
        contract = distinct[0][1]
        if isinstance(contract, ContractInvalid):
            return None, contract.problems
        return contract, None

    def names(self, scenario_path: Path | None) -> list[str]:
        return sorted(self.candidates(scenario_path))


def _shown(place: str) -> str:
    if place in ("bundled", "registered from Python"):
        return place
    from eventtime.scenarios import display_path

    return display_path(place)


def declared_name(path: Path) -> str:
    """The name a contract file that does not load declares, read plainly (for messages)."""
    for line in path.read_text("utf-8", errors="replace").splitlines():
        if line.startswith("contract:"):
            return line.partition(":")[2].strip().strip("'\"")
    return path.name.split(".")[0]


def contracts_markdown() -> str:
    """The contracts reference as Markdown (what docs/contracts.md holds; a test keeps them equal)."""
    from eventtime.harness.features import FEATURES

    out = ["# Contracts", "",
           "Generated by `eventtime list --markdown` from the bundled contract files "
           "(`scenarios/*.contract.yaml`); do not edit by hand.", "",
           "A contract names a pipeline shape: its input sources, its parameters and the output columns it "
           "promises. Scenarios name a contract; implementations (`module:function`) are certified against "
           "every scenario of their contract with `eventtime certify --contract NAME --pipeline module:function`. "
           "Your own contracts are files like these in your repository (docs/scenario-format.md, *Contracts*). "
           "A source there may also be `kind: kafka` (the columns of Spark's Kafka source, `topic`, `headers`) "
           "or `kind: text` (one `value string` column) for a job that parses its payload "
           "(docs/scenario-format.md, *Kafka and text sources*); a kafka or text source's `value: {columns: ..., "
           "event_time: ...}` declares the JSON payload its job parses, from which `eventtime check-properties` "
           "generates records and lines (docs/properties.md, *The generated streams*); `generate:` narrows the values "
           "it draws for a column.",
           ""]
    for c in sorted(CONTRACTS.values(), key=lambda c: c.name):
        out += [f"## `{c.name}`", "", c.title + ".", "", c.description, ""]
        out.append("| | |")
        out.append("|---|---|")
        for s in c.sources:
            cols = ", ".join(f"`{col.name}` {col.type}" for col in s.columns)
            if s.kind != "rows":
                cols = f"kind {s.kind}" + (f", topic `{s.topic}`" if s.topic else "") + f": {cols}"
            tail = f"; event time `{s.event_time}`" if s.event_time else " (no event-time column needed)"
            out.append(f"| source `{s.name}` | {cols}{tail} |")
            for col, pool in s.generate:
                values = (f"from {pool.low} to {pool.high}" if isinstance(pool, ValueRange)
                          else "keys " + ", ".join(f"`{k}` (one of {', '.join(map(str, vs))})" for k, vs in pool)
                          if col == "headers" and s.kind == "kafka"
                          else "one of " + ", ".join(f"`{v}`" for v in pool))
                out.append(f"| generated `{s.name}.{col}` | {values} (`eventtime check-properties`) |")
        for p in c.params:
            kind = ("one of " + ", ".join(f"`{v}`" for v in p.choices)) if p.kind == "choice" else p.kind
            default = "required" if p.required else f"default `{p.default}`"
            conf = f"; sets `{p.conf}`" if p.conf else ""
            only = ("" if p.profile != "dataflow" else "; dataflow profile only" + (
                f" (model only away from its default: {p.model_only})" if p.model_only else ""))
            out.append(f"| param `{p.name}` | {p.doc}: {kind}, {default}{conf}{only} |")
        out.append("| output | " + ", ".join(f"`{col.name}` {col.type}" for col in c.output) + " |")
        if c.key:
            out.append("| key | " + ", ".join(f"`{k}`" for k in c.key) + " |")
        if c.requires:
            out.append("| requires | " + "; ".join(FEATURES[f] for f in c.requires) + " |")
        if c.model_only:
            out.append(f"| model only | {c.model_only} |")
        if c.reference:
            out.append(f"| reference | `{c.reference}` |")
        if c.alternatives:
            out.append("| also bundled | " + ", ".join(f"`{a}`" for a in c.alternatives) + " |")
        out.append("")
    return "\n".join(out)
