"""`batch-boundary-independence`'s split and merge rules (`eventtime.properties._split_rows`, `_merge_rows`), on
rows and watermarks given by hand: a data batch is split in two, or two adjacent ones merged, only where no row
can change between late and on time under Spark's end-of-batch watermark (docs/properties.md). Times in seconds after T; the job's watermarks as the unsplit
run reported them."""
from __future__ import annotations

from eventtime.properties import _Marks, _Row, _split_rows

T = 1_704_067_200 * 1_000_000  # 2024-01-01T00:00:00Z in micros
S = 1_000_000


def row(seconds: float | None, source: str = "clicks") -> _Row:
    et = None if seconds is None else T + int(seconds * S)
    return _Row(source, [source, seconds], et, True)


def marks(before: float | None, after: float | None, *, still: bool = False) -> _Marks:
    """E(N) and W(N) in seconds after T (None: 0, no watermark yet / not reported)."""
    micros = lambda s: 0 if s is None else T + int(s * S)  # noqa: E731
    return _Marks(micros(before), None if after is None else micros(after), still,
                  micros(before) == (None if after is None else micros(after)))


def seconds(parts):
    return None if parts is None else [[r.written[1] for r in part] for part in parts]


def test_the_first_batch_is_split_after_its_late_rows_where_the_first_part_moves_the_watermark_at_most_as_far():
    # batch 0 ran with no watermark and left W = 0s - 10s; the row at -20s goes first (after F the watermark
    # may be past it), the row at 0s after W: on time whatever F moved the watermark to
    assert seconds(_split_rows([row(-20), row(0)], [False, False], marks(None, -10, still=True), {}, [])) == [
        [-20], [0]]
    assert seconds(_split_rows([row(0), row(-20)], [False, False], marks(None, -10, still=True), {}, [])) == [
        [-20], [0]]


def test_the_next_batch_must_be_on_time_whatever_the_first_part_left():
    # Spark 3.4+ without a no-data batch between: the batch after the split drops late rows by the watermark
    # the second part ran with (at most W(N)) where the unsplit run did by E(N)
    assert _split_rows([row(-20), row(0)], [False, False], marks(None, -10, still=True), {}, [row(-15)]) is None
    assert _split_rows([row(-20), row(0)], [False, False], marks(None, -10, still=True), {}, [row(-5)]) is not None


def test_rows_that_move_no_maximum_split_anywhere_and_late_ones_stay_first():
    # the source read up to 0s before; E(N) = -10s moved since the batch before: a row at or before E(N) goes
    # first, where it is judged as it was; the first part moves nothing, so the rest runs with E(N)
    maxima = {"clicks": T}
    assert seconds(_split_rows([row(-1), row(-12)], [False, False], marks(-10, -10), maxima, [])) == [[-12], [-1]]
    # both at or before E(N): none may come later, and no first part leaves them as they were
    assert _split_rows([row(-12), row(-15)], [False, False], marks(-10, 20), maxima, []) is None


def test_a_null_event_time_never_comes_later_where_the_watermark_moves():
    assert _split_rows([row(None), row(30)], [False, False], marks(None, 20, still=True), {}, []) is None
    # where nothing moves (the watermark E(N) judged the batch before too, and N moved none), it may
    assert seconds(_split_rows([row(-1), row(None)], [True, False], marks(-10, -10, still=True),
                               {"clicks": T}, [])) == [[-1], [None]]


def test_each_input_reads_in_the_first_part_so_the_min_policy_cannot_run_ahead():
    # two sources first read in this batch: after a first part with only one of them, Spark's min policy would
    # take that one's watermark alone, past the whole batch's
    a, b = row(0, "a"), row(100, "b")
    assert _split_rows([a, b], [False, False], marks(None, -10, still=True), {}, []) is None
    assert seconds(_split_rows([a, b, row(95, "b")], [False, False, False], marks(None, -10, still=True), {}, [])
                   ) == [[0, 100], [95]]


