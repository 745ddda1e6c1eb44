"""pytest plugin: collect `*.scenario.yaml` files as tests, certify pipelines, fixtures for Spark.

Registered through the `pytest11` entry point `eventtime`. This module imports only pytest and the
standard library at import time: `pytest --help` starts no JVM and imports no pyspark. Everything
Spark-related is imported when a scenario runs.

Options and ini keys share the prefix `eventtime`:

    --eventtime-pipeline CONTRACT=MODULE:FUNCTION   ini: eventtime_pipelines (one per line)
    --eventtime-suite CONTRACT                      ini: eventtime_suite
    --eventtime-report-json PATH                    ini: eventtime_report_json
    --eventtime-timeout SECONDS                     ini: eventtime_timeout
    --eventtime-master URL                          ini: eventtime_master
    --eventtime-contracts DIR                       ini: eventtime_contracts (folders of *.contract.yaml)
    --eventtime-remote sc://HOST:PORT               ini: eventtime_remote (else SPARK_REMOTE, unless a master is set)
    --eventtime-allow-not-applicable CONTRACT       ini: eventtime_allow_not_applicable (a contract that may have
                                                    nothing judged; without it, such a contract fails the run)

The ini keys are read by `eventtime run` and `watch` too, with the same rules (eventtime.projectconfig:
bindings, the nearest folder's first, what runs when a contract is unbound).

In `conftest.py`: `from eventtime.pytest_plugin import bind; bind("tumbling_count", "jobs:count")`,
or `@bind("tumbling_count")` on a pipeline function, or the hook `pytest_eventtime_pipelines(config)`
returning {contract: pipeline}.

Fixtures: `eventtime_spark` (the session), `eventtime_scenario` (a scenario written in Python) and
`eventtime_record` (put a result you ran yourself into the JSON report).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pytest

from eventtime import projectconfig  # the rules both faces apply (standard library only)
from eventtime.harness.waits import DEFAULT_TIMEOUT
from eventtime.projectconfig import SettingsError

SUFFIXES = (".scenario.yaml", ".scenario.yml")
_RESULT_KEY = "eventtime_result"

# bind() runs while a conftest file is imported, before or after pytest_configure, and is not
# handed the config: it records here, and the session drains this into its own stash
# (`_Settings.binding`); pytest_unconfigure empties it, so no binding outlives its session.
# (contract, folder or None) -> (pipeline, where bind() was called)
_PENDING_BINDINGS: dict[tuple[str, str | None], tuple[Any, str]] = {}
_PENDING_ROOTS: dict[tuple[str, str | None], Path] = {}  # the folder of the conftest that called bind()


def bind(contract: str, pipeline: Any = None, *, under: str | None = None):
    """Bind `contract` to a pipeline (`"module:function"` or a callable) for this test run; with
    `under="tests/eu"`, only for the scenario files under that folder (relative to the rootdir).

    Used as a call (`bind("tumbling_count", "jobs.windows:count")`) or as a decorator
    (`@bind("tumbling_count")`). A contract bound twice for one folder is a usage error naming both
    places; the command line (`--eventtime-pipeline`) overrides every other binding.
    """
    import sys

    caller = sys._getframe(1)
    where = f"bind() at {caller.f_code.co_filename}:{caller.f_lineno}"
    # the name is checked when the session takes the binding (contracts from the hook are known then)
    _PENDING_ROOTS[(contract, under)] = Path(caller.f_code.co_filename).parent

    def record(target: Any) -> Any:
        known = _PENDING_BINDINGS.get((contract, under))
        if known is not None and known[0] is not target and known[0] != target:
            raise pytest.UsageError(f"contract {contract!r} is bound twice: {_label(known[0])} ({known[1]}) and "
                                    f"{_label(target)} ({where}); bind it once (or per folder: under=...)")
        _PENDING_BINDINGS[(contract, under)] = (target, where)
        return target

    if pipeline is None:
        return record
    if isinstance(pipeline, str) and not projectconfig.is_target(pipeline):
        raise pytest.UsageError(f"bind({contract!r}, {pipeline!r}): a pipeline is 'module:function' or a callable")
    return record(pipeline)


def _contracts(root: Path | None = None) -> list[str]:
    """Contract names a binding may name: bundled, registered from Python, and declared by the
    `*.contract.yaml` files under `root` (the rootdir; for bind(), the calling conftest's folder)."""
    from eventtime.registry import CONTRACTS, registered_contracts  # pure Python, no pyspark

    names = set(CONTRACTS) | set(registered_contracts())
    if root is not None:
        names |= _declared_under(root.resolve())
    return sorted(names)


@functools.lru_cache(maxsize=16)
def _declared_under(root: Path) -> frozenset[str]:
    from eventtime.projectconfig import contracts_under

    return contracts_under(root)


def _check_contract(name: str, where: str, root: Path | None = None, extra: Iterable[str] = ()) -> None:
    from eventtime.projectconfig import unknown_contract_message

    message = unknown_contract_message(name, where, set(_contracts(root)) | set(extra), str(root or "the rootdir"))
    if message is not None:
        raise pytest.UsageError(message)


def _hook_contracts(config: pytest.Config) -> list[Any]:
    """The contracts `pytest_eventtime_contracts` implementations return, checked: Contract objects,
    no bundled name, one declaration per name."""
    from eventtime.contracts import Contract
    from eventtime.registry import CONTRACTS

    found: dict[str, Any] = {}
    for result in config.hook.pytest_eventtime_contracts(config=config):
        for contract in result or ():
            if not isinstance(contract, Contract):
                raise pytest.UsageError(f"pytest_eventtime_contracts() returned {type(contract).__name__} "
                                        f"{contract!r}; it returns eventtime Contract objects")
            if contract.name in CONTRACTS:
                raise pytest.UsageError(f"pytest_eventtime_contracts(): contract {contract.name!r} is bundled; "
                                        "give yours a name of its own")
            if contract.name in found and found[contract.name] != contract:
                raise pytest.UsageError(f"pytest_eventtime_contracts(): contract {contract.name!r} is returned "
                                        "twice, with different declarations")
            found[contract.name] = contract
    return list(found.values())


# -- options ----------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("eventtime", "event-time scenarios on Spark (eventtime-conformance)")
    group.addoption("--eventtime-pipeline", action="append", default=[], metavar="CONTRACT=MODULE:FUNCTION",
                    help="bind a contract to the pipeline under test (repeatable)")
    group.addoption("--eventtime-suite", action="append", default=[], metavar="CONTRACT",
                    help="also run the bundled standard suite of CONTRACT against its bound pipeline (repeatable)")
    group.addoption("--eventtime-report-json", metavar="PATH", default=None,
                    help="write the scenario results as JSON (by the controller only under xdist)")
    group.addoption("--eventtime-timeout", metavar="SECONDS", default=None,
                    help=f"bound on each wait for Spark (default {DEFAULT_TIMEOUT:g})")
    group.addoption("--eventtime-spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark SQL setting for the queries, e.g. spark.sql.ansi.enabled=false (repeatable; "
                         "`eventtime run --spark-conf`; a scenario's own conf applies over it)")
    group.addoption("--eventtime-master", metavar="URL", default=None,
                    help="Spark master URL: local[N], local-cluster[W,C,M] or spark://HOST:PORT (default local[2])")
    parser.addini("eventtime_pipelines", type="linelist", default=[],
                  help="contract bindings, one 'CONTRACT = MODULE:FUNCTION' per line")
    parser.addini("eventtime_suite", type="args", default=[], help="contracts whose bundled suite to run")
    parser.addini("eventtime_report_json", default="", help="path of the JSON results file")
    parser.addini("eventtime_timeout", default=f"{DEFAULT_TIMEOUT:g}", help="bound on each wait for Spark, seconds")
    parser.addini("eventtime_master", default="", help="Spark master URL")
    group.addoption("--eventtime-warm", dest="eventtime_warm", action="store_true", default=None,
                    help="attach to a warm Spark kept between runs (started if none runs; local masters; docs/warm.md)")
    group.addoption("--eventtime-cold", dest="eventtime_warm", action="store_false",
                    help="start a Spark of this run's own (over EVENTTIME_WARM and the ini key eventtime_warm)")
    parser.addini(projectconfig.WARM_KEY, default="", help="true: attach to a warm Spark kept between runs")
    group.addoption("--eventtime-contracts", action="append", default=[], metavar="DIR",
                    help="a folder of *.contract.yaml files, besides those beside or above each scenario (repeatable)")
    parser.addini("eventtime_contracts", type="paths", default=[],
                  help="folders of *.contract.yaml files (relative to the ini file)")
    _add_remote_option(parser, group)
    from eventtime.snapshot_pytest import add_pytest_options

    add_pytest_options(group)
    group.addoption("--eventtime-allow-not-applicable", action="append", default=[], metavar="CONTRACT",
                    help="a contract whose scenarios may all be not applicable in this run (repeatable; * for every "
                         "contract); without it, a contract and pipeline with nothing judged fails the run")
    parser.addini(projectconfig.ALLOW_NA_KEY, type="args", default=[],
                  help="contracts whose scenarios may all be not applicable in a run (* for every contract)")
    from eventtime.teeth_pytest import add_pytest_option

    add_pytest_option(group)  # --eventtime-teeth
    group.addoption("--eventtime-previous", action="append", default=[], metavar="CONTRACT=MODULE:FUNCTION",
                    help="run each scenario of CONTRACT up to its first start/restart with this previous version, "
                         "then from its checkpoint with the bound one (repeatable; docs/upgrade.md)")
    group.addoption("--eventtime-previous-ref", metavar="REF", default=None,
                    help="the previous version is each contract's binding as the git ref REF has it (docs/upgrade.md)")
    group.addoption("--eventtime-previous-python", metavar="PATH", default=None,
                    help="a new Spark: each scenario's steps before its first start/restart run on the Spark of the "
                         "environment of this python, the rest on this one from its checkpoint (docs/upgrade.md)")


def pytest_addhooks(pluginmanager: Any) -> None:
    from eventtime import pytest_hooks

    pluginmanager.add_hookspecs(pytest_hooks)


class _Settings:
    def __init__(self, config: pytest.Config):
        self.hook_contracts = _hook_contracts(config)
        self.cli_bindings = self._bindings(config.getoption("eventtime_pipeline"), "--eventtime-pipeline",
                                           config.rootpath)
        self.ini_bindings = self._bindings(config.getini("eventtime_pipelines"), "ini eventtime_pipelines",
                                           config.rootpath)
        self.suites = list(dict.fromkeys(list(config.getini("eventtime_suite"))
                                         + list(config.getoption("eventtime_suite"))))
        for name in self.suites:
            _check_contract(name, "--eventtime-suite / ini eventtime_suite")  # bundled suites only
        raw_timeout = config.getoption("eventtime_timeout") or config.getini("eventtime_timeout")
        try:
            self.timeout = projectconfig.positive_seconds(raw_timeout, "--eventtime-timeout / ini eventtime_timeout")
            self.spark_conf = projectconfig.spark_conf_pairs(config.getoption("eventtime_spark_conf", None),
                                                             "--eventtime-spark-conf")
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        self._lookup: Any = None
        master = config.getoption("eventtime_master") or config.getini("eventtime_master") or None
        remote = config.getoption("eventtime_remote") or config.getini("eventtime_remote") or None
        try:
            self.contract_dirs = projectconfig.contract_folders(
                [*config.getini("eventtime_contracts"), *config.getoption("eventtime_contracts")],
                "--eventtime-contracts / ini eventtime_contracts")
            self.master = None if master is None else projectconfig.checked_master(
                master, "--eventtime-master / ini eventtime_master")
            self.remote = projectconfig.spark_target(self.master, remote,
                                                     master_where="--eventtime-master / ini eventtime_master",
                                                     remote_where="--eventtime-remote / ini eventtime_remote")
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.report_json = config.getoption("eventtime_report_json") or config.getini("eventtime_report_json") or None
        try:
            self.allowed = (projectconfig.allowed_not_applicable(config.getoption("eventtime_allow_not_applicable"),
                                                                 "--eventtime-allow-not-applicable")
                            | projectconfig.allowed_not_applicable(config.getini(projectconfig.ALLOW_NA_KEY),
                                                                   f"ini {projectconfig.ALLOW_NA_KEY}"))
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        try:
            self.warm = projectconfig.warm_wanted(config.getoption("eventtime_warm"),
                                                  config.getini(projectconfig.WARM_KEY) or None,
                                                  f"ini {projectconfig.WARM_KEY}")
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        self._hook_bindings: dict[tuple[str, str | None], tuple[Any, str]] | None = None
        # bind() calls of this session's conftest files: (contract, folder) -> (pipeline, where)
        self.conftest_bindings: dict[tuple[str, str | None], tuple[Any, str]] = {}
        self._resolved: dict[str, Any] = {}
        self.config = config
        self.crossings = _crossings(config)  # --eventtime-previous(-ref, -python): a run across a change

    def take_pending_bindings(self) -> None:
        """Move what bind() recorded since the last call into this session's bindings."""
        extra = [c.name for c in self.hook_contracts]
        for key, (_, where) in _PENDING_BINDINGS.items():
            _check_contract(key[0], where, _PENDING_ROOTS.get(key), extra=extra)
        self.conftest_bindings.update(_PENDING_BINDINGS)
        _PENDING_BINDINGS.clear()
        _PENDING_ROOTS.clear()

    def _bindings(self, values: list[str], where: str, root: Path) -> dict[tuple[str, str | None], tuple[Any, str]]:
        try:
            out = projectconfig.parse_bindings(values, where)
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        extra = [c.name for c in self.hook_contracts]
        for contract, _ in out:
            _check_contract(contract, where, root, extra=extra)
        return out

    @property
    def contracts(self) -> Any:
        """The ContractLookup every scenario of this run uses (its files read once)."""
        if self._lookup is None:
            from eventtime.registry import ContractLookup

            self._lookup = ContractLookup(self.contract_dirs, extra=self.hook_contracts)
        return self._lookup

    def binding(self, contract: str, scenario: Path | None = None) -> Any:
        """The pipeline bound to `contract` (a callable or 'module:function') for a scenario file at
        `scenario` (the binding of the nearest folder above it, else the contract's), or None.
        The command line overrides; an ini line and a conftest bind() or the hook for one contract
        and folder are a usage error naming both."""
        if self._hook_bindings is None:
            self._hook_bindings = {}
            for result in self.config.hook.pytest_eventtime_pipelines(config=self.config):
                for name, target in (result or {}).items():
                    _check_contract(name, "pytest_eventtime_pipelines()", self.config.rootpath,
                                    extra=[c.name for c in self.hook_contracts])
                    self._hook_bindings[(name, None)] = (target, "pytest_eventtime_pipelines()")
        self.take_pending_bindings()  # conftest files below the root are imported during collection
        levels = [("ini eventtime_pipelines", self.ini_bindings), ("the hook", self._hook_bindings),
                  ("conftest", self.conftest_bindings)]
        for key in {k for _, level in levels for k in level if k[0] == contract}:
            places = [(name, level[key]) for name, level in levels if key in level]
            targets = {id(t) if callable(t) else t for _, (t, _) in places}
            if len(targets) > 1 and key not in self.cli_bindings:
                both = " and ".join(f"{_label(t)} ({where})" for _, (t, where) in places)
                raise pytest.UsageError(f"contract {contract!r} is bound twice: {both}; bind it once "
                                        "(--eventtime-pipeline overrides for one run)")
        for level in (self.cli_bindings, self.ini_bindings, self._hook_bindings, self.conftest_bindings):
            found = self._nearest(level, contract, scenario)
            if found is not None:
                return found
        return None

    def _nearest(self, level: dict[tuple[str, str | None], tuple[Any, str]], contract: str,
                 scenario: Path | None) -> Any:
        """The binding of `contract` in one level for the folder nearest above `scenario`."""
        return projectconfig.nearest(level, contract, scenario, self.config.rootpath)

    def resolve(self, target: Any) -> Callable:
        if callable(target):
            return target
        if target not in self._resolved:
            from eventtime.userpipeline import PipelineError, resolve_pipeline

            ref = target
            if projectconfig.is_path_target(ref) and not Path(ref).is_absolute():  # a script or pipeline spec: from the root
                ref = projectconfig.path_from(self.config.rootpath, ref)
            try:
                self._resolved[target] = resolve_pipeline(ref)
            except PipelineError as exc:
                raise pytest.UsageError(f"eventtime: {exc}") from None
        return self._resolved[target]


# this session's state, in the config's stash (never in module globals: pytest may run sessions in one
# process, as pytester and IDEs do)
_SETTINGS = pytest.StashKey["_Settings"]()
_SPARK = pytest.StashKey[Any]()
_COLLECTOR = pytest.StashKey["_ResultsCollector"]()


def _settings(config: pytest.Config) -> _Settings:
    return config.stash[_SETTINGS]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "eventtime: an event-time scenario run on Spark (eventtime-conformance)")
    config.addinivalue_line("markers", "eventtime_suite: a scenario of the bundled standard suite")
    settings = _Settings(config)
    settings.take_pending_bindings()  # from the conftest files pytest imported before configuring
    config.stash[_SETTINGS] = settings
    if any(config.getoption(f"eventtime_snapshot{o}", None) for o in ("", "_yes", "_on_spark")):
        from eventtime.snapshot_pytest import register_pytest

        register_pytest(config, settings)
    if not hasattr(config, "workerinput"):  # xdist workers send their reports to the controller, which judges
        config.pluginmanager.register(_NothingJudged(settings.allowed), "eventtime-nothing-judged")
    if config.getoption("eventtime_teeth", False):
        from eventtime.teeth_pytest import register_pytest as register_teeth

        register_teeth(config)
    if settings.report_json and not hasattr(config, "workerinput"):  # xdist workers send their reports
        collector = _ResultsCollector(settings.report_json)
        config.stash[_COLLECTOR] = collector
        config.pluginmanager.register(collector, "eventtime-results")
    if settings.suites:  # collect the bundled suite like any directory given on the command line,
        from eventtime.scenarios import SUITE_DIR  # unless a file or item of it is (a re-run of one item)

        if not any(_in_suite(Path(config.invocation_params.dir, arg.split("::")[0])) for arg in config.args):
            config.args.append(str(SUITE_DIR))


