"""One log segment: the `<20-digit base offset>.log` file of whole batches and its sparse index.

Owns the segment's bytes and how they reach the disk (Kafka's LogSegment):
- writes go straight to the file with pwrite(2) (nothing held in the process),
  optionally fsynced; or, when `buffered` (the `lazy` flush mode), they are held
  in process memory, readable like the rest, until `flush()` writes them;
- an index entry every `index_interval_bytes` of batches (OffsetIndex);
- `load` scans the whole file (checking structure, and CRCs when asked), stops at
  the first bad batch, cuts the file there and rebuilds the index — recovery.
The segment knows offsets only from batch headers; offset assignment, epochs
and producer state belong to the log.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fencepost.broker.storage.batch import HEADER_SIZE, MAGIC_V2, RecordBatch, ScanOutcome, scan_batches
from fencepost.broker.storage.fileio import pread_all, pwrite_all
from fencepost.broker.storage.offset_index import OffsetIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_LAST_OFFSET_END = 27  # base offset, length, epoch, magic, crc, attributes, last offset delta
_HEADER_SCAN_CHUNK = 16 << 10


def segment_file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_name(name: str) -> int | None:
    """The base offset of a `<20 digits>.log` file name, or None for any other file."""
    match = _SEGMENT_NAME.match(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class LoadResult:
    """What `LogSegment.load` kept and, if it cut the file, what and why."""

    valid_bytes: int
    truncated_bytes: int
    problem: str | None
    problem_offset: int | None


class LogSegment:
    """A segment file, its index, and (buffered mode) its unwritten tail."""

    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int, buffered: bool) -> None:
        self.base_offset = base_offset
        self.log_path = directory / segment_file_name(base_offset)
        self.buffered = buffered
        self.index_interval_bytes = index_interval_bytes
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self._file_size = os.fstat(self._fd).st_size
        self._pending = bytearray()
        self._dirty = False  # written since the last fsync
        self._bytes_since_index = 0
        self.index = OffsetIndex(directory / segment_file_name(base_offset, INDEX_SUFFIX), base_offset,
                                 buffered=buffered)
        self.next_offset = base_offset  # set by load()/append(): the offset after the last batch

    # -- sizes and reads ----------------------------------------------------
    @property
    def size(self) -> int:
        return self._file_size + len(self._pending)

    @property
    def unflushed_bytes(self) -> int:
        return len(self._pending)

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    def read(self, position: int, length: int) -> bytes:
        """`length` bytes from `position` (fewer at the end), from the file and the held tail."""
        end = min(position + length, self.size)
        if position >= end:
            return b""
        parts = []
        if position < self._file_size:
            file_end = min(end, self._file_size)
            parts.append(pread_all(self._fd, file_end - position, position))
        if end > self._file_size:
            start = max(position - self._file_size, 0)
            parts.append(bytes(self._pending[start : end - self._file_size]))
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def iter_headers(self, start: int = 0, chunk_bytes: int = _HEADER_SCAN_CHUNK) -> Iterator[tuple[int, RecordBatch]]:
        """(position, header-only batch view) for each batch from `start`, without reading records
        beyond what the chunked reads bring. Trusts the structure (loaded segments are checked)."""
        pos = start
        size = self.size
        while pos < size:
            data = self.read(pos, max(chunk_bytes, HEADER_SIZE))
            view = memoryview(data)
            i = 0
            while i + HEADER_SIZE <= len(view):
                batch = RecordBatch(view[i : i + HEADER_SIZE])
                yield pos + i, batch
                i += batch.size_in_bytes
            if i == 0:
                raise ValueError(f"{self.log_path}: a batch header at byte {pos} is cut by the end of the segment")
            pos += i

    def find_batch(self, offset: int) -> tuple[int, RecordBatch] | None:
        """(position, header) of the first batch whose last offset is at or beyond `offset`."""
        _, position = self.index.lookup(offset)
        for pos, header in self.iter_headers(position):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read_batches(self, position: int, first_size: int, max_bytes: int, max_offset: int | None) -> bytes:
        """Whole batches from `position`: the first always (whatever its size), then as many as fit
        in `max_bytes` in all, none starting at or beyond `max_offset`."""
        data = self.read(position, max(first_size, max_bytes))
        view = memoryview(data)
        end = 0
        while end + _LAST_OFFSET_END <= len(view):
            batch = RecordBatch(view[end : end + _LAST_OFFSET_END])
            if max_offset is not None and batch.base_offset >= max_offset:
                break
            size = batch.size_in_bytes
            if end + size > len(view):
                break
            end += size
        return data[:end] if end < len(data) else data

    # -- writes ---------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, int, int]], fsync: bool) -> None:
        """Append `data`, whole batches described as (position in data, last offset, size)."""
        start = self.size
        for relative, last_offset, size in batches:
            if self._bytes_since_index > self.index_interval_bytes:
                self.index.append(last_offset, start + relative)
                self._bytes_since_index = 0
            self._bytes_since_index += size
        if self.buffered:
            self._pending += data
        else:
            pwrite_all(self._fd, data, self._file_size)
            self._file_size += len(data)
            self._dirty = True
            if fsync:
                os.fdatasync(self._fd)
                self._dirty = False
        self.next_offset = batches[-1][1] + 1

    def flush(self, fsync: bool = True) -> None:
        """Write the held tail (buffered mode) and index, then fsync what was written since the last fsync."""
        if self._pending:
            pwrite_all(self._fd, self._pending, self._file_size)
            self._file_size += len(self._pending)
            self._pending = bytearray()
            self._dirty = True
        self.index.flush(fsync=fsync and self._dirty)
        if fsync and self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding `offset` and everything after it; returns the bytes dropped.
        The segment then ends at that batch's base offset (its next_offset)."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, header = found
        dropped = self.size - position
        self._cut(position)
        self.next_offset = header.base_offset
        return dropped

    def _cut(self, position: int) -> None:
        if position >= self._file_size:
            del self._pending[position - self._file_size :]
        else:
            self._pending = bytearray()
            os.ftruncate(self._fd, position)
            self._file_size = position
            self._dirty = True
        self.index.truncate_to_position(position)
        self._bytes_since_index = self._bytes_since_last_index(position)

    def _bytes_since_last_index(self, end: int) -> int:
        if not len(self.index):
            return end
        _, last_position = self.index.entries()[-1]
        return end - last_position

    # -- loading (recovery) -------------------------------------------------
    def load(
        self,
        expected_base: int,
        verify_crc: bool,
        on_batch: Callable[[RecordBatch], None],
    ) -> LoadResult:
        """Scan every batch, stop at the first that is torn, corrupt, not v2, or not contiguous from
        `expected_base`; cut the file there; rebuild the index; call `on_batch` for each kept batch."""
        outcome = ScanOutcome()
        entries: list[tuple[int, int]] = []
        next_offset = expected_base
        valid = 0
        last_indexed = 0
        problem = None
        problem_offset = None
        for position, batch in scan_batches(self.read, self.size, outcome):
            problem = _batch_problem(batch, next_offset, verify_crc)
            if problem:
                problem_offset = next_offset
                break
            if position - last_indexed > self.index_interval_bytes:
                entries.append((batch.last_offset, position))
                last_indexed = position
            on_batch(batch)  # type: ignore[arg-type]
            next_offset = batch.last_offset + 1  # type: ignore[union-attr]
            valid = position + batch.size_in_bytes
        else:
            if outcome.problem:
                problem, problem_offset = outcome.problem, next_offset
        truncated = self.size - valid
        if truncated:
            problem = problem or "bytes past the last whole batch"
            self._cut(valid)
        self.index.reset(entries)
        self._bytes_since_index = self._bytes_since_last_index(valid)
        self.next_offset = next_offset
        return LoadResult(valid, truncated, problem, problem_offset)

    # -- lifecycle ----------------------------------------------------------
    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.index.close()

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index.path):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, {self.size} bytes, next offset {self.next_offset})"


def _batch_problem(batch, expected_base: int, verify_crc: bool) -> str | None:
    if batch.magic != MAGIC_V2:
        return f"message format v{batch.magic} batch (this broker writes only v2)"
    if batch.base_offset != expected_base:
        return f"batch base offset {batch.base_offset} where {expected_base} was expected"
    if batch.last_offset_delta < 0:
        return f"negative last offset delta {batch.last_offset_delta}"
    if verify_crc and not batch.is_valid():
        return f"CRC mismatch (stored {batch.crc:#010x}, computed {batch.compute_crc():#010x})"
    return None

