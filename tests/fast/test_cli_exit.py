"""The `eventtime` console script ends its process without the interpreter's teardown, after doing
what an exit must do: wait for non-daemon threads, run the exit handlers, flush the streams."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# How each program below ends, by its last argument: the console script, or main() returned to the
# interpreter as a plain script would.
ENDING = textwrap.dedent("""
    cli.main = main
    if sys.argv[-1] == "console":
        cli.console_main()
    else:
        sys.exit(cli.main())
""")

PROGRAM = textwrap.dedent("""
    import atexit, sys, threading, time
    from pathlib import Path
    from eventtime import cli

    out = Path(sys.argv[1])

    class Freed:  # what only the interpreter's teardown does: free a module's objects
        def __del__(self):
            (out / "torn-down").write_text("yes")

    kept = Freed()

    def main():
        print("verdicts")  # buffered: stdout is a pipe
        def late():
            time.sleep(0.3)  # outlives main(); waited for however long it takes
            (out / "thread").write_text("done")
        threading.Thread(target=late).start()
        atexit.register(lambda: (out / "handler").write_text("ran"))
        return 3
""") + ENDING


def _end(tmp_path, how):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout a buffered pipe
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path), how], capture_output=True,
                          text=True, timeout=120, env=env)
    found = {p.name: p.read_text() for p in tmp_path.iterdir()}
    return done, found


def test_the_console_script_does_what_an_exit_must_and_skips_the_teardown(tmp_path):
    done, found = _end(tmp_path, "console")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "verdicts\n"
    assert found.get("thread") == "done"
    assert found.get("handler") == "ran"
    assert "torn-down" not in found


def test_control_a_plain_exit_tears_down(tmp_path):
    # the same program ending through the interpreter: the teardown the console script skips happens,
    # so the test above can tell the two apart
    done, found = _end(tmp_path, "plain")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "verdicts\n"
    assert found == {"thread": "done", "handler": "ran", "torn-down": "yes"}


GONE = textwrap.dedent("""
    import sys
    from eventtime import cli

    def main():
        sys.stdin.read()  # the test has closed its end of stdout by the time stdin ends
        print("PASS  a-scenario")
        if sys.argv[1] == "flushed":  # else it stays in the buffer until the exit's own flush
            sys.stdout.flush()
        return 0
""") + ENDING


def _reader_gone(how, when="flushed"):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-c", GONE, when, how], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    proc.stdout.close()  # `| head` that has read what it wanted
    proc.stdin.close()
    err = proc.stderr.read()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize("when", ["flushed", "buffered"])  # met in main(), or in the exit's own flush
def test_a_reader_that_went_away_ends_the_command_quietly(when):
    code, err = _reader_gone("console", when)
    assert code == 141
    assert err == ""


def test_control_a_plain_exit_shows_the_broken_pipe():
    code, err = _reader_gone("plain")
    assert code != 141
    assert "BrokenPipeError" in err


# A library's threads left at the end (the Spark Connect client leaves a ThreadPoolExecutor's idle
# worker): the console script ends by itself, however they wait. Each child runs under a bounded wait.
POOL = textwrap.dedent("""
    import atexit, sys, threading
    from concurrent.futures import ThreadPoolExecutor
    from eventtime import cli

    cli.THREAD_WAIT = float(sys.argv[2])
    if sys.argv[1] == "no-threading-exit":  # control: as if threading's exit callbacks were not run
        cli._threading_exit = lambda: None

    def main():
        global pool  # kept, as the Connect client keeps its pool in a class attribute (a pool that is
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="library-pool")  # freed wakes its workers)
        assert pool.submit(lambda: 6 * 7).result(timeout=60) == 42  # its worker now waits on its queue
        release = threading.Event()  # a thread that only an exit handler releases
        threading.Thread(target=release.wait, name="released-at-exit").start()
        atexit.register(release.set)
        print("verdicts")
        return 0
""") + ENDING


def _pool_end(how, wait):
    return subprocess.run([sys.executable, "-c", POOL, how, str(wait), "console"], capture_output=True,
                          text=True, timeout=120)


def test_library_threads_left_at_the_end_do_not_keep_the_command_alive():
    # the pool's worker is woken by threading's exit callbacks; the other thread waits out the first
    # bounded wait (as the interpreter's own unbounded one would for ever) and ends after the handlers
    done = _pool_end("as-shipped", 2)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "verdicts\n"
    assert done.stderr == ""  # every thread ended: the pool's worker woken, the other by its handler


def test_control_without_threading_exit_callbacks_the_pool_worker_outlives_the_bounded_wait():
    done = _pool_end("no-threading-exit", 0.5)  # the join the console script did before: the worker never ends
    assert done.returncode == 0, done.stderr
    assert done.stdout == "verdicts\n"
    assert "ending with 1 thread(s) still running after 1s of waiting for them: library-pool_0" in done.stderr


COMMAND_MODULES = ["cli.py", "watch.py", *(f"commands/{m.name}" for m in sorted(
    (Path(__file__).parents[2] / "conformance" / "commands").glob("*.py")))]


def _literal_exit_codes(source: str) -> list[str]:
    """Each `return N` / `exit(N)` with a number written out, instead of an ExitCode."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        value = node.value if isinstance(node, ast.Return) else (
            node.args[0] if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
            in ("exit", "_exit") and node.args else None)
        if isinstance(value, ast.Constant) and type(value.value) is int:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_every_command_says_its_exit_status_with_one_exit_code_table():
    from pathlib import Path

    import eventtime
    from eventtime.exitcodes import ExitCode

    root = Path(eventtime.__file__).parent
    assert {m: _literal_exit_codes((root / m).read_text()) for m in COMMAND_MODULES} == {m: [] for m in COMMAND_MODULES}
    assert [int(c) for c in ExitCode] == [0, 1, 2, 5, 130, 141, 143]
    # control: a command module with a number written out is found
    assert _literal_exit_codes("def run(args):\n    if args.x:\n        return 130\n    return ExitCode.OK\n") == [
        "line 3: return 130"]
