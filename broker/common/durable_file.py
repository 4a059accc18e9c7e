"""Small durable files (metadata, counters, checkpoints): replaced atomically, fsynced."""
from __future__ import annotations

import os
from pathlib import Path


def write_file_atomically(path: Path, data: bytes) -> None:
    """Write to `path`.tmp, fsync, rename over `path`, fsync the directory: readers see the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
