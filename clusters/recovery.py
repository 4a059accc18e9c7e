"""Whether a cluster's partitions can still recover, judged from what it says of them and what
its nodes logged: `Recovery.not_rejoining` (a node that will never rejoin an ISR, and why),
`unrecoverable` (partitions that can never take an acks=all write again without an operator),
`offline` (partitions no broker can ever lead again) and `wait_for_full_isr` (the quiesce
phase's wait, cut short as soon as a missing replica never will come back).

A cluster has one `Recovery` (`Cluster.recovery`); what it asks of the cluster (`Answers`) is
the view of a partition, a node's state and the fatal markers the node logged since it last
started.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from fencepost.clusters.errors import HostError, NotRejoining
from fencepost.clusters.systems.base import PartitionView
from fencepost.clusters.systems.markers import FatalMarker

REJOIN_CHECK_S = 1.0  # how often a wait asks a node's logs whether it will ever rejoin an ISR
FULL_ISR_TIMEOUT_S = 60.0


class Answers(Protocol):
    """What Recovery asks of a cluster (clusters/cluster.py's Cluster answers it)."""

    def partition_view(self, topic: str, partition: int) -> PartitionView: ...

    def partitions(self, topic: str) -> list[int]: ...

    def node_state(self, node: str) -> str: ...

    def fatal_markers(self, node: str) -> list[FatalMarker]: ...

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any: ...


class Recovery:
    def __init__(self, cluster: Answers) -> None:
        self.cluster = cluster
        self._rejoin_answers: dict[tuple[str, str, int], tuple[float, str | None]] = {}

    def not_rejoining(self, node: str, topic: str, partition: int) -> str | None:
        """Why `node` will not rejoin the ISR of topic-partition however long one waits (its process
        exited, or it gave the partition up), or None. Asked of the node at most once a second."""
        key = (node, topic, partition)
        asked, answer = self._rejoin_answers.get(key, (-REJOIN_CHECK_S, None))
        if time.monotonic() - asked >= REJOIN_CHECK_S:
            answer = self._why_not_rejoining(node, topic, partition)
            self._rejoin_answers[key] = (time.monotonic(), answer)
        return answer

    def _why_not_rejoining(self, node: str, topic: str, partition: int) -> str | None:
        markers = self.cluster.fatal_markers(node)
        if self.cluster.node_state(node) in ("down", "partial"):
            return f"{node} is not running" + (f" (it logged: {markers[-1].line})" if markers else "")
        halted = [m for m in markers if m.halts]
        if halted:  # the broker is ending itself: every partition it holds is gone with it
            return f"{node} is halting (it logged: {halted[-1].line})"
        name = f"{topic}-{partition}"
        failed = [m for m in markers if m.partition == name]
        return f"{node} gave {name} up (it logged: {failed[-1].line})" if failed else None

    def unrecoverable(self, topic: str, partitions: Iterable[int], min_isr: int,
                      unclean: bool = False) -> str | None:
        """Why some of `partitions` can never take an acks=all write again without an operator:
        fewer of its replicas than `min_isr` may still serve it, or (unclean election off) no
        member of its ISR may — the others not running or having given it up
        (`not_rejoining`). None while each may yet recover (or the view is not to be had)."""
        reasons = []
        for p in partitions:
            try:
                view = self.cluster.partition_view(topic, p)
            except HostError:
                return None
            gone = {node: why for node in view.replicas if (why := self.not_rejoining(node, topic, p))}
            live = len(view.replicas) - len(gone)
            if live < min_isr:
                reasons.append(f"{topic}-{p} keeps {live} of its replicas, fewer than min.insync.replicas="
                               f"{min_isr}: {'; '.join(gone.values())}")
            elif why := _no_live_isr(topic, p, view.isr, gone, unclean):
                reasons.append(why)
        return "; ".join(reasons) or None

    def offline(self, topic: str, partitions: Iterable[int], unclean: bool = False) -> dict[int, str]:
        """The partitions no broker can ever lead again without an operator, and why: no leader,
        and every member of the ISR not running or having given the partition up (with unclean
        election off; with it on, any live replica may be elected)."""
        found: dict[int, str] = {}
        for p in partitions:
            try:
                view = self.cluster.partition_view(topic, p)
            except HostError:
                continue
            if unclean or view.leader is not None or not view.isr:
                continue
            gone = {node: why for node in view.isr if (why := self.not_rejoining(node, topic, p))}
            if why := _no_live_isr(topic, p, view.isr, gone, unclean):
                found[p] = why
        return found

    def wait_for_full_isr(self, topic: str, timeout: float = FULL_ISR_TIMEOUT_S) -> None:
        """Until every partition of `topic` has a leader and every replica in its ISR (the quiesce
        phase); NotRejoining as soon as a missing replica never will (`not_rejoining`)."""
        cluster = self.cluster

        def full() -> bool:
            views = [cluster.partition_view(topic, p) for p in cluster.partitions(topic)]
            if all(v.leader is not None and set(v.isr) == set(v.replicas) for v in views):
                return True
            hopeless = sorted({why for v in views for node in set(v.replicas) - set(v.isr)
                               if (why := self.not_rejoining(node, topic, v.partition))})
            if hopeless:
                raise NotRejoining("; ".join(hopeless))
            return False
        cluster.wait_for(full, timeout, f"every partition of {topic} with a leader and a full ISR")


def _no_live_isr(topic: str, p: int, isr: Sequence[str], gone: Mapping[str, str], unclean: bool) -> str | None:
    """Why no member of the partition's ISR may ever lead it again (every one in `gone`, with the
    reason, and unclean election off); None when one may."""
    if unclean or not isr or not all(node in gone for node in isr):
        return None
    return (f"{topic}-{p} has no live member of its ISR {list(isr)} and unclean election is off: "
            f"{'; '.join(gone[n] for n in isr)}")
