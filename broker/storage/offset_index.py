"""The sparse offset index of one segment, in Kafka's `.index` file format.

Owns the file format (OffsetIndex.java): 8-byte entries, relative offset (int32,
offset - segment base) then file position (int32), big-endian, ascending. An
entry maps the last offset of a batch to the position where that batch starts;
a lookup answers the greatest entry at or below the target, from which a scan of
batch headers finds the batch holding the target.
The index is kept in memory; the file mirrors it (written on append, or on
`flush` when buffered). The log rebuilds it whenever it scans a segment.
"""
from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from fencepost.broker.storage.fileio import pwrite_all

ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")


class OffsetIndex:
    """Entries (absolute offset, position) of one segment, mirrored to `path`."""

    def __init__(self, path: Path, base_offset: int, *, buffered: bool) -> None:
        self.path = path
        self.base_offset = base_offset
        self.buffered = buffered
        self._offsets = array("q")
        self._positions = array("q")
        self._written = 0  # entries in the file
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def __len__(self) -> int:
        return len(self._offsets)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._offsets, self._positions))

    def read_file_entries(self) -> list[tuple[int, int]]:
        """The (absolute offset, position) entries the file holds now (for tests and sanity checks)."""
        size = os.fstat(self._fd).st_size
        data = os.pread(self._fd, size - size % ENTRY_SIZE, 0)
        return [(self.base_offset + rel, pos) for rel, pos in _ENTRY.iter_unpack(data)]

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry at or below `target_offset`; (base, 0) if none."""
        index = bisect.bisect_right(self._offsets, target_offset) - 1
        if index < 0:
            return self.base_offset, 0
        return self._offsets[index], self._positions[index]

    def append(self, offset: int, position: int) -> None:
        if self._offsets and (offset <= self._offsets[-1] or position <= self._positions[-1]):
            raise ValueError(
                f"{self.path}: index entry ({offset}, {position}) is not above the last "
                f"({self._offsets[-1]}, {self._positions[-1]})"
            )
        relative = offset - self.base_offset
        if not 0 <= relative <= 2**31 - 1:
            raise ValueError(f"{self.path}: offset {offset} does not fit a relative int32 from base {self.base_offset}")
        self._offsets.append(offset)
        self._positions.append(position)
        if not self.buffered:
            self._write_pending()

    def truncate_to_position(self, position: int) -> None:
        """Drop the entries pointing at `position` or beyond."""
        keep = bisect.bisect_left(self._positions, position)
        if keep < len(self._positions):
            del self._offsets[keep:], self._positions[keep:]
            if self._written > keep:
                os.ftruncate(self._fd, keep * ENTRY_SIZE)
                self._written = keep

    def reset(self, entries: list[tuple[int, int]]) -> None:
        """Replace the index with `entries` (after a scan) and rewrite the file if it differs."""
        self._offsets = array("q", (offset for offset, _ in entries))
        self._positions = array("q", (position for _, position in entries))
        wanted = b"".join(_ENTRY.pack(offset - self.base_offset, position) for offset, position in entries)
        size = os.fstat(self._fd).st_size
        if size == len(wanted) and os.pread(self._fd, size, 0) == wanted:
            self._written = len(entries)
            return
        os.ftruncate(self._fd, 0)
        self._written = 0
        if not self.buffered:
            self._write_pending()

    def flush(self, fsync: bool) -> None:
        self._write_pending()
        if fsync:
            os.fsync(self._fd)

    def _write_pending(self) -> None:
        count = len(self._offsets)
        if self._written == count:
            return
        data = b"".join(
            _ENTRY.pack(self._offsets[i] - self.base_offset, self._positions[i]) for i in range(self._written, count)
        )
        pwrite_all(self._fd, data, self._written * ENTRY_SIZE)
        self._written = count

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

