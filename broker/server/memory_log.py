"""TEMPORARY in-memory stand-in for broker.storage (PartitionLog, LogManager), same interface.

Used only until broker/storage lands; then this module is deleted. Keeps record
batches in memory, validates magic and CRC-32C, assigns offsets and stamps the
leader epoch in place. No durability, no idempotent de-duplication.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path
from struct import pack_into, unpack_from

import google_crc32c


class OffsetOutOfRange(Exception):
    pass


@dataclass
class AppendResult:
    base_offset: int
    last_offset: int
    duplicate: bool = False
    error: str | None = None


class EpochCache:
    def __init__(self) -> None:
        self._entries: list[tuple[int, int]] = []

    def assign(self, epoch: int, start: int) -> None:
        if self._entries and self._entries[-1][0] == epoch and self._entries[-1][1] <= start:
            return
        self._entries = [(e, s) for e, s in self._entries if e < epoch and s < start]
        self._entries.append((epoch, start))

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1][0] if self._entries else -1

    def end_offset_for(self, epoch: int, leo: int) -> tuple[int, int]:
        if not self._entries:
            return -1, -1
        if epoch == self.latest_epoch:
            return epoch, leo
        larger = [(e, s) for e, s in self._entries if e > epoch]
        if not larger:
            return -1, -1
        smaller = [(e, s) for e, s in self._entries if e <= epoch]
        if not smaller:
            return epoch, larger[0][1]
        return smaller[-1][0], larger[0][1]

    def epoch_entries(self) -> list[tuple[int, int]]:
        return list(self._entries)


class PartitionLog:
    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._bases: list[int] = []
        self._batches: list[bytes] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.epoch_cache = EpochCache()

    @classmethod
    def open(cls, dir: Path, topic: str, partition: int, **_: object) -> PartitionLog:
        return cls(topic, partition)

    @property
    def latest_epoch(self) -> int:
        return self.epoch_cache.latest_epoch

    def append_as_leader(self, records: bytes, leader_epoch: int) -> AppendResult:
        pos = 0
        batches = []
        offset = self.log_end_offset
        while pos < len(records):
            if len(records) - pos < 61:
                return AppendResult(-1, -1, error="CORRUPT_MESSAGE")
            length = unpack_from(">i", records, pos + 8)[0]
            end = pos + 12 + length
            if length < 49 or end > len(records) or records[pos + 16] != 2:
                return AppendResult(-1, -1, error="CORRUPT_MESSAGE")
            crc = unpack_from(">I", records, pos + 17)[0]
            if google_crc32c.value(bytes(records[pos + 21:end])) != crc:
                return AppendResult(-1, -1, error="CORRUPT_MESSAGE")
            batch = bytearray(records[pos:end])
            last_delta = unpack_from(">i", batch, 23)[0]
            pack_into(">qii", batch, 0, offset, length, leader_epoch)
            batches.append((offset, bytes(batch)))
            offset += last_delta + 1
            pos = end
        if not batches:
            return AppendResult(-1, -1, error="CORRUPT_MESSAGE")
        base = self.log_end_offset
        for b, data in batches:
            self._bases.append(b)
            self._batches.append(data)
        self.log_end_offset = offset
        return AppendResult(base, offset - 1)

    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise OffsetOutOfRange(fetch_offset)
        limit = self.log_end_offset if max_offset is None else max_offset
        i = max(bisect.bisect_right(self._bases, fetch_offset) - 1, 0)
        out = []
        size = 0
        while i < len(self._batches) and self._bases[i] < limit:
            data = self._batches[i]
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
            i += 1
        return b"".join(out)

    def offset_for_timestamp(self, ts: int):
        for base, data in zip(self._bases, self._batches):
            if unpack_from(">q", data, 35)[0] >= ts:
                return unpack_from(">q", data, 35)[0], base
        return None

    def truncate_to(self, offset: int) -> None:
        i = bisect.bisect_left(self._bases, offset)
        del self._bases[i:]
        del self._batches[i:]
        self.log_end_offset = min(self.log_end_offset, offset)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def delete(self) -> None:
        self._bases.clear()
        self._batches.clear()


class LogManager:
    def __init__(self, data_dir: Path, flush: str = "os", segment_bytes: int = 1 << 30, **_: object) -> None:
        self.data_dir = Path(data_dir)
        self._logs: dict[tuple[str, int], PartitionLog] = {}

    def get_or_create(self, topic: str, partition: int) -> PartitionLog:
        key = (topic, partition)
        if key not in self._logs:
            self._logs[key] = PartitionLog(topic, partition)
        return self._logs[key]

    def delete(self, topic: str, partition: int) -> None:
        self._logs.pop((topic, partition), None)

    def partitions(self) -> list[tuple[str, int]]:
        return list(self._logs)

    def checkpoint_high_watermarks(self, hws: dict) -> None:
        pass

    def read_high_watermarks(self) -> dict:
        return {}

    def flush_all(self) -> None:
        pass

    def close(self) -> None:
        pass
