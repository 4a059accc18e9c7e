"""The reassign fault: move a partition's replicas to other brokers while the other faults run
(as an operator's `kafka-reassign-partitions` would), and move them back as its heal.

start, `start-reassign` {topic, partition} -> {topic, partition, replicas: before, to: after}:
with more brokers than replicas, between one and all of the replicas (drawn from the seeded
RNG) are replaced by brokers outside the set, each in its place (so the preferred leader
moves when the first is replaced); with as many brokers as replicas there is nowhere to move
to, and the order is rotated instead (a new preferred leader: `"rotated": true`). The system
is asked to move them (`Cluster.reassign`: stock Kafka's admin API from 2.4, ZooKeeper's
/admin/reassign_partitions before); the fault does not wait for the move to end (under faults
it may take long), the report's control-plane view shows it.

stop, `stop-reassign` {topic, partition, to: the replicas before}: asked to move them back.

The own system refuses up front: its controller has no reassignment (`System.cannot`).
"""
from __future__ import annotations

from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.faults import Fault
from fencepost.nemesis.recording import recorded
from fencepost.nemesis.spec import RANDOM_PARTITION, FaultSpec, fault_ops


class ReassignFault(Fault):
    def __init__(self, spec: FaultSpec) -> None:
        super().__init__(spec)
        self.moved: tuple[int, list[str]] | None = None  # (partition, its replicas before the move)

    @property
    def active(self) -> bool:
        return self.moved is not None

    def start(self, ctx: NemesisContext) -> None:
        wanted = None if self.spec.target == RANDOM_PARTITION else int(self.spec.target)
        with recorded(ctx.recorder, fault_ops("reassign")[0], {"topic": ctx.topic, "partition": wanted}) as op:
            partition = ctx.choose_partition(wanted)
            before = list(ctx.view(partition).replicas)
            after, rotated = new_replicas(before, ctx.cluster.broker_nodes, ctx.rng)
            op.value = self.done = {"topic": ctx.topic, "partition": partition, "replicas": before, "to": after,
                                    **({"rotated": True} if rotated else {})}
            ctx.cluster.reassign(ctx.topic, partition, after, ctx.timeout)
            self.moved = (partition, before)

    def stop(self, ctx: NemesisContext) -> None:
        if self.moved is None:
            return
        partition, before = self.moved
        back = {"topic": ctx.topic, "partition": partition, "to": before}
        with recorded(ctx.recorder, fault_ops("reassign")[1], back):
            ctx.cluster.reassign(ctx.topic, partition, before, ctx.timeout)
        self.moved = None


def new_replicas(replicas: list[str], brokers: list[str], rng) -> tuple[list[str], bool]:
    """(the new replica list, whether it is only rotated): see the module doc. Pure but for `rng`."""
    outside = sorted(set(brokers) - set(replicas))
    if not outside:
        return replicas[1:] + replicas[:1], True
    count = rng.randint(1, min(len(outside), len(replicas)))
    places = sorted(rng.sample(range(len(replicas)), count))
    newcomers = rng.sample(outside, count)
    after = list(replicas)
    for place, broker in zip(places, newcomers):
        after[place] = broker
    return after, False
