"""What changed between two snapshots, as log lines: fencing, topics, leaders, epochs and ISRs.

The server logs these after every change, so no election or ISR change goes
unlogged whichever operation made it.
"""
from __future__ import annotations

from fencepost.broker.common.controller_protocol import PartitionState, Snapshot


def describe_changes(before: Snapshot, after: Snapshot) -> list[str]:
    lines = []
    for n, b in sorted(after.brokers.items()):
        old = before.brokers.get(n)
        if old is None:
            lines.append(f"broker {n} registered at {b.host}:{b.port}")
        elif old.fenced != b.fenced:
            lines.append(f"broker {n} {'fenced' if b.fenced else 'unfenced'}")
        elif (old.host, old.port) != (b.host, b.port):
            lines.append(f"broker {n} moved from {old.host}:{old.port} to {b.host}:{b.port}")
    for name in sorted(before.topics.keys() - after.topics.keys()):
        lines.append(f"topic {name} deleted")
    for name, t in sorted(after.topics.items()):
        old_topic = before.topics.get(name)
        if old_topic is None:
            lines.append(f"topic {name} created: {len(t.partitions)} partitions, configs {t.configs}")
            lines.extend(f"{name}-{i}: replicas {list(p.replicas)}, leader {p.leader}"
                         for i, p in sorted(t.partitions.items()))
            continue
        for i, p in sorted(t.partitions.items()):
            was = old_topic.partitions.get(i)
            if was is not None and was != p:
                lines.append(f"{name}-{i}: {partition_change(was, p)}")
    return lines


def partition_change(old: PartitionState, new: PartitionState) -> str:
    parts = []
    if old.leader != new.leader:
        parts.append(f"leader {old.leader} -> {new.leader}")
    if old.leader_epoch != new.leader_epoch:
        parts.append(f"leader epoch {old.leader_epoch} -> {new.leader_epoch}")
    if old.isr != new.isr:
        parts.append(f"ISR {list(old.isr)} -> {list(new.isr)}")
    parts.append(f"partition epoch {old.partition_epoch} -> {new.partition_epoch}")
    if not (old.leader != new.leader or old.leader_epoch != new.leader_epoch):
        parts.append(f"(leader {new.leader})")
    return ", ".join(parts)
