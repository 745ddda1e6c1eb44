"""A project's eventtime settings and the rules both faces apply to them (the pytest plugin and the
`eventtime` command), each rule written once here; a face words a SettingsError as its usage error.

The settings live where pytest keeps its own: `[tool.pytest.ini_options]` in pyproject.toml, or
`[pytest]` in pytest.ini, .pytest.ini or tox.ini, or `[tool:pytest]` in setup.cfg, found as pytest
finds its file (the first of those, in that order, in the starting folder or the nearest folder above
it that has one). The keys both faces read:

    eventtime_pipelines   one binding per line: CONTRACT = MODULE:FUNCTION, or
                          CONTRACT[FOLDER] = MODULE:FUNCTION for the scenario files under FOLDER
                          (relative to the file's folder); a script job or a Spark Declarative
                          Pipeline by its path (jobs/job.py, pipelines/clicks/spark-pipeline.yml or
                          pipelines/clicks/), from the file's folder
    eventtime_contracts   folders of *.contract.yaml files (relative to the file's folder)
    eventtime_timeout     bound on each wait for Spark, seconds
    eventtime_master      (pytest) the Spark master; `eventtime` takes --master
    eventtime_remote      (pytest) a Spark Connect URL; `eventtime` takes --remote
    eventtime_warm        true: runs attach to a warm Spark kept between runs (`warm_wanted`)
    eventtime_allow_not_applicable
                          contracts that may have nothing judged in a run (`nothing_judged`)
    pythonpath            folders put on the import path (pytest's own key; relative to the file's folder)

On the command line, `--pipeline CONTRACT=MODULE:FUNCTION` (`eventtime`) and `--eventtime-pipeline
CONTRACT=MODULE:FUNCTION` (pytest) override the file's binding of that contract; `--timeout` and
`--eventtime-timeout` override its timeout; contract folders given on the command line are added to
the file's. Where Spark is: a Connect URL when one is given, else SPARK_REMOTE unless a master is
given, else a Spark in this process (`spark_target`).

What runs for a scenario: the pipeline bound to its contract, nearest folder first. With none bound,
a contract of the user's own runs the implementations its file declares (`implementations:`); a
bundled contract runs the kit's own implementations only for a scenario of the bundled suite (when
asked for: `eventtime run` on the suite, `certify` without `--pipeline`); anything else is an error
naming the contract and how to bind it, never a green run that tested nobody's code.

What a green run means: every contract and implementation the run bound had something judged. One whose
every scenario was not applicable (a newer Spark required, `@implementation(supports=...)` excluding
them all, a run across Spark lines none of them can take) fails the run, naming each scenario and why
(`nothing_judged`), unless the user said it is expected: `--allow-not-applicable CONTRACT` (`eventtime`),
`--eventtime-allow-not-applicable CONTRACT` (pytest) or the key eventtime_allow_not_applicable.
"""
from __future__ import annotations

import configparser
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from eventtime.harness.errors import EventtimeError
from eventtime.harness.waits import DEFAULT_TIMEOUT

__all__ = ["SettingsError", "IniFile", "find_ini", "project_paths", "parse_binding", "parse_bindings", "nearest", "is_target",
           "is_path_target", "path_from",
           "default_targets", "unbound_message", "positive_seconds", "checked_master", "spark_target",
           "contract_folders", "DEFAULT_TIMEOUT", "warm_wanted", "WARM_KEY", "ALLOW_NA_KEY", "allowed_not_applicable",
           "Unjudged", "nothing_judged", "contracts_under", "unknown_contract_message", "spark_conf_pairs"]

_BINDING = re.compile(r"^\s*(?P<contract>[A-Za-z_][A-Za-z0-9_]*)(?:\s*\[(?P<under>[^\]]+)\])?\s*=\s*(?P<target>\S+)\s*$")
# module:function, a script's path, or a Spark Declarative Pipeline: its spec's path or its folder's (ending in /)
_TARGET = re.compile(r"^(?:[A-Za-z_][\w.]*:[A-Za-z_][\w.]*|[^\s:=]+\.py|(?:[^\s:=]*/)?spark-pipeline\.ya?ml|[^\s:=]+/)$")
_PIPELINE_SPEC = re.compile(r"^(?:[^\s:=]*/)?spark-pipeline\.ya?ml$|^[^\s:=]+/$")

