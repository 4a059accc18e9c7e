"""Idempotent producer state: duplicates among the last 5 batches, Kafka 2.x sequence rules."""
from __future__ import annotations

import pytest

from fencepost.broker.storage.producer_state import (
    BatchMetadata,
    ProducerStateError,
    ProducerStateManager,
)

PID = 1000


def append(manager: ProducerStateManager, epoch: int, first_seq: int, last_seq: int, first_offset: int = 0) -> None:
    op = manager.begin()
    op.check_and_add(PID, epoch, BatchMetadata(first_seq, last_seq, first_offset, first_offset + last_seq - first_seq))
    op.commit()


def rejected(manager: ProducerStateManager, epoch: int, first_seq: int, last_seq: int) -> str:
    op = manager.begin()
    with pytest.raises(ProducerStateError) as info:
        op.check_and_add(PID, epoch, BatchMetadata(first_seq, last_seq, 0, last_seq - first_seq))
    return info.value.error


def test_in_sequence_batches_are_accepted_and_kept():
    manager = ProducerStateManager()
    append(manager, 0, 0, 4, 0)
    append(manager, 0, 5, 9, 5)
    entry = manager.entry(PID)
    assert entry.producer_epoch == 0
    assert entry.last_seq == 9
    assert [b.first_offset for b in entry.batches] == [0, 5]


def test_a_retry_of_one_of_the_last_five_batches_is_a_duplicate():
    manager = ProducerStateManager()
    for n in range(6):
        append(manager, 0, n * 2, n * 2 + 1, 100 + n * 2)
    op = manager.begin()
    duplicate = op.find_duplicate(PID, 0, 4, 5)
    assert duplicate == BatchMetadata(4, 5, 104, 105)
    assert op.find_duplicate(PID, 0, 0, 1) is None  # the oldest of six is forgotten
    assert op.find_duplicate(PID, 1, 4, 5) is None  # other epoch
    assert op.find_duplicate(PID, 0, 4, 6) is None  # other range
    assert op.find_duplicate(PID + 1, 0, 4, 5) is None


def test_a_gap_in_sequence_is_out_of_order():
    manager = ProducerStateManager()
    append(manager, 0, 0, 4)
    assert rejected(manager, 0, 6, 7) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert rejected(manager, 0, 3, 7) == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_a_lower_epoch_is_fenced():
    manager = ProducerStateManager()
    append(manager, 3, 0, 0)
    assert rejected(manager, 2, 1, 1) == "INVALID_PRODUCER_EPOCH"


def test_a_new_epoch_must_start_at_zero():
    manager = ProducerStateManager()
    append(manager, 0, 0, 9)
    assert rejected(manager, 1, 10, 10) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    append(manager, 1, 0, 0)
    assert manager.entry(PID).producer_epoch == 1
    assert len(manager.entry(PID).batches) == 1  # the old epoch's batches are dropped


def test_an_unknown_producer_must_start_at_zero():
    manager = ProducerStateManager()
    assert rejected(manager, 0, 5, 5) == "UNKNOWN_PRODUCER_ID"
    append(manager, 0, 0, 0)


def test_sequence_wraps_past_int32_max():
    manager = ProducerStateManager()
    manager.replay(PID, 0, BatchMetadata(2**31 - 3, 2**31 - 1, 0, 2))
    append(manager, 0, 0, 1, 3)
    assert manager.entry(PID).last_seq == 1


def test_checks_within_one_append_see_the_earlier_batches_of_it():
    manager = ProducerStateManager()
    op = manager.begin()
    op.check_and_add(PID, 0, BatchMetadata(0, 1, 0, 1))
    op.check_and_add(PID, 0, BatchMetadata(2, 3, 2, 3))
    with pytest.raises(ProducerStateError):
        op.check_and_add(PID, 0, BatchMetadata(2, 3, 4, 5))
    assert manager.entry(PID) is None  # nothing committed yet


def test_an_append_that_is_not_committed_changes_nothing():
    manager = ProducerStateManager()
    append(manager, 0, 0, 0)
    op = manager.begin()
    op.check_and_add(PID, 0, BatchMetadata(1, 1, 1, 1))
    assert manager.entry(PID).last_seq == 0


def test_replay_takes_batches_as_they_are():
    manager = ProducerStateManager()
    manager.replay(PID, 2, BatchMetadata(7, 8, 0, 1))
    manager.replay(PID, 1, BatchMetadata(0, 0, 2, 2))  # a lower epoch from the log: no check, it follows the log
    assert manager.entry(PID).producer_epoch == 1
    assert manager.producer_ids() == [PID]
