"""Scenarios of lost durability: replicas that lose what they had not made durable in a power
cut (the nodes' data on lazy disks, clusters/disks.py; `flush = "lazy"`), in the orders that
make Kafka's replication protocols lose acknowledged writes or diverge.

- `kip101-divergence` (KIP-101 scenario 2, "replica divergence on restart after multiple hard
  failures"): every replica of a partition loses its unsynced tail; the old leader A had more
  of its log on disk than the others, and the one with less data returns first and leads. With
  L = A the leader and the followers in the ISR: make every replica's disk durable (the kernel's
  write-back), wait `gap` seconds (longer than the high-watermark checkpoint interval, 5 s by
  default, so that A checkpoints a high watermark past the followers' durable logs), make A's disk
  durable again (A's write-back came later), power-cut A, then the followers, the one chosen to
  lead (B) last (an ISR of one keeps its last member); start B, then the other followers; wait
  for a leader other than A and for the followers in its ISR; read the high watermark A
  checkpointed from A's durable disk, and wait until the new leader's high watermark has passed
  it (writes land at offsets where A holds other records; bounded by the context's timeout),
  then `settle` seconds; start A; wait until A is in the ISR. A follower that truncates to its
  high watermark (before KIP-101: Kafka 0.10.2, the own broker's `hw`) keeps records the new
  leader does not have below that mark -> replica-divergence; with leader epochs it truncates to
  where the leader's log diverged. (Kafka before 0.11 halts A instead when the new leader's log
  is shorter than A's high watermark, a liveness finding: hence the wait.) A topic of one
  partition keeps the producers' sends flowing to the new leader: with more, the partitions that
  wait for A hold the producers up.
- `last-replica-standing` (KIP-966's case): with L the leader and every follower in the ISR,
  cut the followers off from L (they still reach the control plane) until L has shrunk the ISR to
  itself; power-cut L (it loses its unsynced tail, which holds acknowledged writes: they were
  acknowledged while the followers were in the ISR and live in every replica's page cache);
  heal; start L and wait until every replica is back in the ISR. Without Eligible Leader
  Replicas L is the only replica that may lead, is elected with its shorter log, and the
  followers truncate to it: acknowledged writes are lost. With them (Kafka 4.x, `elr`), the
  followers removed from the ISR below min.insync.replicas are eligible and one of them is
  elected instead. L must reach the control plane through the cut: where the controller is a
  broker (ZooKeeper mode) it must be L or a broker outside the partition's replicas; in KRaft
  mode the controllers must run apart (`controllers=1`): in combined mode cutting the followers
  off from L also cuts L off from the controller quorum, and its ISR never shrinks.

A third durability case needs no scenario: `power-cut:all` (every broker at once, correlated
loss) loses acknowledged writes with Kafka's default flush (os) and none with a flush per message
(`log.flush.interval.messages=1`).

Steps are recorded as the other scenarios' are (nemesis/scenarios.py), plus `writeback` {nodes}
and `power-cut` {nodes, lost, log_bytes}; the scenario's info value names the roles and the
leaders seen, and `premise` {met, why}: whether the cuts took what the scenario exists to test
(a leader that had fsynced every acknowledged record loses none, and the run is valid whatever
the protocol): last-replica-standing from the leader's durable log end after its cut against
the high watermark when its followers were cut off; kip101-divergence from the bytes of the
partition's log on each cut node before and after its cut.
"""
from __future__ import annotations

import json
import time
from typing import Any

from fencepost.clusters import ClusterConfigError, HostError, PartitionView
from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.scenarios import Scenario, view_json
from fencepost.nemesis.spec import FaultSpec

GAP_S = 6.0  # between the followers' write-back and the leader's: above the HW checkpoint interval (5 s)
SETTLE_S = 1.0  # after the new leader's high watermark passed the old leader's
LOG_BYTES_TIMEOUT_S = 10.0
LOG_READ_TIMEOUT_S = 60.0