# (contract, folder or None) -> (pipeline: 'module:function' or a callable, where it was given)
Bindings = dict[tuple[str, str | None], tuple[Any, str]]


WARM_KEY = "eventtime_warm"
# said after a wait on Spark ran out, by every face: where the bound is set
TIMEOUT_SETTING = ("the bound on each wait for Spark is --timeout SECONDS (eventtime run), --eventtime-timeout or "
                   "the ini key eventtime_timeout (pytest); a loaded machine may need more")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def warm_wanted(option: bool | None, ini_value: str | None, ini_where: str,
                environ: Mapping[str, str] | None = None) -> bool:
    """Whether a run attaches to a warm Spark (eventtime.harness.warm): the command line's --warm /
    --cold (`eventtime`) or --eventtime-warm / --eventtime-cold (pytest), else the EVENTTIME_WARM
    environment variable, else the ini key eventtime_warm; off by default. Off in CI (CI set) unless the
    command line asks: a CI job runs once, and a daemon would outlive it on the runner."""
    import os

    env = os.environ if environ is None else environ
    if option is not None:
        return option
    if env.get("CI"):
        return False
    for raw, where in ((env.get("EVENTTIME_WARM"), "EVENTTIME_WARM"), (ini_value, ini_where)):
        if raw is None:
            continue
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise SettingsError(f"{where}: {raw!r} is not a yes/no value (true or false)")
    return False


ALLOW_NA_KEY = "eventtime_allow_not_applicable"
_CONTRACT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def allowed_not_applicable(values: Iterable[str], where: str) -> frozenset[str]:
    """The contracts a run may leave with nothing judged (every scenario not applicable): names given on
    the command line or in the ini key, split on commas and blanks; `*` allows every contract."""
    out = set()
    for value in values:
        for name in re.split(r"[\s,]+", str(value).strip()):
            if not name:
                continue
            if name != "*" and not _CONTRACT_NAME.match(name):
                raise SettingsError(f"{where}: {name!r} is not a contract's name (or * for every contract)")
            out.add(name)
    return frozenset(out)


@dataclass(frozen=True)
class Unjudged:
    """A contract and implementation of a run that had nothing judged: every scenario not applicable."""

    contract: str
    implementation: str
    scenarios: tuple[tuple[str, str, str], ...]  # (scenario, its file, why it was not applicable)

    def message(self, option: str, ini_where: str = ALLOW_NA_KEY) -> str:
        """The one wording of the rule; `option` is the face's own (--allow-not-applicable, pytest's
        --eventtime-allow-not-applicable)."""
        n = len(self.scenarios)
        lines = [f"contract {self.contract!r} [{self.implementation}]: nothing judged: "
                 f"{'its one scenario was' if n == 1 else f'all {n} of its scenarios were'} not applicable, so this run "
                 "tested none of its code:"]
        lines += [f"  {name} ({file}): {why}" for name, file, why in self.scenarios]
        lines.append(f"  if that is what you expect of this run, say so: {option} {self.contract} (or the key "
                     f"{ini_where} in the project's pytest settings)")
        return "\n".join(lines)


def nothing_judged(records: Iterable[tuple[str, str, str, str, bool, str | None]],
                   allowed: Iterable[str] = ()) -> list[Unjudged]:
    """The contracts and implementations of a run with nothing judged, in the order they first came, from
    each result's (contract, implementation, scenario, file, judged, reason), `judged` false for a result
    not applicable; none of those `allowed` (contract names, or `*`). A contract with a scenario that
    passed, failed or erred was judged."""
    allow = set(allowed)
    groups: dict[tuple[str, str], list[tuple[str, str, bool, str | None]]] = {}
    for contract, implementation, scenario, file, judged, reason in records:
        groups.setdefault((contract, implementation), []).append((scenario, file, judged, reason))
    out = []
    for (contract, implementation), rows in groups.items():
        if "*" in allow or contract in allow or any(judged for _, _, judged, _ in rows):
            continue
        out.append(Unjudged(contract, implementation, tuple((s, f, r or "not applicable") for s, f, _, r in rows)))
    return out


