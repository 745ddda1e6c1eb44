"""The bundled scenarios pass against every bundled implementation of their contract."""
import pytest

from eventtime.loader import find_scenario_files, load_scenario
from eventtime.textreport import describe_failure
from eventtime.scenarios import SUITE_DIR, display_path

pytestmark = pytest.mark.spark

_CASES = []
for _path in find_scenario_files([SUITE_DIR])[0]:
    _sc = load_scenario(_path, display_path=display_path(_path))
    for _impl in _sc.contract.implementations:
        _CASES.append(pytest.param(_sc, _impl, id=f"{_sc.name}[{_impl.rsplit(':', 1)[-1]}]"))


@pytest.mark.parametrize("scenario, implementation", _CASES)
def test_bundled_scenario(spark, scenario, implementation, eventtime_record):
    from eventtime.runner import run_scenario

    result = run_scenario(scenario, implementation, session=spark, rerun=f"eventtime run {scenario.path} "
                          f"--pipeline {implementation}")
    eventtime_record(result)  # into --eventtime-report-json when given (the tox matrix writes reports/)
    assert result.status in ("passed", "not_applicable"), describe_failure(result)
