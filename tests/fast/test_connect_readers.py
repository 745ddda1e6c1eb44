"""The Spark Connect reader substitution (`jobio.connect_reader_substitution`), without a server: Connect's
readers build plans in the client, so what a chain names, where it was written and which resolver it
reaches can be checked with no JVM and no session."""
from __future__ import annotations

import pytest

from eventtime.harness.jobio import connect_reader_substitution, kafka_reads, reads_match

pytest.importorskip("pyspark.sql.connect.streaming.readwriter")


def _readers():
    from pyspark.sql.connect.readwriter import DataFrameReader
    from pyspark.sql.connect.streaming.readwriter import DataStreamReader
    return DataStreamReader, DataFrameReader


def test_streaming_and_batch_reads_reach_their_resolvers_with_what_the_chain_names():
    stream_cls, batch_cls = _readers()
    seen = []
    with connect_reader_substitution(lambda call: seen.append(("stream", call)) or "S",
                                     lambda call: seen.append(("batch", call)) or "B"):
        kafka = (stream_cls(None).format("kafka").option("subscribe", "clicks")  # the chain's line
                 .option("kafka.bootstrap.servers", "b:9092").load())
        files = stream_cls(None).schema("page string").json("/landing/clicks")
        table = stream_cls(None).table("bronze")
        static = batch_cls(None).table("dims")
    assert (kafka, files, table, static) == ("S", "S", "S", "B")
    (_, k), (_, f), (_, t), (_, d) = seen
    assert reads_match(k, kafka_reads("clicks")) and not reads_match(k, kafka_reads("orders"))
    assert k.place is not None and k.place.file == __file__
    assert k.describe().startswith("readStream.load(format 'kafka'")
    assert (f.format, f.path, f.schema) == ("json", "/landing/clicks", "page string")
    assert reads_match(f, (("path", "/landing/clicks"),))
    assert t.table == "bronze" and t.streaming
    assert d.table == "dims" and not d.streaming and d.describe() == "read.table(table 'dims')"


def test_outside_the_block_connects_readers_are_pysparks_own():
    stream_cls, batch_cls = _readers()
    own = (stream_cls.load, stream_cls.table, batch_cls.load, stream_cls.option)
    with connect_reader_substitution(lambda call: None, lambda call: None):
        assert stream_cls.load is not own[0]
    assert (stream_cls.load, stream_cls.table, batch_cls.load, stream_cls.option) == own