class SettingsError(EventtimeError, ValueError):
    """A setting that cannot be used: the message names where it came from and what is wrong."""


def is_target(text: str) -> bool:
    """Whether `text` is a pipeline reference: 'module:function', a script job's path ('jobs/job.py'), or a
    Spark Declarative Pipeline's spec ('pipelines/clicks/spark-pipeline.yml') or folder ('pipelines/clicks/')."""
    return bool(_TARGET.match(text))


def is_path_target(text: str) -> bool:
    """Whether `text` names a file or folder (a script job, a pipeline spec): in the settings file it is
    from the file's folder, on the command line from where the run starts."""
    return text.endswith(".py") or bool(_PIPELINE_SPEC.match(text))


def path_from(folder: Path, target: str, *, relative: bool = False) -> str:
    """A path binding (`is_path_target`) given from `folder` (the settings file's), as a path from here:
    absolute, or `relative` to the working folder; a pipeline folder keeps its trailing `/`."""
    import os

    path = os.path.relpath(folder / target) if relative else str(folder / target)
    return path + "/" if target.endswith("/") and not path.endswith("/") else path


def parse_binding(value: str, where: str) -> tuple[str, str | None, str]:
    """'CONTRACT=MODULE:FUNCTION' or 'CONTRACT[FOLDER]=MODULE:FUNCTION' -> (contract, folder or None, target)."""
    m = _BINDING.match(value)
    if not m or not _TARGET.match(m.group("target")):
        raise SettingsError(f"{where}: {value!r} is not CONTRACT=MODULE:FUNCTION or "
                            "CONTRACT[FOLDER]=MODULE:FUNCTION (e.g. tumbling_count=my_jobs.windows:count; "
                            "a script job: CONTRACT=path/to/job.py or CONTRACT=package.module:__main__; a Spark "
                            "Declarative Pipeline: CONTRACT=path/to/spark-pipeline.yml or its folder, "
                            "CONTRACT=path/to/folder/)")
    under = m.group("under").strip().strip("/") if m.group("under") else None
    return m.group("contract"), under, m.group("target")


def parse_bindings(values: Iterable[str], where: str) -> Bindings:
    """Every binding of `values` (blank ones skipped); one contract bound twice for one folder is an error."""
    out: Bindings = {}
    for value in values:
        if not value.strip():
            continue
        contract, under, target = parse_binding(value, where)
        key = (contract, under)
        if key in out and out[key][0] != target:
            folder = f" for {under}" if under else ""
            raise SettingsError(f"{where}: contract {contract!r} is bound twice{folder}: {out[key][1]!r} and "
                                f"{value.strip()!r}; bind it once (or per folder: CONTRACT[FOLDER]=...)")
        out[key] = (target, value.strip())
    return out


def nearest(level: Mapping[tuple[str, str | None], tuple[Any, str]], contract: str, scenario: Path | None,
            root: Path) -> Any:
    """The binding of `contract` in one set of bindings for the folder nearest above the scenario file
    (a folder is relative to `root`); a binding without a folder applies everywhere; None if none."""
    best, depth = None, -1
    for (name, under), (target, _) in level.items():
        if name != contract:
            continue
        if under is None:
            if depth < 0:
                best, depth = target, 0
            continue
        if scenario is None:
            continue
        folder = (root / under).resolve()
        try:
            scenario.resolve().relative_to(folder)
        except ValueError:
            continue
        if len(folder.parts) > depth:
            best, depth = target, len(folder.parts)
    return best


def spark_conf_pairs(values: Iterable[str] | None, where: str) -> dict[str, str]:
    """`KEY=VALUE` Spark SQL settings for the queries (`--spark-conf` of `eventtime`,
    `--eventtime-spark-conf` of pytest: e.g. `spark.sql.ansi.enabled=false` to reproduce Spark 3's
    behaviour on Spark 4), as a mapping; the later of two values of one key wins; a value without `=` is
    an error. A scenario's own `conf` applies over them (docs/scenario-format.md, *Top-level keys*)."""
    out: dict[str, str] = {}
    for item in values or ():
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"{where} takes KEY=VALUE (a Spark SQL setting, e.g. spark.sql.ansi.enabled=false), "
                                f"got {item!r}")
        out[key.strip()] = value.strip()
    return out


