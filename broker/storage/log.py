"""The log of one partition replica: segments, offsets, appends, reads, truncation, recovery.

Owns what Kafka's UnifiedLog + LogSegments own for one `<topic>-<partition>`
directory: the ordered segments (rolled by size), the log end offset, offset
assignment and leader-epoch stamping of leader appends, contiguity of follower
appends, fetch reads, truncation, the leader epoch cache
(`leader-epoch-checkpoint`) and the idempotent producer state — and recovery on
open: the last segment (every segment after an unclean shutdown) is scanned with
CRCs checked and cut at the first torn or corrupt batch, later segments dropped,
the index rebuilt, the epoch cache cut to the log end, and the producer state
replayed from the batch headers.

Flush modes: `os` (pwrite(2) per append, nothing held in the process), `fsync`
(plus fdatasync per append), `lazy` (appends held in process memory, readable,
written by `flush()` only: a kill -9 loses the unflushed tail, as a power cut).
Not thread-safe: one owner (the broker's event loop) calls it.
"""
from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from fencepost.broker.common.modes import FLUSH_MODES
from fencepost.broker.storage.batch import (
    MAGIC_V2,
    CorruptBatch,
    RecordBatch,
    iter_batches,
)
from fencepost.broker.storage.checkpoints import LEADER_EPOCH_CHECKPOINT
from fencepost.broker.storage.epoch_cache import LeaderEpochFileCache
from fencepost.broker.storage.producer_state import BatchMetadata, ProducerStateError, ProducerStateManager
from fencepost.broker.storage.segment import INDEX_SUFFIX, LOG_SUFFIX, LogSegment, parse_segment_name, segment_file_name

log = logging.getLogger(__name__)

CORRUPT_MESSAGE = "CORRUPT_MESSAGE"
INVALID_RECORD = "INVALID_RECORD"
_MAX_SEGMENT_BYTES = 2**31 - 1  # index positions are int32
_MAX_RELATIVE_OFFSET = 2**31 - 1


