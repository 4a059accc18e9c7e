"""A program that writes to a lazy mount and waits to be killed: files with and without
fsync/fdatasync, a mapped file with and without msync, renames with and without a folder
fsync, a create and an unlink after the last fsync, truncations.

    python tests/support/lazyfs_probe.py ROOT

ROOT must hold (durable) keep.bin (8192 x 'k'), doomed.txt, trunc.bin (8192 x 't'),
trunc-synced.bin (8192 x 's'), mapped.index (8192 zero bytes) and the folder sub/. It prints
"ready" when done, then sleeps with the mapping and a file still open until it is killed.
tests/clusters/test_lazyfs.py::EXPECTED says what a power cut leaves of it under each model.
"""
from __future__ import annotations

import mmap
import os
import sys
import time
from pathlib import Path


def create(path: Path, data: bytes, sync: str | None = None) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, data)
    if sync == "fsync":
        os.fsync(fd)
    elif sync == "fdatasync":
        os.fdatasync(fd)
    os.close(fd)


def main(root: Path) -> None:
    # 1-3: data with fsync, fdatasync, none
    fd = os.open(root / "synced.bin", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"a" * 5000)
    os.fsync(fd)
    os.write(fd, b"b" * 3000)  # after the fsync: lost
    os.close(fd)
    create(root / "datasynced.bin", b"d" * 6000, "fdatasync")
    create(root / "unsynced.bin", b"u" * 7000)
    # 4: an overwrite of durable data, never synced
    fd = os.open(root / "keep.bin", os.O_WRONLY)
    os.pwrite(fd, b"X" * 10, 0)
    os.close(fd)
    # 5: a mapped file: one page synced with msync, one not
    mapped = open(root / "mapped.index", "r+b")
    view = mmap.mmap(mapped.fileno(), 8192)
    view[0:2] = b"M1"
    view.flush()
    view[4096:4098] = b"M2"
    # 6-8: write a temporary file, fsync, rename, fsync the folder; a second rename without it
    create(root / "ckpt2.tmp", b"two", "fsync")
    create(root / "ckpt.tmp", b"one", "fsync")
    os.rename(root / "ckpt.tmp", root / "ckpt")
    folder = os.open(root, os.O_RDONLY)
    os.fsync(folder)  # the only fsync of the root folder
    os.close(folder)
    os.rename(root / "ckpt2.tmp", root / "ckpt2")
    # 9-10: truncations, without and with fsync
    os.truncate(root / "trunc.bin", 100)
    fd = os.open(root / "trunc-synced.bin", os.O_WRONLY)
    os.ftruncate(fd, 100)
    os.fsync(fd)
    os.close(fd)
    # 11: a file in a subfolder, fsynced itself (its folder never is): the last fsync
    create(root / "sub" / "new.txt", b"n", "fsync")
    # 12-13: after the last fsync, an unlink and a create
    os.unlink(root / "doomed.txt")
    create(root / "after.txt", b"after")
    still_open = open(root / "unsynced.bin", "rb")
    print("ready", flush=True)
    while True:
        time.sleep(60)
        view.flush()  # never reached before the kill; keeps the mapping and the file referenced
        still_open.read()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
