"""The harness and runner on real Spark: verdicts for wrong expectations, broken pipelines, bounds."""
import contextlib
import json
import textwrap
import threading
import time

import pytest

from eventtime.loader import load_scenario_text
from eventtime.runner import run_scenario
from eventtime.textreport import describe_failure

pytestmark = pytest.mark.spark

HEAD = """\
scenario: harness-check
description: a scenario for the harness tests
contract: tumbling_count
params: {window: 10s, watermark_delay: 5s}
sources:
  events:
    columns: {key: string, ts: timestamp}
    event_time: ts
steps:
"""


def scenario(steps: str, path="harness.scenario.yaml"):
    return load_scenario_text(HEAD + textwrap.indent(textwrap.dedent(steps), "  "), path)


BASIC = """\
- add:
    events: [[a, "00:00:03"], [a, "00:00:16"]]
- process
- expect:
    rows: [[a, "00:00:00", "00:00:10", 1]]
    watermark: "00:00:11"
"""


def test_passing_scenario_records_each_batch(spark):
    result = run_scenario(scenario(BASIC), session=spark)
    assert result.status == "passed", describe_failure(result)
    process = result.steps[2]
    assert process.kind == "process"
    assert [b.has_data for b in process.batches] == [True, False]
    assert process.batches[0].watermark_before_ms == 0
    assert process.batches[0].watermark_after_ms == 1704067211000
    assert process.batches[1].rows == [("a", 1704067200000000, 1704067210000000, 1)]
    doc = json.loads(json.dumps(result.to_dict()))  # plain JSON: no value needs a fallback to str
    assert (doc["status"], doc["steps"][2]["kind"]) == ("passed", "process")
    assert doc["steps"][2]["batches"][1]["rows"] == [["a", 1704067200000000, 1704067210000000, 1]]
    assert doc["steps"][2]["batches"][0]["watermark_after_ms"] == 1704067211000


def test_wrong_expectation_fails_with_a_diff_naming_file_and_line(spark):
    wrong = BASIC.replace('"00:00:10", 1]]', '"00:00:10", 2]]').replace('"00:00:11"', '"00:00:12"')
    result = run_scenario(scenario(wrong, "wrong.scenario.yaml"), session=spark, rerun="eventtime run wrong.scenario.yaml")
    assert result.status == "failed"
    text = describe_failure(result)
    assert "wrong.scenario.yaml:14:" in text  # the rows line
    assert "1 missing, 1 unexpected" in text
    assert "watermark is 00:00:11, expected 00:00:12" in text
    assert "re-run: eventtime run wrong.scenario.yaml" in text
    assert "batch 1 (no-data" in text


def test_pipeline_raising_at_definition_is_an_error_verdict(spark):
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:raises_at_definition", session=spark)
    assert result.status == "error"
    assert "ValueError: this pipeline cannot be built" in result.reason
    assert all(s.status == "skipped" for s in result.steps[1:] if s.kind == "expect")


def test_query_failing_in_a_batch_names_the_step_and_cause(spark):
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:fails_in_batch", session=spark)
    assert result.status == "error"
    assert result.reason.startswith("step 2 (process)")
    assert "boom inside a batch" in "\n".join(s.message or "" for s in result.steps)


def test_expected_failure_passes(spark):
    steps = BASIC.split("- expect:")[0] + "- expect:\n    failure: {message: boom inside a batch}\n"
    result = run_scenario(scenario(steps), "tests.spark.pipelines:fails_in_batch", session=spark)
    assert result.status == "passed", describe_failure(result)


def test_append_without_watermark_is_refused_by_spark_at_start(spark):
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:no_watermark", session=spark)
    assert result.status == "error"
    assert result.reason.startswith("step 0 (start)")
    assert "watermark" in result.reason.lower()


def test_non_streaming_result_is_reported(spark):
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:not_streaming", session=spark)
    assert result.status == "error"
    assert "not a streaming DataFrame" in result.reason


