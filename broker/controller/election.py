"""Pure rules for one partition: leader election, dropping a fenced broker, replica assignment.

Functions take a PartitionState and return the new one; none of them touches the
partition epoch: the caller bumps it once for any change (`bump_if_changed`).
"""
from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import replace

from fencepost.broker.common.controller_protocol import NO_LEADER, PartitionState


def elect_leader(p: PartitionState, unfenced: Set[int], unclean: bool) -> PartitionState:
    """Leader := the first replica (assignment order) in the ISR and unfenced; failing that, with
    `unclean`, the first unfenced replica with the ISR reduced to it; failing that, no leader (-1).
    The leader epoch grows when the leader changes (also to or from -1)."""
    leader, isr = NO_LEADER, p.isr
    clean = [r for r in p.replicas if r in p.isr and r in unfenced]
    if clean:
        leader = clean[0]
    elif unclean:
        alive = [r for r in p.replicas if r in unfenced]
        if alive:
            leader, isr = alive[0], (alive[0],)
    if leader == p.leader and isr == p.isr:
        return p
    epoch = p.leader_epoch + 1 if leader != p.leader else p.leader_epoch
    return replace(p, leader=leader, leader_epoch=epoch, isr=isr)


def without_broker(p: PartitionState, node: int, unfenced: Set[int], unclean: bool) -> PartitionState:
    """`node` was fenced: it leaves the ISR unless it is the last member (Kafka never empties the
    ISR), and if it led, a new leader is elected from `unfenced` (which must not contain it)."""
    if node not in p.replicas:
        return p
    isr = p.isr
    if node in isr and len(isr) > 1:
        isr = tuple(r for r in isr if r != node)
    q = replace(p, isr=isr) if isr != p.isr else p
    if q.leader == node:
        q = elect_leader(q, unfenced, unclean)
    return q


def lead_in_new_epoch(p: PartitionState) -> PartitionState:
    """The same leader in the next leader epoch (a leader that restarted, KIP-101)."""
    return replace(p, leader_epoch=p.leader_epoch + 1)


def bump_if_changed(old: PartitionState, new: PartitionState) -> PartitionState:
    """`new` with partition_epoch = old's + 1 when anything differs from `old`, else `old` itself."""
    if new == old:
        return old
    return replace(new, partition_epoch=old.partition_epoch + 1)


def assign_replicas(brokers: Sequence[int], partitions: int, replication_factor: int,
                    start: int) -> dict[int, tuple[int, ...]]:
    """Kafka's round-robin: partition p gets brokers[(start + p + j) % n] for j < replication_factor.
    `brokers` sorted by id; the first replica of each partition is its preferred leader."""
    n = len(brokers)
    if not 1 <= replication_factor <= n:
        raise ValueError(f"replication factor {replication_factor} is not within 1..{n}")
    return {p: tuple(brokers[(start + p + j) % n] for j in range(replication_factor))
            for p in range(partitions)}