class OffsetOutOfRange(Exception):
    """A read below the log start or beyond the log end offset."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is outside the log [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class InvalidFollowerAppend(ValueError):
    """Records from a leader that cannot be appended (corrupt, or not contiguous from the log end)."""


@dataclass(frozen=True)
class AppendResult:
    """Outcome of a leader append: offsets given, or the offsets of the batch it duplicates, or an error.

    `error` is Kafka's error name (CORRUPT_MESSAGE, INVALID_RECORD,
    OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID);
    `error_message` says what was wrong, for logs and the response's error message.
    """

    base_offset: int
    last_offset: int
    duplicate: bool = False
    error: str | None = None
    error_message: str | None = None


class TimestampOffset(NamedTuple):
    offset: int
    timestamp: int


def _rejected(error: str, message: str) -> AppendResult:
    return AppendResult(-1, -1, False, error, message)


class PartitionLog:
    """One partition's log in `<data-dir>/<topic>-<partition>/`. Create with `PartitionLog.open`."""

    def __init__(
        self, directory: Path, topic: str, partition: int, flush: str, segment_bytes: int, index_interval_bytes: int
    ) -> None:
        if flush not in FLUSH_MODES:
            raise ValueError(f"flush mode {flush!r} is not one of {', '.join(FLUSH_MODES)}")
        if not 0 < segment_bytes <= _MAX_SEGMENT_BYTES:
            raise ValueError(f"segment_bytes {segment_bytes} must be in 1..{_MAX_SEGMENT_BYTES}")
        if index_interval_bytes < 0:
            raise ValueError(f"index_interval_bytes {index_interval_bytes} must be >= 0")
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.flush_mode = flush
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.segments: list[LogSegment] = []
        self.epoch_cache = LeaderEpochFileCache(directory / LEADER_EPOCH_CHECKPOINT)
        self.producer_state = ProducerStateManager()
        self._closed = False

    # -- opening and recovery -----------------------------------------------
    @classmethod
    def open(
        cls,
        dir: Path,
        topic: str,
        partition: int,
        *,
        flush: str = "os",
        segment_bytes: int = 64 << 20,
        index_interval_bytes: int = 4096,
        had_clean_shutdown: bool = False,
    ) -> PartitionLog:
        """Open (creating if needed) the log in `dir` and recover it.

        With `had_clean_shutdown` only the last segment is CRC-checked; otherwise all are.
        """
        directory = Path(dir)
        directory.mkdir(parents=True, exist_ok=True)
        self = cls(directory, topic, partition, flush, segment_bytes, index_interval_bytes)
        self._load(had_clean_shutdown)
        return self

    def _load(self, had_clean_shutdown: bool) -> None:
        self.epoch_cache = LeaderEpochFileCache.load(self.dir / LEADER_EPOCH_CHECKPOINT)
        bases = sorted(b for b in (parse_segment_name(p.name) for p in self.dir.iterdir()) if b is not None)
        self._remove_orphan_indexes(set(bases))
        batch_epochs: list[tuple[int, int]] = []

        def visit(batch: RecordBatch) -> None:
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (not batch_epochs or batch_epochs[-1][0] != epoch):
                batch_epochs.append((epoch, batch.base_offset))
            self._replay_producer(batch)

        expected = bases[0] if bases else 0
        for number, base in enumerate(bases):
            if base != expected:
                self._delete_segment_files(bases[number:], f"it starts at {base}, not where the log ends ({expected})")
                break
            segment = self._new_segment(base)
            is_last = number == len(bases) - 1
            result = segment.load(base, verify_crc=is_last or not had_clean_shutdown, on_batch=visit)
            self.segments.append(segment)
            expected = segment.next_offset
            if result.truncated_bytes:
                log.warning(
                    "%s-%d: recovery cut %d bytes off %s at byte %d (offset %s on): %s",
                    self.topic, self.partition, result.truncated_bytes, segment.log_path, result.valid_bytes,
                    result.problem_offset, result.problem,
                )
                self._delete_segment_files(bases[number + 1 :], "it follows a segment cut by recovery")
                break
        if not self.segments:
            self.segments.append(self._new_segment(expected))
        self.epoch_cache.reconcile(batch_epochs, self.log_end_offset)

    def _replay_producer(self, batch: RecordBatch) -> None:
        if batch.has_producer_id and not batch.is_control:
            self.producer_state.replay(
                batch.producer_id,
                batch.producer_epoch,
                BatchMetadata(batch.base_sequence, batch.last_sequence, batch.base_offset, batch.last_offset),
            )

    def _delete_segment_files(self, bases: list[int], reason: str) -> None:
        for base in bases:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX):
                path = self.dir / segment_file_name(base, suffix)
                if path.exists():
                    log.warning(
                        "%s-%d: recovery deleted %s (%d bytes): %s",
                        self.topic, self.partition, path.name, path.stat().st_size, reason,
                    )
                    path.unlink()

    def _remove_orphan_indexes(self, bases: set[int]) -> None:
        for path in self.dir.glob("*.index"):
            stem = path.name[: -len(".index")]
            if len(stem) == 20 and stem.isdigit() and int(stem) not in bases:
                path.unlink()

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment(
            self.dir, base_offset, index_interval_bytes=self.index_interval_bytes, buffered=self.flush_mode == "lazy"
        )

    # -- offsets ------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self.segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self.segments[-1].next_offset

    @property
    def latest_epoch(self) -> int:
        """The latest leader epoch in the epoch cache, or -1 if none."""
        return self.epoch_cache.latest_epoch

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- appends ------------------------------------------------------------
    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> AppendResult:
        """Validate the batches of a produce request, give them offsets from the log end and stamp
        `leader_epoch`, then append them; or refuse them all (see AppendResult)."""
        self._check_open()
        if leader_epoch < self.epoch_cache.latest_epoch:
            raise ValueError(
                f"{self.topic}-{self.partition}: leader append at epoch {leader_epoch} below the cached epoch "
                f"{self.epoch_cache.latest_epoch}: a stale leader must not write"
            )
        data = bytearray(records)
        batches, problem = _split(data)
        if problem:
            return _rejected(*problem)
        next_offset = self.log_end_offset
        producers = self.producer_state.begin()
        placed: list[tuple[int, int, int]] = []  # (position in data, last offset, size) per batch
        firsts: list[int] = []
        position = 0
        for number, batch in enumerate(batches):
            problem = _client_batch_problem(batch, number)
            if problem:
                return _rejected(*problem)
            first, last = next_offset, next_offset + batch.last_offset_delta
            if batch.has_producer_id:
                duplicate = producers.find_duplicate(
                    batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence
                )
                if duplicate is not None:
                    return AppendResult(duplicate.first_offset, duplicate.last_offset, True)
                try:
                    producers.check_and_add(
                        batch.producer_id,
                        batch.producer_epoch,
                        BatchMetadata(batch.base_sequence, batch.last_sequence, first, last),
                    )
                except ProducerStateError as exc:
                    return _rejected(exc.error, f"{self.topic}-{self.partition}: {exc}")
            placed.append((position, last, batch.size_in_bytes))
            firsts.append(first)
            position += batch.size_in_bytes
            next_offset = last + 1
        for batch, first in zip(batches, firsts):
            batch.set_base_offset(first)
            batch.set_partition_leader_epoch(leader_epoch)
        self.epoch_cache.assign(leader_epoch, firsts[0])
        self._append(data, placed)
        producers.commit()
        return AppendResult(firsts[0], next_offset - 1)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> int:
        """Append batches a leader already gave offsets and epochs; returns the new log end offset.

        The first batch must start at the log end and each next one right after the
        previous; a partial trailing batch is ignored. Raises InvalidFollowerAppend.
        """
        self._check_open()
        data = bytes(records)
        try:
            batches = list(iter_batches(data))
        except CorruptBatch as exc:
            raise InvalidFollowerAppend(f"{self.topic}-{self.partition}: {exc}") from None
        if not batches:
            return self.log_end_offset
        expected = self.log_end_offset
        placed = []
        position = 0
        for batch in batches:
            # (a RecordBatch is exactly a batch of magic 2: iter_batches makes them so)
            if batch.magic != MAGIC_V2 or not isinstance(batch, RecordBatch):
                raise InvalidFollowerAppend(f"{self.topic}-{self.partition}: message format v{batch.magic} batch")
            if batch.base_offset != expected:
                raise InvalidFollowerAppend(
                    f"{self.topic}-{self.partition}: batch at offset {batch.base_offset} where {expected} "
                    f"(the log end, or the end of the previous batch) was expected"
                )
            if batch.last_offset_delta < 0 or not batch.is_valid():
                raise InvalidFollowerAppend(
                    f"{self.topic}-{self.partition}: corrupt batch at offset {batch.base_offset} (CRC or offset delta)"
                )
            placed.append((position, batch.last_offset, batch.size_in_bytes))
            position += batch.size_in_bytes
            expected = batch.last_offset + 1
        for batch in batches:
            if batch.partition_leader_epoch >= 0:
                self.epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)
            self._replay_producer(batch)  # type: ignore[arg-type]
        self._append(data[:position], placed)
        return self.log_end_offset

    def _append(self, data: bytes | bytearray, placed: list[tuple[int, int, int]]) -> None:
        segment = self.segments[-1]
        last_offset = placed[-1][1]
        if not segment.is_empty and (
            segment.size + len(data) > self.segment_bytes
            or last_offset - segment.base_offset > _MAX_RELATIVE_OFFSET
        ):
            segment = self._roll()
        segment.append(data, placed, fsync=self.flush_mode == "fsync")

    def _roll(self) -> LogSegment:
        segment = self._new_segment(self.log_end_offset)
        segment.next_offset = self.log_end_offset
        self.segments.append(segment)
        return segment

    # -- reads --------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Whole batches from the one holding `fetch_offset`: the first always whole, the rest
        within `max_bytes` in total, none starting at or beyond `max_offset`; all from one segment."""
        self._check_open()
        start, end = self.log_start_offset, self.log_end_offset
        if fetch_offset < start or fetch_offset > end:
            raise OffsetOutOfRange(fetch_offset, start, end)
        if fetch_offset == end or (max_offset is not None and fetch_offset >= max_offset):
            return b""
        for segment in self.segments[self._segment_index(fetch_offset) :]:
            found = segment.find_batch(fetch_offset)
            if found is not None:
                position, header = found
                return segment.read_batches(position, header.size_in_bytes, max_bytes, max_offset)
        return b""

    def _segment_index(self, offset: int) -> int:
        low, high = 0, len(self.segments) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.segments[middle].base_offset <= offset:
                low = middle
            else:
                high = middle - 1
        return low

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """(offset, timestamp) of the first record with a timestamp at or after `timestamp`, or None.
        (-1 latest and -2 earliest are the caller's; the whole log is searched, HW limits too.)"""
        self._check_open()
        for segment in self.segments:
            for position, header in segment.iter_headers():
                if header.max_timestamp < timestamp:
                    continue
                batch = RecordBatch(segment.read(position, header.size_in_bytes))
                for record in batch.records():
                    if record.timestamp >= timestamp:
                        return TimestampOffset(record.offset, record.timestamp)
        return None

    # -- truncation, flushing, lifecycle ------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Drop every record at or beyond `offset` (a batch holding `offset` goes whole), with the
        epoch cache entries from the new log end, and rebuild the producer state."""
        self._check_open()
        if offset >= self.log_end_offset:
            # An entry at the log end holds no record: a leader that lost its leadership before
            # appending. Kept, a follower would name that epoch to its leader again and again
            # (Kafka's UnifiedLog.truncateTo drops it too).
            self.epoch_cache.truncate_from_end(self.log_end_offset)
            return
        if offset <= self.log_start_offset:
            self.truncate_fully_and_start_at(offset if offset < self.log_start_offset else self.log_start_offset)
            return
        keep = self._segment_index(offset)
        for segment in self.segments[keep + 1 :]:
            segment.delete()
        del self.segments[keep + 1 :]
        self.segments[-1].truncate_to(offset)
        log.info("%s-%d: truncated to offset %d (log end now %d)", self.topic, self.partition, offset,
                 self.log_end_offset)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self._rebuild_producer_state()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start an empty log at `offset`."""
        self._check_open()
        for segment in self.segments:
            segment.delete()
        self.segments = [self._new_segment(offset)]
        self.epoch_cache.clear()
        self.producer_state.clear()
        log.info("%s-%d: truncated fully, log now starts at %d", self.topic, self.partition, offset)

    def _rebuild_producer_state(self) -> None:
        self.producer_state.clear()
        for segment in self.segments:
            for _, header in segment.iter_headers(chunk_bytes=1 << 20):
                self._replay_producer(header)

    def flush(self) -> None:
        """Write what `lazy` mode holds in memory, then fsync everything written since the last flush."""
        self._check_open()
        for segment in self.segments:
            segment.flush(fsync=True)

    @property
    def unflushed_bytes(self) -> int:
        return sum(s.unflushed_bytes for s in self.segments)

    def close(self) -> None:
        """Flush and release the files (a clean shutdown of this log)."""
        if self._closed:
            return
        self.flush()
        for segment in self.segments:
            segment.close()
        self._closed = True

    def delete(self) -> None:
        """Close without flushing and remove the partition directory."""
        for segment in self.segments:
            segment.close()
        self._closed = True
        shutil.rmtree(self.dir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.topic}-{self.partition}: the log is closed")

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, offsets {self.log_start_offset}..{self.log_end_offset}, "
            f"{len(self.segments)} segment(s), flush={self.flush_mode})"
        )