def test_unknown_pipeline_reference(spark):
    result = run_scenario(scenario(BASIC), "tests.spark.pipelines:nope", session=spark)
    assert result.status == "error"
    assert "has no 'nope'" in result.reason


def test_two_sources_in_one_add_land_in_one_batch(spark):
    text = """\
scenario: two-sources
description: both inputs in one micro-batch
contract: union_tumbling_count
params: {window: 10s, left_delay: 5s, right_delay: 5s}
sources:
  left: {columns: {key: string, ts: timestamp}, event_time: ts}
  right: {columns: {key: string, ts: timestamp}, event_time: ts}
steps:
  - add:
      left: [[a, "00:00:01"], [a, "00:00:02"]]
      right: [[b, "00:00:03"]]
  - process
  - expect:
      batches: [{data: true}, {data: false}]
"""
    result = run_scenario(load_scenario_text(text, "two.scenario.yaml"), session=spark)
    assert result.status == "passed", describe_failure(result)
    assert result.steps[2].batches[0].input_rows == 3


CHECKPOINT_KEY = "spark.sql.streaming.checkpointFileManagerClass"


def _conf_seen_at_start(spark, tmp_path, key=CHECKPOINT_KEY):
    """The value of `key` a harness query started with (read while it is built)."""
    import datetime

    from eventtime.pipelines.reference import tumbling_count
    from tests.spark.pipelines import events_run

    seen = []

    def pipeline(sources, params):
        seen.append(spark.conf.get(key, None))
        return tumbling_count(sources, params)

    run, sources = events_run(spark, pipeline, tmp_path / "checkpoint")
    try:
        run.start()
        sources["events"].add([("a", datetime.datetime(2024, 1, 1, 0, 0, 3))])
        assert run.process()[0].input_rows == 1  # a data batch ran with that setting
    finally:
        run.close()
    return seen[0]


def _fs_manager(spark):
    from eventtime.harness.compat import _CHECKPOINT_FILE_MANAGER_CLASSES

    jclass = spark._jvm.java.lang.Class
    for name in _CHECKPOINT_FILE_MANAGER_CLASSES:
        try:
            jclass.forName(name)
            return name
        except Exception:  # noqa: BLE001 - not in this Spark line
            continue
    raise AssertionError("no FileSystem-based checkpoint file manager found")


def test_queries_use_the_local_checkpoint_manager_and_leave_the_session_as_it_was(spark, tmp_path):
    from eventtime.harness import jvmclasses
    from eventtime.harness.compat import compat_for

    chosen = compat_for(spark).query_conf[CHECKPOINT_KEY]
    assert chosen == jvmclasses.MANAGER
    jclass = spark._jvm.java.lang.Class
    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    base = jclass.forName(_fs_manager(spark))
    assert base.isAssignableFrom(jclass.forName(chosen, True, loader))  # Spark's manager, one method changed
    assert not base.isAssignableFrom(jclass.forName("java.lang.String"))  # control: the check can say no
    assert spark.conf.get(CHECKPOINT_KEY, None) is None
    assert _conf_seen_at_start(spark, tmp_path) == chosen
    assert spark.conf.get(CHECKPOINT_KEY, None) is None  # restored after the start


def _checkpoint_files(spark, checkpoint, managers=(None,)):
    """Steps of the tumbling count on one checkpoint, one query start per entry of `managers` (the
    session's checkpoint manager for that start; None: the harness's choice), a window closed and
    emitted after each start; the rows emitted and the checkpoint's files relative to it."""
    import datetime

    from eventtime.pipelines.reference import tumbling_count
    from tests.spark.pipelines import events_run

    run, sources = events_run(spark, tumbling_count, checkpoint)
    emitted = []
    try:
        for i, manager in enumerate(managers):
            if manager is not None:
                spark.conf.set(CHECKPOINT_KEY, manager)
            try:
                run.start()  # a restart after the first: the query resumes from the checkpoint
            finally:
                spark.conf.unset(CHECKPOINT_KEY)
            sources["events"].add([("a", datetime.datetime(2024, 1, 1, 0, 0, 3 + 15 * i))])
            run.process()
            sources["events"].add([("a", datetime.datetime(2024, 1, 1, 0, 0, 16 + 15 * i))])
            emitted += [tuple(r) for b in run.process() for r in b.rows]
            run.stop()
    finally:
        run.close()
    files = sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*") if p.is_file())
    return emitted, files


