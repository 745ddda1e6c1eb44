"""Spark-backed tests share one SparkSession per process (per xdist worker)."""
import pytest

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def spark():
    import threading

    from eventtime.harness.session import _PREPARING, get_session

    session = get_session()
    # a new session makes its first query's classes on a thread (session._prepare_queries_meanwhile):
    # tests that replace jvmclasses' state must not race it
    for thread in threading.enumerate():
        if thread.name == _PREPARING:
            thread.join(120)
    return session
