"""Scenarios over Spark Connect: one local server (a JVM child process) per test session; this process
talks to it through the Connect protocol only and starts no JVM of its own."""
from __future__ import annotations

import pytest

# The pipelines' scenario files are run by test_connect_sdp_scenarios.py, which binds each to its pipeline
# folder; collected by the plugin on their own they would have no pipeline bound.
collect_ignore_glob = ["sdp/*.scenario.yaml"]

pytestmark = [pytest.mark.connect, pytest.mark.spark]


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    from eventtime.harness.connect_server import ConnectServer

    with ConnectServer(timeout=180, log_dir=str(tmp_path_factory.mktemp("connect-server"))) as server:
        yield server


@pytest.fixture(scope="session")
def remote_spark(connect_server):
    from eventtime.harness.connect import connect_session

    spark = connect_session(connect_server.url, timeout=180)
    yield spark
    # Close the session while the server is up: a client left open retries a stopped server for
    # minutes at exit (measured: about 10 min of RETRIES_EXCEEDED before pytest returned).
    spark.stop()


@pytest.fixture(scope="session")
def consumer(tmp_path_factory):
    """examples/consumer and the kit's wheel installed into a fresh environment, as tests/consumer builds them;
    one for the stage: test_consumer_over_connect runs the shop in it, test_pipeline_example the pipeline
    project (which installs nothing of its own), so the stage pays pip once."""
    from tests.consumer.test_consumer_example import build_consumer

    return build_consumer(tmp_path_factory.mktemp("consumer"))
