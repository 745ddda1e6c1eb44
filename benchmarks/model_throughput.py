"""Throughput of the executable model (spark profile) on a long seeded stream: events/s, batches, wall time.

The stream is generated, not read from a file: event time moves forward by a random step per
event, each event lags that clock by up to `--disorder` (bounded out-of-orderness), and a
fraction `--late` of the events lag it by a minute or more (late rows, dropped by the
watermark). Events are cut into batches of `--batch` rows, one `add` and one `process` each,
so the model also runs the no-data batch every watermark move asks for. The scenario is
simulated whole with `eventtime.semantics.simulate`, as `eventtime check-model` does;
building the steps is not timed.

    python benchmarks/model_throughput.py [--events 1000000] [--batch 1000] [--seed 1]
                                          [--family tumbling_count --family session_count]
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventtime import spec as m  # noqa: E402
from eventtime.builder import ScenarioBuilder  # noqa: E402
from eventtime.loader import load_scenario_text  # noqa: E402
from eventtime.semantics import simulate  # noqa: E402
from eventtime.timeparse import parse_time  # noqa: E402

T0 = parse_time("2024-01-01T00:00:00Z")
KEYS = tuple(f"k{i}" for i in range(20))
# Parameters per family; session_count's gap is shorter than the mean spacing of one key's
# events (20 keys, 10 ms apart on average) times a few, so sessions both merge and close.
FAMILIES = {
    "tumbling_count": {"window": "10s", "watermark_delay": "5s", "output_mode": "append"},
    "sliding_count": {"window": "10s", "slide": "2s", "watermark_delay": "5s", "output_mode": "append"},
    "session_count": {"gap": "1s", "watermark_delay": "5s", "output_mode": "append"},
}


def stream(n: int, seed: int, disorder_ms: int, late: float) -> list[tuple[str, int]]:
    """(key, ts µs) in arrival order: a clock 0-20 ms forward per event, lag up to `disorder_ms`,
    a fraction `late` lagging 60-600 s (far behind any watermark delay used here)."""
    rng = random.Random(seed)
    clock = T0
    out = []
    for _ in range(n):
        clock += rng.randint(0, 20) * 1000
        if rng.random() < late:
            lag = rng.randint(60, 600) * 1_000_000
        else:
            lag = rng.randint(0, disorder_ms) * 1000
        out.append((rng.choice(KEYS), clock - lag))
    return out


def scenario(family: str, events: list[tuple[str, int]], batch: int) -> m.Scenario:
    """A scenario of `family` whose steps deliver `events`, `batch` rows per add, each followed by a process.

    The header goes through the loader (one add, one process); the long step list is made of
    the model's step objects directly, since writing a million rows as YAML would time the
    loader, not the model."""
    b = ScenarioBuilder(family, params=FAMILIES[family], name=f"throughput-{family.replace('_', '-')}")
    b.add(events=[["k0", "2024-01-01T00:00:00Z"]]).process()
    base = load_scenario_text(b.yaml(), path=f"<throughput {family}>")
    where = base.where
    steps: list[m.Step] = []
    for i in range(0, len(events), batch):
        steps.append(m.AddStep(where, rows={"events": tuple(events[i:i + batch])}))
        steps.append(m.ProcessStep(where))
    return dataclasses.replace(base, steps=tuple(steps))


def measure(family: str, events: list[tuple[str, int]], batch: int) -> dict:
    sc = scenario(family, events, batch)
    t0 = time.perf_counter()
    sim = simulate(sc)
    wall = time.perf_counter() - t0
    history = sim.history
    return {
        "family": family, "events": len(events), "wall_s": wall, "events_per_s": len(events) / wall,
        "batches": len(history), "data_batches": sum(b.has_data for b in history),
        "rows_out": sum(len(b.rows) for b in history), "dropped": sum(b.dropped for b in history),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1000, help="rows per add (one micro-batch each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--disorder", type=int, default=2000, help="bounded out-of-orderness, ms (default 2000)")
    ap.add_argument("--late", type=float, default=0.001, help="fraction of late rows (default 0.001)")
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES),
                    help="contract family (repeatable; default tumbling_count and session_count)")
    args = ap.parse_args(argv)
    families = args.family or ["tumbling_count", "session_count"]
    events = stream(args.events, args.seed, args.disorder, args.late)
    print(f"stream: {len(events)} events, seed {args.seed}, {args.batch} rows per batch, "
          f"out-of-orderness {args.disorder} ms, late fraction {args.late}")
    print("| family | events | batches (data) | rows out | dropped | wall time | events/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for family in families:
        r = measure(family, events, args.batch)
        print(f"| {family} | {r['events']} | {r['batches']} ({r['data_batches']}) | {r['rows_out']} | "
              f"{r['dropped']} | {r['wall_s']:.1f} s | {r['events_per_s']:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
