"""The streaming source the harness drives over Spark Connect: a Python data source run by the server.

This module runs on the Spark Connect *server* (the driver's Python workers), shipped there by value
with the data source registration, so it imports nothing of `eventtime`, only the standard library,
pyspark and pyarrow (both on any server that runs Python data sources).

Rules it keeps (see docs/connect.md for the measured facts behind them):

- Rows are *staged* by the client through Connect itself: each release is one DataFrame write of a
  Parquet directory `<root>/stage/gen=<N>` (the server writes it; `_SUCCESS` marks it complete). A
  release holds every add of every source since the previous one; each add is one offset of its
  source, like one `MemoryStream.addData`, and one input partition of the batch that reads it.
- An add's rows travel as one pickled list of tuples of the Python values PySpark's own conversion
  takes (`datetime`, `Decimal`, `date`, `bytes`, lists, dicts, tuples for structs; standard library
  types only), so every type Spark's DDL writes arrives as it left, nulls at any depth included. The
  server already runs what the client pickles (this data source, the foreachBatch function): the
  rows add no new trust.
- Offsets move only when the client releases: `latestOffset` counts the adds of this source in the
  released generations, never more. Under `Trigger.AvailableNow` (a pipeline update's flows) the
  query's target is the newest complete generation when it starts (`prepareForTriggerAvailableNow`,
  pinned as below so every source of the query shares it), and `latestOffset` goes no further: the
  update reads what was released before it and then runs the no-data batches its watermark calls for,
  as a Kafka or file source's does. The engine takes that path only for a reader with pyspark's
  `SupportsTriggerAvailableNow` mixin; where pyspark has it (`eventtime.harness.compat`, the client's
  seam, decides) `data_source(mixin)` builds the reader with it. An offset names its source, so the client can tell from the
  checkpoint's offset log which adds of which source a batch read.
- Several sources see the same release in the same trigger. The engine asks every source for its
  latest offset once per trigger, one after the other; a release landing between two of those
  calls would split one step's adds over two batches. So the k-th call of every reader of one query
  start uses one *pinned* generation: the first reader to make its k-th call pins the newest
  complete generation (an atomic link on the driver's local disk), the others read the pin.
- Reading happens on the driver (`partitions` embeds the rows in the partitions), so executors need
  no access to the staging directory.
"""
from __future__ import annotations

import os
import pickle
import tempfile
import uuid
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

FORMAT = "eventtime_staged"
STAGE = "stage"
GEN_PREFIX = "gen="


def _filesystem(root: str) -> tuple[Any, str]:
    """A pyarrow file system and the path in it for a Spark path (`file:/x`, `/x`, `s3://...`)."""
    from pyarrow import fs

    if root.startswith("file:"):
        path = root[len("file:"):]
        while path.startswith("//"):
            path = path[1:]
        return fs.LocalFileSystem(), path
    if "://" not in root:
        return fs.LocalFileSystem(), root
    return fs.FileSystem.from_uri(root)


def released_generations(root: str) -> list[int]:
    """The complete (written and committed) generations under `root`, ascending."""
    from pyarrow import fs

    filesystem, base = _filesystem(root)
    stage = f"{base.rstrip('/')}/{STAGE}"
    try:
        infos = filesystem.get_file_info(fs.FileSelector(stage, allow_not_found=True))
    except (FileNotFoundError, OSError):
        return []
    gens = []
    for info in infos:
        name = info.path.rsplit("/", 1)[-1]
        if info.type == fs.FileType.Directory and name.startswith(GEN_PREFIX) and name[len(GEN_PREFIX):].isdigit():
            if filesystem.get_file_info(f"{info.path}/_SUCCESS").type == fs.FileType.File:
                gens.append(int(name[len(GEN_PREFIX):]))
    return sorted(gens)


def read_generation(root: str, gen: int) -> list[dict]:
    """The records of one generation: source, seq (the add's number in its source, from 1), rows (pickled)."""
    import pyarrow.parquet as pq

    filesystem, base = _filesystem(root)
    table = pq.read_table(f"{base.rstrip('/')}/{STAGE}/{GEN_PREFIX}{gen}", filesystem=filesystem,
                          partitioning=None)
    return table.to_pylist()


def _adds(offset: dict | None) -> int:
    """The adds an offset covers; the engine passes None for a source that has released nothing yet
    while another source of the query has (`latestOffset` answers None until the first add)."""
    return int(offset["adds"]) if offset else 0


class _AddPartition(InputPartition):
    """One add of one source: its rows, unpickled, in order."""

    def __init__(self, rows: list[tuple]):
        super().__init__(None)
        self.rows = rows


class StagedStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        self.root = options["root"]
        self.source = options["source"]
        self.pins = os.path.join(tempfile.gettempdir(), "eventtime-pins", options["token"])
        self.calls = 0
        self.target: int | None = None  # the generation an AvailableNow query reads up to
        self.start_latest = options.get("start", "earliest") == "latest"
        self._adds: dict[int, list[tuple[int, list[tuple]]]] = {}  # gen -> [(seq, rows)] of this source

    # -- offsets -------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        """Where a query on a new checkpoint starts (asked only then): the first add, or with option
        start=latest (a Kafka reader's `startingOffsets` `latest`) after every add released when the query
        started: its target under AvailableNow, else the newest complete generation."""
        if not self.start_latest:
            return self._offset(0)
        gen = self.target if self.target is not None else self._pinned("available-now")
        return self._offset(sum(len(self._source_adds(g)) for g in range(1, gen + 1)))

    def _offset(self, adds: int) -> dict:
        return {"adds": adds, "source": self.source}

    # The no-argument form, which every Spark 4.x calls once per trigger (4.2 added start and limit).
    # (override: 4.2+ stubs declare those arguments; unused-ignore: 4.0-4.1 stubs do not)
    def latestOffset(self) -> dict:  # type: ignore[override, unused-ignore]
        if self.target is not None:
            gen = self.target
        else:
            self.calls += 1
            gen = self._pinned(str(self.calls))
            try:  # every reader has passed call - 2: the engine polls all sources within one trigger
                os.unlink(os.path.join(self.pins, str(self.calls - 2)))
            except FileNotFoundError:
                pass
        adds = sum(len(self._source_adds(g)) for g in range(1, gen + 1))
        return self._offset(adds) if adds else None  # type: ignore[return-value]

    def prepareForTriggerAvailableNow(self) -> None:
        """`SupportsTriggerAvailableNow`: the query's target is what was released when it started (one pin
        for every source of the query start, kept for its whole run, also when a flow is retried)."""
        self.target = self._pinned("available-now")

    def _pinned(self, name: str) -> int:
        os.makedirs(self.pins, exist_ok=True)
        pin = os.path.join(self.pins, name)
        try:
            with open(pin, encoding="ascii") as fh:
                return int(fh.read())
        except FileNotFoundError:
            pass
        gens = released_generations(self.root)
        newest = gens[-1] if gens else 0
        scratch = f"{pin}.{uuid.uuid4().hex}"
        with open(scratch, "w", encoding="ascii") as fh:
            fh.write(str(newest))
        try:
            os.link(scratch, pin)  # atomic: exactly one reader's choice becomes the pin
        except FileExistsError:
            with open(pin, encoding="ascii") as fh:
                newest = int(fh.read())
        finally:
            os.unlink(scratch)
        return newest

    def _source_adds(self, gen: int) -> list[tuple[int, list[tuple]]]:
        if gen not in self._adds:
            self._adds[gen] = sorted((int(rec["seq"]), [tuple(r) for r in pickle.loads(rec["rows"])])
                                     for rec in read_generation(self.root, gen) if rec["source"] == self.source)
        return self._adds[gen]

    # -- data ----------------------------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        first, last = _adds(start), _adds(end)
        if last <= first:
            return []
        out: list[InputPartition] = []
        seen = 0
        for gen in released_generations(self.root):
            for seq, rows in self._source_adds(gen):
                seen = seq
                if first < seq <= last:
                    out.append(_AddPartition(rows))
            if seen >= last:
                break
        if len(out) != last - first:
            raise RuntimeError(f"eventtime staged source {self.source!r}: adds {first + 1}..{last} are not all "
                               f"staged under {self.root} (found {len(out)})")
        return out

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        yield from partition.rows  # type: ignore[attr-defined]

    def commit(self, end: dict) -> None:
        pass


class _AvailableNowReader(StagedStreamReader):
    """The reader with pyspark's `SupportsTriggerAvailableNow` (added by `data_source`). The engine drives
    such a reader through its admission-control path (`PythonMicroBatchStreamWithAdmissionControl`), which
    calls `latestOffset(start, limit)` (measured on 4.3.0: the no-argument form fails there), so this one
    takes both. No limit is asked of the staged source (it has no such option): what was released is read."""

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:  # type: ignore[override, unused-ignore]
        latest = super().latestOffset()
        return latest if latest is not None else start  # type: ignore[return-value, unused-ignore]


class StagedDataSource(DataSource):
    """`spark.readStream.format("eventtime_staged")` with options root, source, token (one per query
    start), the schema as a DDL string, available_now (`true` for a query run by Trigger.AvailableNow) and
    start (`latest`: a new checkpoint begins after what was released, `earliest` by default)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return self.options["schema"]

    # the reader of a query started with Trigger.AvailableNow (option available_now=true: a pipeline's
    # flows); other queries keep the plain reader, which the engine polls without admission control
    stream_reader_class: type[StagedStreamReader] = StagedStreamReader

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        options = dict(self.options)
        available_now = str(options.get("available_now", "false")).lower() == "true"
        return (self.stream_reader_class if available_now else StagedStreamReader)(options)


def data_source(available_now: type | None) -> type[StagedDataSource]:
    """The data source to register: its reader with `available_now` (pyspark's
    `SupportsTriggerAvailableNow`, where it has one) among its bases, so that `Trigger.AvailableNow` runs
    to the release's target with its no-data batches; without it the engine runs one batch, as
    `Trigger.Once` (Spark 4.0+, SPARK-45178)."""
    if available_now is None:
        return StagedDataSource
    reader = type("StagedAvailableNowReader", (_AvailableNowReader, available_now), {"__module__": __name__})
    return type("StagedAvailableNowSource", (StagedDataSource,), {"stream_reader_class": reader, "__module__": __name__})
