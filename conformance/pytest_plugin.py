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
    --eventtime-remote sc://HOST:PORT               ini: eventtime_remote (else SPARK_REMOTE, unless a master is set)

In `conftest.py`: `from eventtime.pytest_plugin import bind; bind("tumbling_count", "jobs:count")`,
or `@bind("tumbling_count")` on a pipeline function, or the hook `pytest_eventtime_pipelines(config)`
returning {contract: pipeline}.

Fixtures: `eventtime_spark` (the session), `eventtime_scenario` (a scenario written in Python) and
`eventtime_record` (put a result you ran yourself into the JSON report).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

SUFFIXES = (".scenario.yaml", ".scenario.yml")
_BINDING = re.compile(r"^\s*(?P<contract>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<target>\S+)\s*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_BOUND: dict[str, Any] = {}  # filled by bind() from conftest files
_RESULT_KEY = "eventtime_result"


def bind(contract: str, pipeline: Any = None):
    """Bind `contract` to a pipeline (`"module:function"` or a callable) for this test run.

    Used as a call (`bind("tumbling_count", "jobs.windows:count")`) or as a decorator
    (`@bind("tumbling_count")`). Command-line and ini bindings win over these.
    """
    _check_contract(contract, "bind()")
    if pipeline is None:
        def decorate(fn):
            _BOUND[contract] = fn
            return fn
        return decorate
    if isinstance(pipeline, str) and not _TARGET.match(pipeline):
        raise pytest.UsageError(f"bind({contract!r}, {pipeline!r}): a pipeline is 'module:function' or a callable")
    _BOUND[contract] = pipeline
    return pipeline


def _contracts() -> dict[str, Any]:
    from eventtime.contracts import CONTRACTS  # pure Python, no pyspark

    return dict(CONTRACTS)


def _check_contract(name: str, where: str) -> None:
    contracts = _contracts()
    if name not in contracts:
        from eventtime.loader import did_you_mean

        raise pytest.UsageError(f"{where}: unknown contract {name!r}{did_you_mean(name, contracts)}; "
                                f"accepted: {', '.join(sorted(contracts))}")


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
                    help="bound on each wait for Spark (default 60)")
    group.addoption("--eventtime-master", metavar="URL", default=None,
                    help="Spark master URL: local[N], local-cluster[W,C,M] or spark://HOST:PORT (default local[2])")
    parser.addini("eventtime_pipelines", type="linelist", default=[],
                  help="contract bindings, one 'CONTRACT = MODULE:FUNCTION' per line")
    parser.addini("eventtime_suite", type="args", default=[], help="contracts whose bundled suite to run")
    parser.addini("eventtime_report_json", default="", help="path of the JSON results file")
    parser.addini("eventtime_timeout", default="60", help="bound on each wait for Spark, seconds")
    parser.addini("eventtime_master", default="", help="Spark master URL")
    _add_remote_option(parser, group)


def pytest_addhooks(pluginmanager: Any) -> None:
    from eventtime import pytest_hooks

    pluginmanager.add_hookspecs(pytest_hooks)


