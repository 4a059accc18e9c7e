"""Record batch bytes: v2 header fields, CRC after in-place patches, splitting concatenated batches,
record decoding with every codec, legacy v0/v1 messages."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.broker.storage.batch import (
    CorruptBatch,
    LegacyBatch,
    RecordBatch,
    ScanOutcome,
    increment_sequence,
    iter_batches,
    scan_batches,
)
from fencepost.broker.storage.compression import DecompressionError, decompress, xxh32
from fencepost.broker.storage.records import RecordDecodeError, decode_v2_records
from tests.support.broker_storage_builder import (
    Rec,
    batch,
    control_batch,
    legacy_messages,
    legacy_wrapper,
    zigzag_varint,
)

ALL_CODECS = ["none", "gzip", "snappy", "snappy-xerial", "lz4", "lz4-broken-hc", "zstd"]


def test_header_fields():
    data = batch(
        ["a", "b", "c"], base_offset=17, partition_leader_epoch=4, producer_id=77, producer_epoch=3,
        base_sequence=12, base_timestamp=5000, transactional=True,
    )
    b = RecordBatch(data)
    assert (b.base_offset, b.partition_leader_epoch, b.magic, b.record_count) == (17, 4, 2, 3)
    assert (b.last_offset_delta, b.last_offset, b.next_offset) == (2, 19, 20)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) == (77, 3, 12, 14)
    assert (b.base_timestamp, b.max_timestamp, b.timestamp_type) == (5000, 5000, 0)
    assert b.is_transactional and not b.is_control and b.has_producer_id
    assert b.size_in_bytes == len(data) == b.batch_length + 12
    assert b.is_valid()


def test_no_producer_means_no_sequence():
    b = RecordBatch(batch(["a", "b"]))
    assert not b.has_producer_id
    assert b.last_sequence == -1


def test_last_sequence_wraps_at_int32_max():
    assert increment_sequence(2**31 - 2, 3) == 1
    assert increment_sequence(5, 3) == 8
    b = RecordBatch(batch(["a", "b", "c"], producer_id=1, producer_epoch=0, base_sequence=2**31 - 1))
    assert b.last_sequence == 1


def test_patching_base_offset_and_epoch_keeps_the_crc_valid():
    data = bytearray(batch(["x", "y"], codec="gzip"))
    crc_before = RecordBatch(data).crc
    b = RecordBatch(data)
    b.set_base_offset(123456789012)
    b.set_partition_leader_epoch(42)
    assert (b.base_offset, b.partition_leader_epoch, b.crc) == (123456789012, 42, crc_before)
    assert b.is_valid()
    assert [r.offset for r in b.records()] == [123456789012, 123456789013]


def test_patching_a_read_only_buffer_fails():
    with pytest.raises(TypeError):
        RecordBatch(batch(["x"])).set_base_offset(5)


def test_a_flipped_byte_anywhere_under_the_crc_invalidates_it():
    data = batch(["hello", "world"])
    for position in range(21, len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0x01
        assert not RecordBatch(damaged).is_valid(), position


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_records_decode_with_every_codec(codec):
    values = [f"value-{i}".encode() * (i % 7) for i in range(300)]
    records = [Rec(v, key=str(i).encode() if i % 2 else None, timestamp_delta=i) for i, v in enumerate(values)]
    b = RecordBatch(batch(records, codec=codec, base_offset=1000))
    assert b.is_valid()
    decoded = b.records()
    assert [r.value for r in decoded] == values
    assert [r.offset for r in decoded] == list(range(1000, 1300))
    assert [r.timestamp - decoded[0].timestamp for r in decoded] == list(range(300))
    assert decoded[3].key == b"3" and decoded[4].key is None


def test_large_batch_spanning_several_compressed_blocks():
    values = [bytes([i % 251]) * 1000 for i in range(400)]  # 400 kB: several snappy and lz4 blocks
    for codec in ALL_CODECS:
        assert [r.value for r in RecordBatch(batch(values, codec=codec)).records()] == values, codec


def test_log_append_time_gives_every_record_the_max_timestamp():
    b = RecordBatch(batch([Rec(b"a", timestamp_delta=1), Rec(b"b", timestamp_delta=2)], log_append_time=True,
                          max_timestamp=99_999))
    assert b.timestamp_type == 1
    assert [r.timestamp for r in b.records()] == [99_999, 99_999]


def test_null_values_keys_and_headers():
    (record,) = RecordBatch(batch([Rec(None, key=None, headers=[("h", None), ("é", b"")])])).records()
    assert record.value is None and record.key is None
    assert record.headers == (("h", None), ("é", b""))


def test_control_batch_flag():
    b = RecordBatch(control_batch(5))
    assert b.is_control and b.is_transactional and b.is_valid()


def test_unknown_codec_and_damaged_payload_are_reported():
    with pytest.raises(DecompressionError, match="unknown compression codec id 6"):
        decompress(6, b"")
    with pytest.raises(DecompressionError, match="zstd"):
        decompress(4, b"not zstd at all")
    with pytest.raises(DecompressionError, match="LZ4 frame"):
        decompress(3, b"nope")


def test_xxh32_reference_vectors():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_record_decoder_rejects_inconsistent_lengths():
    good = (zigzag_varint(7) + b"\x00" + zigzag_varint(0) + zigzag_varint(0) + zigzag_varint(-1) + zigzag_varint(1)
            + b"v" + zigzag_varint(0))
    assert decode_v2_records(good, 1, 10, 0)[0].value == b"v"
    with pytest.raises(RecordDecodeError, match="declared 8 bytes"):
        decode_v2_records(zigzag_varint(8) + good[1:] + b"\x00", 1, 10, 0)
    with pytest.raises(RecordDecodeError, match="past the end"):
        decode_v2_records(good, 2, 10, 0)


# -- splitting concatenated batches -------------------------------------------------
def test_iteration_yields_whole_batches_and_stops_at_a_partial_one():
    first, second = batch(["a"], base_offset=0), batch(["b", "c"], base_offset=1)
    data = first + second
    for cut in range(len(data) + 1):
        got = list(iter_batches(data[:cut]))
        expected = [b for b, end in ((first, len(first)), (second, len(data))) if end <= cut]
        assert [bytes(b.buffer) for b in got] == expected, cut


def test_iteration_from_a_start_position():
    first, second = batch(["a"]), batch(["b"], base_offset=1)
    assert [b.base_offset for b in iter_batches(first + second, start=len(first))] == [1]


def test_impossible_headers_raise_corrupt_batch_with_the_position():
    good = batch(["a"])
    zeros = bytes(40)  # a zero-filled tail: length 0, magic 0
    with pytest.raises(CorruptBatch) as info:
        list(iter_batches(good + zeros))
    assert info.value.position == len(good)
    assert "below the v0 minimum" in str(info.value)
    bad_magic = bytearray(good)
    bad_magic[16] = 7
    with pytest.raises(CorruptBatch, match="unknown magic 7"):
        list(iter_batches(bytes(bad_magic)))
    short = bytearray(good)
    struct.pack_into(">i", short, 8, 20)
    with pytest.raises(CorruptBatch, match="below the v2 minimum"):
        list(iter_batches(bytes(short)))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=12),
    chunk=st.integers(17, 700),
    cut=st.integers(0, 200),
)
def test_scan_batches_is_independent_of_the_chunk_size(sizes, chunk, cut):
    data = b""
    offset = 0
    for n in sizes:
        data += batch([b"x" * (i % 5) for i in range(n)], base_offset=offset)
        offset += n
    data = data[: max(len(data) - cut, 0)]
    outcome = ScanOutcome()
    scanned = [(pos, bytes(b.buffer))
               for pos, b in scan_batches(lambda p, n: data[p : p + n], len(data), outcome, chunk_bytes=chunk)]
    whole = []
    pos = 0
    for b in iter_batches(data):
        whole.append((pos, bytes(b.buffer)))
        pos += b.size_in_bytes
    assert scanned == whole
    assert (outcome.problem is None) == (pos == len(data))
    if outcome.problem:
        assert outcome.problem_position == pos and "torn tail" in outcome.problem


# -- legacy v0 / v1 -------------------------------------------------------------------
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_plain_messages(magic):
    entries = list(iter_batches(legacy_messages(magic, 5, [b"a", b"bb"], key=b"k")))
    assert all(isinstance(e, LegacyBatch) and e.is_valid() for e in entries)
    assert [(r.offset, r.key, r.value) for e in entries for r in e.records()] == [(5, b"k", b"a"), (6, b"k", b"bb")]
    assert [e.partition_leader_epoch for e in entries] == [-1, -1]
    timestamps = [r.timestamp for e in entries for r in e.records()]
    assert timestamps == ([-1, -1] if magic == 0 else [1_700_000_000_000] * 2)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["gzip", "snappy", "snappy-xerial", "lz4", "lz4-broken-hc"])
def test_legacy_compressed_wrappers(magic, codec):
    data = legacy_wrapper(magic, 30, [b"p", b"q", b"r"], codec)
    (wrapper,) = list(iter_batches(data))
    assert wrapper.is_valid() and wrapper.compression != 0
    assert (wrapper.base_offset, wrapper.last_offset) == (30, 32)
    assert [(r.offset, r.value) for r in wrapper.records()] == [(30, b"p"), (31, b"q"), (32, b"r")]


def test_legacy_crc_detects_damage():
    data = bytearray(legacy_messages(1, 0, [b"abc"]))
    data[-1] ^= 0xFF
    (entry,) = list(iter_batches(bytes(data)))
    assert not entry.is_valid()


def test_mixed_formats_in_one_buffer():
    data = legacy_messages(1, 0, [b"old"]) + batch(["new"], base_offset=1)
    entries = list(iter_batches(data))
    assert [type(e).__name__ for e in entries] == ["LegacyBatch", "RecordBatch"]
    assert [r.value for e in entries for r in e.records()] == [b"old", b"new"]


def test_payload_framings_real_clients_write():
    import gzip

    import cramjam

    data = b"kafka " * 5000
    assert decompress(1, gzip.compress(data[:100]) + gzip.compress(data[100:])) == data  # multi-member gzip
    streaming = cramjam.zstd.Compressor()  # a zstd frame without content size, as zstd-jni streams write
    streaming.compress(data)
    frame = bytes(streaming.finish())
    assert frame[4] & 0xC0 == 0 and decompress(4, frame) == data
    assert decompress(2, bytes(cramjam.snappy.compress(data))) == data  # the official snappy framing format
    with pytest.raises(DecompressionError, match="ends inside"):
        decompress(1, gzip.compress(data)[:-30])
