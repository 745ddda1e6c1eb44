"""The long differential run: many generated scenarios of one contract family on Spark vs the model (spark profile).

    python benchmarks/differential.py --family tumbling_count --examples 1000 --seed 1 [--out DIR] [--keep-going]
                                      [--log FILE.jsonl]

Hypothesis generates `--examples` scenarios of the family from `--seed` (`eventtime.strategies`);
each gets the model's expectations after every batch step and runs on Spark with the reference
implementation (`eventtime.differential`). By default the first disagreement stops the run,
Hypothesis shrinks it and the smallest case is written to `--out`; with `--keep-going` every
disagreement is written (unshrunk, numbered) and the run goes on. Prints the count of scenarios
run (and not applicable), the disagreements, the wall time and the seed; with `--log`, also appends
them as one JSON line (what `benchmarks/differential_all.py` plans from and sums up).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from eventtime.differential import FAMILIES, compare_on_spark, differential_case, strategy_for  # noqa: E402
from eventtime.textreport import describe_failure  # noqa: E402


class Disagreement(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--examples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-events", type=int, default=8)
    ap.add_argument("--out", default="reports/differential", help="where disagreeing cases are written")
    ap.add_argument("--keep-going", action="store_true", help="record every disagreement instead of shrinking the first")
    ap.add_argument("--log", default=None, help="append the run's figures to this JSON-lines file")
    args = ap.parse_args(argv)

    from eventtime.harness import get_session

    spark = get_session()
    counts = {"run": 0, "not_applicable": 0, "disagree": 0}
    written: list[Path] = []
    t0 = time.monotonic()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy_for(args.family, max_events=args.max_events))
    def one(scenario):
        outcome = compare_on_spark(differential_case(scenario), session=spark)
        counts["run"] += 1
        if not outcome.applicable:
            counts["not_applicable"] += 1
            return
        if outcome.agrees:
            return
        if args.keep_going:
            counts["disagree"] += 1
            written.append(outcome.write(args.out, f"differential-{args.family.replace('_', '-')}-{counts['disagree']}"))
            print(f"DISAGREE ({counts['run']}): {written[-1]}", flush=True)
            return
        path = outcome.write(args.out)  # overwritten while shrinking: the last one is the smallest
        if path not in written:
            written.append(path)
        raise Disagreement(describe_failure(outcome.result))

    status = 0
    try:
        one()
    except Disagreement as exc:
        counts["disagree"] = 1
        status = 1
        print(exc)
    elapsed = time.monotonic() - t0
    if args.keep_going and counts["disagree"]:
        status = 1
    print(f"family {args.family}, Spark {spark.version}, seed {args.seed}: {counts['run']} scenarios run "
          f"({counts['not_applicable']} not applicable), {counts['disagree']} disagreement(s), "
          f"{elapsed:.0f} s ({elapsed / max(counts['run'], 1):.2f} s per scenario)")
    for path in written:
        print(f"  written: {path}   reproduce: eventtime run {path}")
    if args.log:
        record = {"family": args.family, "seed": args.seed, "examples": args.examples, "max_events": args.max_events,
                  "spark": spark.version, "run": counts["run"], "not_applicable": counts["not_applicable"],
                  "disagreements": counts["disagree"], "written": [str(p) for p in written],
                  "seconds": round(elapsed, 1),
                  "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        Path(args.log).parent.mkdir(parents=True, exist_ok=True)
        with open(args.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
