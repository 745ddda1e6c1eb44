"""The driver JVM's class-data sharing archive: Spark's classes loaded once, mapped by every later JVM.

A driver JVM spends most of its first seconds loading and verifying Spark's classes from about 280
jars (the session, the planner, the first streaming query). JDK 13+ can write the classes a JVM
loaded to an archive when it exits (`-XX:ArchiveClassesAtExit`) and map that archive into later JVMs
(`-XX:SharedArchiveFile`), which then skip the parsing and verifying. The harness does this for the
driver JVMs it launches (`eventtime.harness.session.get_session`): the first JVM of an installed Spark
and Java records, and writes the archive when it exits (after its process has ended: nobody waits for
it); the next start puts the archive in place once the JVM's log says it is whole, and every later
JVM of that install maps it. Figures: BENCHMARKS.md, "Cold start".

The archive is a cache, never a condition: it lives in a per-user cache folder
(`EVENTTIME_CACHE_DIR`, else `$XDG_CACHE_HOME/eventtime`, else `~/.cache/eventtime`), under a name
keyed by the pyspark version, the Spark jars (names, sizes, modification times), the extra driver
class path and the Java installation, so a changed install gets a new archive and the stale one of
that Spark home is removed. Every start also removes what is of no more use: the archives of Spark
homes that no longer exist (a removed virtualenv; each key notes its home in `<key>.jsa.home`) and the
files of recordings that ended without becoming the archive. Anything that keeps it from being built or used (no Java 13+, a cache
folder that cannot be written, a JVM that refuses the archive) leaves the JVM as it would be without
it, with at most a one-line note. `EVENTTIME_JVM_ARCHIVE=off` turns it off. The JVM refuses an
archive it cannot use by itself (it checks the jars and its own build) and starts without it; the
harness reads its warning in the driver log, says so, and removes the archive so the next start
builds a new one.
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .processes import alive

__all__ = ["ENV_OFF", "ENV_CACHE", "ArchivePlan", "plan_archive", "cache_dir", "archive_key", "java_release",
           "refused", "enabled", "complete", "discard", "after_launch", "launch_failed"]

ENV_OFF = "EVENTTIME_JVM_ARCHIVE"
ENV_CACHE = "EVENTTIME_CACHE_DIR"
_OFF = {"0", "off", "false", "no"}
_IN_PLACE_SINCE = 14  # the first JDK with ArchiveRelocationMode (an older JVM does not know the option)
# what a JVM says when it does not map the archive it was given (HotSpot's `cds` log tags)
_REFUSAL = re.compile(r"\[(warning|error)\]\[cds[\],]|Unable to use shared archive|shared archive file", re.I)


@dataclass
class ArchivePlan:
    """What the next driver JVM does with the archive: `use` it (mapped), `record` it (written at
    exit to `part`, renamed to `path` once complete), or nothing (`options` empty; `note` says why
    when a person should know)."""

    action: str  # "use" | "record" | "none"
    path: Path | None = None
    part: Path | None = None
    note: str | None = None
    # Map the archive where it was written rather than at a random address (`ArchiveRelocationMode=0`,
    # a diagnostic option of JDK 14+; JDK 17's default is 1, always elsewhere, for address-space
    # randomisation): a relocation rewrites every pointer in the archive, 0.16 s of each JVM's creation
    # for Spark's 170 MB (BENCHMARKS.md, "The class-data archive mapped where it was written"). Where
    # that address is taken the JVM relocates as before. Where classes sit in memory cannot change
    # what a query computes.
    in_place: bool = False

    @property
    def options(self) -> str:
        if self.action == "use":
            mapping = " -XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0" if self.in_place else ""
            return f"-XX:SharedArchiveFile={self.path} -Xshare:auto{mapping}"
        if self.action == "record" and self.part is not None:
            return f"-XX:ArchiveClassesAtExit={self.part} -Xlog:cds+dynamic=info:file={_log_of(self.part)}"
        return ""


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(ENV_OFF, "").strip().lower() not in _OFF


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The per-user folder the archives live in (`jvm/` of the eventtime cache)."""
    chosen = environ.get(ENV_CACHE, "").strip()
    if chosen:
        return Path(chosen).expanduser() / "jvm"
    xdg = environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "eventtime" / "jvm"


def java_command(environ: Mapping[str, str] = os.environ) -> str | None:
    """The `java` Spark's launch scripts run (`$JAVA_HOME/bin/java`, else the first on PATH), resolved."""
    home = environ.get("JAVA_HOME", "").strip()
    found = os.path.join(home, "bin", "java") if home else shutil.which("java", path=environ.get("PATH"))
    if not found or not os.path.exists(found):
        return None
    return os.path.realpath(found)


