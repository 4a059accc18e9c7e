"""One partition replica on this broker: leadership, ISR, high watermark, and the reads and appends it allows.

Owns the partition's replication state (as Kafka's cluster/Partition.scala):
the leader and its epoch, the partition epoch of the controller's last word,
the replica set and the ISR (plus an ISR change in flight), each follower's log
end offset and when it was last caught up, and the high watermark = min LEO
over the (maximal) ISR, held still while the ISR is below min.insync.replicas.
As leader it checks a client's current leader epoch (KIP-320:
FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer), refuses
acks=all appends while the ISR is smaller than min.insync.replicas and says
which followers should join or leave the ISR; the ISR changes only when the
controller accepts (the replica manager asks it). As follower it holds the
high watermark its leader reported. Waiters (long-polling fetches, acks=all
appends) are woken when the log end, the high watermark or the leadership moves.
"""
from __future__ import annotations

import asyncio
import time
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
    leader_epoch: int = -1  # the epoch the batch was written in (acks=all waits only while it lasts)


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
    """What the leader knows of one follower (times in ms of the event loop's monotonic clock)."""
    node_id: int
    log_end_offset: int = -1
    last_caught_up_ms: float = 0.0
    last_fetch_leader_end_offset: int = -1
    last_fetch_ms: float = 0.0


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


