"""A job's contract and scenario keys without Spark: `from:`, `kind: path` parameters, checks of what a job
wrote (`table:`, `written:`, `where:`), `rerun_last_batch`, each problem at its line; which functions are
jobs; which reader a source stands in for (`eventtime.jobs`, docs/jobs.md)."""
from __future__ import annotations

import textwrap

import pytest

from eventtime.contracts import Column, Contract, ParamSpec, SourceSpec
from eventtime.harness.jobio import ReaderCall
from eventtime.jobs import _matches, reads_of
from eventtime.loader import ScenarioInvalid, load_scenario
from eventtime.userpipeline import is_job

CONTRACT = textwrap.dedent("""\
    contract: page_counts
    description: clicks -> clicks per page, written by the job.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
        from: {format: json, path: /data/clicks}
    params:
      out: {kind: path, conf: jobs.out}
      limit: {kind: int, default: 3}
    output:
      columns: "page string, clicks bigint"
      modes: [update]
    """)

SCENARIO = textwrap.dedent("""\
    scenario: s
    description: d
    contract: page_counts
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {written: out, where: {page: home}, rows: [[home, 1]]}
      - expect: {table: page_counts, rows: []}
      - restart: {rerun_last_batch: true}
    """)


def _write(tmp_path, contract=CONTRACT, scenario=SCENARIO):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "page_counts.contract.yaml").write_text(contract)
    path = tmp_path / "s.scenario.yaml"
    path.write_text(scenario)
    return path


def _problems(path):
    with pytest.raises(ScenarioInvalid) as info:
        load_scenario(str(path))
    return [str(p) for p in info.value.problems]


def test_a_jobs_contract_and_scenario_are_read(tmp_path):
    sc = load_scenario(str(_write(tmp_path)))
    assert sc.contract.source("clicks").reads == (("format", "json"), ("path", "/data/clicks"))
    assert sc.contract.param("out").kind == "path" and not sc.contract.param("out").required
    written, table = sc.steps[2].written, sc.steps[3].written
    assert (written.path, written.table, written.format, written.filter) == ("out", None, "", (("page", "home"),))
    assert (table.table, table.path) == ("page_counts", None)
    assert sc.steps[4].rerun_last_batch and sc.steps[4].restart


@pytest.mark.parametrize("old, new, place, message", [
    ("from: {format: json, path: /data/clicks}", "from: [json]", ":7:", "`from` of source 'clicks' is a mapping"),
    ("from: {format: json, path: /data/clicks}", "from: {table: t, format: delta}", ":7:", "give `table:` alone"),
    ("from: {format: json, path: /data/clicks}", "from: {format: [json]}", ":7:", "`from: {format: ...}` is text"),
    ("out: {kind: path, conf: jobs.out}", "out: {kind: path, default: /tmp/x}", ":9:", "takes no default"),
], ids=["from-not-a-mapping", "table-and-format", "from-not-text", "path-with-default"])
def test_contract_problems_are_at_their_line(tmp_path, old, new, place, message):
    found = _problems(_write(tmp_path, contract=CONTRACT.replace(old, new)))
    assert any(place in p and message in p for p in found), found


@pytest.mark.parametrize("old, new, place, message", [
    ("written: out, where", "written: limit, where", ":7:", "or a path parameter of contract 'page_counts' (`kind: path`), not 'limit'"),
    ("where: {page: home}", "where: {pages: home}", ":7:", "has no output column 'pages'"),
    ("{table: page_counts, rows: []}", "{table: page_counts, rows: [], watermark: initial}", ":8:",
     "put `watermark` in an expect of its own"),
    ("{table: page_counts, rows: []}", "{table: page_counts, written: out, rows: []}", ":8:", "not both"),
    ("{table: page_counts, rows: []}", "{rows: [], format: csv}", ":8:", "`format` goes with `table:` or `written:`"),
    ("{table: page_counts, rows: []}", "{table: page_counts}", ":8:", "say which rows the job must have written"),
    ("restart: {rerun_last_batch: true}", "stop\n  - start: {rerun_last_batch: true}", ":10:",
     "`rerun_last_batch` goes with `restart`"),
], ids=["written-not-a-path", "where-unknown-column", "stream-check-beside", "table-and-written", "format-alone",
        "no-rows", "rerun-on-start"])
def test_scenario_problems_are_at_their_line(tmp_path, old, new, place, message):
    found = _problems(_write(tmp_path, scenario=SCENARIO.replace(old, new)))
    assert any(place in p and message in p for p in found), found


def test_a_scenario_gives_a_path_parameter_no_value(tmp_path):
    found = _problems(_write(tmp_path, scenario=SCENARIO.replace("contract: page_counts\n",
                                                                 "contract: page_counts\nparams: {out: /etc}\n")))
    assert any("a folder the kit makes for each run" in p for p in found), found


