"""Record batches as bytes: the v2 header view, CRC-32C, in-place patching, and splitting a
buffer of concatenated batches.

Owns the RecordBatch v2 byte layout (DefaultRecordBatch.java):
BaseOffset 0 · Length 8 · PartitionLeaderEpoch 12 · Magic 16 · CRC 17 (CRC-32C over
Attributes..end) · Attributes 21 · LastOffsetDelta 23 · BaseTimestamp 27 ·
MaxTimestamp 35 · ProducerId 43 · ProducerEpoch 51 · BaseSequence 53 ·
RecordsCount 57 · records from 61.
The broker keeps batches exactly as received: only the base offset and the
partition leader epoch (both outside the CRC) are ever patched, in place.
`iter_batches` also yields legacy (magic 0/1) message sets as `LegacyBatch`, so
one loop reads any Kafka segment file.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import google_crc32c

from fencepost.broker.storage.compression import Codec, decompress
from fencepost.broker.storage.legacy import LEGACY_MIN_SIZE, LegacyBatch
from fencepost.broker.storage.records import Record, decode_v2_records

LOG_OVERHEAD = 12  # base offset (8) + length (4): the part of a batch not counted by its length
HEADER_SIZE = 61  # a v2 batch with no records
MIN_V2_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAGIC_V2 = 2

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1

_CRC_START = 21
_TIMESTAMP_TYPE_FLAG = 0x08
_TRANSACTIONAL_FLAG = 0x10
_CONTROL_FLAG = 0x20
LOG_APPEND_TIME = 1

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class CorruptBatch(ValueError):
    """Bytes at `position` that cannot be the start of a batch (impossible length or magic)."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"corrupt batch at byte {position}: {reason}")
        self.position = position
        self.reason = reason


