"""Test-only builders of Kafka record batches (v2) and legacy messages (v0/v1).

The broker never builds batches (it stores what producers send), so the builders
live with the tests. Codec variants mirror what real clients write: snappy raw
(librdkafka) and xerial-framed (Java), lz4 frames (with the broken v0 header
checksum of old Java clients on request), gzip, zstd.
"""
from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import cramjam
import google_crc32c

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "snappy-xerial": 2, "lz4": 3, "lz4-broken-hc": 3, "zstd": 4}


def zigzag_varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = raw & 0x7F
        raw >>= 7
        if raw:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _sized(data: bytes | None) -> bytes:
    if data is None:
        return zigzag_varint(-1)
    return zigzag_varint(len(data)) + data


def compress(codec: str, data: bytes) -> bytes:
    if codec == "none":
        return data
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "snappy":
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == "snappy-xerial":
        out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
        for start in range(0, max(len(data), 1), 32 * 1024):  # snappy-java's default block is 32 KiB
            block = bytes(cramjam.snappy.compress_raw(data[start : start + 32 * 1024]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec == "lz4":
        return bytes(cramjam.lz4.compress(data))
    if codec == "lz4-broken-hc":
        frame = bytearray(cramjam.lz4.compress(data))
        frame[6] ^= 0x5A  # a header checksum computed over the wrong bytes, as KAFKA-3160 describes
        return bytes(frame)
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown codec {codec!r}")


@dataclass
class Rec:
    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp_delta: int = 0


def encode_record(offset_delta: int, rec: Rec) -> bytes:
    body = bytearray(b"\x00")
    body += zigzag_varint(rec.timestamp_delta)
    body += zigzag_varint(offset_delta)
    body += _sized(rec.key)
    body += _sized(rec.value)
    body += zigzag_varint(len(rec.headers))
    for hkey, hvalue in rec.headers:
        body += _sized(hkey.encode())
        body += _sized(hvalue)
    return zigzag_varint(len(body)) + bytes(body)


@dataclass
class BatchSpec:
    records: Sequence[Rec | bytes | str]
    base_offset: int = 0
    partition_leader_epoch: int = -1
    codec: str = "none"
    base_timestamp: int = 1_700_000_000_000
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    control: bool = False
    log_append_time: bool = False
    max_timestamp: int | None = None
    extra: dict = field(default_factory=dict)


def _as_rec(item: Rec | bytes | str) -> Rec:
    if isinstance(item, Rec):
        return item
    if isinstance(item, str):
        return Rec(item.encode())
    return Rec(item)


def build_batch(spec: BatchSpec) -> bytes:
    """A v2 record batch with a valid CRC-32C."""
    recs = [_as_rec(r) for r in spec.records]
    payload = b"".join(encode_record(i, r) for i, r in enumerate(recs))
    payload = compress(spec.codec, payload)
    attributes = CODECS[spec.codec]
    if spec.log_append_time:
        attributes |= 0x08
    if spec.transactional:
        attributes |= 0x10
    if spec.control:
        attributes |= 0x20
    last_delta = max(len(recs) - 1, 0)
    max_ts = spec.max_timestamp
    if max_ts is None:
        max_ts = spec.base_timestamp + max((r.timestamp_delta for r in recs), default=0)
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            last_delta,
            spec.base_timestamp,
            max_ts,
            spec.producer_id,
            spec.producer_epoch,
            spec.base_sequence,
            len(recs),
        )
        + payload
    )
    crc = google_crc32c.value(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # epoch, magic, crc, rest
    return struct.pack(">qiibI", spec.base_offset, length, spec.partition_leader_epoch, 2, crc) + after_crc


def batch(values: Sequence[Rec | bytes | str], **kwargs) -> bytes:
    return build_batch(BatchSpec(records=values, **kwargs))


def control_batch(base_offset: int = 0, *, commit: bool = True, producer_id: int = 7, epoch: int = 0, **kw) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    return build_batch(
        BatchSpec(
            records=[Rec(value, key=key)],
            base_offset=base_offset,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=-1,
            transactional=True,
            control=True,
            **kw,
        )
    )


# -- legacy v0 / v1 ---------------------------------------------------------
def legacy_message(
    magic: int, value: bytes | None, *, key: bytes | None = None, timestamp: int = 1_700_000_000_000,
    codec: str = "none", log_append_time: bool = False,
) -> bytes:
    """One v0/v1 message (CRC, magic, attributes, [timestamp], key, value), without the log entry header."""
    attributes = CODECS[codec]
    if log_append_time:
        attributes |= 0x08
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">I", zlib.crc32(body)) + body


def legacy_entry(offset: int, message: bytes) -> bytes:
    return struct.pack(">qi", offset, len(message)) + message


def legacy_messages(magic: int, base_offset: int, values: Sequence[bytes], **kwargs) -> bytes:
    """Uncompressed v0/v1 log entries at consecutive offsets."""
    return b"".join(
        legacy_entry(base_offset + i, legacy_message(magic, v, **kwargs)) for i, v in enumerate(values)
    )


def legacy_wrapper(magic: int, base_offset: int, values: Sequence[bytes], codec: str,
                   timestamp: int = 1_700_000_000_000) -> bytes:
    """A compressed wrapper as brokers store it: v1 inner offsets relative, v0 absolute; wrapper at the last offset."""
    inner_base = 0 if magic == 1 else base_offset
    inner = b"".join(
        legacy_entry(inner_base + i, legacy_message(magic, v, timestamp=timestamp)) for i, v in enumerate(values)
    )
    wrapper = legacy_message(magic, compress(codec, inner), timestamp=timestamp, codec=codec)
    return legacy_entry(base_offset + len(values) - 1, wrapper)
