"""Writing a file whole or not at all: the one implementation every run file, page and
campaign file is written with."""
from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes | str) -> None:
    """`path` holds `data` whole or its old content, never a part: written beside it, fsynced,
    renamed over it, and the directory fsynced (the rename survives a power cut too). A str is
    written as UTF-8. On an error the partial file is removed and the error raised."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(tmp, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """fsync `directory`, so that the names made or renamed in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def point_latest(link: Path, target: Path) -> None:
    """`link` -> `target` (relative), replacing an older link in one rename."""
    relative = os.path.relpath(target, link.parent)
    tmp = link.with_name(f".{link.name}.{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(relative, target_is_directory=True)
    os.replace(tmp, link)