class DurabilityScenario(Scenario):
    """A scenario whose steps include power cuts and write-backs of lazy disks."""

    def __init__(self, spec: FaultSpec) -> None:
        super().__init__(spec)
        self.log_bytes: dict[str, dict[str, int | None]] = {}  # node -> its partition log's bytes before/after its cut

    def power_cut(self, ctx: NemesisContext, node: str) -> dict[str, int]:
        with self._step(ctx, "power-cut", {"nodes": [node]}) as op:
            before = self.partition_log_bytes(ctx, node)
            self.down.add(node)
            loss = ctx.cluster.power_cut(node).to_json()
            self.paused.discard(node)
            self.log_bytes[node] = {"before": before, "after": self.partition_log_bytes(ctx, node)}
            op.value = {**op.value, "lost": {node: loss}, "log_bytes": {node: self.log_bytes[node]}}
        return loss

    def partition_log_bytes(self, ctx: NemesisContext, node: str) -> int | None:
        """The bytes of the scenario partition's log segments on the node's lazy disks as its
        programs see them (after a cut: what was durable); None when the node cannot tell."""
        return ctx.cluster.system.partition_log_bytes(ctx.cluster.hosts[node], ctx.cluster.disks.disk(node).folders,
                                                      ctx.topic, self.partition, LOG_BYTES_TIMEOUT_S)

    def durable_log_end(self, ctx: NemesisContext, node: str) -> int | None:
        """The end offset of the scenario partition's log on the node's disks (after a cut: what
        was durable), from the system's reading of its replica logs; None when unreadable."""
        try:
            lines = ctx.cluster.system.replica_log_lines(ctx.cluster.hosts[node], LOG_READ_TIMEOUT_S)
        except (HostError, OSError):
            return None
        for line in lines:
            if b'"replica-state"' in line:
                state = json.loads(line)
                if state.get("topic") == ctx.topic and state.get("partition") == self.partition:
                    return int(state["log_end_offset"])
        return 0  # no durable directory of the partition: the cut took all of it

    def lost_log(self, node: str) -> int | None:
        """Bytes of the partition's log the node's cut took; None when not measured."""
        sizes = self.log_bytes.get(node) or {}
        before, after = sizes.get("before"), sizes.get("after")
        return None if before is None or after is None else before - after

    def writeback(self, ctx: NemesisContext, nodes: list[str]) -> None:
        with self._step(ctx, "writeback", {"nodes": nodes}):
            for node in nodes:
                ctx.cluster.writeback(node)

    def await_full_isr(self, ctx: NemesisContext) -> PartitionView:
        with self._step(ctx, "await-isr", {"partition": self.partition, "full": True}) as op:
            view = ctx.await_view(self.partition, lambda v: v.leader is not None and set(v.isr) == set(v.replicas),
                                  "a leader and every replica in the ISR")
            op.value = {**op.value, **view_json(view)}
        return view


class Kip101Divergence(DurabilityScenario):
    def __init__(self, spec: FaultSpec, gap: float = GAP_S, settle: float = SETTLE_S) -> None:
        super().__init__(spec)
        self.gap = gap
        self.settle = settle

    def run(self, ctx: NemesisContext, done: dict[str, Any]) -> None:
        view = self.await_full_isr(ctx)
        if len(view.replicas) < 2:
            raise ClusterConfigError(f"kip101-divergence needs a replication factor of at least 2; "
                                     f"{ctx.topic}-{self.partition} has replicas {', '.join(view.replicas)}")
        leader = view.leader
        followers = [r for r in view.replicas if r != leader]
        first = followers[-1]  # returns first and leads: cut last, so that it is the ISR's last member
        others = [f for f in followers if f != first]
        done.update(leader=leader, first_back=first, others=others, leader_epoch=view.leader_epoch)
        # records of the leader's epoch first: a follower that keeps none of them on disk keeps no
        # trace of that epoch, and then even KIP-101's truncation falls back to the high watermark
        # before Kafka 2.0.1 (KAFKA-7415): that is another weakness than this scenario's
        self.await_high_watermark(ctx, self.high_watermark(ctx))
        self.writeback(ctx, list(view.replicas))
        time.sleep(self.gap)  # A checkpoints its high watermark past what the followers have on disk
        self.writeback(ctx, [leader])
        lost = {}
        for node in [leader, *others, first]:
            lost[node] = self.power_cut(ctx, node)
        done.update(lost=lost, premise=self.premise(leader, first))
        for node in [first, *others]:
            self.start_node(ctx, node)
        elected = self.await_leader(ctx, (leader,))
        for node in [first, *others]:
            if node != elected.leader:
                self.await_isr(ctx, node)
        done.update(new_leader=elected.leader, new_leader_epoch=elected.leader_epoch)
        self.await_high_watermark(ctx, self.checkpointed_high_watermark(ctx, leader))
        time.sleep(self.settle)
        self.start_node(ctx, leader)
        final = self.await_isr(ctx, leader)
        done.update(final_leader=final.leader, final_leader_epoch=final.leader_epoch)

    def premise(self, leader: str, first: str) -> dict[str, Any]:
        """Met when the replica that returns first lost part of its log and the old leader kept
        more of its log on disk than it did: else nothing diverges, whatever the protocol."""
        lost_first = self.lost_log(first)
        kept = {node: (self.log_bytes.get(node) or {}).get("after") for node in (leader, first)}
        if lost_first is None or kept[leader] is None or kept[first] is None:
            return {"met": None, "why": "the partition's log on the cut replicas could not be measured"}
        if lost_first <= 0:
            return {"met": False, "why": f"{first}, which returns first and leads, lost none of the partition's log "
                                         f"in its cut ({kept[first]} bytes kept): its disk had it all"}
        if kept[leader] <= kept[first]:
            return {"met": False, "why": f"the old leader {leader} kept {kept[leader]} bytes of the partition's log, "
                                         f"no more than {first} ({kept[first]}): there is no tail to diverge"}
        return {"met": True, "why": f"{first} lost {lost_first} bytes of the partition's log and kept {kept[first]}; "
                                    f"the old leader {leader} kept {kept[leader]}"}

    def checkpointed_high_watermark(self, ctx: NemesisContext, node: str) -> int | None:
        """The partition's high watermark in the node's durable replication-offset-checkpoint, as the
        system reads its own files (Kafka's layout, the own broker's too); None when it holds none."""
        return ctx.cluster.system.checkpointed_high_watermark(ctx.cluster.disks.durable_path(node), ctx.topic,
                                                              self.partition)


