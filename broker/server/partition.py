"""One partition replica on this broker: leader epoch, ISR, high watermark, and the reads and appends it allows.

Owns the partition's leadership state (as Kafka's cluster/Partition.scala):
the leader and its epoch, the replica set and the ISR, each replica's log end
offset as last known, and the high watermark = min LEO over the ISR. It checks
a client's current leader epoch (KIP-320: FENCED_LEADER_EPOCH when the client's
is older, UNKNOWN_LEADER_EPOCH when newer) and refuses acks=all appends while
the ISR is smaller than min.insync.replicas. Waiters on new data (long-polling
fetches, acks=all appends) are woken when the log end or the high watermark moves.
On one node the ISR is {self} and the high watermark follows the log end offset.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import ErrorCode, error_code_for_name
from .log_backend import OffsetOutOfRange, PartitionLog
from .record_batches import iter_batch_headers


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    error: ErrorCode
    base_offset: int = -1
    last_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    error: ErrorCode
    records: bytes = b""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset) when the fetcher's log diverged


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    error: ErrorCode
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    error: ErrorCode
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass
class ReplicaState:
    """What the leader knows of one replica (itself or a follower)."""
    node_id: int
    log_end_offset: int = -1


@dataclass
class Partition:
    tp: TopicPartition
    local_node: int
    log: PartitionLog
    leader_id: int = -1
    leader_epoch: int = NO_EPOCH
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    high_watermark: int = 0
    _remote: dict[int, ReplicaState] = field(default_factory=dict)
    _waiters: set[asyncio.Future] = field(default_factory=set)

    # leadership

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_node

    def make_leader(self, leader_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...],
                    high_watermark_checkpoint: int | None = None) -> None:
        """Become leader at `leader_epoch`: the epoch starts at the current log end (before any write in it)."""
        self.leader_id = self.local_node
        self.leader_epoch = leader_epoch
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self._remote = {r: ReplicaState(r) for r in self.replicas if r != self.local_node}
        if leader_epoch > self.log.latest_epoch:
            self.log.epoch_cache.assign(leader_epoch, self.log.log_end_offset)
        if high_watermark_checkpoint is not None:
            self.high_watermark = max(self.log.log_start_offset,
                                      min(high_watermark_checkpoint, self.log.log_end_offset))
        self.maybe_increment_high_watermark()

    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """KIP-320 fencing of a request that names the leader epoch its sender knows (-1: none)."""
        if current_leader_epoch == NO_EPOCH:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    def _leader_check(self, current_leader_epoch: int) -> ErrorCode:
        err = self.check_leader_epoch(current_leader_epoch)
        if err is ErrorCode.NONE and not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return err

    # high watermark

    def maybe_increment_high_watermark(self) -> bool:
        """HW = min LEO over the ISR; it never moves back. Wakes waiters when it moves."""
        leo = self.log.log_end_offset
        new_hw = leo
        for r in self.isr:
            if r != self.local_node:
                state = self._remote.get(r)
                new_hw = min(new_hw, state.log_end_offset if state else -1)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            self._wake()
            return True
        return False

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> None:
        """A follower's fetch at `fetch_offset` says its log ends there: it may move the high watermark."""
        state = self._remote.get(replica_id)
        if state is not None and self.is_leader:
            state.log_end_offset = fetch_offset
            self.maybe_increment_high_watermark()

    # waiters (long-polling fetches, acks=all appends)

    def add_waiter(self, fut: asyncio.Future) -> None:
        self._waiters.add(fut)

    def remove_waiter(self, fut: asyncio.Future) -> None:
        self._waiters.discard(fut)

    def _wake(self) -> None:
        if self._waiters:
            waiters, self._waiters = self._waiters, set()
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    # appends and reads

    def append_records_as_leader(self, records: bytes, required_acks: int, min_insync_replicas: int) -> AppendOutcome:
        if not self.is_leader:
            return AppendOutcome(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            return AppendOutcome(ErrorCode.NOT_ENOUGH_REPLICAS, message=(
                f"ISR {list(self.isr)} of {self.tp} is smaller than min.insync.replicas={min_insync_replicas}"))
        result = self.log.append_as_leader(records, self.leader_epoch)
        if result.error is not None:
            return AppendOutcome(error_code_for_name(result.error), message=result.error_message or result.error,
                                 log_start_offset=self.log.log_start_offset)
        if not result.duplicate and not self.maybe_increment_high_watermark():
            self._wake()  # followers read up to the log end, which moved
        return AppendOutcome(ErrorCode.NONE, result.base_offset, result.last_offset, self.log.log_start_offset)

    def read_records(self, fetch_offset: int, max_bytes: int, current_leader_epoch: int,
                     last_fetched_epoch: int, fetch_only_committed: bool) -> ReadOutcome:
        err = self._leader_check(current_leader_epoch)
        if err is not ErrorCode.NONE:
            return ReadOutcome(err)
        log = self.log
        hw = self.high_watermark
        if last_fetched_epoch >= 0:
            epoch, end = log.epoch_cache.end_offset_for(last_fetched_epoch, log.log_end_offset)
            if end >= 0 and (end < fetch_offset or epoch < last_fetched_epoch):
                return ReadOutcome(ErrorCode.NONE, b"", hw, hw, log.log_start_offset, (epoch, end))
        max_offset = hw if fetch_only_committed else None
        try:
            records = log.read(fetch_offset, max_bytes, max_offset) if max_bytes > 0 else b""
        except OffsetOutOfRange:
            return ReadOutcome(ErrorCode.OFFSET_OUT_OF_RANGE, b"", hw, hw, log.log_start_offset)
        return ReadOutcome(ErrorCode.NONE, records, hw, hw, log.log_start_offset)

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> EpochEndOffset:
        err = self._leader_check(current_leader_epoch)
        if err is not ErrorCode.NONE:
            return EpochEndOffset(err)
        epoch, end = self.log.epoch_cache.end_offset_for(leader_epoch, self.log.log_end_offset)
        return EpochEndOffset(ErrorCode.NONE, epoch, end)

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds `offset` (-1 when the cache knows none)."""
        return self.log.epoch_cache.epoch_for_offset(offset)

    def fetch_offset_for_timestamp(self, timestamp: int, current_leader_epoch: int,
                                   fetch_only_committed: bool) -> TimestampOffset:
        """ListOffsets: -2 earliest, -1 latest (HW for clients), -3 max timestamp, else the first offset at or after it."""
        err = self._leader_check(current_leader_epoch)
        if err is not ErrorCode.NONE:
            return TimestampOffset(err)
        log = self.log
        limit = self.high_watermark if fetch_only_committed else log.log_end_offset
        if timestamp == -2:
            start = log.log_start_offset
            return TimestampOffset(ErrorCode.NONE, -1, start, self.epoch_for_offset(start))
        if timestamp == -1:
            return TimestampOffset(ErrorCode.NONE, -1, limit, log.latest_epoch)
        if timestamp == -3:
            return self._max_timestamp(limit)
        if timestamp < 0:
            return TimestampOffset(ErrorCode.INVALID_REQUEST)
        found = log.offset_for_timestamp(timestamp)
        if found is None:
            return TimestampOffset(ErrorCode.NONE, -1, -1, -1)
        if found.offset >= limit:
            return TimestampOffset(ErrorCode.NONE, -1, -1, -1)
        return TimestampOffset(ErrorCode.NONE, found.timestamp, found.offset, self.epoch_for_offset(found.offset))

    def _max_timestamp(self, limit: int) -> TimestampOffset:
        best_ts, best_offset = -1, -1
        offset = self.log.log_start_offset
        while offset < limit:
            chunk = self.log.read(offset, 1 << 20, limit)
            if not chunk:
                break
            last = offset - 1
            for header in iter_batch_headers(chunk):
                if header.max_timestamp > best_ts:
                    best_ts, best_offset = header.max_timestamp, header.last_offset
                last = header.last_offset
            if last < offset:
                break
            offset = last + 1
        if best_offset < 0:
            return TimestampOffset(ErrorCode.NONE, -1, -1, -1)
        return TimestampOffset(ErrorCode.NONE, best_ts, best_offset, self.epoch_for_offset(best_offset))