def increment_sequence(sequence: int, increment: int) -> int:
    """`sequence + increment`, wrapping past int32 max to 0 as Kafka's producer sequences do."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


class RecordBatch:
    """A view over the bytes of one v2 batch (nothing is copied or decoded up front).

    Over a writable buffer (bytearray, or a memoryview of one) the base offset and
    partition leader epoch can be patched in place; the CRC stays valid.
    """

    __slots__ = ("buffer",)

    def __init__(self, buffer: bytes | bytearray | memoryview) -> None:
        self.buffer = memoryview(buffer)

    # -- header fields ------------------------------------------------------
    @property
    def base_offset(self) -> int:
        return _I64.unpack_from(self.buffer, 0)[0]

    @property
    def batch_length(self) -> int:
        """The Length field: bytes after the length field itself."""
        return _I32.unpack_from(self.buffer, 8)[0]

    @property
    def size_in_bytes(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def partition_leader_epoch(self) -> int:
        return _I32.unpack_from(self.buffer, 12)[0]

    @property
    def magic(self) -> int:
        return self.buffer[16]

    @property
    def crc(self) -> int:
        return _U32.unpack_from(self.buffer, 17)[0]

    @property
    def attributes(self) -> int:
        return _I16.unpack_from(self.buffer, 21)[0]

    @property
    def last_offset_delta(self) -> int:
        return _I32.unpack_from(self.buffer, 23)[0]

    @property
    def base_timestamp(self) -> int:
        return _I64.unpack_from(self.buffer, 27)[0]

    @property
    def max_timestamp(self) -> int:
        return _I64.unpack_from(self.buffer, 35)[0]

    @property
    def producer_id(self) -> int:
        return _I64.unpack_from(self.buffer, 43)[0]

    @property
    def producer_epoch(self) -> int:
        return _I16.unpack_from(self.buffer, 51)[0]

    @property
    def base_sequence(self) -> int:
        return _I32.unpack_from(self.buffer, 53)[0]

    @property
    def record_count(self) -> int:
        return _I32.unpack_from(self.buffer, 57)[0]

    # -- derived ------------------------------------------------------------
    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & _TIMESTAMP_TYPE_FLAG else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_FLAG)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        base = self.base_sequence
        if base == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(base, self.last_offset_delta)

    # -- checks and patches -------------------------------------------------
    def compute_crc(self) -> int:
        """CRC-32C over Attributes..end, as the producer computed it."""
        return google_crc32c.value(bytes(self.buffer[_CRC_START:]))

    def is_valid(self) -> bool:
        """Whether the stored CRC matches the bytes (the whole batch must be in the buffer)."""
        return len(self.buffer) >= HEADER_SIZE and self.compute_crc() == self.crc

    def set_base_offset(self, offset: int) -> None:
        _I64.pack_into(self.buffer, 0, offset)

    def set_partition_leader_epoch(self, epoch: int) -> None:
        _I32.pack_into(self.buffer, 12, epoch)

    # -- records ------------------------------------------------------------
    def records(self) -> list[Record]:
        """The decoded records, decompressed if needed, with absolute offsets and timestamps."""
        payload = decompress(self.compression, self.buffer[HEADER_SIZE:])
        records = decode_v2_records(payload, self.record_count, self.base_offset, self.base_timestamp)
        if self.timestamp_type == LOG_APPEND_TIME:
            stamp = self.max_timestamp
            records = [Record(r.offset, stamp, r.key, r.value, r.headers) for r in records]
        return records

    def __repr__(self) -> str:
        if len(self.buffer) < HEADER_SIZE:
            return f"RecordBatch(<{len(self.buffer)} bytes: header incomplete>)"
        return (
            f"RecordBatch(offsets {self.base_offset}..{self.last_offset}, epoch {self.partition_leader_epoch}, "
            f"{self.record_count} records, "
            f"{Codec(self.compression).name.lower() if self.compression <= 4 else self.compression}, "
            f"{self.size_in_bytes} bytes, producer {self.producer_id}/{self.producer_epoch} seq {self.base_sequence})"
        )


def iter_batches(buffer: bytes | bytearray | memoryview, start: int = 0) -> Iterator[RecordBatch | LegacyBatch]:
    """The whole batches of `buffer` from `start`, in order, as views (no copies).

    Stops cleanly before a partial trailing batch (callers compare the sum of the
    yielded sizes with the buffer length to see one). Raises CorruptBatch where the
    header cannot be a batch: unknown magic or a length below the minimum.
    CRCs are not checked here: see `is_valid()`.
    """
    view = memoryview(buffer)
    end = len(view)
    pos = start
    while pos + LOG_OVERHEAD + 5 <= end:  # up to and including the magic byte
        length = _I32.unpack_from(view, pos + 8)[0]
        magic = view[pos + 16]
        if magic == MAGIC_V2:
            if length < MIN_V2_LENGTH:
                raise CorruptBatch(pos, f"length {length} is below the v2 minimum {MIN_V2_LENGTH}")
        elif magic in (0, 1):
            if length < LEGACY_MIN_SIZE[magic]:
                raise CorruptBatch(pos, f"message size {length} is below the v{magic} minimum {LEGACY_MIN_SIZE[magic]}")
        else:
            raise CorruptBatch(pos, f"unknown magic {magic} (0, 1 or 2 expected)")
        size = LOG_OVERHEAD + length
        if pos + size > end:
            return
        chunk = view[pos : pos + size]
        yield RecordBatch(chunk) if magic == MAGIC_V2 else LegacyBatch(chunk)
        pos += size


class ScanOutcome:
    """Filled in by `scan_batches`: why it stopped before the end (None if it reached it cleanly)."""

    __slots__ = ("problem", "problem_position")

    def __init__(self) -> None:
        self.problem: str | None = None
        self.problem_position: int | None = None

    def _stop(self, position: int, problem: str) -> None:
        self.problem_position = position
        self.problem = problem


def scan_batches(
    read: Callable[[int, int], bytes], size: int, outcome: ScanOutcome, *, chunk_bytes: int = 4 << 20
) -> Iterator[tuple[int, RecordBatch | LegacyBatch]]:
    """(position, batch) for the whole batches of a file of `size` bytes read through `read(position, n)`.

    Reads in chunks of `chunk_bytes` (more for a batch larger than that). Stops at a
    torn tail or a header that cannot be a batch, and records why in `outcome`.
    """
    pos = 0
    while pos < size:
        data = read(pos, min(chunk_bytes, size - pos))
        consumed = 0
        try:
            for batch in iter_batches(data):
                yield pos + consumed, batch
                consumed += batch.size_in_bytes
        except CorruptBatch as exc:
            outcome._stop(pos + exc.position, exc.reason)
            return
        if consumed == 0:
            if len(data) < LOG_OVERHEAD + 5:
                outcome._stop(pos, f"torn tail: {size - pos} bytes, too few for a batch header")
                return
            declared = LOG_OVERHEAD + _I32.unpack_from(data, 8)[0]
            if pos + declared > size:
                outcome._stop(pos,
                          f"torn tail: a batch of {declared} bytes with only {size - pos} bytes left in the file")
                return
            data = read(pos, declared)
            for batch in iter_batches(data):  # exactly one
                yield pos, batch
            consumed = declared
        pos += consumed