def test_the_local_checkpoint_manager_writes_no_checksum_files_and_the_same_checkpoint(spark, tmp_path):
    ours_rows, ours = _checkpoint_files(spark, tmp_path / "ours")
    # control: Spark's manager, as a session may set it
    theirs_rows, theirs = _checkpoint_files(spark, tmp_path / "theirs", managers=(_fs_manager(spark),))
    assert ours_rows == theirs_rows and len(ours_rows) == 1  # the window [0, 10) closed once
    checksums = [f for f in theirs if f.endswith(".crc")]
    assert any(f.startswith("offsets/") for f in checksums) and any(f.startswith("state/") for f in checksums)
    assert not [f for f in ours if f.endswith(".crc")]
    assert ours == [f for f in theirs if not f.endswith(".crc")]  # offsets, commits, state of every batch
    assert any(f.startswith("state/") and f.endswith(".delta") for f in ours)


def test_a_checkpoint_either_manager_wrote_is_continued_by_the_other(spark, tmp_path):
    fs_manager = _fs_manager(spark)
    first, files_a = _checkpoint_files(spark, tmp_path / "a", managers=(fs_manager, None))
    second, files_b = _checkpoint_files(spark, tmp_path / "b", managers=(None, fs_manager))
    assert first == second and len(first) == 2  # [0, 10) closed before the restart, [10, 20) after it
    assert any(f.endswith(".crc") and f.startswith("offsets/") for f in files_a)  # Spark's wrote the first part
    assert any(f.endswith(".crc") and f.startswith("offsets/") for f in files_b)  # and the second part here


@contextlib.contextmanager
def _every_task_slot_taken(spark, tmp_path):
    """Every task slot of the session busy until the block ends: a job started inside waits, however
    fast it would be (a probe job that finishes before its wait begins would make the test depend on
    timing)."""
    sc = spark.sparkContext
    slots = sc.defaultParallelism
    release = str(tmp_path / "release")

    def hold(_):
        import os
        import time
        deadline = time.monotonic() + 120
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.05)

    holder = threading.Thread(target=lambda: sc.parallelize(range(slots), slots).foreach(hold), daemon=True)
    holder.start()
    tracker, deadline = sc.statusTracker(), time.monotonic() + 120
    while sum(getattr(tracker.getStageInfo(s), "numActiveTasks", 0) for s in tracker.getActiveStageIds()) < slots:
        assert time.monotonic() < deadline, f"the {slots} holding tasks did not all start within 120 s"
        time.sleep(0.05)
    try:
        yield
    finally:
        open(release, "w").close()
        holder.join(120)
        assert not holder.is_alive(), "the holding job did not end within 120 s of its release"


def test_a_local_checkpoint_manager_that_cannot_be_made_leaves_spark_s(spark, monkeypatch, tmp_path):
    from eventtime.harness import jvmclasses
    from eventtime.harness.compat import SparkCompat

    monkeypatch.setattr(jvmclasses, "_INSTALLED", {})  # as if this JVM had not made it yet
    monkeypatch.setattr(jvmclasses, "_SOURCE", jvmclasses._SOURCE.replace("super(path, conf);", "super(;"))
    assert SparkCompat(spark).query_conf[CHECKPOINT_KEY] == _fs_manager(spark)
    monkeypatch.undo()
    monkeypatch.setattr(jvmclasses, "_INSTALLED", {})
    monkeypatch.setattr(jvmclasses, "PROBE_TIMEOUT_S", 0)  # bounded wait for a probe that cannot start
    with _every_task_slot_taken(spark, tmp_path):
        assert SparkCompat(spark).query_conf[CHECKPOINT_KEY] == _fs_manager(spark)
    monkeypatch.undo()
    monkeypatch.setattr(jvmclasses, "_INSTALLED", {})
    assert SparkCompat(spark).query_conf[CHECKPOINT_KEY] == jvmclasses.MANAGER  # control
    assert SparkCompat(spark).query_conf[CHECKPOINT_KEY] == jvmclasses.MANAGER  # made once per JVM
    assert len(jvmclasses._INSTALLED) == 1


