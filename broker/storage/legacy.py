"""Legacy message sets (message formats v0 and v1, magic 0/1), read-only, for stock Kafka
data directories written with old formats.

Owns the LegacyRecord.java layout of one log entry: Offset (int64) · MessageSize
(int32) · CRC (uint32, CRC-32 over Magic..end) · Magic · Attributes (codec bits
0-2, timestamp type 0x08 in v1) · Timestamp (int64, v1 only) · Key (int32 length
+ bytes, -1 null) · Value (int32 length + bytes).
A compressed message is a wrapper whose value is a compressed run of inner log
entries. The wrapper's offset is the offset of the last inner message; in v1 the
inner offsets are relative (0..n-1) and made absolute from the wrapper's, in v0
they are already absolute (AbstractLegacyRecordBatch.DeepRecordsIterator).
"""
from __future__ import annotations

import struct
import zlib

from fencepost.broker.storage.compression import Codec, decompress
from fencepost.broker.storage.records import Record

LEGACY_MIN_SIZE = {0: 14, 1: 22}  # crc, magic, attributes, [timestamp], key and value lengths
_ENTRY_OVERHEAD = 12
_LOG_APPEND_TIME_FLAG = 0x08
_NO_TIMESTAMP = -1

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


class LegacyFormatError(ValueError):
    """A v0/v1 message whose fields do not fit its declared size."""


class LegacyBatch:
    """A view over one v0/v1 log entry (a plain message, or a compressed wrapper)."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: bytes | bytearray | memoryview) -> None:
        self.buffer = memoryview(buffer)

    @property
    def offset(self) -> int:
        """The entry's offset: for a compressed wrapper, the offset of its last inner message."""
        return _I64.unpack_from(self.buffer, 0)[0]

    @property
    def size_in_bytes(self) -> int:
        return _ENTRY_OVERHEAD + _I32.unpack_from(self.buffer, 8)[0]

    @property
    def crc(self) -> int:
        return _U32.unpack_from(self.buffer, 12)[0]

    @property
    def magic(self) -> int:
        return self.buffer[16]

    @property
    def attributes(self) -> int:
        return self.buffer[17]

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp(self) -> int:
        return _I64.unpack_from(self.buffer, 18)[0] if self.magic == 1 else _NO_TIMESTAMP

    @property
    def timestamp_type(self) -> int:
        return 1 if self.magic == 1 and self.attributes & _LOG_APPEND_TIME_FLAG else 0

    # The members a reader of mixed-format segments uses, named as RecordBatch names them.
    partition_leader_epoch = -1
    is_control = False
    is_transactional = False

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def base_offset(self) -> int:
        """The first offset: decompresses a wrapper to find it, as Kafka does."""
        if self.compression == Codec.NONE:
            return self.offset
        records = self.records()
        return records[0].offset if records else self.offset

    def is_valid(self) -> bool:
        return zlib.crc32(self.buffer[16:]) == self.crc

    def key_value(self) -> tuple[bytes | None, bytes | None]:
        pos = 18 + (8 if self.magic == 1 else 0)
        key, pos = self._sized(pos, "key")
        value, _ = self._sized(pos, "value")
        return key, value

    def _sized(self, pos: int, what: str) -> tuple[bytes | None, int]:
        if pos + 4 > len(self.buffer):
            raise LegacyFormatError(
                f"v{self.magic} message at offset {self.offset}: {what} length past the message end")
        (length,) = _I32.unpack_from(self.buffer, pos)
        pos += 4
        if length < 0:
            return None, pos
        if pos + length > len(self.buffer):
            raise LegacyFormatError(
                f"v{self.magic} message at offset {self.offset}: {what} of {length} bytes runs past the message end"
            )
        return bytes(self.buffer[pos : pos + length]), pos + length

    def records(self) -> list[Record]:
        """The messages with absolute offsets; a compressed wrapper yields its inner messages."""
        key, value = self.key_value()
        if self.compression == Codec.NONE:
            return [Record(self.offset, self.timestamp, key, value)]
        if value is None:
            raise LegacyFormatError(f"compressed v{self.magic} wrapper at offset {self.offset} has a null value")
        inner = _inner_entries(decompress(self.compression, value))
        if not inner:
            raise LegacyFormatError(f"compressed v{self.magic} wrapper at offset {self.offset} holds no messages")
        if self.magic == 1:
            # librdkafka once wrote wrapper offset 0 in produce requests; Kafka then keeps inner offsets as they are.
            base = 0 if self.offset == 0 else self.offset - inner[-1].offset
        else:
            base = 0
        log_append_time = self.timestamp_type == 1
        out = []
        for entry in inner:
            inner_key, inner_value = entry.key_value()
            timestamp = self.timestamp if log_append_time else entry.timestamp
            out.append(Record(base + entry.offset, timestamp, inner_key, inner_value))
        return out

    def __repr__(self) -> str:
        return f"LegacyBatch(v{self.magic}, offset {self.offset}, {self.size_in_bytes} bytes, codec {self.compression})"


def _inner_entries(data: bytes) -> list[LegacyBatch]:
    entries = []
    pos = 0
    view = memoryview(data)
    while pos + _ENTRY_OVERHEAD <= len(view):
        size = _ENTRY_OVERHEAD + _I32.unpack_from(view, pos + 8)[0]
        if size < _ENTRY_OVERHEAD + LEGACY_MIN_SIZE[0] or pos + size > len(view):
            raise LegacyFormatError(f"inner message at byte {pos} of a decompressed wrapper declares {size} bytes")
        entries.append(LegacyBatch(view[pos : pos + size]))
        pos += size
    return entries
