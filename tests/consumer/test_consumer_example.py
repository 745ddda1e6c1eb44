"""examples/consumer, installed from a freshly built wheel into a fresh virtual environment.

Proves the pytest plugin works for another repository: a shop's four jobs (three `transform`
functions and one job as it ships, `main(spark)` with its Kafka reader and its foreachBatch table
writer substituted), their own contract files,
scenario files and a Python fixture test pass under `pytest -n 2` with one ini line per binding and
no adapter code; results JSON is written by the controller; wrong versions of a job (a wrong
decimal, a missing, an extra and a mistyped column) and a wrong expectation each fail, naming what
is wrong; `eventtime run tests/scenarios` with no options reads the same bindings and reaches the
same verdicts as pytest, and the re-run command it prints for a failure runs it again pasted. The
same suite over Spark Connect, from this environment with no JVM, is tests/connect/test_consumer_over_connect.py.
pip's cache is reused, so only the first run downloads anything.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from eventtime.harness.cluster import child_environment

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 900  # seconds; a cold pip cache downloads pyspark (~450 MB)
RUN_TIMEOUT = 900


def _connect_here() -> bool:
    """Whether this environment can serve and speak Spark Connect: the installed pyspark ships the
    server (its spark-connect jar) and the client's gRPC stack is installed."""
    import importlib.util

    from eventtime.harness.cluster import spark_home

    return importlib.util.find_spec("grpc") is not None and any((spark_home() / "jars").glob("spark-connect_*.jar"))


def _run(cmd, cwd, timeout, env=None):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def build_consumer(tmp: Path):
    """examples/consumer and the kit's wheel, built from the tracked files, installed into a fresh virtual
    environment under `tmp`: (its python, the project's copy, the environment for its commands, the wheel).
    tests/connect/conftest.py builds one for its stage (its example projects share it)."""
    import pyspark

    # The wheel is built from a copy of the tracked files: setuptools builds in the source tree's
    # build/, which two xdist workers (or a developer's own build) would otherwise share.
    source = tmp / "source"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    rc, out = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "wheels"), str(source)],
                   cwd=tmp, timeout=INSTALL_TIMEOUT)
    assert rc == 0, out
    wheel = next((tmp / "wheels").glob("eventtime_conformance-*.whl"))
    venv.create(tmp / "venv", with_pip=True)
    py = tmp / "venv" / "bin" / "python"
    project = tmp / "project"
    shutil.copytree(ROOT / "examples" / "consumer", project)
    spark = f"pyspark[connect]=={pyspark.__version__}" if _connect_here() else f"pyspark=={pyspark.__version__}"
    rc, out = _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[test]",
                    spark, "-e", str(project)], cwd=tmp, timeout=INSTALL_TIMEOUT)
    assert rc == 0, out
    env = {k: v for k, v in child_environment().items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "VIRTUAL_ENV")}
    return py, project, env, wheel


@pytest.fixture(scope="module")
def consumer(tmp_path_factory):
    return build_consumer(tmp_path_factory.mktemp("consumer"))


SHOP_SCENARIOS = {  # the scenario files and the Python fixture test
    "window-emitted-when-watermark-passes", "out-of-order-click-is-counted", "late-click-is-dropped",
    "bad-payload-is-dropped", "bridging-click-merges-two-sessions", "python-user-sessions",
    "click-below-state-watermark", "updated-window-replaces-its-partition", "table-survives-restarts",
    "orders-flow-through-every-layer", "batch-runs-again-after-a-crash", "open-window-survives-a-restart",
    "null-ad-ids-never-pair", "revenue-past-the-price-type"}
# the shop's third job, a `main(spark)` whose Kafka reader and foreachBatch the kit substitutes: its
# scenarios check the parquet table it writes; over Spark Connect they are not applicable (docs/jobs.md)
JOB_SCENARIOS = {"updated-window-replaces-its-partition", "table-survives-restarts", "revenue-past-the-price-type",
                 # the medallion job as it ships: main() with its own session, five queries (bronze, bad,
                 # silver, gold folders and an alerts topic), relative paths, spark.stop() at the end
                 "orders-flow-through-every-layer", "batch-runs-again-after-a-crash"}
