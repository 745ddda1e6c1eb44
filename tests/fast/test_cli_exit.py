"""The `eventtime` console script ends its process without the interpreter's teardown, after doing
what an exit must do: wait for non-daemon threads, run the exit handlers, flush the streams."""
import os
import subprocess
import sys
import textwrap

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

    cli.main = main
    if sys.argv[2] == "console":
        cli.console_main()
    else:
        sys.exit(cli.main())
""")


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
