"""`stream-equals-batch`'s pieces that need no Spark (`eventtime.streambatch`, docs/properties.md): which rows
Spark dropped as late, told from its counts (`late_rows`), the comparison with the closing rows on both sides
(`compare`), which pipelines have a transform to call (`not_a_transform`), the stream rewritten without its
late rows (`without_rows`), and the property named by both faces. Times in seconds after T."""
from __future__ import annotations

import textwrap
from collections import Counter

import pytest

from eventtime.contractfile import load_contract_file
from eventtime.properties import PROPERTIES, _Row, wanted_properties
from eventtime.streambatch import STREAM_BATCH, Batch, compare, late_rows, not_a_transform

T = 1_704_067_200 * 1_000_000  # 2024-01-01T00:00:00Z in micros
S = 1_000_000


def row(seconds: float | None, timed: bool = True) -> _Row:
    return _Row("clicks", ["a", seconds], None if seconds is None else T + int(seconds * S), timed)


def batch(rows, watermark: float, dropped: int) -> Batch:
    return Batch(rows, [tuple(r.written) for r in rows], None, [], T + int(watermark * S), dropped)


def test_a_batch_that_dropped_nothing_kept_every_row_even_behind_the_watermark():
    # a window ending after the watermark keeps a row behind it; a stateless job drops none
    assert late_rows([batch([row(5), row(-30)], 0, 0)]) == ([], None)


def test_a_batch_that_dropped_as_many_as_it_read_behind_the_watermark_dropped_those():
    rows = [row(5), row(-30), row(0), row(None), row(-40, timed=False)]
    # behind (at or before) the watermark: -30 and 0 (a dedup key with the event time drops a row at it);
    # a null event time or a source without event time is never late
    assert late_rows([batch([row(1)], -10, 0), batch(rows, 0, 2)]) == ([(1, 1), (1, 2)], None)


def test_a_count_that_does_not_say_which_rows_is_not_judged():
    # control: two rows behind the watermark, one dropped (the other's window ends after it): which one is
    # not told by the count, so nothing is guessed
    late, why = late_rows([batch([row(-30), row(-1)], 0, 1)])
    assert late == [] and why is not None and "cannot be told" in why
    late, why = late_rows([batch([row(5)], 0, 1)])  # a row dropped where none is behind: an exploded row
    assert late == [] and why is not None


def test_the_closing_rows_own_output_is_taken_into_account_on_each_side():
    a1, a2, closing_window = ("a", 0, 1), ("a", 10, 2), ("a", 99, 2)
    # append mode: the stream holds back the closing rows' own window (not passed by the last watermark)
    stream, batch_rows = Counter([a1, a2]), Counter([a1, a2, closing_window])
    expected, more, fewer = compare(stream, batch_rows, Counter(), Counter([closing_window]))
    assert expected == stream and not more and not fewer
    # a stateless job writes the closing rows on both sides
    c = ("a", 99)
    assert compare(Counter([("a", 1), c, c]), Counter([("a", 1), c, c]), Counter([c, c]), Counter([c, c]))[1:] == (
        Counter(), Counter())
    # a count per page over all time (complete mode): the closing rows count in the page's row on both sides
    assert compare(Counter([("a", 3)]), Counter([("a", 3)]), Counter([("a", 2)]), Counter([("a", 2)]))[1:] == (
        Counter(), Counter())


def test_a_count_per_micro_batch_differs_from_the_batch_count():
    # control: the seeded bug's shape, one page's clicks in two micro-batches counted apart
    expected, more, fewer = compare(Counter([("a", 1), ("a", 1), ("c", 1), ("c", 1)]), Counter([("a", 2), ("c", 2)]),
                                    Counter([("c", 1), ("c", 1)]), Counter([("c", 2)]))
    assert more == Counter([("a", 1), ("a", 1)]) and fewer == Counter([("a", 2)])


CONTRACT = textwrap.dedent("""\
    contract: clicks_t
    description: clicks per page.
    sources:
      clicks:
        columns: "page string, ts timestamp"
        event_time: ts
    output:
      columns: "page string, clicks bigint"
      modes: [append]
    """)


def transform(clicks):
    return clicks


def transform_both(sources, params):
    return sources["clicks"]


def main(spark):
    return spark


def script_main():
    return None


def test_only_a_function_the_kit_calls_on_dataframes_has_a_transform(tmp_path):
    (tmp_path / "clicks_t.contract.yaml").write_text(CONTRACT)
    contract = load_contract_file(tmp_path / "clicks_t.contract.yaml")
    assert not_a_transform(transform, contract) is None
    assert not_a_transform(transform_both, contract) is None
    for job in (main, script_main):
        why = not_a_transform(job, contract)
        assert why is not None and "job" in why and "transform" in why


def test_the_stream_without_its_late_rows(tmp_path):
    from eventtime.loader import load_scenario_text
    from eventtime.registry import ContractLookup
    from eventtime.properties import _sb_batches, _sb_lines, _sb_without

    (tmp_path / "clicks_t.contract.yaml").write_text(CONTRACT)
    contract = load_contract_file(tmp_path / "clicks_t.contract.yaml")
    text = textwrap.dedent("""\
        scenario: s
        description: three rows, two of them behind the watermark of the second batch.
        contract: clicks_t
        steps:
          - add: {clicks: [[a, "2024-01-01T00:00:20Z"]]}
          - process
          - add: {clicks: [[a, "2024-01-01T00:00:01Z"], [b, "2024-01-01T00:00:21Z"]]}
          - add: {clicks: [[c, "2024-01-01T00:00:02Z"]]}
          - process
        """)
    sc = load_scenario_text(text, "s.scenario.yaml", contracts=ContractLookup((), extra=[contract]))

    class Ran:  # what a run saw: batch 2 dropped the two rows behind its watermark (00:00:10)
        def __init__(self, index, mark, dropped):
            self.index = index
            self.batches = [type("B", (), {"has_data": True, "watermark_before_ms": mark, "dropped": dropped})()]

    obs = type("O", (), {"result": type("R", (), {"steps": [Ran(2, 0, 0), Ran(5, T // 1000 + 10_000, 2)]})()})()
    batches = _sb_batches(sc, obs, _sb_lines(sc))
    assert batches is not None and [len(b.rows) for b in batches] == [1, 3]
    late, why = late_rows(batches)
    assert why is None and late == [(1, 0), (1, 2)]
    steps = _sb_without(sc, batches, late, _sb_lines(sc))
    assert steps[0].startswith("- add:") and steps[1] == "- process"
    assert "b" in steps[2] and "00:00:01" not in steps[2] and "00:00:02" not in steps[2] and steps[3] == "- process"


def test_the_property_is_named_by_both_faces(tmp_path):
    (tmp_path / "clicks_t.contract.yaml").write_text(CONTRACT)
    contract = load_contract_file(tmp_path / "clicks_t.contract.yaml")
    assert STREAM_BATCH in PROPERTIES
    assert wanted_properties([STREAM_BATCH], contract) == [STREAM_BATCH]
    with pytest.raises(ValueError, match="stream-equals-batch"):
        wanted_properties(["stream-equal-batch"], contract)