class LastReplicaStanding(DurabilityScenario):
    def run(self, ctx: NemesisContext, done: dict[str, Any]) -> None:
        if ctx.cluster.system.brokers_are_voters():
            raise ClusterConfigError(
                "last-replica-standing on KRaft needs controllers apart from the brokers (system option "
                "controllers=1): in combined mode every broker is a controller, so cutting the followers off "
                "from the leader cuts the leader off from the controller quorum too, and its ISR never shrinks")
        controller = ctx.cluster.system.controller_broker(ctx.cluster.hosts)
        view = self._roles(ctx, self.await_full_isr(ctx), controller)
        leader = view.leader
        followers = sorted(r for r in view.replicas if r != leader)
        done.update(partition=self.partition, leader=leader, followers=followers, leader_epoch=view.leader_epoch,
                    controller=controller)
        self.cut_off(ctx, {leader: frozenset(followers)})
        # no follower fetches from here on: the high watermark stays where the followers had
        # fetched to, the end of what was acknowledged, until the ISR shrinks to the leader
        acknowledged = self.high_watermark(ctx)
        alone = self._await_isr_of_one(ctx, leader)
        done.update(isr_alone_epoch=alone.leader_epoch, acknowledged_end=acknowledged)
        done.update(lost=self.power_cut(ctx, leader))
        durable_end = self.durable_log_end(ctx, leader)
        done.update(durable_end=durable_end, premise=self.premise(leader, acknowledged, durable_end))
        self.heal_cut(ctx)
        self.start_node(ctx, leader)
        for node in [leader, *followers]:
            self.await_isr(ctx, node)
        final = ctx.view(self.partition)
        done.update(new_leader=final.leader, new_leader_epoch=final.leader_epoch)

    def premise(self, leader: str, acknowledged: int | None, durable_end: int | None) -> dict[str, Any]:
        """Met when the leader's cut took records the followers had fetched (below the high
        watermark it had when they were cut off: acknowledged): else a leader elected with the
        log it kept loses nothing acknowledged, with or without Eligible Leader Replicas."""
        if acknowledged is None or durable_end is None:
            return {"met": None, "why": f"the partition's high watermark when the followers were cut off "
                                        f"({acknowledged}) or its log end on {leader} after the cut ({durable_end}) "
                                        "could not be read"}
        lost = self.lost_log(leader)
        took = f"took {lost} bytes of the partition's log" if lost is not None else "took"
        if durable_end >= acknowledged:
            return {"met": False, "why": f"the leader {leader}'s power cut {took}, but its durable log ends at "
                                         f"offset {durable_end}, not below the high watermark {acknowledged} the "
                                         "followers had fetched to: it had made every acknowledged record durable, "
                                         "so no election of a shorter log was tested"}
        return {"met": True, "why": f"the leader {leader}'s power cut {took}: its durable log ends at offset "
                                    f"{durable_end}, below the high watermark {acknowledged} the followers had "
                                    "fetched to"}

    def _await_isr_of_one(self, ctx: NemesisContext, leader: str) -> PartitionView:
        with self._step(ctx, "await-isr", {"partition": self.partition, "isr": [leader]}) as op:
            view = ctx.await_view(self.partition, lambda v: v.leader == leader and tuple(v.isr) == (leader,),
                                  f"an ISR of {leader} alone")
            op.value = {**op.value, **view_json(view)}
        return view

    def _roles(self, ctx: NemesisContext, view: PartitionView, controller: str | None) -> PartitionView:
        """This partition's view, or (drawn at random) another one whose leader can reach the
        controller through the cut: the controller is the leader or no replica of it."""
        if len(view.replicas) < 2:
            raise ClusterConfigError(f"last-replica-standing needs a replication factor of at least 2; "
                                     f"{ctx.topic}-{self.partition} has replicas {', '.join(view.replicas)}")
        for candidate in self.candidate_views(ctx, view):
            full = candidate.leader is not None and set(candidate.isr) == set(candidate.replicas)
            if full and (controller is None or controller == candidate.leader or controller not in candidate.replicas):
                self.partition = candidate.partition
                return candidate
        raise HostError(f"last-replica-standing: no partition of {ctx.topic} has a full ISR and a leader that is "
                        f"the controller ({controller}) or a controller outside its replicas (then the cut would "
                        f"part the leader from the controller); {ctx.topic}-{self.partition} is led by "
                        f"{view.leader}: wait for the preferred leaders, or add a broker")
