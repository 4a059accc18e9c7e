"""Whole-buffer positional file I/O: pread/pwrite that loop until every byte is moved."""
from __future__ import annotations

import os


def pwrite_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    """Write all of `data` at `position` (pwrite(2) may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


def pread_all(fd: int, length: int, position: int) -> bytes:
    """Exactly `length` bytes from `position`; OSError if the file ends first."""
    data = os.pread(fd, length, position)
    if len(data) == length:
        return data
    parts = [data]
    got = len(data)
    while got < length:
        more = os.pread(fd, length - got, position + got)
        if not more:
            raise OSError(f"short read: {got} of {length} bytes at position {position}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)