def _contract(*sources: SourceSpec, params=()) -> Contract:
    return Contract("c", "c", "c", sources, tuple(params), (Column("n", "long"),), "")


def test_a_function_whose_one_required_parameter_is_spark_is_a_job():
    clicks = SourceSpec("clicks", (Column("v", "string"),))

    def main(spark): ...

    def build(spark, verbose=False): ...

    def transform(clicks): ...

    def two(spark, clicks): ...

    assert is_job(main, _contract(clicks)) and is_job(build, _contract(clicks))
    assert not is_job(transform, _contract(clicks)) and not is_job(two, _contract(clicks))
    # a contract that supplies `spark` itself: the function is a pipeline of that source
    assert not is_job(main, _contract(SourceSpec("spark", (Column("v", "string"),))))
    assert not is_job(main, _contract(clicks, params=[ParamSpec("spark", "string", "d")]))


def test_a_reader_matches_a_source_on_every_key_of_its_from():
    source = SourceSpec("clicks", (), reads=(("format", "kafka"), ("subscribe", "clicks")))
    reader = ReaderCall(format="kafka", options={"kafka.bootstrap.servers": "k:9092", "SUBSCRIBE": "clicks"})
    assert _matches(reader, reads_of(source))  # option keys regardless of case; other options do not count
    assert not _matches(ReaderCall(format="kafka", options={"subscribe": "Clicks"}), reads_of(source))  # values exactly
    assert not _matches(ReaderCall(format="json", options={"subscribe": "clicks"}), reads_of(source))
    assert not _matches(reader, reads_of(SourceSpec("clicks", ())))  # no `from:`: read by no reader
    kafka = SourceSpec("clicks", (), kind="kafka", topic="shop.clicks")  # a kafka source: by its topic
    assert reads_of(kafka) == (("format", "kafka"), ("subscribe", "shop.clicks"))
    assert _matches(ReaderCall(format="kafka", options={"subscribe": "shop.clicks"}), reads_of(kafka))
    assert _matches(ReaderCall(table="users"), reads_of(SourceSpec("u", (), reads=(("table", "users"),))))


QUERIES = CONTRACT.replace("""output:
  columns: "page string, clicks bigint"
  modes: [update]
""", """queries:
  counts: {columns: "page string, clicks bigint", key: [page]}
  valid: {columns: "page string, ts timestamp"}
""")

QUERY_SCENARIO = textwrap.dedent("""\
    scenario: s
    description: d
    contract: page_counts
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect: {query: counts, rows: [[home, 1]], watermark: "00:00:01"}
      - expect: {query: valid, rows: [[home, "00:00:01"]]}
      - expect: {query: counts, written: out, where: {page: home}, rows: [[home, 1]]}
      - expect: {query: valid, on_spark: {"<4": {rows: [[home, "00:00:01"]]}}, rows: []}
    """)


def test_a_jobs_several_queries_are_read_each_with_its_own_columns(tmp_path):
    assert QUERIES != CONTRACT
    sc = load_scenario(str(_write(tmp_path, QUERIES, QUERY_SCENARIO)))
    assert [q.name for q in sc.contract.queries] == ["counts", "valid"]
    assert sc.contract.query("counts").key == ("page",)
    expects = [s for s in sc.steps if s.kind == "expect"]
    assert [e.query for e in expects] == ["counts", "valid", "counts", "valid"]
    assert expects[0].rows[0].rows == (("home", 1),)
    assert expects[1].rows[0].rows == (("home", 1_704_067_201_000_000),)  # a timestamp, as `valid` declares
    assert expects[2].written.filter == (("page", "home"),)
    assert expects[3].variants[0][1].query == "valid"  # a version's checks look at the step's query


@pytest.mark.parametrize("old, new, place, message", [
    ("{query: counts, rows: [[home, 1]], watermark", "{query: count, rows: [[home, 1]], watermark", ":7:",
     "contract 'page_counts' declares no query 'count'; did you mean 'counts'? (queries: counts, valid)"),
    ("{query: valid, rows: [[home, \"00:00:01\"]]}", "{rows: [[home, \"00:00:01\"]]}", ":8:",
     "contract 'page_counts' declares several queries (counts, valid) and no `output`: say which query"),
    ("{query: valid, rows: [[home, \"00:00:01\"]]}", "{query: valid, rows: [[home, 1]]}", ":8:",
     "column 'ts' is timestamp"),
    ("{query: counts, written: out, where", "{written: count, where", ":9:",
     "`written: count` is no query contract 'page_counts' declares by name (queries: counts, valid); did you mean "
     "'counts'?"),
    ("{query: counts, written: out, where", "{written: data/counts, where", ":9:",
     "a folder is read in the columns of the query that writes it: say which with `query: NAME` beside it"),
], ids=["unknown-query", "no-query", "wrong-columns", "misspelt-written", "path-of-a-named-query"])
def test_query_problems_are_at_their_line(tmp_path, old, new, place, message):
    assert old in QUERY_SCENARIO
    problems = _problems(_write(tmp_path, QUERIES, QUERY_SCENARIO.replace(old, new)))
    assert any(place in p and message in p for p in problems), problems