def test_the_compiled_classes_are_kept_and_a_damaged_jar_is_compiled_again(spark, tmp_path, monkeypatch):
    from eventtime.harness import jvmclasses
    from eventtime.harness.compat import SparkCompat

    monkeypatch.setenv("EVENTTIME_CACHE_DIR", str(tmp_path))
    compiled = []
    real = jvmclasses._compile

    def counted(*args):
        compiled.append(1)
        return real(*args)

    monkeypatch.setattr(jvmclasses, "_compile", counted)

    def made():  # as a new SparkContext would: the classes loaded afresh
        monkeypatch.setattr(jvmclasses, "_INSTALLED", {})
        return SparkCompat(spark).query_conf[CHECKPOINT_KEY]

    def jars():
        return sorted((tmp_path / "jvm").glob("eventtime-jvm-*.jar"))

    assert made() == jvmclasses.MANAGER and len(compiled) == 1 and len(jars()) == 1
    assert made() == jvmclasses.MANAGER and len(compiled) == 1  # the kept jar, not compiled again
    jars()[0].write_bytes(jars()[0].read_bytes()[:200])  # damaged (a full disk, a killed writer)
    assert made() == jvmclasses.MANAGER and len(compiled) == 2 and len(jars()) == 1
    assert made() == jvmclasses.MANAGER and len(compiled) == 2
    monkeypatch.setattr(jvmclasses, "_CLOCK_SOURCE", jvmclasses._CLOCK_SOURCE + "\n")  # other sources: other key
    assert made() == jvmclasses.MANAGER and len(compiled) == 3 and len(jars()) == 2
    assert not list((tmp_path / "jvm").glob(".*.part"))  # nothing half-written left behind

def test_a_new_session_makes_what_its_first_query_asks_of_the_jvm_on_a_thread(spark, monkeypatch):
    from eventtime.harness import coldstart, jvmclasses
    from eventtime.harness.compat import compat_for

    monkeypatch.setattr(jvmclasses, "_INSTALLED", {})  # as on a new JVM: the classes not loaded yet
    other = spark.newSession()
    assert "query_conf" not in vars(compat_for(other))  # control: nothing made for it yet
    thread = coldstart.prepare_queries_meanwhile(other)
    thread.join(jvmclasses.PROBE_TIMEOUT_S + 60)
    assert not thread.is_alive()
    made = vars(compat_for(other)).get("query_conf")  # kept for the session's first query
    assert made is not None and made[CHECKPOINT_KEY] == jvmclasses.MANAGER
    assert list(jvmclasses._INSTALLED.values())[0][1] == jvmclasses.MANAGER
    assert compat_for(other).query_conf is made