def positive_seconds(raw: Any, where: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not value > 0:
        raise SettingsError(f"{where}: {raw!r} is not a positive number of seconds")
    return value


def checked_master(text: str, where: str) -> str:
    """A Spark master URL as Spark takes it (local[N], local-cluster[W,C,M], spark://HOST:PORT)."""
    from eventtime.harness.cluster import MasterURLError, check_master

    try:
        return check_master(text)
    except MasterURLError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def spark_target(master: str | None, remote: str | None, *, master_where: str, remote_where: str) -> str | None:
    """The Spark Connect URL a run uses, or None for a Spark in this process (at `master`): `remote` when
    given, else the SPARK_REMOTE environment variable unless a master is given. A master and a remote
    both given, or a URL that is not sc://HOST:PORT, is a SettingsError saying where it came from."""
    from eventtime.harness.connect import check_remote, remote_from_environment

    if remote and master:
        raise SettingsError(f"give either {master_where} (a Spark in this process) or {remote_where} "
                            "(Spark Connect), not both")
    where = remote_where
    if not remote and not master:
        remote, where = remote_from_environment(), "SPARK_REMOTE"
    if not remote:
        return None
    try:
        return check_remote(remote)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def contract_folders(folders: Iterable[Path | str], where: str) -> list[Path]:
    """Folders of *.contract.yaml files, each of which must be a folder."""
    out = [Path(f) for f in folders]
    for folder in out:
        if not folder.is_dir():
            raise SettingsError(f"{where}: {folder} is not a folder")
    return out


def default_targets(contract: Any, scenario_file: Path | str | None) -> tuple[str, ...]:
    """What runs for a scenario whose contract nobody bound: a user's contract's declared
    implementations; a bundled contract's only for a scenario of the bundled suite; else nothing."""
    if not contract.bundled:
        return tuple(contract.implementations)
    return tuple(contract.implementations) if scenario_file is not None and in_suite(Path(scenario_file)) else ()


def in_suite(path: Path) -> bool:
    """Whether `path` is a file of the bundled suite: of the installed package, or of the kit's own
    source tree beside an installed copy (a checkout's `scenarios/` package, e.g. under tox), the
    same file's bytes at the same place."""
    from eventtime.scenarios import SUITE_DIR

    path, suite = path.resolve(), Path(SUITE_DIR).resolve()
    try:
        path.relative_to(suite)
        return True
    except ValueError:
        pass
    for folder in path.parents:
        if folder.name == suite.name and (folder / "__init__.py").is_file():
            twin = suite / path.relative_to(folder)
            try:
                return twin.is_file() and twin.read_bytes() == path.read_bytes()
            except OSError:
                return False
    return False


_SKIP_DIRS = {"node_modules", "__pycache__", "build", "dist", "site-packages"}


def contracts_under(root: Path) -> frozenset[str]:
    """The contract names the `*.contract.yaml` files under `root` declare (hidden folders, virtual
    environments and build output skipped): what a binding may name besides the bundled and registered
    contracts and those of the contract folders."""
    import os

    from eventtime.contractfile import CONTRACT_SUFFIXES, ContractInvalid, load_contract_file
    from eventtime.registry import declared_name

    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                   and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))]
        for name in files:
            if name.endswith(CONTRACT_SUFFIXES):
                try:
                    found.add(load_contract_file(os.path.join(folder, name)).name)
                except ContractInvalid:  # its problems are reported with the scenarios that use it: a
                    found.add(declared_name(Path(folder, name)))  # binding of it is no unknown contract
    return frozenset(found)


def unknown_contract_message(name: str, where: str, contracts: Iterable[str], under: str) -> str | None:
    """None when `name` is one of `contracts`; else the error for a binding of a contract nobody declares,
    with the closest name (difflib, as pytest suggests a misspelt option) and the accepted ones."""
    from eventtime.problems import did_you_mean

    known = sorted(set(contracts))
    if name in known:
        return None
    return (f"{where}: unknown contract {name!r}{did_you_mean(name, known)}; accepted: {', '.join(known)} "
            f"(bundled, registered, or declared by a *.contract.yaml file under {under})")


