"""Issue 46's done-when figures: each seeded bug found and shrunk within 200 examples; the correct jobs on 1,000.

    python benchmarks/property_seeded.py --part seeded                    # every seeded bug, 200 examples each
    python benchmarks/property_seeded.py --part correct                   # every correct job, 1,000 per property
    python benchmarks/property_seeded.py --part correct --max-examples 100 --only windowed_job \\
        --properties no-query-dies                                         # a rate on one job and one property

The jobs and contracts are the Spark tests' own (tests/spark/jobs_properties.py, jobs_kafka_properties.py,
transforms_streambatch.py; the contracts of test_properties.py, test_invariants.py, test_kafka_properties.py,
test_boundaries.py, test_stream_batch.py), each seeded bug beside a twin that holds:
- seeded: `check_properties` on the one property the bug breaks, `max_examples` 200 (`--seeded-examples`),
  Hypothesis seeded (`--seed`), no example database. Per bug: found or not, the streams it held on before it
  broke, the events of the shrunk counterexample (the rows its file's `add` steps add, closing events included,
  as the file is run), how many smaller streams shrinking tried, seconds. The done-when: found, at most 10 events;
- correct: every property (each `check_properties` call one property, so each has its seconds), `--max-examples`
  (1,000 as the issue says). Per job and property: the verdict, the streams held on, those not judged and why,
  seconds. The done-when: no property breaks (a false alarm).
Prints a Markdown table per part. Exits 1 when a seeded bug is missed or its counterexample has more than 10
events, or when a correct job's property breaks, is not checked (the check stopped) or judged nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.spark import jobs_kafka_properties as kafka_jobs  # noqa: E402
from tests.spark import jobs_properties as jobs  # noqa: E402
from tests.spark import test_boundaries as boundaries  # noqa: E402
from tests.spark import test_invariants as invariants  # noqa: E402
from tests.spark import test_kafka_properties as kafka  # noqa: E402
from tests.spark import test_properties as page_windows  # noqa: E402
from tests.spark import test_stream_batch as stream_batch  # noqa: E402
from tests.spark import transforms_streambatch as transforms  # noqa: E402

ANSI = {"spark.sql.ansi.enabled": "true"}
PAGES = {"page": ["a", "b", None]}
MOST_EVENTS = 10  # the done-when: a counterexample of at most 10 events


def _transform_contract(name: str, what: str, columns: str) -> str:
    return stream_batch.CONTRACT.format(name=name, what=what, columns=columns)


CONTRACTS = {
    "page_windows": page_windows.CONTRACT,
    "events_dedup": invariants.DEDUP,
    "orders_split": invariants.SPLIT,
    "ad_joins": invariants.JOIN,
    "kafka_orders": kafka.CONTRACT,
    "clicks_counted": boundaries.CLICKS,
    "page_windows_append": boundaries.WINDOWS,
    "clicks_per_page": _transform_contract("clicks_per_page", "clicks per page", "page string, clicks bigint"),
    "page_windows_t": _transform_contract("page_windows_t", "clicks per page and 10-second window",
                                          "page string, window_start timestamp, clicks bigint"),
}


@dataclass
class Case:
    name: str
    what: str
    contract: str
    job: Any
    prop: str = ""  # the property a seeded bug breaks
    conf: dict[str, str] = field(default_factory=dict)
    pools: dict[str, Any] | None = None


SEEDED = [
    Case("appending", "a foreachBatch that appends", "page_windows", jobs.appending, "exactly-once-rerun"),
    Case("no_checkpoint", "the appending job without a checkpoint location", "page_windows",
         jobs.without_checkpoint, "restart-transparency"),
    Case("dedup_id", "a dedup without event time", "events_dedup", jobs.dedup_without_event_time, "bounded-state"),
    Case("fragile_parse", "an ANSI-fragile timestamp parse (Kafka payload)", "kafka_orders", kafka_jobs.fragile_parse,
         "no-query-dies", ANSI),
    Case("cast_rule", "a quality rule that casts text (ANSI)", "page_windows", jobs.numeric_pages, "no-query-dies",
         ANSI),
    Case("blind_to_nulls", "a quality rule blind to nulls", "orders_split", jobs.split_blind_to_nulls,
         "invariant:routed_once"),
    Case("unbounded_join", "a join whose state is unbounded (no time range)", "ad_joins",
         jobs.join_without_time_bound, "bounded-state", pools=invariants.ADS),
    Case("per_batch_counts", "a foreachBatch appending each batch's own counts", "clicks_counted",
         jobs.counts_per_batch, "batch-boundary-independence", pools=PAGES),
    Case("pandas_counts", "a grouped pandas count (per micro-batch)", "clicks_per_page", transforms.counts_per_group,
         "stream-equals-batch", pools=PAGES),
]
CORRECT = [
    Case("overwriting", "a foreachBatch that overwrites", "page_windows", jobs.overwriting, conf=ANSI),
    Case("dedup_id_ts", "a dedup with event time", "events_dedup", jobs.dedup_with_event_time_once, conf=ANSI),
    Case("tolerant_parse", "a tolerant parse (Kafka payload)", "kafka_orders", kafka_jobs.tolerant_parse_once,
         conf=ANSI),
    Case("total_rule", "a total quality rule", "orders_split", jobs.split_total_once, conf=ANSI),
    Case("windowed_job", "a windowed count (foreachBatch, append)", "page_windows_append", jobs.windowed_counts_once,
         conf=ANSI, pools=PAGES),
    Case("bounded_join", "a join with a time range", "ad_joins", jobs.join_within_bound, conf=ANSI,
         pools=invariants.ADS),
    Case("windowed_transform", "a windowed count (transform)", "page_windows_t", transforms.windowed_counts,
         conf=ANSI, pools=PAGES),
]


def _contract(where: Path, name: str) -> Any:
    from eventtime.contractfile import load_contract_file

    path = where / f"{name}.contract.yaml"
    path.write_text(CONTRACTS[name])
    return load_contract_file(path)


def _events(path: Path) -> int:
    """The rows a scenario file's `add` steps add (loaded beside its contract, as a user's file is)."""
    from eventtime import load_scenario
    from eventtime import spec as m

    sc = load_scenario(str(path))
    return sum(len(rows) for s in sc.steps if isinstance(s, m.AddStep) for rows in s.rows.values())


def _check(spark: Any, where: Path, case: Case, props: list[str], examples: int, args: Any) -> tuple[Any, float]:
    from eventtime.properties import check_properties

    t0 = time.monotonic()
    report = check_properties(_contract(where, case.contract), case.job, session=spark, properties=props,
                              max_examples=examples, seed=args.seed, database=None, max_events=args.max_events,
                              conf=case.conf or None, pools=case.pools,
                              progress=lambda line: print(f"  [{case.name}] {line}", file=sys.stderr, flush=True))
    return report, time.monotonic() - t0


def seeded(spark: Any, where: Path, args: Any) -> bool:
    print(f"\n### Seeded bugs: up to {args.seeded_examples} examples, seed {args.seed}, "
          f"max_events {args.max_events}\n")
    print("| job | bug | property | found | held on before | events in the shrunk file | shrinking tried | s |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |")
    good = True
    for case in [c for c in SEEDED if not args.only or c.name in args.only]:
        report, seconds = _check(spark, where, case, [case.prop], args.seeded_examples, args)
        (p,) = report.properties
        found = p.counterexample is not None
        events = _events(p.counterexample.write(where)) if found else None
        ok = found and events is not None and events <= MOST_EVENTS
        good = good and ok
        print(f"| `{case.name}` | {case.what} | `{case.prop}` | {'yes' if found else 'NO: ' + p.verdict} | "
              f"{p.held_on} | {events if found else '-'}{'' if ok or not found else ' (over 10)'} | "
              f"{p.shrink_tried} | {seconds:.0f} |", flush=True)
        if not found:
            print(report.describe(), file=sys.stderr)
    return good


def correct(spark: Any, where: Path, args: Any) -> bool:
    from eventtime.properties import PROPERTIES

    props = args.properties or list(PROPERTIES)
    print(f"\n### Correct jobs: up to {args.max_examples} examples per property, seed {args.seed}, "
          f"max_events {args.max_events}\n")
    print("| job | property | verdict | held on | not judged (reasons) | s |")
    print("| --- | --- | --- | ---: | --- | ---: |")
    good = True
    for case in [c for c in CORRECT if not args.only or c.name in args.only]:
        for prop in props:
            report, seconds = _check(spark, where, case, [prop], args.max_examples, args)
            for p in report.properties:
                reasons = "; ".join(f"{n}: {why}" for why, n in p.not_judged.most_common())
                bad = p.verdict in ("broken", "not_checked", "judged_nothing")
                good = good and not bad
                said = p.verdict + (f" ({p.does_not_apply})" if p.does_not_apply else "")
                print(f"| `{case.name}` | `{p.prop}` | {'**' + said + '**' if bad else said} | {p.held_on} | "
                      f"{sum(p.not_judged.values())}{' (' + reasons + ')' if reasons else ''} | {seconds:.0f} |",
                      flush=True)
                if bad:
                    print(report.describe(), file=sys.stderr)
    return good


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["seeded", "correct", "both"], default="both")
    parser.add_argument("--seed", type=int, default=46, help="Hypothesis's seed (no example database)")
    parser.add_argument("--seeded-examples", type=int, default=200, help="the cap per seeded bug (max_examples)")
    parser.add_argument("--max-examples", type=int, default=1000, help="examples per property of a correct job")
    parser.add_argument("--max-events", type=int, default=8, help="events per generated stream (the kit's default)")
    parser.add_argument("--only", nargs="+", choices=[c.name for c in SEEDED + CORRECT], help="these jobs only")
    parser.add_argument("--properties", nargs="+", help="a correct job's properties (default: every one)")
    args = parser.parse_args()
    from eventtime.harness.session import get_session

    where = Path(tempfile.mkdtemp(prefix="property-seeded-"))
    spark = get_session()
    print(f"contracts and shrunk counterexamples in {where}", file=sys.stderr)
    print(f"Spark {spark.version}; load average at start {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M')}")
    t0 = time.monotonic()
    good = True
    if args.part in ("seeded", "both"):
        good = seeded(spark, where, args) and good
    if args.part in ("correct", "both"):
        good = correct(spark, where, args) and good
    print(f"\n{time.monotonic() - t0:.0f} s in all; load average at the end {os.getloadavg()[0]:.1f}")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