@dataclass
class Partition:
    tp: TopicPartition
    local_node: int
    log: PartitionLog
    leader_id: int = -1
    leader_epoch: int = NO_EPOCH
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    pending_isr: tuple[int, ...] | None = None  # an ISR change sent to the controller, not yet answered
    high_watermark: int = 0
    min_insync_replicas: int = 1
    leader_epoch_start_offset: int = 0
    _remote: dict[int, ReplicaState] = field(default_factory=dict)
    _waiters: set[asyncio.Future] = field(default_factory=set)

    # leadership

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_node

    def initialize_high_watermark(self, checkpoint: int | None) -> None:
        """The HW a replica starts with: its checkpoint, within the log (Kafka: the log start when none)."""
        start, end = self.log.log_start_offset, self.log.log_end_offset
        self.high_watermark = max(start, min(checkpoint if checkpoint is not None else start, end))

    def make_leader(self, leader_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...],
                    partition_epoch: int = 0, now_ms: float | None = None) -> None:
        """Become leader at `leader_epoch`: the epoch starts at the current log end (before any write in it)."""
        now_ms = _monotonic_ms() if now_ms is None else now_ms
        new_term = not self.is_leader or leader_epoch != self.leader_epoch
        self.leader_id = self.local_node
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self.pending_isr = None
        if new_term:
            # Followers in the ISR count as caught up now; the others must prove it (Kafka's makeLeader).
            self._remote = {r: ReplicaState(r, last_caught_up_ms=now_ms if r in self.isr else 0.0)
                            for r in self.replicas if r != self.local_node}
            if leader_epoch > self.log.latest_epoch:
                self.log.epoch_cache.assign(leader_epoch, self.log.log_end_offset)
            self.leader_epoch_start_offset = self.log.log_end_offset
        else:
            self._remote = {r: self._remote.get(r) or ReplicaState(r) for r in self.replicas if r != self.local_node}
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        self.maybe_increment_high_watermark()
        self._wake()

    def make_follower(self, leader_id: int, leader_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...],
                      partition_epoch: int) -> bool:
        """Follow `leader_id` (-1: no leader) in `leader_epoch`; True when that is a change of leader or epoch."""
        changed = self.leader_id != leader_id or self.leader_epoch != leader_epoch
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self.pending_isr = None
        self._remote = {}
        self._wake()  # acks=all waiters and long polls learn they lost the leadership
        return changed

    def update_isr(self, isr: tuple[int, ...], partition_epoch: int) -> None:
        """The controller's word on the ISR of this leader's partition (an answer or a newer snapshot)."""
        if partition_epoch < self.partition_epoch:
            return
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        now = _monotonic_ms()
        for r in self.isr:
            state = self._remote.get(r)
            if state is not None and state.last_caught_up_ms == 0.0:
                state.last_caught_up_ms = now
        if not self.maybe_increment_high_watermark():
            self._wake()

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

    # high watermark and ISR (leader)

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR counting an expansion in flight (Kafka's maximal ISR, for the HW)."""
        if self.pending_isr is None:
            return self.isr
        return tuple(dict.fromkeys((*self.isr, *self.pending_isr)))

    def maybe_increment_high_watermark(self) -> bool:
        """HW = min LEO over the maximal ISR; never backwards, held while the ISR is below min.insync.replicas.
        Wakes waiters when it moves."""
        if not self.is_leader or len(self.isr) < self.min_insync_replicas:
            return False
        new_hw = self.log.log_end_offset
        for r in self.maximal_isr:
            if r != self.local_node:
                state = self._remote.get(r)
                new_hw = min(new_hw, state.log_end_offset if state else -1)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            self._wake()
            return True
        return False

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, now_ms: float | None = None) -> None:
        """A follower's fetch at `fetch_offset` says its log ends there: it may be caught up, and move the HW."""
        state = self._remote.get(replica_id)
        if state is None or not self.is_leader:
            return
        now_ms = _monotonic_ms() if now_ms is None else now_ms
        leader_end = self.log.log_end_offset
        if fetch_offset >= leader_end:
            state.last_caught_up_ms = now_ms
        elif fetch_offset >= state.last_fetch_leader_end_offset >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.last_fetch_leader_end_offset = leader_end
        state.last_fetch_ms = now_ms
        state.log_end_offset = fetch_offset
        self.maybe_increment_high_watermark()

    def isr_expansion(self, replica_id: int, require_epoch_start: bool) -> tuple[int, ...] | None:
        """The ISR with `replica_id` added when it caught up (LEO >= HW, and with `require_epoch_start`
        (KIP-320 era) >= the start of this leader's epoch), or None. One follower at a time, as Kafka:
        one that cannot join (fenced) does not hold the others back."""
        if not self.is_leader or self.pending_isr is not None or replica_id in self.isr:
            return None
        s = self._remote.get(replica_id)
        if s is None or s.log_end_offset < self.high_watermark:
            return None
        if require_epoch_start and s.log_end_offset < self.leader_epoch_start_offset:
            return None
        return (*self.isr, replica_id)

    def isr_shrink(self, now_ms: float, lag_time_max_ms: int) -> tuple[int, ...] | None:
        """The ISR without the followers not caught up for `lag_time_max_ms`, or None when nobody is out."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        out = {r for r in self.isr if r != self.local_node
               and (s := self._remote.get(r)) is not None and now_ms - s.last_caught_up_ms > lag_time_max_ms}
        return tuple(r for r in self.isr if r not in out) if out else None

    # high watermark (follower)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        """A follower's HW is the leader's, within its own log."""
        self.high_watermark = max(self.log.log_start_offset, min(leader_high_watermark, self.log.log_end_offset))

    def truncate_to(self, offset: int) -> None:
        """Cut this replica's log at `offset` (a follower before fetching); the HW follows it down."""
        self.log.truncate_to(offset)
        if self.high_watermark > self.log.log_end_offset:
            self.high_watermark = self.log.log_end_offset

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
        self.min_insync_replicas = min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            return AppendOutcome(ErrorCode.NOT_ENOUGH_REPLICAS, message=(
                f"ISR {list(self.isr)} of {self.tp} is smaller than min.insync.replicas={min_insync_replicas}"))
        result = self.log.append_as_leader(records, self.leader_epoch)
        if result.error is not None:
            return AppendOutcome(error_code_for_name(result.error), message=result.error_message or result.error,
                                 log_start_offset=self.log.log_start_offset)
        if not result.duplicate and not self.maybe_increment_high_watermark():
            self._wake()  # followers read up to the log end, which moved
        return AppendOutcome(ErrorCode.NONE, result.base_offset, result.last_offset, self.log.log_start_offset,
                             leader_epoch=self.leader_epoch)

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

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int,
                                     v0: bool = False) -> EpochEndOffset:
        """Where `leader_epoch` ends here. `v0`: as OffsetsForLeaderEpoch v0 answered (KIP-101): the start
        of the first larger epoch or the log end, and no epoch."""
        err = self._leader_check(current_leader_epoch)
        if err is not ErrorCode.NONE:
            return EpochEndOffset(err)
        if v0:
            return EpochEndOffset(ErrorCode.NONE, NO_EPOCH,
                                  self.log.epoch_cache.end_offset_for_v0(leader_epoch, self.log.log_end_offset))
        epoch, end = self.log.epoch_cache.end_offset_for(leader_epoch, self.log.log_end_offset)
        return EpochEndOffset(ErrorCode.NONE, epoch, end)

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds `offset` (-1 when the cache knows none)."""
        return self.log.epoch_cache.epoch_for_offset(offset)

    def fetch_offset_for_timestamp(self, timestamp: int, current_leader_epoch: int,
                                   fetch_only_committed: bool) -> TimestampOffset:
        """ListOffsets: -2 earliest, -1 latest (HW for clients), -3 max timestamp, else the first offset at or
        after it."""
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