TUNING = {"spark.sql.streaming.pollingDelay": "0", "spark.sql.codegen.wholeStage": "false",
          "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@pytest.mark.parametrize("key", sorted(TUNING))
def test_queries_start_with_the_settings_for_tiny_batches_unless_the_session_sets_them(spark, tmp_path, key):
    from eventtime.harness import tuning

    assert tuning.QUERY_CONF == TUNING  # what this test checks is what the harness gives
    assert spark.conf.get(key, None) is None
    assert _conf_seen_at_start(spark, tmp_path / "ours", key) == TUNING[key]
    assert spark.conf.get(key, None) is None  # restored after the start
    theirs = {"0": "10ms", "false": "true", "NO_CODEGEN": "FALLBACK"}[TUNING[key]]
    spark.conf.set(key, theirs)
    try:
        assert _conf_seen_at_start(spark, tmp_path / "theirs", key) == theirs  # the session's own value wins
    finally:
        spark.conf.unset(key)


def test_a_checkpoint_manager_the_session_sets_is_kept(spark, tmp_path):
    theirs = _fs_manager(spark).replace("FileSystemBased", "FileContextBased")
    spark.conf.set(CHECKPOINT_KEY, theirs)
    try:
        assert _conf_seen_at_start(spark, tmp_path) == theirs
    finally:
        spark.conf.unset(CHECKPOINT_KEY)


def test_a_step_names_no_jvm_class_by_walking_packages(spark, tmp_path, monkeypatch):
    # `jvm.a.b.C` asks the JVM about every package prefix (failed class lookups over the whole class
    # path); the harness names the classes it calls on every add and batch once per session
    # (SparkCompat.java). Counted: py4j name lookups made from harness code while steps run.
    import datetime
    import os
    import traceback

    import py4j.java_gateway as jg

    import eventtime.harness as harness_pkg
    from eventtime.harness.compat import _jvm_class, compat_for
    from eventtime.pipelines.reference import tumbling_count
    from tests.spark.pipelines import events_run

    harness_dir = os.path.dirname(harness_pkg.__file__)
    lookups = []
    for cls in (jg.JVMView, jg.JavaPackage):
        original = cls.__getattr__

        def counting(self, name, _original=original):
            caller = next((f for f in reversed(traceback.extract_stack()[:-1]) if "py4j" not in f.filename), None)
            if caller is not None and caller.filename.startswith(harness_dir) and not name.startswith("_"):
                lookups.append(f"{caller.filename}:{caller.lineno} .{name}")
            return _original(self, name)

        monkeypatch.setattr(cls, "__getattr__", counting)
    run, sources = events_run(spark, tumbling_count, tmp_path / "checkpoint")
    try:
        run.start()
        lookups.clear()  # starting a query may look a class up
        for second in (3, 14, 25):
            sources["events"].add([("a", datetime.datetime(2024, 1, 1, 0, 0, second))])
            assert run.process()
    finally:
        run.close()
    assert lookups == []
    assert _jvm_class(compat_for(spark).jvm, "java.util.ArrayList") is not None
    assert len(lookups) == 1  # control: a lookup from harness code is counted


def _clock_calls(spark, tmp_path, monkeypatch):
    """How often Spark called the stepped clock's methods in Python over a start and two steps."""
    import datetime

    from eventtime.harness.clock import SteppedClock
    from eventtime.pipelines.reference import tumbling_count
    from tests.spark.pipelines import events_run

    calls = {"getTimeMillis": 0, "waitTillTime": 0}

    def counting(name):
        real = getattr(SteppedClock, name)

        def counted(self, *args):
            calls[name] += 1
            return real(self, *args)
        return counted

    for name in calls:
        monkeypatch.setattr(SteppedClock, name, counting(name))
    run, sources = events_run(spark, tumbling_count, tmp_path / "checkpoint")
    try:
        run.start()
        for second in (3, 16):
            sources["events"].add([("a", datetime.datetime(2024, 1, 1, 0, 0, second))])
            run.process()
    finally:
        run.close()
    monkeypatch.undo()
    return calls


def test_spark_reads_the_stepped_clock_s_time_in_the_jvm(spark, tmp_path, monkeypatch):
    ours = _clock_calls(spark, tmp_path / "ours", monkeypatch)
    assert ours["waitTillTime"] >= 4 and ours["getTimeMillis"] == 0  # parks come to Python, the time does not
    monkeypatch.setenv("EVENTTIME_SPARK_TUNING", "off")  # control: the clock itself, called for the time
    theirs = _clock_calls(spark, tmp_path / "theirs", monkeypatch)
    assert theirs["waitTillTime"] == ours["waitTillTime"] and theirs["getTimeMillis"] > 10
