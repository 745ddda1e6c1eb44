"""Feeds mutated scenario files to the loader and `eventtime validate`; prints how many, how they went, how fast.

    python benchmarks/fuzz_loader.py --inputs 100000 [--seed N] [--cli-every 8] [--save DIR]

Every input must load into a scenario or fail with problems at file:line in the file, never raise
anything else, and take at most 1 s (see tests/fuzz_scenarios.py). Inputs come from Hypothesis,
in chunks with seeds derived from --seed, so a run is repeatable. Exit status 1 if any input broke
the rules; --save DIR keeps those inputs (and the slowest one) as files with what went wrong.
Ctrl-C or SIGTERM ends a run early and still prints its figures.
"""
from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests.fuzz_scenarios import TIME_LIMIT, Tally, fuzzed_files, judge  # noqa: E402

CHUNK = 1000  # inputs per Hypothesis run; each run gets its own seed


def fuzz(inputs: int, base_seed: int, cli_every: int, workdir: Path, progress: bool, keep: Path | None,
         first_chunk: int = 0) -> Tally:
    tally = Tally()
    path = workdir / "fuzzed.scenario.yaml"
    started = time.perf_counter()
    chunk = first_chunk
    while tally.tried < inputs and not tally.interrupted:
        @settings(max_examples=min(CHUNK, inputs - tally.tried), database=None, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @seed(base_seed * 1_000_000 + chunk)
        @given(data=fuzzed_files())
        def one(data: bytes) -> None:
            if tally.tried < inputs:
                via_cli = tally.tried % cli_every == 0
                verdict = judge(path, data, via_cli=via_cli)
                tally.record(data, verdict, via_cli=via_cli)
                if keep is not None and verdict.faults:
                    name = f"broke-{tally.crashes}"
                    (keep / f"{name}.scenario.yaml").write_bytes(data)
                    (keep / f"{name}.txt").write_text("\n\n".join(verdict.faults) + "\n", encoding="utf-8")

        try:
            one()
        except KeyboardInterrupt:  # Ctrl-C ends the run early; what was tried is still reported
            tally.interrupted = True
        chunk += 1
        if progress:
            wall = time.perf_counter() - started
            print(f"  {tally.tried} inputs ({tally.valid} valid, {tally.invalid} invalid), {tally.crashes} broke the "
                  f"rules, slowest {tally.slowest:.3f} s, {wall:.0f} s, {tally.tried / wall:.1f} inputs/s",
                  file=sys.stderr, flush=True)
    return tally


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=5000, help="how many inputs to try (default 5000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    p.add_argument("--cli-every", type=int, default=8, metavar="N",
                   help="also run `eventtime validate` on one input in N (default 8)")
    p.add_argument("--save", type=Path, metavar="DIR", help="write inputs that broke the rules, and the slowest, here")
    p.add_argument("--first-chunk", type=int, default=0, metavar="K",
                   help="start at chunk K of the seed (each chunk is %d inputs), to replay part of a run" % CHUNK)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if args.inputs < 1 or args.cli_every < 1:
        p.error("--inputs and --cli-every must be at least 1")
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    for signum in (signal.SIGINT, signal.SIGTERM):  # either ends the run early, with its figures
        signal.signal(signum, _stop)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-loader-") as work:
        tally = fuzz(args.inputs, args.seed, args.cli_every, Path(work), not args.quiet, args.save, args.first_chunk)
    wall = time.perf_counter() - started
    stopped = " (interrupted)" if tally.interrupted else ""
    print(f"inputs tried:  {tally.tried}{stopped} (seed {args.seed}; {tally.via_cli} also through `eventtime validate`)")
    print(f"valid:         {tally.valid}")
    print(f"invalid:       {tally.invalid} (each with problems at file:line)")
    print(f"broke a rule:  {tally.crashes} (another exception, a problem without a place, or slower than {TIME_LIMIT:g} s)")
    print(f"slowest file:  {tally.slowest:.3f} s")
    print(f"wall time:     {wall:.0f} s, {tally.tried / wall:.1f} inputs/s")
    for data, verdict in tally.failures[:5]:
        print(f"\n--- {len(data)} bytes: {data[:200]!r}\n{verdict.faults[0][-1500:]}")
    if args.save:
        (args.save / "slowest.scenario.yaml").write_bytes(tally.slowest_input)
    return 1 if tally.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
