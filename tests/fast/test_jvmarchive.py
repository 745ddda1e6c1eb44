"""The driver JVM's class-data archive (`eventtime.harness.jvmarchive`): its key, when it is used,
recorded, refused or left alone, and that nothing about it can keep a session from starting. No JVM:
a fake Spark home (a `jars` folder) and a fake Java home (`bin/java`, `release`)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventtime.harness import jvmarchive as ja


@pytest.fixture
def install(tmp_path: Path) -> dict:
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    for name in ("spark-core.jar", "spark-sql.jar"):
        (spark_home / "jars" / name).write_bytes(b"jar " + name.encode())
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").write_text("#!/bin/sh\n")
    (java_home / "release").write_text('JAVA_VERSION="17.0.15"\nIMPLEMENTOR="Test"\n')
    environ = {"JAVA_HOME": str(java_home), "EVENTTIME_CACHE_DIR": str(tmp_path / "cache"), "PATH": ""}
    return {"spark": ("4.3.0", str(spark_home)), "environ": environ, "spark_home": spark_home,
            "java_home": java_home, "cache": tmp_path / "cache" / "jvm"}


def _plan(install: dict, settings: dict | None = None, **env: str) -> ja.ArchivePlan:
    return ja.plan_archive(settings or {}, {**install["environ"], **env}, spark=install["spark"])


def _finish(plan: ja.ArchivePlan, *, written: bool = True, content: bytes = b"archive bytes") -> None:
    """What a recording JVM leaves once it has exited: its part, and a log that says the archive was
    written whole (or, `written=False`, a JVM killed while writing: no such line). The JVM's pid was
    noted after its launch; here a process that has already ended."""
    assert plan.part is not None
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ja.after_launch(plan, [], int(ended.stdout), say=pytest.fail)
    plan.part.write_bytes(content)
    log = "[0.5s][info][cds,dynamic] Regenerate MethodHandle Holder classes...\n"
    if written:
        log += ("[0.6s][info][cds,dynamic] Written dynamic archive 0x800bc7000 - 0x800bdee70 [984 bytes header, "
                "97904 bytes total]\n[0.6s][info][cds,dynamic] 8 klasses; 12 symbols\n")
    Path(str(plan.part) + ".log").write_text(log)


def test_first_start_records_then_later_starts_use(install):
    first = _plan(install)
    assert first.action == "record" and first.note and "EVENTTIME_JVM_ARCHIVE=off" in first.note
    assert first.options == (f"-XX:ArchiveClassesAtExit={first.part} "
                             f"-Xlog:cds+dynamic=info:file={first.part}.log")
    assert first.part.parent == install["cache"] and first.part.name.endswith(".part")
    _finish(first)
    second = _plan(install)  # puts the written archive in place, sealed, and uses it
    assert second.action == "use" and second.path == first.path and second.note is None
    assert second.options == (f"-XX:SharedArchiveFile={first.path} -Xshare:auto "
                              f"-XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0")
    assert first.path.read_bytes() == b"archive bytes" and ja.complete(first.path)
    assert sorted(p.name for p in install["cache"].iterdir()) == [
        first.path.name, first.path.name + ".complete", first.path.name + ".home"]
    assert Path(str(first.path) + ".home").read_text() == os.path.realpath(install["spark"][1])


@pytest.mark.parametrize("release, in_place", [("13.0.2", False), ("14", True), ("21.0.5", True)])
def test_the_archive_is_mapped_in_place_where_the_jdk_can(install, release, in_place):
    # ArchiveRelocationMode is JDK 14+: a JDK 13 would refuse to start on it, and maps the archive as it does
    (install["java_home"] / "release").write_text(f'JAVA_VERSION="{release}"\n')
    _finish(_plan(install))
    plan = _plan(install)
    assert plan.action == "use" and plan.in_place is in_place
    assert ("-XX:ArchiveRelocationMode=0" in plan.options) is in_place
    assert plan.options.startswith(f"-XX:SharedArchiveFile={plan.path} -Xshare:auto")


def test_while_a_jvm_records_other_starts_do_without(install):
    first = _plan(install)
    ja.after_launch(first, [], os.getpid(), say=pytest.fail)  # a JVM that is alive: this process stands in
    Path(str(first.part) + ".log").write_text("")
    assert _plan(install).action == "none"
    assert first.part.with_name(first.part.name + ".log").exists()


def test_a_recording_jvm_that_died_leaves_no_archive(install):
    plan = _plan(install)
    _finish(plan, written=False, content=b"half an arch")
    again = _plan(install)
    assert again.action == "record" and not plan.path.exists()
    assert not plan.part.exists() and not Path(str(plan.part) + ".log").exists()


def test_an_archive_without_its_seal_is_not_used(install):
    # a truncated archive crashes HotSpot 17 (SIGBUS) instead of being refused: only sealed ones are used
    plan = _plan(install)
    _finish(plan)
    assert _plan(install).action == "use"
    with open(plan.path, "ab") as fh:
        fh.write(b"more")  # its size no longer matches the seal
    assert _plan(install).action == "record"
    plan.path.write_bytes(b"x")
    Path(str(plan.path) + ".complete").unlink()
    assert _plan(install).action == "record"


@pytest.mark.parametrize("change", ["jar touched", "jar added", "pyspark version", "java", "class path"])
def test_the_key_changes_with_the_install(install, change):
    before = _plan(install)
    _finish(before)
    assert _plan(install).action == "use"
    settings, spark = {}, install["spark"]
    if change == "jar touched":
        jar = install["spark_home"] / "jars" / "spark-core.jar"
        stat = jar.stat()
        os.utime(jar, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    elif change == "jar added":
        (install["spark_home"] / "jars" / "extra.jar").write_bytes(b"x")
    elif change == "pyspark version":
        spark = ("4.3.1", spark[1])
    elif change == "java":
        (install["java_home"] / "release").write_text('JAVA_VERSION="17.0.16"\n')
    else:
        settings = {"spark.driver.extraClassPath": "/opt/extra.jar"}
    after = ja.plan_archive(settings, install["environ"], spark=spark)
    assert after.action == "record" and after.path != before.path
    if change != "pyspark version":  # the stale archive of this Spark home goes when its successor is planned
        assert not before.path.exists() and not Path(str(before.path) + ".complete").exists()


def test_the_same_install_gets_the_same_key(install):
    a = ja.archive_key("4.3.0", str(install["spark_home"]), "/j/bin/java", "v17")
    assert a == ja.archive_key("4.3.0", str(install["spark_home"]), "/j/bin/java", "v17")
    assert a.startswith("spark-4.3.0-")


@pytest.mark.parametrize("value", ["off", "0", "false", "no", "OFF"])
def test_turned_off(install, value):
    plan = _plan(install, EVENTTIME_JVM_ARCHIVE=value)
    assert plan.action == "none" and plan.options == "" and plan.note is None
    assert not install["cache"].exists()


def test_old_or_unknown_java_is_left_alone(install):
    (install["java_home"] / "release").write_text('JAVA_VERSION="11.0.2"\n')
    assert _plan(install).action == "none"
    (install["java_home"] / "release").write_text('JAVA_VERSION="1.8.0_392"\n')
    assert _plan(install).action == "none"
    (install["java_home"] / "release").unlink()
    assert _plan(install).action == "none"
    assert _plan(install, JAVA_HOME=str(install["java_home"] / "missing")).action == "none"


def test_an_unwritable_cache_folder_is_a_note_not_a_failure(install, tmp_path):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("")
    plan = _plan(install, EVENTTIME_CACHE_DIR=str(blocker))
    assert plan.action == "none" and plan.options == ""
    assert "cannot be written" in plan.note and str(blocker) in plan.note


def test_anything_unexpected_is_a_plan_without_the_archive(install):
    plan = ja.plan_archive({}, install["environ"], spark=("4.3.0", None))  # type: ignore[arg-type]
    assert plan.action == "none" and plan.options == "" and "not used" in plan.note


def test_cache_folder_choice():
    assert ja.cache_dir({"EVENTTIME_CACHE_DIR": "/c"}) == Path("/c/jvm")
    assert ja.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/eventtime/jvm")
    assert ja.cache_dir({}) == Path.home() / ".cache" / "eventtime" / "jvm"


def test_refusal_is_read_from_the_jvm_output(install):
    said = "[0.237s][warning][cds,dynamic] Unable to use shared archive. The top archive failed to load: /a.jsa"
    assert ja.refused(["Using Spark's default log4j profile", said]) == said
    assert ja.refused(["[warning][cds] Skipping org/x: Signed JAR", "26/11/23 WARN NativeCodeLoader: ..."]) is None
    _finish(_plan(install))
    use = _plan(install)
    assert use.action == "use"
    notes: list[str] = []
    ja.after_launch(use, [said], None, say=notes.append)
    assert len(notes) == 1 and "did not use" in notes[0] and str(use.path) in notes[0]
    assert not use.path.exists() and _plan(install).action == "record"


def test_a_launch_that_crashed_on_the_archive_discards_it(install):
    _finish(_plan(install))
    use = _plan(install)
    assert use.action == "use"
    ja.after_launch(use, ["all fine"], None, say=pytest.fail)
    assert use.path.exists()
    ja.launch_failed(use, ["Exception in thread main: killed"], say=pytest.fail)  # killed from outside: kept
    assert use.path.exists()
    notes: list[str] = []
    ja.launch_failed(use, ["#", "# A fatal error has been detected by the Java Runtime Environment:", "#  SIGBUS"],
                     say=notes.append)
    assert len(notes) == 1 and "crashed" in notes[0] and str(use.path) in notes[0]
    assert not use.path.exists() and _plan(install).action == "record"


def test_leftovers_of_ended_launches_are_removed(install):
    install["cache"].mkdir(parents=True)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    key = _plan(install).path.name[: -len(".jsa")]
    leftover = install["cache"] / f"{key}.jsa.{ended.stdout.strip()}.1.part"  # launched, never told its JVM
    leftover.write_bytes(b"half")
    Path(str(leftover) + ".log").write_text("")
    assert _plan(install).action == "record"
    assert not leftover.exists() and not Path(str(leftover) + ".log").exists()
    mine = install["cache"] / f"{key}.jsa.{os.getpid()}.9.part"  # this process is launching it
    Path(str(mine) + ".log").write_text("")
    assert _plan(install).action == "none"
    assert Path(str(mine) + ".log").exists()


def _other_install(install: dict, name: str) -> dict:
    """A second Spark home beside `install`'s, sharing its cache."""
    home = install["spark_home"].parent / name
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-core.jar").write_bytes(b"other jar")
    return {**install, "spark": ("4.3.0", str(home)), "spark_home": home}