# -- collection -------------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    settings = _settings(session.config)
    for contract in settings.suites:
        if settings.binding(contract) is None:
            raise pytest.UsageError(
                f"--eventtime-suite {contract}: no pipeline is bound to contract {contract!r}; bind one with "
                f"--eventtime-pipeline {contract}=MODULE:FUNCTION, the ini key eventtime_pipelines, or bind() "
                "in conftest.py")


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.name.endswith(SUFFIXES):
        from eventtime.counterexamples import named, unreviewed

        config = parent.config
        # a counterexample check-properties wrote is not a test until it is reviewed and moved: left out, and said
        # in the summary (eventtime.counterexamples); named on the command line, it runs
        if unreviewed(file_path) and not (config.args_source == pytest.Config.ArgsSource.ARGS
                                          and named(file_path, config.args, config.invocation_params.dir)):
            config.stash.setdefault(_LEFT_OUT, []).append(str(file_path))
            return None
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _label(target: Any) -> str:
    if callable(target):
        return getattr(target, "__name__", "pipeline")
    from eventtime.textreport import short_name

    return short_name(str(target))


class ScenarioFile(pytest.File):
    """One scenario file: one test item per pipeline bound to its contract."""

    def collect(self) -> Iterator[pytest.Item]:
        from eventtime.loader import load_scenario
        from eventtime.problems import FileInvalid  # a scenario's load reads contract files too

        from eventtime.scenarios import display_path

        if self.config.getoption("eventtime_snapshot", None):
            from eventtime.snapshot import load_scenario  # a check without a value: a hole the snapshot fills

        try:
            display = str(self.path.relative_to(self.config.rootpath))
        except ValueError:  # e.g. the bundled suite, installed elsewhere: `scenarios/...`
            display = display_path(self.path)
        settings = _settings(self.config)
        try:
            sc = load_scenario(self.path, display_path=str(display), contracts=settings.contracts)
        except FileInvalid as exc:
            raise InvalidScenario(str(exc)) from None
        bound = settings.binding(sc.contract.name, self.path)
        suite = bool(settings.suites) and _in_suite(self.path)
        if suite:  # --eventtime-suite: only the chosen contracts, only against the bound pipeline
            if sc.contract.name not in settings.suites:
                return
            if bound is None:
                raise pytest.UsageError(
                    f"--eventtime-suite {sc.contract.name}: no pipeline is bound to contract {sc.contract.name!r}; "
                    f"bind one with --eventtime-pipeline {sc.contract.name}=MODULE:FUNCTION, the ini key "
                    "eventtime_pipelines, or bind() in conftest.py")
        # never a green run that tested nobody's code: unbound, only a user's contract's declared
        # implementations run, or a bundled contract's own for a scenario of the bundled suite
        targets = [bound] if bound is not None else list(projectconfig.default_targets(sc.contract, self.path))
        if not targets:
            raise InvalidScenario(projectconfig.unbound_message(sc.contract, display))
        for target in targets:
            item = ScenarioItem.from_parent(self, name=f"{sc.name}[{_label(target)}]", scenario=sc, target=target,
                                            bundled_fallback=bound is None)
            if suite:
                item.add_marker("eventtime_suite")
            yield item


    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, InvalidScenario):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def _in_suite(path: Path) -> bool:
    return projectconfig.in_suite(path)


