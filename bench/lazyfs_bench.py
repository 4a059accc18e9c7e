"""Benchmark of the lazy filesystem: sequential 4 KiB appends with an fsync every N appends (a
log's write pattern), on the plain disk, through the daemon as a plain passthrough (FUSE's cost
alone: every write goes to the backing file at once) and through the lazy filesystem (writes
held in its cache, written out and fsynced at each fsync), side by side in one run.

Run (as root, FUSE available): python bench/lazyfs_bench.py [--mib 128] [--fsync-every 256] [--rounds 3]
Prints MiB/s and appends/s per target (the median round) and the ratios; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clusters.lazyfs import LazyMount, LazyOptions, cleanup  # noqa: E402

CLUSTER = "bench-lazyfs"
BLOCK = 4096


def appends(folder: Path, name: str, total: int, fsync_every: int) -> float:
    """Seconds to append `total` bytes in 4 KiB writes, fsyncing every `fsync_every` writes and at the end."""
    block = os.urandom(BLOCK)
    path = folder / name
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    try:
        for i in range(1, total // BLOCK + 1):
            os.write(fd, block)
            if fsync_every and i % fsync_every == 0:
                os.fsync(fd)
        os.fsync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)


def measure(folder: Path, total: int, fsync_every: int, rounds: int) -> float:
    return statistics.median(appends(folder, f"round{r}.log", total, fsync_every) for r in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=128, help="bytes appended per round, in MiB")
    parser.add_argument("--fsync-every", type=int, default=256, help="appends between fsyncs (256: 1 MiB)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    total = args.mib << 20
    root = Path(tempfile.mkdtemp(prefix="lazyfs-bench-"))
    (root / "disk").mkdir()
    print(f"sequential 4 KiB appends, {args.mib} MiB per round, fsync every {args.fsync_every} appends "
          f"({args.fsync_every * BLOCK // 1024} KiB), median of {args.rounds} rounds; under {root}")
    seconds = {"disk": measure(root / "disk", total, args.fsync_every, args.rounds)}
    try:
        for name, options in (("passthrough", LazyOptions(passthrough=True)), ("lazy", LazyOptions())):
            with LazyMount.mount(root / f"{name}-mnt", root / f"{name}-backing", CLUSTER, options) as mount:
                seconds[name] = measure(mount.mountpoint, total, args.fsync_every, args.rounds)
    finally:
        cleanup([CLUSTER])
    for name, s in seconds.items():
        print(f"  {name:12s} {args.mib / s:8.1f} MiB/s {total // BLOCK / s:10.0f} appends/s")
    disk, passthrough, lazy = (args.mib / seconds[k] for k in ("disk", "passthrough", "lazy"))
    print(f"  passthrough / disk {passthrough / disk:.2f}   lazy / disk {lazy / disk:.2f}   "
          f"lazy / passthrough {lazy / passthrough:.2f}")


if __name__ == "__main__":
    main()
