"""Idempotent producer state of one partition: per producer id its epoch and its last 5 batches.

Owns Kafka's ProducerStateManager rules, reduced to idempotence (no transactions,
no snapshots: the state is rebuilt from the batch headers of the log on open and
after truncation). Sequence rules as Kafka 2.x checks appends from clients
(ProducerAppendInfo, before KIP-360):
- a duplicate is a batch with the same producer id, epoch and sequence range as
  one of the last 5 batches kept for that producer;
- an epoch below the producer's -> INVALID_PRODUCER_EPOCH;
- a new epoch (or an unknown producer) must start at sequence 0, else
  OUT_OF_ORDER_SEQUENCE_NUMBER (known producer) or UNKNOWN_PRODUCER_ID;
- within an epoch the first sequence must be last + 1 (int32 max wraps to 0).
Batches replicated from a leader or replayed from the log are taken as they are.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from fencepost.broker.storage.batch import INT32_MAX, NO_PRODUCER_EPOCH, NO_SEQUENCE

BATCHES_TO_RETAIN = 5

OUT_OF_ORDER_SEQUENCE_NUMBER = "OUT_OF_ORDER_SEQUENCE_NUMBER"
INVALID_PRODUCER_EPOCH = "INVALID_PRODUCER_EPOCH"
UNKNOWN_PRODUCER_ID = "UNKNOWN_PRODUCER_ID"


class ProducerStateError(Exception):
    """A client batch the sequence rules reject; `error` is Kafka's error name."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def add_batch(self, epoch: int, batch: BatchMetadata) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        self.batches.append(batch)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for kept in self.batches:
            if kept.first_seq == first_seq and kept.last_seq == last_seq:
                return kept
        return None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, deque(self.batches, maxlen=BATCHES_TO_RETAIN))


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Producer id -> ProducerStateEntry for one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerStateEntry] = {}

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._entries.get(producer_id)

    def producer_ids(self) -> list[int]:
        return sorted(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def begin(self) -> ProducerAppend:
        """A scratch append: check client batches one by one, then `commit` them all or drop it."""
        return ProducerAppend(self)

    def replay(self, producer_id: int, epoch: int, batch: BatchMetadata) -> None:
        """Record a batch already in the log (follower append, recovery): no checks."""
        entry = self._entries.get(producer_id)
        if entry is None:
            entry = self._entries[producer_id] = ProducerStateEntry(producer_id)
        entry.add_batch(epoch, batch)

    def _install(self, entries: dict[int, ProducerStateEntry]) -> None:
        self._entries.update(entries)


class ProducerAppend:
    """The producer state as it would be after the batches checked so far (Kafka's ProducerAppendInfo)."""

    def __init__(self, manager: ProducerStateManager) -> None:
        self._manager = manager
        self._updated: dict[int, ProducerStateEntry] = {}

    def find_duplicate(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The kept batch this one repeats, looked up in the committed state as Kafka does."""
        entry = self._manager.entry(producer_id)
        return entry.find_duplicate(epoch, first_seq, last_seq) if entry else None

    def check_and_add(self, producer_id: int, epoch: int, batch: BatchMetadata) -> None:
        """Apply the sequence rules to a client batch; raises ProducerStateError if it must be refused."""
        current = self._updated.get(producer_id) or self._manager.entry(producer_id)
        current_epoch = current.producer_epoch if current else NO_PRODUCER_EPOCH
        where = f"producer {producer_id} epoch {epoch}, sequences {batch.first_seq}..{batch.last_seq}"
        if epoch < current_epoch:
            raise ProducerStateError(
                INVALID_PRODUCER_EPOCH, f"{where}: epoch is below the producer's current epoch {current_epoch}"
            )
        if current is None or epoch != current_epoch:
            if batch.first_seq != 0:
                if current_epoch != NO_PRODUCER_EPOCH:
                    raise ProducerStateError(
                        OUT_OF_ORDER_SEQUENCE_NUMBER,
                        f"{where}: a new epoch (current {current_epoch}) must start at sequence 0",
                    )
                raise ProducerStateError(
                    UNKNOWN_PRODUCER_ID,
                    f"{where}: no record of this producer here and the sequence does not start at 0",
                )
        elif not in_sequence(current.last_seq, batch.first_seq):
            expected = 0 if current.last_seq == INT32_MAX else current.last_seq + 1
            raise ProducerStateError(
                OUT_OF_ORDER_SEQUENCE_NUMBER, f"{where}: expected sequence {expected} after {current.last_seq}"
            )
        updated = self._updated.get(producer_id)
        if updated is None:
            updated = self._updated[producer_id] = current.copy() if current else ProducerStateEntry(producer_id)
        updated.add_batch(epoch, batch)

    def commit(self) -> None:
        self._manager._install(self._updated)
        self._updated = {}