class InvalidScenario(Exception):
    """A scenario file that does not load: shown as its file:line:column problems."""


# -- running ----------------------------------------------------------------------------------------
def _spark(config: pytest.Config) -> Any:
    settings = _settings(config)
    if settings.remote:  # Spark Connect: no driver JVM in this process to lose or restart
        if _SPARK not in config.stash:
            from eventtime.harness.connect import connect_session
            from eventtime.harness.warm import NOTES, OVER_CONNECT

            if settings.warm:
                NOTES.append(OVER_CONNECT)

            config.stash[_SPARK] = connect_session(settings.remote, timeout=settings.timeout)
        return config.stash[_SPARK]
    if _SPARK not in config.stash:
        from eventtime.harness.session import get_session
        from eventtime.harness.warm import NOTES

        NOTES.on_stderr = False  # the summary shows them (pytest_terminal_summary), not a test's capture
        config.stash[_SPARK] = get_session(master=settings.master, warm=settings.warm)
    config.stash[_SPARK] = _live(config.stash[_SPARK], config)
    return config.stash[_SPARK]


def _live(spark: Any, config: pytest.Config) -> Any:
    """The session for the next item: after the driver JVM died under an item (which failed saying so),
    the next items on this process (xdist worker) get a fresh session, not a cascade of connection errors."""
    from eventtime.harness.session import live_session

    return live_session(spark, master=_settings(config).master)


