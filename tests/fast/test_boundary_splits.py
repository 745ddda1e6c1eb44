"""`batch-boundary-independence`'s split rule (`eventtime.properties._split_rows`), on rows and watermarks given
by hand: a data batch is split in two only where no row can change between late and on time under Spark's
end-of-batch watermark (docs/properties.md). Times in seconds after T; the job's watermarks as the unsplit
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
