"""Reading the fixed header of v2 record batches (DefaultRecordBatch layout) without decoding records."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from struct import Struct

# base offset, length, partition leader epoch, magic, crc, attributes, last offset delta,
# base timestamp, max timestamp, producer id, producer epoch, base sequence, record count
_HEADER = Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size  # 61


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size(self) -> int:
        return self.length + 12


def iter_batch_headers(data: bytes | memoryview) -> Iterator[BatchHeader]:
    """The headers of the complete batches in `data`, in order; stops at a partial or malformed one."""
    pos = 0
    end = len(data)
    while end - pos >= HEADER_SIZE:
        (base, length, epoch, magic, _crc, attrs, delta, _base_ts, max_ts, pid, _pe, _seq,
         count) = _HEADER.unpack_from(data, pos)
        if magic != 2 or length < HEADER_SIZE - 12 or pos + 12 + length > end:
            return
        yield BatchHeader(base, length, epoch, magic, attrs, delta, max_ts, pid, count)
        pos += 12 + length
