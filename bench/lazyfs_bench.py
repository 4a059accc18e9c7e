"""Benchmark of the lazy filesystem: sequential 4 KiB appends with an fsync every N appends (a
log's write pattern), on the plain disk, through the daemon as a plain passthrough (FUSE's cost
alone: every write goes to the backing file at once) and through the lazy filesystem (writes
held in its cache, written out and fsynced at each fsync), side by side in one run.

Run (as root, FUSE available): python bench/lazyfs_bench.py [--mib 128] [--fsync-every 256] [--rounds 5]
The three targets take turns, round by round; prints MiB/s and appends/s per target (medians,
and the rounds' spread) and the ratios; asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fencepost.clusters.lazyfs import LazyMount, LazyOptions, cleanup  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=128, help="bytes appended per round, in MiB")
    parser.add_argument("--fsync-every", type=int, default=256, help="appends between fsyncs (256: 1 MiB)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true",
                        help="a few seconds: one round of 2 MiB per target, the same mounts (root, FUSE); covers "
                             "every target and line printed, not the figures' worth")
    args = parser.parse_args()
    if args.smoke:
        args.mib, args.rounds = 2, 1
    total = args.mib << 20
    root = Path(tempfile.mkdtemp(prefix="lazyfs-bench-"))
    print(f"sequential 4 KiB appends, {args.mib} MiB per round, fsync every {args.fsync_every} appends "
          f"({args.fsync_every * BLOCK // 1024} KiB); the targets in turn, {args.rounds} rounds, medians")
    seconds: dict[str, list[float]] = {"disk": [], "passthrough": [], "lazy": []}
    mounts = []
    try:
        (root / "disk").mkdir()
        folders = {"disk": root / "disk"}
        for name, options in (("passthrough", LazyOptions(passthrough=True)), ("lazy", LazyOptions())):
            mounts.append(LazyMount.mount(root / f"{name}-mnt", root / f"{name}-backing", CLUSTER, options))
            folders[name] = mounts[-1].mountpoint
        for r in range(args.rounds):  # in turn, so the machine's ups and downs fall on all three alike
            for name, folder in folders.items():
                seconds[name].append(appends(folder, f"round{r}.log", total, args.fsync_every))
    finally:
        for mount in mounts:
            mount.unmount()
        cleanup([CLUSTER])
        shutil.rmtree(root, ignore_errors=True)
    rate = {name: args.mib / statistics.median(s) for name, s in seconds.items()}
    for name, s in seconds.items():
        spread = f"{args.mib / max(s):.0f}-{args.mib / min(s):.0f}"
        print(f"  {name:12s} {rate[name]:8.1f} MiB/s {rate[name] * 256:10.0f} appends/s   (rounds {spread} MiB/s)")
    print(f"  passthrough / disk {rate['passthrough'] / rate['disk']:.2f}"
          f"   lazy / disk {rate['lazy'] / rate['disk']:.2f}"
          f"   lazy / passthrough {rate['lazy'] / rate['passthrough']:.2f}")


if __name__ == "__main__":
    main()