class _Settings:
    def __init__(self, config: pytest.Config):
        self.cli_bindings = self._bindings(config.getoption("eventtime_pipeline"), "--eventtime-pipeline")
        self.ini_bindings = self._bindings(config.getini("eventtime_pipelines"), "ini eventtime_pipelines")
        self.suites = list(dict.fromkeys(list(config.getini("eventtime_suite"))
                                         + list(config.getoption("eventtime_suite"))))
        for name in self.suites:
            _check_contract(name, "--eventtime-suite / ini eventtime_suite")
        raw_timeout = config.getoption("eventtime_timeout") or config.getini("eventtime_timeout")
        try:
            self.timeout = float(raw_timeout)
            if self.timeout <= 0:
                raise ValueError
        except ValueError:
            raise pytest.UsageError(f"--eventtime-timeout / ini eventtime_timeout: {raw_timeout!r} is not a "
                                    "positive number of seconds") from None
        self.master = config.getoption("eventtime_master") or config.getini("eventtime_master") or None
        if self.master is not None:
            from eventtime.harness.cluster import MasterURLError, check_master

            try:
                self.master = check_master(self.master)
            except MasterURLError as exc:
                raise pytest.UsageError(f"--eventtime-master / ini eventtime_master: {exc}") from None
        self.remote = _remote_setting(config, self.master)
        self.report_json = config.getoption("eventtime_report_json") or config.getini("eventtime_report_json") or None
        self._hook_bindings: dict[str, Any] | None = None
        self._resolved: dict[str, Any] = {}
        self.config = config

    @staticmethod
    def _bindings(values: list[str], where: str) -> dict[str, str]:
        out = {}
        for value in values:
            if not value.strip():
                continue
            m = _BINDING.match(value)
            if not m or not _TARGET.match(m.group("target")):
                raise pytest.UsageError(f"{where}: {value!r} is not CONTRACT=MODULE:FUNCTION "
                                        "(e.g. tumbling_count=my_jobs.windows:count)")
            _check_contract(m.group("contract"), where)
            out[m.group("contract")] = m.group("target")
        return out

    def binding(self, contract: str) -> Any:
        """The pipeline bound to `contract` (a callable or 'module:function'), or None."""
        if self._hook_bindings is None:
            self._hook_bindings = {}
            for result in self.config.hook.pytest_eventtime_pipelines(config=self.config):
                for name, target in (result or {}).items():
                    _check_contract(name, "pytest_eventtime_pipelines()")
                    self._hook_bindings[name] = target
        for source in (self.cli_bindings, self.ini_bindings, self._hook_bindings, _BOUND):
            if contract in source:
                return source[contract]
        return None

    def resolve(self, target: Any) -> Callable:
        if callable(target):
            return target
        if target not in self._resolved:
            from eventtime.runner import PipelineError, resolve_pipeline

            try:
                self._resolved[target] = resolve_pipeline(target)
            except PipelineError as exc:
                raise pytest.UsageError(f"eventtime: {exc}") from None
        return self._resolved[target]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "eventtime: an event-time scenario run on Spark (eventtime-conformance)")
    config.addinivalue_line("markers", "eventtime_suite: a scenario of the bundled standard suite")
    settings = _Settings(config)
    config._eventtime = settings  # type: ignore[attr-defined]
    if settings.suites:  # collect the bundled suite like any directory given on the command line
        from eventtime.scenarios import SUITE_DIR

        if str(SUITE_DIR) not in config.args:
            config.args.append(str(SUITE_DIR))


# -- collection -------------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    settings: _Settings = session.config._eventtime  # type: ignore[attr-defined]
    for contract in settings.suites:
        if settings.binding(contract) is None:
            raise pytest.UsageError(
                f"--eventtime-suite {contract}: no pipeline is bound to contract {contract!r}; bind one with "
                f"--eventtime-pipeline {contract}=MODULE:FUNCTION, the ini key eventtime_pipelines, or bind() "
                "in conftest.py")


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.name.endswith(SUFFIXES):
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
        from eventtime.loader import ScenarioInvalid, load_scenario

        from eventtime.scenarios import display_path

        try:
            display = str(self.path.relative_to(self.config.rootpath))
        except ValueError:  # e.g. the bundled suite, installed elsewhere: `scenarios/...`
            display = display_path(self.path)
        try:
            sc = load_scenario(self.path, display_path=str(display))
        except ScenarioInvalid as exc:
            raise InvalidScenario(str(exc)) from None
        settings: _Settings = self.config._eventtime  # type: ignore[attr-defined]
        bound = settings.binding(sc.contract.name)
        suite = bool(settings.suites) and _in_suite(self.path)
        if suite:  # --eventtime-suite: only the chosen contracts, only against the bound pipeline
            if sc.contract.name not in settings.suites:
                return
            if bound is None:
                raise pytest.UsageError(
                    f"--eventtime-suite {sc.contract.name}: no pipeline is bound to contract {sc.contract.name!r}; "
                    f"bind one with --eventtime-pipeline {sc.contract.name}=MODULE:FUNCTION, the ini key "
                    "eventtime_pipelines, or bind() in conftest.py")
        targets = [bound] if bound is not None else list(sc.contract.implementations)
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
    from eventtime.scenarios import SUITE_DIR

    try:
        path.resolve().relative_to(Path(SUITE_DIR).resolve())
        return True
    except ValueError:
        return False


class InvalidScenario(Exception):
    """A scenario file that does not load: shown as its file:line:column problems."""


# -- running ----------------------------------------------------------------------------------------
_SESSION: list[Any] = []