def test_the_drawn_choices_say_which_rows_go_first():
    rows = [row(0), row(1), row(2), row(3)]
    assert seconds(_split_rows(rows, [False, True, True, False], marks(None, -10, still=True), {}, [])) == [
        [1, 2], [0, 3]]
    assert seconds(_split_rows(rows, [False] * 4, marks(None, -10, still=True), {}, [])) == [
        [0], [1, 2, 3]]  # none drawn first: the first row, so that the input reads in the first part
    assert seconds(_split_rows(rows, [True] * 4, marks(None, -10, still=True), {}, [])) == [[0, 1, 2], [3]]


UPDATES = """\
contract: page_latest
description: the latest clicks per page, in update mode.
sources:
  clicks:
    columns: "page string, ts timestamp"
    event_time: ts
output:
  columns: "page string, clicks bigint"
  modes: [update]
"""


def test_update_mode_only_without_a_key_is_said_not_to_apply(tmp_path):
    from eventtime.contractfile import load_contract_file
    from eventtime.properties import _does_not_apply

    (tmp_path / "page_latest.contract.yaml").write_text(UPDATES)
    assert "update mode only, and no `key:` declared" in _does_not_apply(
        "batch-boundary-independence", load_contract_file(tmp_path / "page_latest.contract.yaml"))
    # with the key declared, the last row per page is the final output: it applies
    (tmp_path / "page_latest.contract.yaml").write_text(UPDATES + "  key: [page]\n")
    assert _does_not_apply("batch-boundary-independence",
                           load_contract_file(tmp_path / "page_latest.contract.yaml")) is None
    # append mode too
    (tmp_path / "page_latest.contract.yaml").write_text(UPDATES.replace("[update]", "[append, update]"))
    assert _does_not_apply("batch-boundary-independence",
                           load_contract_file(tmp_path / "page_latest.contract.yaml")) is None


def test_where_state_may_expire_under_rows_on_time_the_first_part_never_moves_the_watermark():
    # dropDuplicatesWithinWatermark, event-time timeouts: a watermark moved earlier may expire a key before a
    # later row on time meets it, which Spark allows: only the rule that moves nothing is used
    assert _split_rows([row(-20), row(0)], [False, False], marks(None, -10, still=True), {}, [], may_move=False) is None
    assert seconds(_split_rows([row(-1), row(-12)], [False, False], marks(-10, -10), {"clicks": T}, [],
                               may_move=False)) == [[-12], [-1]]


def test_which_operators_let_the_first_part_move_the_watermark():
    from types import SimpleNamespace as NS

    from eventtime.properties import _moves_safely

    def run(*ops):
        batch = NS(operators=[{"operatorName": o} for o in ops])
        return NS(result=NS(steps=[NS(batches=[batch])]))
    assert _moves_safely(run()) and _moves_safely(run("stateStoreSave")) and _moves_safely(run("symmetricHashJoin"))
    assert not _moves_safely(run("dedupeWithinWatermark")) and not _moves_safely(run("flatMapGroupsWithState"))
    assert not _moves_safely(run("symmetricHashJoin", "stateStoreSave"))  # chained: not judged so


# The converse change: two adjacent data batches N and N+1 run as one (`_merge_rows`, `_merge_batches`). The merged
# batch runs with N's watermarks, so N+1's rows are judged by an earlier late watermark than they were: a merge is
# refused wherever that could turn a late row on time (docs/properties.md).

def merges(later, n_marks, *, maxima=None, following=(), end=None, idle_after=False, may_move=True):
    from eventtime.properties import _merge_rows

    micros = None if end is None else T + int(end * S)
    return _merge_rows(later, n_marks, {"clicks": T} if maxima is None else maxima, list(following), micros,
                       idle_after=idle_after, may_move=may_move)


def test_a_batch_that_moved_no_watermark_merges_with_the_next_where_its_rows_meet_the_same_late_watermark():
    # E(N) = W(N) = -10s, and the batch before N ran with -10s too: N+1's rows were judged by -10s, as merged
    assert merges([row(-30)], marks(-10, -10, still=True)) and merges([row(None)], marks(-10, -10, still=True))
    # the batch before N ran with an earlier watermark: merged, N+1's rows are judged by that one, so a row at or
    # before -10s (late by its window, perhaps) could come out on time: refused; a row after -10s is on time both ways
    assert not merges([row(-30)], marks(-10, -10)) and not merges([row(None)], marks(-10, -10))
    assert merges([row(-5)], marks(-10, -10)) and not merges([row(-5), row(-10)], marks(-10, -10))


