"""The test batch builder against an independent implementation (kafka-python's record classes),
both ways: kafka-python reads what the builder writes, the broker reads what kafka-python writes."""
from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from fencepost.broker.storage.batch import RecordBatch, iter_batches
from tests.support.broker_storage_builder import Rec, batch, legacy_messages, legacy_wrapper


def test_kafka_python_reads_the_builders_v2_batches():
    data = batch(
        ["a", Rec(b"b", key=b"k", headers=[("h", b"v"), ("n", None)], timestamp_delta=7), Rec(None)],
        base_offset=40, partition_leader_epoch=6, producer_id=9, producer_epoch=2, base_sequence=11,
    )
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch, theirs.producer_id, theirs.producer_epoch,
            theirs.base_sequence) == (
        40, 6, 9, 2, 11,
    )
    records = list(theirs)
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (40, None, b"a", []),
        (41, b"k", b"b", [("h", b"v"), ("n", None)]),
        (42, None, None, []),
    ]
    assert records[1].timestamp == records[0].timestamp + 7


def test_kafka_python_reads_the_builders_gzip_batch():
    theirs = DefaultRecordBatch(batch([f"v{i}" for i in range(20)], codec="gzip"))
    assert theirs.validate_crc()
    assert [r.value for r in theirs] == [f"v{i}".encode() for i in range(20)]


def test_the_broker_reads_kafka_pythons_v2_batches():
    for compression in (0, 1):  # none, gzip: the codecs kafka-python needs no extra library for
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=compression, is_transactional=False, producer_id=5, producer_epoch=1,
            base_sequence=3, batch_size=1 << 20,
        )
        for i in range(4):
            builder.append(i, timestamp=1000 + i, key=None, value=f"x{i}".encode() * 50, headers=[("a", b"b")])
        ours = RecordBatch(bytes(builder.build()))
        assert ours.is_valid()
        assert (ours.magic, ours.record_count, ours.last_offset_delta, ours.compression) == (2, 4, 3, compression)
        assert (ours.producer_id, ours.producer_epoch, ours.base_sequence, ours.last_sequence) == (5, 1, 3, 6)
        assert [(r.offset, r.timestamp, r.value, r.headers) for r in ours.records()] == [
            (i, 1000 + i, f"x{i}".encode() * 50, (("a", b"b"),)) for i in range(4)
        ]


def test_the_broker_reads_kafka_pythons_legacy_messages():
    for magic in (0, 1):
        for compression in (0, 1):
            builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=1 << 20)
            for i in range(3):
                builder.append(i, timestamp=2000 + i if magic else None, key=b"k", value=f"m{i}".encode() * 50)
            entries = list(iter_batches(bytes(builder.build())))
            assert all(e.is_valid() for e in entries)
            assert {e.compression for e in entries} == {compression}
            records = [r for e in entries for r in e.records()]
            assert [(r.offset, r.key, r.value) for r in records] == [(i, b"k", f"m{i}".encode() * 50) for i in range(3)]


def test_kafka_python_reads_the_builders_legacy_messages():
    data = legacy_messages(1, 10, [b"p", b"q"])
    theirs = LegacyRecordBatch(data[: len(data) // 2], 1)
    assert theirs.validate_crc()
    assert [(r.offset, r.value) for r in theirs] == [(10, b"p")]
    wrapper = LegacyRecordBatch(legacy_wrapper(1, 20, [b"a", b"b", b"c"], "gzip"), 1)
    assert [(r.offset, r.value) for r in wrapper] == [(20, b"a"), (21, b"b"), (22, b"c")]
