"""Spark-backed tests share one SparkSession per process (per xdist worker)."""
import pytest

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    import threading

    from eventtime.harness.coldstart import PREPARING
    from eventtime.harness.session import get_session

    session = get_session()
    # a new session makes its first query's classes on a thread (coldstart.prepare_queries_meanwhile):
    # tests that replace jvmclasses' state must not race it
    for thread in threading.enumerate():
        if thread.name == PREPARING:
            thread.join(120)
    return session


@pytest.fixture
def contract_beside(tmp_path):
    """`contract_beside(CONTRACT_TEXT)` -> a function loading a scenario text from a file beside that
    contract file (found as a user's contract file is: in the scenario's folder)."""
    def using(contract: str):
        name = contract.split("contract:", 1)[1].split()[0]
        (tmp_path / f"{name}.contract.yaml").write_text(contract)

        def load(text: str):
            from eventtime import load_scenario

            path = tmp_path / "s.scenario.yaml"
            path.write_text(text)
            return load_scenario(str(path))
        return load
    return using
