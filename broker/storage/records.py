"""Records inside a batch: the `Record` value type and the v2 record decoder.

Owns the record layout of message format v2 (DefaultRecord.java): every field a
zigzag varint except the attribute byte and the raw key/value/header bytes:
length, attributes, timestamp delta, offset delta, key length + key, value
length + value, header count, then per header key length + key (UTF-8) and
value length + value. A length of -1 means null.
Only the dump tool and ListOffsets decode records; produce and fetch never do.
"""
from __future__ import annotations

from dataclasses import dataclass


class RecordDecodeError(ValueError):
    """Record bytes inside a batch that do not follow the v2 layout."""


@dataclass(frozen=True, slots=True)
class Record:
    """One record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """(zigzag-decoded value, next position) of the varint at `pos` (up to 64 bits)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise RecordDecodeError(f"varint runs past the end of the records at byte {pos}")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise RecordDecodeError(f"varint longer than 10 bytes ending at byte {pos}")


def _read_bytes(buf: bytes | memoryview, pos: int, what: str) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(buf):
        raise RecordDecodeError(f"{what} of {length} bytes at byte {pos} runs past the end of the records")
    return bytes(buf[pos:end]), end


def decode_v2_records(
    data: bytes | memoryview, count: int, base_offset: int, base_timestamp: int
) -> list[Record]:
    """The `count` records encoded back to back in `data` (already decompressed)."""
    records: list[Record] = []
    pos = 0
    for index in range(count):
        length, pos = read_varint(data, pos)
        end = pos + length
        if length < 0 or end > len(data):
            raise RecordDecodeError(
                f"record {index} of {count} declares {length} bytes at byte {pos}, past the end ({len(data)} bytes)"
            )
        pos += 1  # attributes: unused in v2
        timestamp_delta, pos = read_varint(data, pos)
        offset_delta, pos = read_varint(data, pos)
        key, pos = _read_bytes(data, pos, "key")
        value, pos = _read_bytes(data, pos, "value")
        header_count, pos = read_varint(data, pos)
        headers = []
        for _ in range(header_count):
            header_key, pos = _read_bytes(data, pos, "header key")
            header_value, pos = _read_bytes(data, pos, "header value")
            headers.append(((header_key or b"").decode("utf-8", "replace"), header_value))
        if pos != end:
            raise RecordDecodeError(
                f"record {index} of {count}: declared {length} bytes but its fields take {length + pos - end}")
        records.append(
            Record(base_offset + offset_delta, base_timestamp + timestamp_delta, key, value, tuple(headers))
        )
    return records
