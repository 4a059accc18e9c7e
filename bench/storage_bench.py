"""Benchmark of the broker's storage layer: appends per flush mode, fetch reads, recovery, dump-log.

Run: python bench/storage_bench.py [--mib 32]
Prints figures side by side; asserts nothing (speed is measured here, not tested).
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fencepost.broker.dumplog import dump  # noqa: E402
from fencepost.broker.storage.batch import RecordBatch  # noqa: E402
from fencepost.broker.storage.log import PartitionLog  # noqa: E402
from fencepost.broker.storage.manager import LogManager  # noqa: E402
from tests.support.broker_storage_builder import batch  # noqa: E402

RECORDS_PER_BATCH = 10
VALUE = "v" * 90


def make_batches(count: int, codec: str = "none") -> list[bytes]:
    return [batch([f"{i}-{j}-{VALUE}" for j in range(RECORDS_PER_BATCH)], codec=codec) for i in range(count)]


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def bench_appends(root: Path, batches: list[bytes]) -> None:
    size = sum(len(b) for b in batches)
    print(f"leader appends: {len(batches)} batches of {len(batches[0])} bytes ({size / 2**20:.1f} MiB)")
    for mode in ("os", "lazy", "fsync"):
        count = len(batches) if mode != "fsync" else min(len(batches), 2000)
        log = PartitionLog.open(root / f"append-{mode}" / "fp-0", "fp", 0, flush=mode, segment_bytes=8 << 20)
        log.epoch_cache.assign(0, 0)
        seconds = timed(lambda: [log.append_as_leader(b, 0) for b in batches[:count]])
        flush = timed(log.flush)
        log.close()
        mib = sum(len(b) for b in batches[:count]) / 2**20
        print(f"  {mode:5s}: {count / seconds:9.0f} batches/s  {mib / seconds:7.1f} MiB/s  "
              f"(flush {flush * 1e3:.0f} ms)")


def bench_reads(root: Path) -> None:
    log = PartitionLog.open(root / "append-os" / "fp-0", "fp", 0, segment_bytes=8 << 20)
    total = 0

    def scan(max_bytes: int) -> None:
        nonlocal total
        offset = 0
        while offset < log.log_end_offset:
            data = log.read(offset, max_bytes)
            total += len(data)
            offset = _next_offset(data)

    for max_bytes in (1 << 20, 64 << 10):
        total = 0
        seconds = timed(lambda: scan(max_bytes))
        print(f"fetch reads, max_bytes {max_bytes >> 10} KiB: {total / 2**20 / seconds:7.1f} MiB/s")
    log.close()


def _next_offset(data: bytes) -> int:
    position = 0
    last = 0
    view = memoryview(data)
    while position < len(view):
        header = RecordBatch(view[position : position + 61])
        last = header.next_offset
        position += header.size_in_bytes
    return last


def bench_recovery(root: Path) -> None:
    directory = root / "append-os"
    for clean in (True, False):
        seconds = timed(lambda: PartitionLog.open(directory / "fp-0", "fp", 0, segment_bytes=8 << 20,
                                                  had_clean_shutdown=clean).close())
        size = sum(p.stat().st_size for p in (directory / "fp-0").glob("*.log"))
        print(f"open with {'clean' if clean else 'unclean'} shutdown (CRC of {'last segment' if clean else 'all'}): "
              f"{seconds * 1e3:6.0f} ms for {size / 2**20:.1f} MiB")


def bench_dump(root: Path, codec: str, count: int) -> None:
    directory = root / f"dump-{codec}"
    manager = LogManager(directory)
    log = manager.get_or_create("fp", 0)
    for b in make_batches(count, codec):
        log.append_as_leader(b, 0)
    manager.close()
    sink = io.BytesIO()
    seconds = timed(lambda: dump([directory], "n1", include_internal=False, out=sink, err=sys.stderr))
    records = count * RECORDS_PER_BATCH
    print(f"dump-log {codec:6s}: {records / seconds:9.0f} records/s ({sink.tell() / 2**20:.1f} MiB of JSON lines)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=32, help="data appended per flush mode")
    parser.add_argument("--smoke", action="store_true",
                        help="a second: 1 MiB per flush mode and 50 batches per dump, the same storage calls; "
                             "covers every line printed, not the figures' worth")
    args = parser.parse_args()
    dump_batches = 2000
    if args.smoke:
        args.mib, dump_batches = 1, 50
    batches = make_batches(max(1, args.mib * 2**20 // len(make_batches(1)[0])))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bench_appends(root, batches)
        bench_reads(root)
        bench_recovery(root)
        for codec in ("none", "zstd"):
            bench_dump(root, codec, dump_batches)


if __name__ == "__main__":
    main()