def _split(data: bytearray) -> tuple[list[RecordBatch], tuple[str, str] | None]:
    """The batches of a produce request, or (error, message) if the bytes are not whole batches."""
    batches: list[RecordBatch] = []
    consumed = 0
    try:
        for batch in iter_batches(data):
            if batch.magic != MAGIC_V2:
                return [], (INVALID_RECORD,
                            f"batch {len(batches)}: message format v{batch.magic}; produce needs v2 batches")
            batches.append(batch)  # type: ignore[arg-type]
            consumed += batch.size_in_bytes
    except CorruptBatch as exc:
        return [], (CORRUPT_MESSAGE, f"batch {len(batches)}: {exc}")
    if not batches and not data:
        return [], (INVALID_RECORD, "no record batch in the request")
    if consumed != len(data):
        return [], (CORRUPT_MESSAGE, f"{len(data) - consumed} bytes after the last whole batch (a truncated batch)")
    return batches, None


def _client_batch_problem(batch: RecordBatch, number: int) -> tuple[str, str] | None:
    where = f"batch {number}"
    if not batch.is_valid():
        return (CORRUPT_MESSAGE,
                f"{where}: CRC mismatch (stored {batch.crc:#010x}, computed {batch.compute_crc():#010x})")
    if batch.last_offset_delta < 0:
        return INVALID_RECORD, f"{where}: negative last offset delta {batch.last_offset_delta}"
    if batch.record_count <= 0:
        return INVALID_RECORD, f"{where}: record count {batch.record_count} (must be at least 1)"
    if batch.record_count != batch.last_offset_delta + 1:
        return INVALID_RECORD, (
            f"{where}: record count {batch.record_count} disagrees with last offset delta {batch.last_offset_delta}"
        )
    if batch.is_control:
        return INVALID_RECORD, f"{where}: clients may not write control batches"
    if batch.has_producer_id and batch.base_sequence < 0:
        return INVALID_RECORD, f"{where}: producer id {batch.producer_id} with sequence {batch.base_sequence}"
    return None
