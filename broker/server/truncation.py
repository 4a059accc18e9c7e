"""Follower truncation, as each protocol version did it: the rules, without I/O.

Owns the decision a replica makes when it becomes a follower: where to cut its
log before fetching from the new leader. The four modes are Kafka's history
(AbstractFetcherThread / ReplicaFetcherThread of each version):

- `hw` (before KIP-101, IBP 0.11.0-IV1): truncate to the local high watermark.
  Committed records above a stale HW are dropped (KAFKA-1211), and uncommitted
  records below the HW are kept (divergence, KIP-101 scenario 2).
- `kip101` (0.11.0-IV2): ask the leader (OffsetsForLeaderEpoch v0) for the end
  of the follower's latest epoch; the answer is the start of the first larger
  epoch, or the leader's LEO; truncate to min(answer, LEO). One round: a
  follower whose latest epoch the leader never had keeps what lies before the
  leader's next epoch start (KAFKA-6361, fixed by KIP-279).
- `kip279` (2.0-IV0): the answer also names the largest epoch <= the requested
  one; when that is not the follower's epoch, the follower cuts to its own end
  of that epoch and asks again, until both agree.
- `kip320` (2.1-IV1): the kip279 rules; the fencing by current leader epoch on
  Fetch and OffsetsForLeaderEpoch is applied by the fetcher and the leader.

A follower with no epoch in its cache falls back to the HW in every mode, as
Kafka did for logs from before leader epochs.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fencepost.broker.common.modes import TRUNCATION_MODES  # noqa: F401 (the modes these rules are for)

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class TruncationStep:
    """Cut the log at `offset`; when not `done`, ask the leader again with the new latest epoch."""
    offset: int
    done: bool
    reason: str


def asks_leader(mode: str, latest_epoch: int) -> bool:
    """Whether a new follower asks the leader where its latest epoch ends (else it cuts at its HW)."""
    return mode != "hw" and latest_epoch != UNDEFINED_EPOCH


def leader_answers_v0(mode: str) -> bool:
    """Whether a leader answers replicas' OffsetsForLeaderEpoch as v0 did (an end offset, no epoch)."""
    return mode == "kip101"


def fences_by_leader_epoch(mode: str) -> bool:
    """Whether followers send their current leader epoch on Fetch and OffsetsForLeaderEpoch (KIP-320)."""
    return mode == "kip320"


def truncate_to_high_watermark(high_watermark: int, log_end_offset: int) -> TruncationStep:
    return TruncationStep(min(high_watermark, log_end_offset), True, f"to the local high watermark {high_watermark}")


def step_after_answer(mode: str, requested_epoch: int, leader_epoch: int, leader_end_offset: int,
                      log_end_offset: int, high_watermark: int,
                      follower_end_offset_for: Callable[[int], tuple[int, int]]) -> TruncationStep:
    """The follower's next step after the leader answered OffsetsForLeaderEpoch(`requested_epoch`).

    `follower_end_offset_for(epoch)` is the follower's own epoch cache answer
    (largest epoch <= `epoch`, its end offset), with the follower's LEO for its latest epoch.
    """
    if leader_end_offset == UNDEFINED_OFFSET:
        return truncate_to_high_watermark(high_watermark, log_end_offset)
    if mode == "kip101" or leader_epoch == UNDEFINED_EPOCH:
        return TruncationStep(min(leader_end_offset, log_end_offset), True,
                              f"to the leader's end offset {leader_end_offset} of epoch {requested_epoch}")
    follower_epoch, follower_end = follower_end_offset_for(leader_epoch)
    if follower_end == UNDEFINED_OFFSET:
        return TruncationStep(min(leader_end_offset, log_end_offset), True,
                              f"to the leader's end offset {leader_end_offset} (no local epoch <= {leader_epoch})")
    if follower_epoch != leader_epoch:
        return TruncationStep(min(follower_end, log_end_offset), False,
                              f"to the local end {follower_end} of epoch {follower_epoch}: the leader's "
                              f"largest epoch <= {requested_epoch} is {leader_epoch}, unknown here")
    return TruncationStep(min(leader_end_offset, follower_end), True,
                          f"to min(leader's end {leader_end_offset}, local end {follower_end}) of epoch {leader_epoch}")