def _spark(config: pytest.Config) -> Any:
    if not _SESSION:
        settings = config._eventtime  # type: ignore[attr-defined]
        if settings.remote:
            from eventtime.harness.connect import connect_session

            _SESSION.append(connect_session(settings.remote, timeout=settings.timeout))
        else:
            from eventtime.harness.session import get_session

            _SESSION.append(get_session(master=settings.master))
    return _SESSION[0]


# -- Spark Connect ------------------------------------------------------------------------------------
def _add_remote_option(parser: pytest.Parser, group: Any) -> None:
    group.addoption("--eventtime-remote", metavar="sc://HOST:PORT", default=None,
                    help="run the scenarios over Spark Connect at this URL (the test process needs no JVM); "
                         "default: SPARK_REMOTE when no master is set")
    parser.addini("eventtime_remote", default="", help="Spark Connect URL, sc://HOST:PORT")


def _remote_setting(config: pytest.Config, master: str | None) -> str | None:
    """--eventtime-remote, else ini eventtime_remote, else SPARK_REMOTE when no master is set; checked."""
    from eventtime.harness.connect import check_remote, remote_from_environment

    given = config.getoption("eventtime_remote") or config.getini("eventtime_remote") or None
    where = "--eventtime-remote / ini eventtime_remote"
    if given and master:
        raise pytest.UsageError(f"{where}: give either a Spark master or a Spark Connect URL, not both")
    if given is None and master is None:
        given, where = remote_from_environment(), "SPARK_REMOTE"
    if given is None:
        return None
    try:
        return check_remote(given)
    except ValueError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


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

        settings: _Settings = self.config._eventtime  # type: ignore[attr-defined]
        fn = settings.resolve(self.target)
        impl = self.target if isinstance(self.target, str) else f"{fn.__module__}:{fn.__qualname__}"
        self.result = run_scenario(self.scenario, fn, session=_spark(self.config), timeout=settings.timeout,
                                   implementation=impl, rerun=f"pytest '{self.nodeid}'")
        from eventtime.resultsfile import result_record

        self.user_properties.append((_RESULT_KEY, json.dumps(result_record(self.result))))
        if self.result.status == "not_applicable":
            pytest.skip(f"not applicable: {self.result.reason}")
        if self.result.status in ("failed", "error"):
            raise ScenarioFailed(self.result)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            from eventtime.textreport import describe_failure

            return describe_failure(excinfo.value.result)
        if isinstance(excinfo.value, InvalidScenario):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.scenario.where.line - 1, f"scenario {self.scenario.name} [{_label(self.target)}]"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for key, value in getattr(report, "user_properties", ()):
        if key == _RESULT_KEY:
            _RESULTS.append(json.loads(value))


_RESULTS: list[dict] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput"):  # an xdist worker: the controller writes the file
        return
    path = config._eventtime.report_json  # type: ignore[attr-defined]
    if not path:
        return
    from eventtime.resultsfile import build_document, write_results

    command = " ".join(["pytest"] + [str(a) for a in config.invocation_params.args])
    write_results(path, build_document(_RESULTS, tool="pytest", command=command))


# -- fixtures ---------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def eventtime_spark(pytestconfig: pytest.Config) -> Any:
    """The SparkSession the scenarios run on (one per process, or per xdist worker), tuned for tests."""
    return _spark(pytestconfig)


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
def eventtime_scenario(eventtime_spark: Any, pytestconfig: pytest.Config) -> Callable[..., Any]:
    """Factory for a scenario written in Python: `s = eventtime_scenario("tumbling_count", pipeline=fn,
    params={...})`, then `s.add(...)`, `s.process()`, `s.advance("5s")`, `s.stop()`, `s.start()`,
    `s.expect(rows=..., watermark=..., dropped=...)`, and `s.run()` (also run at the end of a `with`)."""
    from eventtime.builder import ScenarioBuilder

    settings: _Settings = pytestconfig._eventtime  # type: ignore[attr-defined]

    def make(contract: str, pipeline: Any = None, **kwargs: Any) -> ScenarioBuilder:
        target = pipeline if pipeline is not None else settings.binding(contract)
        return ScenarioBuilder(contract, pipeline=settings.resolve(target) if target is not None else None,
                               session=eventtime_spark, timeout=settings.timeout, **kwargs)

    return make
