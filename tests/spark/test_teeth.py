"""The suite has teeth: every deliberately wrong implementation in `wrong.py` is caught by a scenario.

Caught means `failed`: the implementation ran and a check saw a wrong result. An `error` (Spark
refuses the query, or the implementation has a typo) is no kill: it would "pass" this test without
any scenario checking anything. For speed each test stops at the first scenario that catches it; the full
table of which scenarios catch which mistake is `benchmarks/kill_rate.py` (see BENCHMARKS.md).
"""
import pytest

from eventtime.loader import find_scenario_files, load_scenario
from eventtime.scenarios import SUITE_DIR
from tests.spark.wrong import WRONG

pytestmark = pytest.mark.spark

_BY_CONTRACT: dict[str, list] = {}
for _path in find_scenario_files([SUITE_DIR])[0]:
    _sc = load_scenario(_path)
    _BY_CONTRACT.setdefault(_sc.contract.name, []).append(_sc)


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_implementation_is_rejected(spark, name):
    from eventtime.runner import run_scenario

    contract, fn, what = WRONG[name]
    scenarios = _BY_CONTRACT.get(contract, [])
    assert scenarios, f"no bundled scenario for contract {contract}"
    verdicts = []
    for sc in scenarios:
        result = run_scenario(sc, fn, session=spark, implementation=f"wrong:{name}")
        verdicts.append(f"{sc.name}: {result.status}" + (f" ({result.reason})" if result.status == "error" else ""))
        if result.status == "failed":
            return
    pytest.fail(f"no scenario catches {name} ({what}) by a wrong result; verdicts: {'; '.join(verdicts)}")


def test_every_wrong_implementation_names_a_contract_with_scenarios():
    assert len(WRONG) >= 10
    for name, (contract, fn, what) in WRONG.items():
        assert contract in _BY_CONTRACT, f"{name}: contract {contract} has no bundled scenario"
        assert callable(fn) and what