def test_the_archives_of_a_removed_spark_home_go_at_the_next_start(install):
    import shutil

    removed, kept = _other_install(install, "venv-removed"), _other_install(install, "venv-kept")
    for other in (removed, kept):
        plan = _plan(other)
        _finish(plan)
        assert _plan(other).action == "use"
        leftover = plan.path.with_name(plan.path.name + ".99999999.7.part.log")  # a recording that never ended well
        leftover.write_text("")
        other["path"] = plan.path
    shutil.rmtree(removed["spark_home"])
    assert _plan(install).action == "record"  # any start tidies, here one of a third install
    names = sorted(p.name for p in install["cache"].iterdir())
    assert not [n for n in names if n.startswith(removed["path"].name[: -len(".jsa")])]
    assert ja.complete(kept["path"]) and _plan(kept).action == "use"  # control: its home is still there


def test_once_the_archive_is_whole_other_recordings_of_it_go(install):
    first, second = _plan(install), None
    ja.after_launch(first, [], os.getpid(), say=pytest.fail)  # recording (this process stands in for its JVM)
    Path(str(first.part) + ".log").write_text("")
    # a second JVM that started while the first recorded... is started without recording; one that
    # recorded all the same (two processes planning at one instant) leaves a second part
    twin = first.part.with_name(first.part.name.replace(".1.part", ".2.part"))
    second = ja.ArchivePlan("record", path=first.path, part=twin)
    _finish(second, content=b"twin archive")
    assert _plan(install).action == "use" and first.path.read_bytes() == b"twin archive"
    _finish(first, content=b"first archive")  # the first JVM writes its archive later
    assert _plan(install).action == "use"
    assert first.path.read_bytes() == b"twin archive" and ja.complete(first.path)  # the archive in use is kept
    assert sorted(p.name for p in install["cache"].iterdir()) == [
        first.path.name, first.path.name + ".complete", first.path.name + ".home"]