# -- Spark Connect ------------------------------------------------------------------------------------
def _add_remote_option(parser: pytest.Parser, group: Any) -> None:
    group.addoption("--eventtime-remote", metavar="sc://HOST:PORT", default=None,
                    help="run the scenarios over Spark Connect at this URL (the test process needs no JVM); "
                         "default: SPARK_REMOTE when no master is set")
    parser.addini("eventtime_remote", default="", help="Spark Connect URL, sc://HOST:PORT")


class ScenarioFailed(Exception):
    def __init__(self, result: Any):
        super().__init__(result.status)
        self.result = result


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Any, target: Any, bundled_fallback: bool, **kwargs: Any):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.target = target
        self.bundled_fallback = bundled_fallback
        self.add_marker("eventtime")
        self.result: Any = None

    def runtest(self) -> None:
        from eventtime.runner import run_scenario

        settings = _settings(self.config)
        spark = _spark(self.config)  # first: a module that defines a UDF at import needs a session
        try:
            fn = settings.resolve(self.target)
        except pytest.UsageError as exc:  # said in one line (repr_failure), not with the plugin's frames
            raise InvalidScenario(f"{self.scenario.path}: the pipeline bound to contract "
                                  f"{self.scenario.contract.name!r} does not import: "
                                  f"{str(exc).removeprefix('eventtime: ')}") from None
        impl = self.target if isinstance(self.target, str) else f"{fn.__module__}:{fn.__qualname__}"
        from eventtime.harness.driverlog import driver_log
        from eventtime.results import FAILING, NOT_APPLICABLE
        from eventtime.userpipeline import PipelineError

        log = driver_log()
        mark = log.mark() if log is not None else 0
        def run(scenario: Any, target: Any, **kwargs: Any) -> Any:  # the binding resolved as the plugin does
            return run_scenario(scenario, settings.resolve(target), **kwargs)

        try:  # a run across a change, whichever it is, or none (`crossing.Crossings`)
            self.result = settings.crossings.run(self.scenario, self.target, run, session=spark,
                                                 timeout=settings.timeout, implementation=impl,
                                                 rerun=self.rerun_command(), conf=settings.spark_conf)
        except PipelineError as exc:  # the previous version cannot be had for this binding
            raise InvalidScenario(f"{self.scenario.path}: {exc}") from None
        if log is not None and self.result.status in FAILING:
            said = log.since(mark)  # what the driver logged while this scenario ran (errors only: log level ERROR)
            if said:
                self.add_report_section("call", "Spark driver log", "\n".join(said))
        from eventtime.resultsfile import result_record

        self.user_properties.append((_RESULT_KEY, json.dumps(result_record(self.result))))
        if self.result.passed and self.config.getoption("eventtime_teeth", False):
            from eventtime.teeth_pytest import bite

            bite(self, self.result)  # TeethMissing: a check that could not have failed
        if self.result.status == NOT_APPLICABLE:
            pytest.skip(f"not applicable: {self.result.reason}")
        if self.result.status in FAILING:
            raise ScenarioFailed(self.result)

    def rerun_command(self) -> str:
        """A command that runs this item alone, from the folder pytest was started in, exactly as
        printed: the file's path from there (an installed suite's file by its absolute path), and for
        an item of the bundled suite the options that collect it and the command-line binding."""
        import shlex

        contract = self.scenario.contract.name
        settings = _settings(self.config)
        cli = settings._nearest(settings.cli_bindings, contract, self.path)
        bound = ["--eventtime-pipeline", f"{contract}={cli}"] if cli is not None else []
        bound += [w for key, value in settings.spark_conf.items() for w in ("--eventtime-spark-conf", f"{key}={value}")]
        if self.get_closest_marker("eventtime_suite") is not None:
            # by name, not by path: the same arguments as the run (its folders, hence its ini file
            # and conftest bindings) with the suite's items selected by the item's name
            words = ["pytest", "--eventtime-suite", contract, *bound]
            given = set(self.config.invocation_params.args)  # the run's own paths, not the suite's
            words += [a for a in self.config.args if a in given]
            return " ".join(shlex.quote(w) for w in [*words, "-k", self.name])
        try:
            path = str(self.path.relative_to(self.config.invocation_params.dir))
        except ValueError:
            path = str(self.path)
        return " ".join(shlex.quote(w) for w in ["pytest", *bound, f"{path}::{self.name}"])

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            from eventtime.textreport import describe_failure

            return describe_failure(excinfo.value.result)
        if isinstance(excinfo.value, InvalidScenario):
            return str(excinfo.value)
        from eventtime.teeth_pytest import TeethMissing

        if isinstance(excinfo.value, TeethMissing):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.scenario.where.line - 1, f"scenario {self.scenario.name} [{_label(self.target)}]"