CHANGED = "tests/scenarios/attribution/click-below-state-watermark.scenario.yaml"
# the scenarios with a restart, which a run across Spark lines restarts (jobs too)
ACROSS = {"open-window-survives-a-restart", "table-survives-restarts", "orders-flow-through-every-layer",
          "batch-runs-again-after-a-crash"}


def test_the_shops_tox_matrix_passes_on_two_spark_lines_and_reports_what_the_upgrade_changes(consumer):
    """The shop's own tox.ini, as its README says to run it with a built wheel: each line runs the
    contracts, scenarios and Python test under `pytest -n 2` and writes its results; `report` merges
    them and writes the upgrade summary, which finds the one scenario Spark's SPARK-49829 fix changes
    (its on_spark expectation makes it pass on both lines) and says the others did not change."""
    py, project, env, wheel = consumer
    rc, out = _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "tox>=4.11"], cwd=project,
                   timeout=INSTALL_TIMEOUT, env=env)
    assert rc == 0, out
    rc, out = _run([str(py), "-m", "tox", "-e", "spark35,spark43,upgrade-restart,report"], cwd=project,
                   env={**env, "EVENTTIME_KIT": str(wheel)}, timeout=2 * INSTALL_TIMEOUT + 2 * RUN_TIMEOUT)
    assert rc == 0, out[-6000:]
    for line, version in (("spark35", "3.5.3"), ("spark43", "4.3.0")):
        data = json.loads((project / "reports" / f"results-{line}.json").read_text())
        assert {r["scenario"] for r in data["results"]} == SHOP_SCENARIOS, line
        assert {r["spark_version"] for r in data["results"]} == {version}
        assert all(r["status"] == "passed" for r in data["results"]), [r for r in data["results"]
                                                                       if r["status"] != "passed"]
    for name in ("report.html", "report.md", "junit.xml"):
        assert (project / "reports" / name).stat().st_size > 0
    upgrade = (project / "reports" / "upgrade.md").read_text()
    assert "14 scenario runs on both versions; **1 changed**, 13 unchanged." in upgrade, upgrade
    changes = upgrade.split("### Restarted on")[0]  # the runs across the restart are listed after it (below)
    (row,) = [line for line in changes.splitlines() if line.startswith("| click-below-state-watermark ")]
    assert f"`{CHANGED}:1`" in row and "| PASS | PASS |" in row, row
    assert re.search(r"rows written at step 5 \(line 26\): none on 3\.5\.3, .*tile.* on 4\.3\.0", row), row
    # upgrade-restart: the pipeline's and the jobs' scenarios with a restart, their steps before it on 3.5.3
    # (the spark35 environment's JVM), restarted on 4.3.0 from that checkpoint; scenarios without a restart
    # skipped, and listed in the summary as not applicable (the contracts with none of them said in tox.ini)
    across = json.loads((project / "reports" / "results-upgrade-restart.json").read_text())["results"]
    ran = {r["scenario"]: r for r in across if r["status"] != "not_applicable"}
    assert set(ran) == ACROSS, [(r["scenario"], r["status"], r["reason"]) for r in across]
    for name, record in ran.items():
        assert record["status"] == "passed", (name, record["reason"])
        assert {k: record["upgrade"][k] for k in ("across", "previous_spark", "outcome")} == {
            "across": "spark", "previous_spark": "3.5.3", "outcome": "restarts"}, name
        assert record["spark_version"] == "4.3.0"
    record = ran["open-window-survives-a-restart"]
    assert [s["batches"][0]["batch_id"] for s in record["steps"] if s["index"] == 2] == [0]  # run by 3.5.3
    assert ("### Restarted on Spark 4.3.0 from checkpoints of 3.5.3\n\n13 runs across the two: 9 not applicable, "
            "4 restarts." in upgrade and "| open-window-survives-a-restart | clicks:transform | " in upgrade
            and "| table-survives-restarts | page_windows:main | " in upgrade), upgrade
    assert "| bad-payload-is-dropped | clicks:transform | " in upgrade and "| not applicable |" in upgrade, upgrade