def java_release(java: str) -> tuple[int, str] | None:
    """(feature version, the `release` file's text) of the Java installation `java` belongs to; None
    when it has no readable `release` file (then the harness cannot tell whether it archives)."""
    release = Path(java).parent.parent / "release"
    try:
        text = release.read_text("utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.M)
    if not found:
        return None
    major = int(found.group(1))
    if major == 1 and found.group(2):  # 1.8 -> 8
        major = int(found.group(2))
    return major, text


def archive_key(spark_version: str, spark_home: str, java: str, java_text: str, class_path: str = "") -> str:
    """A name for the archive of this install: what the JVM checks (jars by size and modification time,
    its own build) and what it cannot (the pyspark version, the extra class path), hashed. The
    Spark home's path is part of the name so that two installs of one version keep one each."""
    digest = hashlib.sha256()
    for part in (spark_version, class_path, java, java_text):
        digest.update(part.encode("utf-8", "replace") + b"\0")
    with contextlib.suppress(OSError):
        stat = os.stat(java)
        digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    jars = Path(spark_home) / "jars"
    try:
        entries = sorted(os.scandir(jars), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        with contextlib.suppress(OSError):
            stat = entry.stat()
            digest.update(f"{entry.name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    home = hashlib.sha256(os.path.realpath(spark_home).encode("utf-8", "replace")).hexdigest()[:8]
    safe_version = re.sub(r"[^A-Za-z0-9.]+", "_", spark_version)
    return f"spark-{safe_version}-{home}-{digest.hexdigest()[:16]}"


def plan_archive(settings: Mapping[str, str], environ: Mapping[str, str] = os.environ,
                 spark: tuple[str, str] | None = None) -> ArchivePlan:
    """What the driver JVM about to be launched with `settings` (the session's Spark settings) does
    with the archive. `spark`: (pyspark version, Spark home), found from the installed pyspark when
    not given. Never raises: whatever goes wrong is a plan without the archive."""
    if not enabled(environ):
        return ArchivePlan("none")
    try:
        return _plan(settings, environ, spark)
    except Exception as exc:  # noqa: BLE001 - a cache must never keep a session from starting
        return ArchivePlan("none", note=f"the JVM class-data archive is not used: {type(exc).__name__}: {exc}")


def _plan(settings: Mapping[str, str], environ: Mapping[str, str], spark: tuple[str, str] | None) -> ArchivePlan:
    if spark is None:
        import pyspark
        from pyspark.find_spark_home import _find_spark_home

        spark = (pyspark.__version__, environ.get("SPARK_HOME") or _find_spark_home())
    version, home = spark
    java = java_command(environ)
    release = java_release(java) if java else None
    if release is None or release[0] < 13:
        # ArchiveClassesAtExit is JDK 13+ (an older JVM would refuse to start on the option); a Java
        # without a `release` file cannot be told apart, so it is left alone too
        return ArchivePlan("none")
    class_path = settings.get("spark.driver.extraClassPath", "") + os.pathsep + environ.get("SPARK_DIST_CLASSPATH", "")
    key = archive_key(version, home, java or "", release[1], class_path)
    folder = cache_dir(environ)
    path = folder / f"{key}.jsa"
    if complete(path):
        with contextlib.suppress(OSError):  # what other recordings and removed installs left
            _tidy(folder, key, home)
    else:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            recording = _tidy(folder, key, home)
            probe = folder / f".probe-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            return ArchivePlan("none", note=f"the JVM class-data archive is not built: its folder {folder} "
                                            f"cannot be written ({exc.strerror or exc})")
        if recording:  # another JVM records it (or is writing it): this one starts as before
            return ArchivePlan("none")
    if complete(path):
        return ArchivePlan("use", path=path, in_place=release[0] >= _IN_PLACE_SINCE)
    part = folder / f"{key}.jsa.{os.getpid()}.{_next_count()}.part"
    return ArchivePlan("record", path=path, part=part,
                       note=f"recording Spark's classes for a JVM class-data archive in {folder} (once per "
                            f"Spark and Java install; the JVM writes it when this run ends, later starts "
                            f"map it; {ENV_OFF}=off turns it off)")


_next_count = itertools.count(1).__next__  # 1, 2, ...: this process's recordings, each part named apart


# A recording JVM writes three files beside the archive: `<key>.jsa.<pid>.<n>.part` (the archive, at its
# exit), `<part>.log` (HotSpot's cds log: its last lines, once the archive is written whole, say so) and
# `<part>.jvm` (the JVM's pid, written by the harness after the launch). The process that launched it does
# not wait for it: PySpark's JVM exits when that process ends, and writes the archive then (tens of
# seconds on a loaded machine). Whichever start comes next finishes the job (`_tidy`).
_WRITTEN = "Written dynamic archive"


def _log_of(part: Path) -> Path:
    return part.with_name(part.name + ".log")


def _pid_file_of(part: Path) -> Path:
    return part.with_name(part.name + ".jvm")


def _tidy(folder: Path, key: str, home: str) -> bool:
    """Put a recorded archive of `key` in place (unless one is already), note the Spark home `key`
    belongs to, and remove what is of no more use: other keys of this Spark home (a changed install),
    every file of a key whose Spark home is gone (a removed virtualenv), and ended recordings of `key`.
    True while a recording of `key` is still under way (its JVM alive, or its launch not yet told)."""
    prefix = key.rsplit("-", 1)[0] + "-"
    path = folder / f"{key}.jsa"
    home_file = _home_file_of(path)
    if not home_file.is_file():
        home_file.write_text(os.path.realpath(home), "utf-8")
    entries = sorted(folder.iterdir())
    gone = [e.name[: -len(".jsa.home")] + "." for e in entries
            if e.name.endswith(".jsa.home") and not os.path.isdir(_read(e))]
    recording = False
    for entry in entries:
        name = entry.name
        if (name.startswith(prefix) and not name.startswith(key + ".")) or name.startswith(tuple(gone)):
            with contextlib.suppress(OSError):  # a stale key of this Spark home, or of one removed
                entry.unlink()
        elif name.startswith(key + ".jsa.") and name.endswith(".part.log"):
            part = entry.with_name(name[: -len(".log")])
            state = _recording_state(part)
            if state == "written" and not complete(path):
                _seal(part, path)
            if state == "running":
                recording = True
            else:
                for victim in (part, entry, _pid_file_of(part)):
                    with contextlib.suppress(OSError):
                        victim.unlink()
    return recording


def _home_file_of(path: Path) -> Path:
    return path.with_name(path.name + ".home")


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8").strip()
    except OSError:
        return ""


def _recording_state(part: Path) -> str:
    """"written" (the log says the archive was written whole), "running" (its JVM, or the process
    launching it, is alive) or "dead"."""
    try:
        with open(_log_of(part), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4096))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        tail = ""
    if _WRITTEN in tail and part.is_file():
        return "written"
    try:
        jvm = int(_pid_file_of(part).read_text("utf-8").strip())
    except (OSError, ValueError):
        jvm = None
    if jvm is not None:
        return "running" if alive(jvm) else "dead"
    launcher = part.name.rsplit(".", 3)[-3] if part.name.count(".") >= 3 else ""
    return "running" if launcher.isdigit() and alive(int(launcher)) else "dead"


def _seal(part: Path, path: Path) -> None:
    """Move a whole archive into place and seal it with its size (what `complete` checks)."""
    try:
        size = part.stat().st_size
        os.replace(part, path)
        seal = _seal_of(path)
        temp = seal.with_name(seal.name + f".{os.getpid()}")
        temp.write_text(str(size), "utf-8")
        os.replace(temp, seal)
    except OSError:  # another start sealed it first, or the folder went away: the next start sees
        pass


def _seal_of(path: Path) -> Path:
    return path.with_name(path.name + ".complete")


def complete(path: Path) -> bool:
    """Whether `path` is an archive a recording JVM wrote whole (its seal names its size). The check
    matters: HotSpot maps an archive without reading it whole, and a truncated one crashes the JVM
    (SIGBUS, measured on 17) instead of being refused."""
    try:
        return _seal_of(path).read_text("utf-8").strip() == str(path.stat().st_size)
    except (OSError, ValueError):
        return False


def discard(path: Path | None) -> None:
    """Remove an archive and its seal (the next start records a new one)."""
    if path is None:
        return
    for victim in (_seal_of(path), path):
        with contextlib.suppress(OSError):
            victim.unlink()


def refused(lines: Sequence[str]) -> str | None:
    """The JVM's words when its start-up output (`lines`) says it did not map the archive; None otherwise."""
    for line in lines:
        if _REFUSAL.search(line) and "Skipping" not in line:
            return line.strip()
    return None


def after_launch(plan: ArchivePlan, startup_lines: Sequence[str], jvm_pid: int | None,
                 say: Callable[[str], None] = lambda text: print(f"eventtime: {text}", file=sys.stderr)) -> None:
    """What follows the launch of a JVM under `plan`: a refused archive is said and removed (the next
    start records another); a recording JVM's pid is noted, so that later starts can tell a recording
    under way from a dead one."""
    if plan.action == "use":
        words = refused(startup_lines)
        if words is not None and plan.path is not None:
            say(f"note: the JVM did not use its class-data archive {plan.path} ({words}); it started "
                f"without it, and the next start records a new one")
            discard(plan.path)
    elif plan.action == "record" and plan.part is not None and jvm_pid is not None:
        with contextlib.suppress(OSError):
            _pid_file_of(plan.part).write_text(str(jvm_pid), "utf-8")


_CRASHED = "A fatal error has been detected by the Java Runtime Environment"


def launch_failed(plan: ArchivePlan, startup_lines: Sequence[str],
                  say: Callable[[str], None] = lambda text: print(f"eventtime: {text}", file=sys.stderr)) -> None:
    """A JVM launched under `plan` failed while its session was created. When it crashed (HotSpot's
    fatal error report in its output), a used archive is discarded, so that the JVM started next (the
    harness tries again) does without it rather than crashing the same way; a JVM killed from outside
    leaves the archive alone."""
    if plan.action == "use" and any(_CRASHED in line for line in startup_lines):
        say(f"note: the JVM crashed while mapping its class-data archive {plan.path}; the archive is "
            f"removed, and the next JVM starts without it")
        discard(plan.path)