@pytest.mark.parametrize("old, new, place, message", [
    ("  valid: {columns: \"page string, ts timestamp\"}", "  valid: {cols: x}", ":13:",
     "query 'valid' needs `columns:`"),
    ("{columns: \"page string, clicks bigint\", key: [page]}", "{columns: \"page string, clicks bigint\", key: [p]}",
     ":12:", "key column 'p' is not a column of query 'counts'"),
    ("  valid: {columns: \"page string, ts timestamp\"}", "  valid: {columns: \"page string\", mode: update}", ":13:",
     "a query has no key 'mode'"),
], ids=["no-columns", "bad-key", "unknown-key"])
def test_contract_query_problems_are_at_their_line(tmp_path, old, new, place, message):
    assert old in QUERIES
    problems = _problems(_write(tmp_path, QUERIES.replace(old, new), QUERY_SCENARIO))
    assert any(place in p and message in p for p in problems), problems


TOPIC_SCENARIO = textwrap.dedent("""\
    scenario: s
    description: d
    contract: page_counts
    steps:
      - add: {clicks: [[home, "00:00:01"]]}
      - process
      - expect:
          topic: alerts
          records:
            - {key: home, value: {page: home, clicks: 1}, headers: {trace: t1}, partition: 0}
            - {value: "plain text"}
    """)


def test_a_topic_check_is_read_and_compares_key_value_headers_and_partition():
    from eventtime.spec import ExpectedRecord, TopicCheck
    from eventtime.topics import Topics, judge_records

    topics = Topics()
    seen = []
    topics.subscribe("alerts", seen.extend)
    topics.publish("alerts", [(b"home", b'{"clicks":1,"page":"home"}', (("trace", b"t1"),), None),
                              (None, b"plain text", (), None)], 60_000)
    records = topics.records["alerts"]
    assert [(r.partition, r.offset, r.timestamp_ms) for r in records] == [(0, 0, 60_000), (0, 1, 60_000)]
    assert seen == records  # a query of the job reading the topic gets each record as it is published
    check = TopicCheck(None, "alerts", (ExpectedRecord({"page": "home", "clicks": 1}, "home", {"trace": "t1"}, 0),
                                        ExpectedRecord("plain text")))
    assert check.fields == ("key", "value", "headers", "partition")
    assert judge_records(check, records) == []
    # controls: each field that differs is a failure
    for wrong in (ExpectedRecord({"page": "home", "clicks": 2}, "home", {"trace": "t1"}, 0),
                  ExpectedRecord({"page": "home", "clicks": 1}, None, {"trace": "t1"}, 0),
                  ExpectedRecord({"page": "home", "clicks": 1}, "home", {"trace": "t2"}, 0),
                  ExpectedRecord({"page": "home", "clicks": 1}, "home", {"trace": "t1"}, 1)):
        failures = judge_records(TopicCheck(None, "alerts", (wrong, ExpectedRecord("plain text"))), records)
        assert failures and "1 missing, 1 unexpected" in failures[0].message, wrong
    swapped = TopicCheck(None, "alerts", tuple(reversed(check.records)), ordered=True)
    assert "the first difference is record 1" in judge_records(swapped, records)[0].message


def test_a_topic_check_is_read_from_the_scenario(tmp_path):
    sc = load_scenario(str(_write(tmp_path, scenario=TOPIC_SCENARIO)))
    check = [s for s in sc.steps if s.kind == "expect"][0].topic
    assert check.topic == "alerts" and len(check.records) == 2
    assert check.records[0].value == {"page": "home", "clicks": 1} and check.records[1].key is None


@pytest.mark.parametrize("old, new, place, message", [
    ("headers: {trace: t1}, partition: 0}", "headers: {trace: t1}, partitions: 0}", ":10:",
     "unknown key 'partitions'; did you mean 'partition'?"),
    ("- {value: \"plain text\"}", "- {key: x}", ":11:", "missing required key 'value'"),
    ("      topic: alerts\n", "      topic: alerts\n      watermark: \"00:00:01\"\n", ":9:",
     "an expect of a topic checks its `records`"),
    ("partition: 0}", "partition: -1}", ":10:", "'partition' must be at least 0"),
], ids=["unknown-key", "no-value", "stream-check", "bad-partition"])
def test_topic_check_problems_are_at_their_line(tmp_path, old, new, place, message):
    assert old in TOPIC_SCENARIO
    problems = _problems(_write(tmp_path, scenario=TOPIC_SCENARIO.replace(old, new)))
    assert any(place in p and message in p for p in problems), problems


