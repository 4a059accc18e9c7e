"""The broker's data directory: every partition log in it, the high-watermark checkpoint,
and the clean-shutdown marker.

Owns the layout of a Kafka log dir root (LogManager.scala): one
`<topic>-<partition>/` directory per replica, `replication-offset-checkpoint`
(`<topic> <partition> <hw>` lines), and `.kafka_cleanshutdown`, written on a
clean close and removed once the logs are open again — without it every
segment is CRC-checked on open. A `.lock` file is held (flock) while open so two
brokers cannot share a directory.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from fencepost.broker.common.modes import FLUSH_MODES
from fencepost.broker.storage.checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    fsync_directory,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from fencepost.broker.storage.log import PartitionLog

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class DataDirInUse(RuntimeError):
    """Another process holds the data directory."""


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a `<topic>-<partition>` directory name, or None (e.g. `-delete` dirs)."""
    match = _PARTITION_DIR.match(name)
    if not match:
        return None
    return match.group("topic"), int(match.group("partition"))


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class LogManager:
    """Opens every partition log under `data_dir` (recovering them) and creates new ones."""

    def __init__(
        self,
        data_dir: Path,
        *,
        flush: str = "os",
        segment_bytes: int = 64 << 20,
        index_interval_bytes: int = 4096,
    ) -> None:
        if flush not in FLUSH_MODES:
            raise ValueError(f"flush mode {flush!r} is not one of {', '.join(FLUSH_MODES)}")
        self.data_dir = Path(data_dir)
        self.flush_mode = flush
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = _lock(self.data_dir)
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._closed = False
        marker = self.data_dir / CLEAN_SHUTDOWN_MARKER
        had_clean_shutdown = marker.exists()
        if not had_clean_shutdown and any(self._partition_dirs()):
            log.warning("%s: no clean shutdown marker: checking every segment", self.data_dir)
        for path, (topic, partition) in self._partition_dirs():
            self._logs[(topic, partition)] = self._open(path, topic, partition, had_clean_shutdown)
        if had_clean_shutdown:
            marker.unlink()
            fsync_directory(self.data_dir)

    def _partition_dirs(self):
        for path in sorted(self.data_dir.iterdir()):
            parsed = parse_partition_dir(path.name) if path.is_dir() else None
            if parsed is not None:
                yield path, parsed

    def _open(self, path: Path, topic: str, partition: int, had_clean_shutdown: bool) -> PartitionLog:
        return PartitionLog.open(
            path,
            topic,
            partition,
            flush=self.flush_mode,
            segment_bytes=self.segment_bytes,
            index_interval_bytes=self.index_interval_bytes,
            had_clean_shutdown=had_clean_shutdown,
        )

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int) -> PartitionLog:
        key = (topic, partition)
        found = self._logs.get(key)
        if found is None:
            if not topic or "/" in topic or topic in (".", ".."):
                raise ValueError(f"topic name {topic!r} cannot name a directory")
            found = self._logs[key] = self._open(
                self.data_dir / partition_dir_name(topic, partition), topic, partition, had_clean_shutdown=True
            )
        return found

    def delete(self, topic: str, partition: int) -> None:
        """Remove the partition's log and directory (nothing happens if it has none)."""
        found = self._logs.pop((topic, partition), None)
        if found is not None:
            found.delete()
        else:
            shutil.rmtree(self.data_dir / partition_dir_name(topic, partition), ignore_errors=True)

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self._logs)

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[tuple[str, int], int]) -> None:
        """Replace `replication-offset-checkpoint` with these (topic, partition) -> HW entries."""
        entries = {(str(topic), int(partition)): int(hw) for (topic, partition), hw in high_watermarks.items()}
        write_offset_checkpoint(self.data_dir / REPLICATION_OFFSET_CHECKPOINT, entries)

    def read_high_watermarks(self) -> dict[tuple[str, int], int]:
        return read_offset_checkpoint(self.data_dir / REPLICATION_OFFSET_CHECKPOINT)

    def flush_all(self) -> None:
        for partition_log in self._logs.values():
            partition_log.flush()

    def close(self) -> None:
        """Flush and close every log, then write the clean-shutdown marker."""
        if self._closed:
            return
        for partition_log in self._logs.values():
            partition_log.close()
        marker = self.data_dir / CLEAN_SHUTDOWN_MARKER
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_directory(self.data_dir)
        os.close(self._lock_fd)
        self._closed = True


def _lock(data_dir: Path) -> int:
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(
            f"data directory {data_dir} is in use by another broker process (it holds {data_dir / LOCK_FILE}); "
            f"stop that process or give this broker another --data-dir"
        ) from None
    return fd
