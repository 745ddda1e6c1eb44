"""`eventtime connect-server -- COMMAND`: the URL reaches the command, its exit status comes back, the
server is gone afterwards."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment

pytestmark = [pytest.mark.connect, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_gets_the_url_and_its_exit_status_is_returned():
    probe = ("import os, sys; print('URL', sys.argv[1], os.environ['EVENTTIME_REMOTE'], os.environ['SPARK_REMOTE']); "
             "sys.exit(7)")
    proc = subprocess.run([sys.executable, "-m", "eventtime.cli", "connect-server", "--timeout", "180", "--",
                           sys.executable, "-c", probe, "{remote}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=400, env=child_environment())
    assert proc.returncode == 7, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("URL "))
    _, given, env, spark_remote = line.split()
    assert given == env == spark_remote and given.startswith("sc://127.0.0.1:")
    port = int(given.rsplit(":", 1)[1])
    with socket.socket() as s:  # stopped: nothing listens on its port any more
        assert s.connect_ex(("127.0.0.1", port)) != 0