STATICS = CONTRACT.replace("params:\n", textwrap.dedent("""\
    static:
      pages: {table: pages, columns: "page string, section string"}
      owners: {path: ref/owners.csv, format: csv, options: {header: true}, columns: "page string, since timestamp"}
    params:
    """), 1)
STATIC_SCENARIO = SCENARIO.replace("contract: page_counts\n", textwrap.dedent("""\
    contract: page_counts
    static:
      pages: [[home, main]]
    """), 1).replace("  - restart: {rerun_last_batch: true}\n", "  - static: {owners: [{page: home, since: \"00:00:05\"}]}\n")


def test_static_inputs_are_declared_by_the_contract_and_given_by_the_scenario(tmp_path):
    sc = load_scenario(str(_write(tmp_path, STATICS, STATIC_SCENARIO)))
    pages, owners = sc.contract.static("pages"), sc.contract.static("owners")
    assert (pages.table, pages.path) == ("pages", None)
    assert (owners.path, owners.format, owners.options) == ("ref/owners.csv", "csv", (("header", "true"),))
    assert sc.statics == {"pages": (("home", "main"),)}
    step = sc.steps[-1]
    assert step.kind == "static" and step.rows == {"owners": (("home", 1_704_067_205_000_000),)}  # on the date


@pytest.mark.parametrize("old, new, place, message", [
    ("pages: {table: pages,", "pages: {table: pages, path: x,", ":9:", "is a table (`table: NAME`) or a folder"),
    ("path: ref/owners.csv,", "path: ../owners.csv,", ":10:", "static input 'owners''s path would leave"),
    ("format: csv,", "format: delta,", ":10:", "a static folder's format is one of parquet, json, csv, orc, text"),
    ("pages: {table: pages,", "clicks: {table: pages,", ":9:", "'clicks' is the name of a source too"),
], ids=["table-and-path", "path-outside", "format", "name-of-a-source"])
def test_static_contract_problems_are_at_their_line(tmp_path, old, new, place, message):
    assert old in STATICS
    problems = _problems(_write(tmp_path, STATICS.replace(old, new), STATIC_SCENARIO.replace("pages: [[", "x: [[")
                                if old.startswith("pages") and new.startswith("clicks") else STATIC_SCENARIO))
    assert any(place in p and message in p for p in problems), problems


@pytest.mark.parametrize("old, new, place, message", [
    ("  pages: [[home, main]]", "  page: [[home, main]]", ":5:",
     "contract 'page_counts' declares no static input 'page'; did you mean 'pages'?"),
    ("  pages: [[home, main]]", "  pages: [[home]]", ":5:", "row has 1 value but static input 'pages' has 2 columns"),
    ("since: \"00:00:05\"", "since: soon", ":11:", "column 'since' is timestamp"),
], ids=["unknown-static", "short-row", "bad-value"])
def test_static_scenario_problems_are_at_their_line(tmp_path, old, new, place, message):
    assert old in STATIC_SCENARIO
    problems = _problems(_write(tmp_path, STATICS, STATIC_SCENARIO.replace(old, new)))
    assert any(place in p and message in p for p in problems), problems


def test_one_query_of_a_job_stops_and_starts_alone(tmp_path):
    one = SCENARIO.replace("  - restart: {rerun_last_batch: true}\n",
                           "  - stop: {query: counts}\n  - restart: {query: counts, rerun_last_batch: true}\n"
                           "  - start: {query: counts}\n")
    sc = load_scenario(str(_write(tmp_path, scenario=one)))
    stop, restart, start = sc.steps[-3:]
    assert (stop.kind, stop.query) == ("stop", "counts")
    assert (restart.kind, restart.query, restart.rerun_last_batch) == ("restart", "counts", True)
    assert (start.kind, start.query) == ("start", "counts")


@pytest.mark.parametrize("steps, place, message", [
    ("  - stop\n  - stop: {query: counts}\n", ":10:", "stops or starts one query of a running job; the job is stopped"),
    ("  - restart: {query: counts, session: new}\n", ":9:", "a new session restarts the whole job"),
    ("  - stop: {queries: counts}\n", ":9:", "`stop` takes no value, or `{query: NAME}`"),
], ids=["job-stopped", "new-session", "bad-key"])
def test_one_query_steps_problems_are_at_their_line(tmp_path, steps, place, message):
    text = SCENARIO.replace("  - restart: {rerun_last_batch: true}\n", steps)
    problems = _problems(_write(tmp_path, scenario=text))
    assert any(place in p and message in p for p in problems), problems