WRONG_JOBS = """\
\"\"\"Wrong versions of the shop's clicks job: each must fail, naming what is wrong.\"\"\"
import pytest
from pyspark.sql import functions as F

from shop.clicks import transform


def click(page, at, price):
    import json
    return {"value": json.dumps({"user_id": "u", "page": page, "country": "NL", "ts": f"2024-01-01T{at}Z",
                                 "price": price})}


WRONG = {
    "wrong decimal": lambda clicks: transform(clicks).withColumn(
        "revenue", (F.col("revenue") + F.lit(1)).cast("decimal(12,2)")),
    "missing column": lambda clicks: transform(clicks).drop("revenue"),
    "extra column": lambda clicks: transform(clicks).withColumn("debug", F.lit("x")),
    "wrong type": lambda clicks: transform(clicks).withColumn("clicks", F.col("clicks").cast("int")),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong(eventtime_scenario, name):
    with pytest.raises(AssertionError) as info:
        with eventtime_scenario("page_clicks", pipeline=WRONG[name]) as s:
            s.add(clicks=[click("home", "09:01:00", "2.50")]).process()
            s.add(clicks=[click("home", "09:20:00", "1.00")]).process()
            s.expect(rows=[{"page": "home", "country": "NL", "window_start": "09:00:00",
                            "window_end": "09:05:00", "clicks": 1, "revenue": "2.50"}])
    print(f"=== {name}\\n{info.value}")
"""


def test_a_wrong_decimal_a_missing_an_extra_and_a_mistyped_column_each_fail_naming_it(consumer):
    py, project, env, _ = consumer
    wrong = project / "tests" / "test_wrong_jobs.py"
    wrong.write_text(WRONG_JOBS)
    try:
        rc, out = _run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", str(wrong)], cwd=project,
                       env=env, timeout=RUN_TIMEOUT)
    finally:
        wrong.unlink()
    assert rc == 0 and "4 passed" in out, out
    sections = dict(part.split("\n", 1) for part in out.split("=== ")[1:])
    assert "1 missing, 1 unexpected" in sections["wrong decimal"] and "3.50" in sections["wrong decimal"]
    # the failing step is the test's own code: its file, line and source, not the YAML written underneath
    assert re.search(r"step \d+ `expect` at tests/test_wrong_jobs\.py:\d+:13: failed", sections["wrong decimal"])
    assert "|             s.expect(rows=[{" in sections["wrong decimal"], sections["wrong decimal"]
    assert "column 'revenue' (decimal(12,2)) is missing" in sections["missing column"]
    assert "column 'debug' (string) is not in the contract's output" in sections["extra column"]
    assert "column 'clicks' is int, the contract says long" in sections["wrong type"]


def _wrong_expectation(project: Path, file: str, name: str) -> Path:
    """A copy of a clicks scenario, as `name` in tests/scenarios/clicks/`file`, expecting a wrong revenue."""
    good = (project / "tests" / "scenarios" / "clicks" / "late-click-is-dropped.scenario.yaml").read_text()
    bad = project / "tests" / "scenarios" / "clicks" / file
    bad.write_text(good.replace("scenario: late-click-is-dropped", f"scenario: {name}")
                   .replace("clicks: 1, revenue: 10.00}", "clicks: 1, revenue: 10.01}"))
    return bad


def test_a_wrong_expectation_fails_with_the_diff(consumer):
    py, project, env, _ = consumer
    bad = _wrong_expectation(project, "wrong.scenario.yaml", "wrong-expectation")
    try:
        rc, out = _run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", str(bad)], cwd=project, env=env,
                       timeout=RUN_TIMEOUT)
    finally:
        bad.unlink()
    assert rc == 1, out
    assert "1 missing, 1 unexpected" in out
    assert "revenue: 10.01}" in out  # the failing step's YAML line
    assert "re-run: pytest 'tests/scenarios/clicks/wrong.scenario.yaml::wrong-expectation[" in out