def test_where_the_first_batch_moved_the_watermark_the_next_ones_rows_must_be_after_it():
    # N ran with no watermark and left W(N) = -10s: a row of N+1 at -15s was judged by -10s (late, were its window
    # over), merged it is judged with no watermark at all (on time): refused
    assert not merges([row(-15)], marks(None, -10, still=True), idle_after=True)
    assert not merges([row(-10)], marks(None, -10, still=True), idle_after=True)  # at the watermark: late too
    assert merges([row(-5)], marks(None, -10, still=True), idle_after=True)
    assert not merges([row(None)], marks(None, -10, still=True), idle_after=True)  # a null: judged by which?
    assert not merges([row(-5)], marks(None, None, still=True), idle_after=True)  # W(N) not reported


def test_the_batch_after_the_merge_must_be_on_time_unless_a_no_data_batch_runs_between():
    # merged, the batch after judges late rows by E(N) where the unmerged run's did by W(N) or W(N+1), unless a
    # no-data batch runs after the merged batch (the unmerged run ran one after N, so the merged one runs one too)
    at = marks(None, -10, still=True)
    assert not merges([row(-5)], at, following=[row(-8)], end=-5)
    assert not merges([row(-5)], at, following=[row(-8)], end=None)
    assert merges([row(-5)], at, following=[row(0)], end=-5)
    assert merges([row(-5)], at, following=[row(-8)], end=-5, idle_after=True)
    assert merges([row(-5)], at, following=[_Row("lookups", ["x"], None, False)], end=-5)  # never late


def test_where_state_may_expire_under_rows_on_time_only_a_batch_that_moved_no_watermark_merges():
    # dropDuplicatesWithinWatermark, event-time timeouts: the unmerged run evicted by W(N) before N+1's rows came
    assert not merges([row(-5)], marks(None, -10, still=True), idle_after=True, may_move=False)
    assert merges([row(-5)], marks(-10, -10), may_move=False)


def test_an_input_first_read_in_the_later_batch_is_refused_where_the_watermark_moved():
    # min policy: merged, the new input's watermark joins a minimum that N's watermark W(N) no longer bounds
    assert not merges([row(100, "views")], marks(None, -10, still=True), idle_after=True)
    assert merges([row(100, "views")], marks(None, -10, still=True), maxima={"clicks": T, "views": T},
                  idle_after=True)
    assert merges([row(100, "views")], marks(-10, -10, still=True))  # nothing moved: M leaves W(N+1) anyway
    untimed = _Row("lookups", ["x"], None, False)  # a source without event time: never late, moves nothing
    assert merges([untimed], marks(None, -10, still=True), idle_after=True)


def test_a_no_data_batch_after_each_batch_that_moved_its_watermark():
    from types import SimpleNamespace as NS

    from eventtime.properties import _idle_after

    def batch(rows, before, after, query=None):
        return NS(has_data=rows > 0, watermark_before_ms=before, watermark_after_ms=after, query=query)
    assert _idle_after([batch(1, None, 10), batch(0, 10, 10)])
    assert not _idle_after([batch(1, None, 10)])  # no-data batches off, or a stateless query: none ran
    assert _idle_after([batch(1, 10, 10)])  # nothing moved: none needed
    assert not _idle_after([batch(1, 0, 10, "a"), batch(0, 10, 10, "b")])  # another query's does not count


CLICKS = """\
contract: clicks_counted
description: clicks per page.
sources:
  clicks:
    columns: "page string, ts timestamp"
    event_time: ts
output:
  columns: "page string, clicks bigint"
  modes: [append]
"""