def _recorded(report: pytest.TestReport) -> list[dict]:
    """The results a scenario item recorded in its call report (under xdist they reach the controller with
    it), as `results.result_record` wrote them."""
    if report.when != "call":
        return []
    return [json.loads(value) for key, value in getattr(report, "user_properties", ()) if key == _RESULT_KEY]


class _ResultsCollector:
    """Gathers the results the items recorded and writes the `--eventtime-report-json` file; registered
    only when that file is asked for, and not on xdist workers (their reports reach the controller)."""

    def __init__(self, path: str):
        self.path = path
        self.results: list[dict] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.results += _recorded(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from eventtime.resultsfile import build_document, write_results

        command = " ".join(["pytest"] + [str(a) for a in session.config.invocation_params.args])
        write_results(self.path, build_document(self.results, tool="pytest", command=command))


class _NothingJudged:
    """A green run must have judged the user's code: a contract and pipeline of the run whose every scenario
    was not applicable (each item skipped) fails the run with one failure naming each scenario and why,
    unless the user allowed it (`projectconfig.nothing_judged`). Registered on the controller only (under
    xdist the workers' reports reach it); pytest's own skips of other tests are left as they are."""

    def __init__(self, allowed: frozenset[str]):
        self.allowed = allowed
        self.records: list[tuple[str, str, str, str, bool, str | None]] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from eventtime.results import NOT_APPLICABLE

        self.records += [(r["contract"], r["implementation"], r["scenario"], r["file"], r["status"] != NOT_APPLICABLE,
                          r.get("reason")) for r in _recorded(report)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.shouldstop or session.shouldfail or session.exitstatus == pytest.ExitCode.INTERRUPTED:
            return  # a run stopped early (-x, Ctrl-C) says nothing of what it would have judged
        unjudged = projectconfig.nothing_judged(self.records, self.allowed)
        for group in unjudged:
            file, name = group.scenarios[0][1], f"nothing judged [{group.contract}] [{group.implementation}]"
            report = pytest.TestReport(
                nodeid=f"{file}::{name}", location=(file, 0, name),
                keywords={}, outcome="failed", longrepr=group.message("--eventtime-allow-not-applicable"),
                when="call")
            session.config.hook.pytest_runtest_logreport(report=report)
        if unjudged and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _crossings(config: pytest.Config) -> Any:
    """The run's `crossing.Crossings`: the earlier side of a run across Spark lines (`crossline.EarlierSpark`)
    for --eventtime-previous-python, the previous version (`previous.Previous`) for --eventtime-previous(-ref),
    else `NoCrossing`."""
    from eventtime.crossing import NoCrossing

    python = config.getoption("eventtime_previous_python")
    bindings, ref = config.getoption("eventtime_previous"), config.getoption("eventtime_previous_ref")
    if python is not None and (bindings or ref is not None):
        raise pytest.UsageError("--eventtime-previous-python and --eventtime-previous(-ref): give one")
    if python is not None:
        return _earlier(config, python)
    if not bindings and ref is None:
        return NoCrossing()
    from eventtime.userpipeline import PipelineError
    from eventtime.previous import from_options

    if bindings and ref:
        raise pytest.UsageError("--eventtime-previous and --eventtime-previous-ref: give one")
    try:  # pytest's re-run command does not repeat the option (docs/upgrade.md)
        return from_options(bindings, ref, "--eventtime-previous", repeat=None)
    except (SettingsError, PipelineError) as exc:
        raise pytest.UsageError(str(exc)) from None


def _earlier(config: pytest.Config, python: str) -> Any:
    """The earlier side of a run across Spark lines (`eventtime.crossline.EarlierSpark`)."""
    from eventtime.crossline import CrossLineError, EarlierSpark

    dirs = [str(d) for d in config.getini("eventtime_contracts")] + list(config.getoption("eventtime_contracts") or [])
    try:
        return EarlierSpark(python, option="--eventtime-previous-python", contract_dirs=dirs)
    except CrossLineError as exc:
        raise pytest.UsageError(str(exc)) from None


# -- the warm Spark: what the run's sessions said of it, once, in the summary ---------------------------
_WARM_NOTES = pytest.StashKey[list]()
_LEFT_OUT = pytest.StashKey[list]()  # counterexample files left out of collection (under xdist: the workers')


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workeroutput"):  # an xdist worker: its notes go to the controller
        from eventtime.harness.warm import NOTES

        session.config.workeroutput["eventtime_warm"] = list(NOTES)
        session.config.workeroutput["eventtime_left_out"] = session.config.stash.setdefault(_LEFT_OUT, [])[:]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    notes = (getattr(node, "workeroutput", None) or {}).get("eventtime_warm") or []
    node.config.stash.setdefault(_WARM_NOTES, []).extend(notes)
    node.config.stash.setdefault(_LEFT_OUT, []).extend((getattr(node, "workeroutput", None) or {})
                                                       .get("eventtime_left_out") or [])


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    from eventtime.harness.warm import NOTES

    for note in dict.fromkeys([*config.stash.get(_WARM_NOTES, []), *NOTES]):
        terminalreporter.write_line(f"eventtime: {note}")
    found: list[str] = config.stash.setdefault(_LEFT_OUT, [])
    left_out = [Path(p) for p in dict.fromkeys(found)]  # each xdist worker collects all
    if left_out and not hasattr(config, "workerinput"):
        from eventtime.counterexamples import left_out_note
        from eventtime.scenarios import display_path

        terminalreporter.write_line(f"eventtime: {left_out_note(left_out, (display_path(p.parent) for p in left_out))}")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SPARK in config.stash:
        from eventtime.harness.warm import NOTES

        NOTES.on_stderr = True
    settings = config.stash.get(_SETTINGS, None)
    if settings is not None:
        settings.crossings.close()
    judged = config.pluginmanager.get_plugin("eventtime-nothing-judged")
    if judged is not None:
        config.pluginmanager.unregister(judged)
    collector = config.stash.get(_COLLECTOR, None)
    if collector is not None:
        config.pluginmanager.unregister(collector)
        del config.stash[_COLLECTOR]
    for key in (_SETTINGS, _SPARK):
        if key in config.stash:
            del config.stash[key]
    _PENDING_BINDINGS.clear()
    _PENDING_ROOTS.clear()


# -- fixtures ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def eventtime_spark(pytestconfig: pytest.Config) -> Any:
    """The SparkSession the scenarios run on (one per process, or per xdist worker), tuned for tests.
    After a test stopped it (`spark.stop()`) or its driver JVM died, the next test gets a live one."""
    return _spark(pytestconfig)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that stopped the session or lost its driver JVM leaves the next tests no dead
    `eventtime_spark`: the session-scoped fixture is made again (pytest's own teardown of it, so
    the user's fixtures made from it are made again too), on the session `_live` gives."""
    config = item.config
    fixturedefs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).get("eventtime_spark", ())
    if not fixturedefs or _SPARK not in config.stash or _settings(config).remote:
        return
    live = _live(config.stash[_SPARK], config)
    config.stash[_SPARK] = live
    for fixturedef in fixturedefs:  # made on an earlier session (a scenario item may have replaced it since)
        cached = getattr(fixturedef, "cached_result", None)
        if cached is not None and cached[0] is not live:
            fixturedef.finish(item._request)  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A test that failed because the driver JVM died under it (its session's next call raised py4j's
    error) says so in words, as a scenario's verdict does, instead of py4j's traceback."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None or isinstance(item, ScenarioItem) \
            or "eventtime_spark" not in getattr(item, "fixturenames", ()) or _SPARK not in item.config.stash:
        return
    from eventtime.harness.session import driver_death

    if "the Spark driver died" in str(call.excinfo.value):
        return  # a scenario of the test (`eventtime_scenario`) said so already
    death = driver_death(item.config.stash[_SPARK], after=call.excinfo.value)
    if death is not None:  # what py4j raised is that death in its words
        report.longrepr = death.message(f"under {item.nodeid} ({call.when})")


@pytest.fixture
def eventtime_record(request: pytest.FixtureRequest) -> Callable[[Any], None]:
    """`eventtime_record(result)` puts a ScenarioResult you ran yourself (e.g. with
    `eventtime.runner.run_scenario`) into the `--eventtime-report-json` file, next to the
    results of collected scenario files. Works under xdist: the controller writes the file."""

    def record(result: Any) -> None:
        from eventtime.resultsfile import result_record

        request.node.user_properties.append((_RESULT_KEY, json.dumps(result_record(result))))

    return record


@pytest.fixture
def eventtime_scenario(eventtime_spark: Any, pytestconfig: pytest.Config,
                       eventtime_record: Callable[[Any], None]) -> Callable[..., Any]:
    """Factory for a scenario written in Python: `s = eventtime_scenario("tumbling_count", pipeline=fn,
    params={...})`, then `s.add(...)`, `s.process()`, `s.advance("5s")`, `s.stop()`, `s.start()`,
    `s.expect(rows=..., watermark=..., dropped=...)`, and `s.run()` (also run at the end of a `with`).
    Every run goes into the `--eventtime-report-json` file, like a collected scenario file's."""
    from eventtime.builder import ScenarioBuilder

    settings = _settings(pytestconfig)

    def make(contract: Any, pipeline: Any = None, **kwargs: Any) -> ScenarioBuilder:
        target = pipeline if pipeline is not None else settings.binding(getattr(contract, "name", contract))
        return ScenarioBuilder(contract, pipeline=settings.resolve(target) if target is not None else None,
                               session=eventtime_spark, timeout=settings.timeout, contracts=settings.contracts,
                               on_result=eventtime_record, **kwargs)

    return make