def test_eventtime_run_with_no_options_runs_what_pytest_runs_with_the_same_verdicts(consumer):
    """The shop binds its contracts for pytest in pyproject.toml; `eventtime run` reads the same lines
    (before, it bound nothing, ran nothing and exited 0)."""
    py, project, env, _ = consumer
    rc, out = _run([str(py.with_name("eventtime")), "run", "tests/scenarios", "--json", "cli.json"], cwd=project,
                   env=env, timeout=RUN_TIMEOUT)
    assert rc == 0, out
    rc, out = _run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/scenarios",
                    "--eventtime-report-json", "pytest.json"], cwd=project, env=env, timeout=RUN_TIMEOUT)
    assert rc == 0, out
    verdicts = {name: {(r["scenario"], r["implementation"], r["status"])
                       for r in json.loads((project / name).read_text())["results"]} for name in ("cli.json", "pytest.json")}
    assert verdicts["cli.json"] == verdicts["pytest.json"]
    assert {s for s, _, _ in verdicts["cli.json"]} == SHOP_SCENARIOS - {"python-user-sessions"}


def test_a_failing_scenarios_printed_rerun_command_runs_it_again_pasted(consumer):
    py, project, env, _ = consumer
    bad = _wrong_expectation(project, "wrong-cli.scenario.yaml", "wrong-in-cli")
    try:
        rc, out = _run([str(py.with_name("eventtime")), "run", "tests/scenarios"], cwd=project, env=env,
                       timeout=RUN_TIMEOUT)
        assert rc == 1, out
        (rerun,) = [line.split("re-run: ", 1)[1] for line in out.splitlines() if "re-run: " in line]
        words = shlex.split(rerun)  # as a user pastes it, in the same folder, with the venv's eventtime
        assert words[:3] == ["eventtime", "run", "tests/scenarios/clicks/wrong-cli.scenario.yaml"], rerun
        rc, again = _run([str(py.with_name("eventtime")), *words[1:]], cwd=project, env=env, timeout=RUN_TIMEOUT)
    finally:
        bad.unlink()
    assert rc == 1, again
    assert "FAIL  wrong-in-cli  [shop.clicks:transform]" in again and "0 passed, 1 failed" in again


_GROUPING = '.groupBy("page", F.window("ts", "5 minutes").alias("window"))'
_CHANGES = {  # a change of the shop's page_windows job in a pull request
    "incompatible": '.groupBy("page", F.upper("page").alias("page_key"), F.window("ts", "5 minutes").alias("window"))',
    "compatible": '.groupBy(F.col("page"), F.window("ts", "5 minutes").alias("window"))',  # the same key
}


def test_a_pull_request_check_restarts_the_changed_job_from_the_deployed_commits_checkpoint(consumer):
    """The README's pull-request check: the shop in git, its page_windows job changed in the working tree,
    each scenario's steps before its restart run with the job at HEAD, the rest with the changed one."""
    py, project, env, _ = consumer
    job = project / "shop" / "page_windows.py"
    shipped = job.read_text()
    assert _GROUPING in shipped
    git = ["git", "-c", "user.name=shop", "-c", "user.email=shop@example.com"]
    try:
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "deployed"]):
            assert _run(git + args, cwd=project, timeout=120)[0] == 0
        job.write_text(shipped.replace(_GROUPING, _CHANGES["incompatible"]))
        rc, out = _run([str(py.with_name("eventtime")), "run", "tests/scenarios/page_windows", "--previous-ref", "HEAD"],
                       cwd=project, env=env, timeout=RUN_TIMEOUT)
        assert rc == 1, out
        assert ("ERROR table-survives-restarts  [shop.page_windows:main]  (cannot restart from the checkpoint of "
                "shop.page_windows:main@HEAD: ") in out, out
        assert "Existing key" in out  # Spark's refusal, with the schema it had and the one it got
        # control: a change that keeps the state restarts, through the pytest face as the README runs it
        job.write_text(shipped.replace(_GROUPING, _CHANGES["compatible"]))
        rc, out = _run([str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", "tests/scenarios/page_windows",
                        "--eventtime-previous-ref", "HEAD"], cwd=project, env=env, timeout=RUN_TIMEOUT)
        assert rc == 0, out
        assert "1 passed, 2 skipped" in out and "has no `start` or `restart` step" in out, out  # the others: no restart
    finally:
        job.write_text(shipped)
        shutil.rmtree(project / ".git", ignore_errors=True)