def _one_row_batches(tmp_path, seconds_of_rows):
    from eventtime.contractfile import load_contract_file
    from eventtime.loader import load_scenario_text
    from eventtime.registry import ContractLookup

    (tmp_path / "clicks_counted.contract.yaml").write_text(CLICKS)
    contract = load_contract_file(tmp_path / "clicks_counted.contract.yaml")
    steps = "".join(f"  - add: {{clicks: [[a, '2024-01-01T00:00:{s:02d}Z']]}}\n  - process\n" for s in seconds_of_rows)
    text = f"scenario: s\ndescription: d\ncontract: clicks_counted\nsteps:\n{steps}"
    return load_scenario_text(text, contracts=ContractLookup((), extra=[contract]))


def _reference(sc, watermarks, *, no_data=True, operator="stateStoreSave"):
    """The unmerged run: each `process` ran one data batch with the watermarks given (ms after T, None: none),
    then a no-data batch where it moved the watermark and `no_data`."""
    from types import SimpleNamespace as NS

    from eventtime import spec as m

    def batch(rows, before, after):
        ms = lambda s: None if s is None else T // 1000 + s * 1000  # noqa: E731
        return NS(has_data=rows > 0, watermark_before_ms=ms(before), watermark_after_ms=ms(after), query=None,
                  operators=[{"operatorName": operator}])
    steps = []
    for step, (before, after) in zip([s for s in sc.steps if isinstance(s, m.ProcessStep)], watermarks):
        ran = [batch(1, before, after)] + ([batch(0, after, after)] if no_data and after != before else [])
        steps.append(NS(index=step.index, batches=ran))
    return NS(result=NS(steps=steps))


def _batches_of(text):
    return [[ln for ln in part.splitlines() if "add" in ln] for part in text.split("- process")][:-1]


def test_two_one_row_batches_are_merged_by_leaving_out_the_first_ones_process(tmp_path):
    from eventtime.properties import _merge_batches, _split_batches

    # rows at 0s, 20s, 40s, a 10-second delay: each batch moves the watermark past nothing the next one reads
    sc = _one_row_batches(tmp_path, [0, 20, 40])
    ref = _reference(sc, [(None, -10), (-10, 10), (10, 30)])
    assert _split_batches(sc, ref, None, [False] * 3) is None  # one row per batch: nothing to split
    text, _ = _merge_batches(sc, ref, [False] * 3)
    assert [len(b) for b in _batches_of(text)] == [2, 1], text  # the first pair, shrunk choices
    text, _ = _merge_batches(sc, ref, [False, False, True])
    assert [len(b) for b in _batches_of(text)] == [1, 2], text  # the pair whose later batch starts drawn first


def test_a_merge_that_would_turn_a_late_row_on_time_is_refused(tmp_path):
    from eventtime.properties import _merge_batches

    # the row at 5s came after the watermark 10s: late in its window [0s, 10s); merged with the batch at 20s it
    # would be judged by -10s, on time: the pair (20s, 5s) is refused, (0s, 20s) is not
    sc = _one_row_batches(tmp_path, [0, 20, 5])
    ref = _reference(sc, [(None, -10), (-10, 10), (10, 10)])
    text, _ = _merge_batches(sc, ref, [False, False, True])
    assert [len(b) for b in _batches_of(text)] == [2, 1], text
    # without a no-data batch after the first (no-data batches off), the batch after the merged one would judge
    # the row at 5s by -10s too: refused as well, nothing merges
    assert _merge_batches(sc, _reference(sc, [(None, -10), (-10, 10), (10, 10)], no_data=False), [False] * 3) is None
    # where state may expire under rows on time, batches that moved the watermark never merge
    assert _merge_batches(sc, _reference(sc, [(None, -10), (-10, 10), (10, 10)], operator="dedupeWithinWatermark"),
                          [False] * 3) is None


def test_the_report_says_how_many_streams_were_judged_by_a_split_and_by_a_merge():
    from collections import Counter

    from eventtime.properties import PropertyReport

    p = PropertyReport("batch-boundary-independence", held_on=12, judged_by=Counter(split=7, merge=5))
    assert "held on 12 generated stream(s) (judged by a split on 7, a merge on 5)" in p.describe(), p.describe()
    assert p.record()["judged_by"] == {"split": 7, "merge": 5}  # in the results file (`check-properties --json`)
    assert PropertyReport("no-query-dies", held_on=3).record()["judged_by"] == {}
