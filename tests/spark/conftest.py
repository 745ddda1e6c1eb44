"""Spark-backed tests share one SparkSession per process (per xdist worker)."""
import pytest

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    from eventtime.harness.session import get_session

    return get_session()