def unbound_message(contract: Any, display: str) -> str:
    """Why a scenario cannot run unbound, and every way to bind its contract."""
    name = contract.name
    if getattr(contract, "model_only", None):  # nothing to bind: no Spark run judges it
        return (f"{display}: contract {name!r} is model only ({contract.model_only}); no Spark run judges its "
                f"scenarios: `eventtime check-model {display}` does")
    bundled = (f" (the kit's own implementations of the bundled contract {name!r} run only for the bundled suite: "
               f"`eventtime certify --contract {name}`)") if contract.bundled else ""
    return (f"{display}: no pipeline is bound to contract {name!r}{bundled}; bind one with a line "
            f"'{name} = MODULE:FUNCTION' in the ini key eventtime_pipelines (pyproject.toml [tool.pytest."
            f"ini_options] or pytest.ini, read by pytest and `eventtime run`), on the command line with "
            f"--pipeline {name}=MODULE:FUNCTION (eventtime) or --eventtime-pipeline {name}=MODULE:FUNCTION "
            f"(pytest), or with bind({name!r}, 'MODULE:FUNCTION') in conftest.py (pytest)")


# -- the file -------------------------------------------------------------------------------------------
@dataclass
class IniFile:
    """The settings file found for a run: its path and its keys' raw values (strings, or lists from TOML)."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent

    def where(self, key: str) -> str:
        return f"{self.path}: {key}"

    def lines(self, key: str) -> list[str]:
        """A linelist key: one value per line (an ini file) or per list item (TOML)."""
        raw = self.values.get(key)
        if raw is None:
            return []
        items = raw if isinstance(raw, list) else str(raw).splitlines()
        return [str(i).strip() for i in items if str(i).strip()]

    def paths(self, key: str) -> list[Path]:
        """A paths key, relative to the file's folder: split like a shell line (an ini file) or a TOML list."""
        raw = self.values.get(key)
        if raw is None:
            return []
        items = raw if isinstance(raw, list) else shlex.split(str(raw))
        return [self.root / str(i) for i in items]

    def text(self, key: str) -> str | None:
        raw = self.values.get(key)
        return None if raw is None or str(raw).strip() == "" else str(raw).strip()


def project_paths(start: Path) -> list[Path] | None:
    """Where a run given no PATH looks in a user's project: the folders pytest collects (`testpaths`),
    else the project's root; None outside a project that binds pipelines or names contract folders
    (there a run with no PATH is the bundled suite's)."""
    ini = find_ini(start)
    if ini is None or not (ini.lines("eventtime_pipelines") or ini.lines("eventtime_contracts")):
        return None
    return ini.paths("testpaths") or [ini.root]


_CANDIDATES = (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("pyproject.toml", None),
               ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))


def find_ini(start: Path) -> IniFile | None:
    """The settings file pytest would read for a run started at `start` (a folder or a file): in that
    folder or the nearest above it, the first of pytest.ini, .pytest.ini, pyproject.toml with
    [tool.pytest.ini_options], tox.ini with [pytest], setup.cfg with [tool:pytest]. A file that does
    not parse is a SettingsError naming it."""
    folder = start.resolve()
    if not folder.is_dir():
        folder = folder.parent
    for here in (folder, *folder.parents):
        for name, section in _CANDIDATES:
            path = here / name
            if not path.is_file():
                continue
            values = _read(path, section)
            if values is not None:
                return IniFile(path, values)
    return None


def _read(path: Path, section: str | None) -> dict[str, Any] | None:
    if section is None:
        try:
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover - Python 3.10
                import tomli as tomllib
            doc = tomllib.loads(path.read_text(encoding="utf-8"))
        except Exception as exc:  # noqa: BLE001 - tomllib.TOMLDecodeError, or unreadable
            raise SettingsError(f"{path}: cannot be read as TOML: {exc}") from None
        table = doc.get("tool", {}).get("pytest", {}).get("ini_options")
        return dict(table) if isinstance(table, dict) else None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as exc:
        raise SettingsError(f"{path}: cannot be read as an ini file: {exc}") from None
    if not parser.has_section(section):
        return {} if path.name in ("pytest.ini", ".pytest.ini") else None
    return dict(parser.items(section))
