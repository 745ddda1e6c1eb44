"""Master URLs and the standalone cluster helper without Spark: accepted URLs, usage errors, command lines,
settings for executors, and the cluster's failures (a fake spark-class: no JVM is started)."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from eventtime.cli import main
from eventtime.commands.around import expand
from eventtime.commands.cluster import PLACEHOLDER
from eventtime.exitcodes import ExitCode
from eventtime.harness.cluster import (MASTER_FORMS, ClusterError, MasterURLError, StandaloneCluster, check_master,
                             cluster_conf, expected_executors, is_local)

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("url", ["local", "local[1]", "local[2]", "local[*]", "local[2,3]", " local[4] ",
                                 "local-cluster[2,1,1024]", "local-cluster[ 3, 2, 512 ]",
                                 "spark://127.0.0.1:7077", "spark://master.example.org:7077",
                                 "spark://h1:7077,h2:7078", "spark://[::1]:7077"])
def test_accepted_master_urls(url):
    assert check_master(url) == url.strip()


@pytest.mark.parametrize("url, why", [
    ("local[0]", "local takes a thread count"),
    ("local[two]", "local takes a thread count"),
    ("locale", "local takes a thread count"),
    ("local-cluster[2,1]", "local-cluster takes [workers, cores per worker, MiB per worker]"),
    ("local-cluster[2,1,1g]", "local-cluster takes"),
    ("spark://host", "'host' is not HOST:PORT"),
    ("spark://host:0", "'host:0' is not HOST:PORT"),
    ("spark://host:70000", "'host:70000' is not HOST:PORT"),
    ("spark://:7077", "':7077' is not HOST:PORT"),
    ("spark://h1:7077,", "'' is not HOST:PORT"),
    ("yarn", "yarn is not supported"),
    ("k8s://https://kube:443", "k8s is not supported"),
    ("", ""),
    ("http://host:7077", ""),
])
def test_refused_master_urls_name_what_is_accepted(url, why):
    with pytest.raises(MasterURLError) as info:
        check_master(url)
    message = str(info.value)
    assert message.startswith(repr(url))
    assert why in message
    assert message.endswith(f"accepted: {MASTER_FORMS}")


@pytest.mark.parametrize("command", ["run", "certify"])
def test_cli_master_is_a_usage_error_not_a_traceback(capsys, command):
    with pytest.raises(SystemExit) as info:
        main([command, "--master", "spark://nohost"])
    assert info.value.code == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert "argument --master: 'spark://nohost' is not a Spark master URL" in err
    assert "local-cluster[W,C,M]" in err and "Traceback" not in err


@pytest.mark.parametrize("args", [["--eventtime-master", "local[x]"], ["-o", "eventtime_master=spark://h"]])
def test_plugin_master_is_a_usage_error(pytester, args):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--eventtime-master / ini eventtime_master: * is not a Spark master URL*accepted:*"])


def test_local_masters_need_no_cluster_settings():
    assert is_local("local[2]") and not is_local("local-cluster[2,1,1024]") and not is_local("spark://h:1")
    assert cluster_conf("local[2]") == {}
    assert expected_executors("local[2]") == 0


def test_cluster_settings_for_executors(tmp_path, monkeypatch):
    import sysconfig

    site = sysconfig.get_paths()["purelib"]
    monkeypatch.setattr(sys, "path", ["", "relative", str(tmp_path), site, str(tmp_path), str(tmp_path / "gone")])
    conf = cluster_conf("local-cluster[2,1,512]")
    assert conf["spark.executorEnv.TZ"] == "UTC"
    assert conf["spark.executor.memory"] == "512m"  # the default 1g executor would not fit a 512 MiB worker
    # the driver's own import directories, once each; not the interpreter's (the executors' has its own)
    assert conf["spark.executorEnv.PYTHONPATH"] == str(tmp_path)
    assert expected_executors("local-cluster[2,1,512]") == 2
    given = cluster_conf("spark://h:7077", {"spark.executorEnv.TZ": "Europe/Paris", "spark.executor.memory": "2g"})
    assert "spark.executorEnv.TZ" not in given and "spark.executor.memory" not in given
    assert expected_executors("spark://h:7077") == 1


def _fake_spark_home(tmp_path, body: str):
    """A SPARK_HOME whose bin/spark-class is a shell script: no JVM."""
    script = tmp_path / "spark" / "bin" / "spark-class"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return tmp_path / "spark"


def test_command_lines(tmp_path):
    home = _fake_spark_home(tmp_path, "exit 0")
    cluster = StandaloneCluster(workers=2, host="10.0.0.5", cores=2, memory="1536m", spark_home=home,
                                log_dir=tmp_path / "logs")
    cluster.port, cluster.webui_port, cluster.worker_webui_ports = 7077, 8080, [8081, 8082]
    cluster.log_dir = tmp_path / "logs"
    spark_class = str(home / "bin" / "spark-class")
    assert cluster.master_url == "spark://10.0.0.5:7077"
    assert cluster.status_url == "http://10.0.0.5:8080/json/"
    assert cluster.master_command() == [spark_class, "org.apache.spark.deploy.master.Master", "--host", "10.0.0.5",
                                        "--port", "7077", "--webui-port", "8080"]
    assert cluster.worker_command(1) == [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "10.0.0.5",
                                         "--webui-port", "8082", "--cores", "2", "--memory", "1536m",
                                         "--work-dir", str(tmp_path / "logs" / "worker-2-work"),
                                         "spark://10.0.0.5:7077"]
    assert StandaloneCluster(host="::1").master_url.startswith("spark://[::1]:")


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 0}, "at least one worker"),
    ({"cores": 0}, "at least one core"),
    ({"memory": "lots"}, "a size like 1g or 512m"),
    ({"timeout": 0}, "positive numbers of seconds"),
])
def test_bad_cluster_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StandaloneCluster(**kwargs)


def test_a_master_that_dies_is_reported_with_its_log(tmp_path):
    home = _fake_spark_home(tmp_path, 'echo "no such class: $1" >&2; exit 3')
    with pytest.raises(ClusterError) as info:
        with StandaloneCluster(workers=1, spark_home=home, timeout=30, log_dir=tmp_path / "logs"):
            raise AssertionError("never entered")
    message = str(info.value)
    assert "the master process exited with code 3 while starting" in message
    assert "no such class: org.apache.spark.deploy.master.Master" in message
    assert f"its log: {tmp_path / 'logs' / 'master.log'}:" in message
    assert (tmp_path / "logs" / "master.log").exists()


def test_a_master_that_never_answers_is_a_bounded_wait_and_is_stopped(tmp_path):
    home = _fake_spark_home(tmp_path, f'echo $$ > "{tmp_path}/pid"; exec {sys.executable} -c "import time; time.sleep(600)"')
    cluster = StandaloneCluster(workers=1, spark_home=home, timeout=1, stop_timeout=5, log_dir=tmp_path / "logs")
    with pytest.raises(ClusterError, match=r"waited 1 s for the master's status page http://127\.0\.0\.1:\d+/json/ "
                                           r"to answer; logs in "):
        with cluster:
            pass
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert cluster.pids == []


def test_no_spark_class_is_a_clear_error(tmp_path):
    with pytest.raises(ClusterError, match="has no bin/spark-class"):
        with StandaloneCluster(spark_home=tmp_path, log_dir=tmp_path / "logs"):
            pass


def test_cluster_command_fills_in_the_master_url():
    assert expand(["--", "eventtime", "certify", "--master", "{master}"], PLACEHOLDER, "spark://h:1") == [
        "eventtime", "certify", "--master", "spark://h:1"]
    assert expand(["sh", "-c", "echo master={master}"], PLACEHOLDER, "spark://h:1") == ["sh", "-c", "echo master=spark://h:1"]


def test_cluster_command_usage_errors(capsys):
    assert main(["cluster", "--memory", "lots", "--", "true"]) == ExitCode.USAGE_ERROR
    assert "a size like 1g or 512m" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["cluster", "--workers", "0"])
    assert info.value.code == ExitCode.USAGE_ERROR


def test_python_workers_get_the_drivers_import_path_in_local_mode_too(tmp_path, monkeypatch):
    """pytest's `pythonpath = ["src"]` reaches the driver only: without this a UDF of the user's own
    package fails on a local Python worker with ModuleNotFoundError (tests/spark/test_user_types.py)."""
    from eventtime.harness.cluster import worker_conf

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert worker_conf() == {"spark.executorEnv.PYTHONPATH": str(tmp_path)}
    assert worker_conf({"spark.executorEnv.PYTHONPATH": "/mine"}) == {}  # the user's own setting wins
