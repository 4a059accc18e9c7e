"""The `fast-leader-change` scenario (KAFKA-6361, fixed by KIP-279): two leader changes in
quick succession leave a follower whose latest epoch the final leader never had; with
KIP-101's OffsetsForLeaderEpoch v0 answer (the start of the first larger epoch, no epoch)
it keeps records of its own epoch where the leader holds older ones -> diverged replicas.

Roles, with clean elections (the first ISR member in replica order that is unfenced):
L the leader (epoch e), B the follower elected next, C the other follower. Needs RF >= 3,
min.insync.replicas >= 2 and a network that can be cut between brokers.

Before anything: wait until writes to P are being acknowledged (`await-high-watermark`, 20
records past where P was, at most 10 s): started with the run, before the producers reach P,
the scenario would find an empty log and nothing to diverge.

0. If B leads another partition, stop it cleanly and start it (its leaderships move away)
   and wait until it is back in P's ISR: a broker answers one request per connection at a
   time, so a stalled send to a partition B leads would hold back every send to B — P's too.
1. Cut B off from L only (B still reaches the controller and C). What L appends now (one
   request's batch: the rest waits behind it) reaches only C, unacknowledged. Wait
   `settle`, well below the replica lag time, so that L keeps B in the ISR.
2. Also cut C off from B (C still reaches the controller: it stays unfenced and in the
   ISR, but can neither fetch from B nor truncate against it). kill -9 L, wait until B
   leads (epoch e+1), wait `lead` (below the lag time, or B drops C from the ISR): B
   appends records of epoch e+1 at the offsets where C holds L's epoch-e tail.
3. kill -9 B, wait until C leads (epoch e+2; C never saw epoch e+1). Its ISR is C alone:
   it takes no acks=all write until a replica rejoins.
4. Heal the cuts, start L and wait until it is back in the ISR, wait `settle` (C, whose ISR
   now meets min.insync.replicas, appends in epoch e+2: before Kafka 2.0.1 a leader records
   its epoch only with its first append, KAFKA-7415, and B asking C earlier would get no
   answer and truncate to its high watermark), start B and wait until it is back. B asks C
   where epoch e+1 ends: `kip101` answers the start of epoch e+2 (C's log end when it took over), and B
   keeps whole batches of its epoch-(e+1) records below it -> replica-divergence, when C's
   tail reaches past B's first batch; `kip279`/`kip320` answer (epoch e, that offset), and
   B cuts at its own end of epoch e. `hw`: B cuts at its high watermark, below all of it.

So a scenario diverges kip101 replicas only when L's last request carried a batch for P
and B's first batch is not longer than it (B's truncation drops a whole batch): it finds
the weakness in some runs, not each; a producer sending one record per batch
(`producer.batch_messages = 1`) meets that condition whenever L's tail holds a record.

Where the controller is a broker (stock Kafka, ZooKeeper mode) it must reach B and C after
the cuts, which only a broker outside P's replicas does (a fourth broker: `--nodes 4`), or
be B itself (it then tells itself that it leads, but C's metadata goes stale, and producers
that ask C go on sending to the dead L: B rarely gets a record; measured in docs/KAFKA.md);
never L (the controller elected after L's death might be C, which cannot reach B) or C.
Step 0 is then left out (restarting B would move the controller away); B may lead another
partition, whose stalled send holds the producer's connection to B until its request times
out, so B leads for `lead_with_controller` seconds (longer than `lead`, still below the lag
time). A randomly drawn partition is swapped for one whose roles fit. If L's successor is not B,
steps 2-3 stop there and the cluster is healed. The scenario's info value names the roles and
each leader and epoch seen.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fencepost.clusters import ClusterConfigError, HostError, PartitionView
from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.grudges import isolate_from
from fencepost.nemesis.scenarios import SETTLE_S, Scenario
from fencepost.nemesis.spec import FaultSpec

LEAD_S = 2.0  # B's time as leader: below the own system's replica lag time (5 s)
LEAD_WITH_CONTROLLER_S = 3.0  # ... where B is the controller and may lead another partition (Kafka's lag: 5 s)


@dataclass(frozen=True)
class Roles:
    leader: str  # L
    next_leader: str  # B: the follower the controller elects when L is gone
    other: str  # C: elected after B, never sees B's epoch


def roles_for(view: PartitionView, controller: str | None = None) -> Roles | None:
    """L, B and C of a partition, or None when it has no leader, fewer than two followers in its
    ISR, or the controller is a broker that is L or C (see the module docstring)."""
    followers = [r for r in view.replicas if r in view.isr and r != view.leader]
    if view.leader is None or len(followers) < 2:
        return None
    if controller is not None and controller != followers[0] and controller in view.replicas:
        return None
    return Roles(view.leader, followers[0], followers[1])


class FastLeaderChange(Scenario):
    def __init__(self, spec: FaultSpec, settle: float = SETTLE_S, lead: float = LEAD_S,
                 lead_with_controller: float = LEAD_WITH_CONTROLLER_S) -> None:
        super().__init__(spec)
        self.settle = settle
        self.lead = lead
        self.lead_with_controller = lead_with_controller

    def run(self, ctx: NemesisContext, done: dict[str, Any]) -> None:
        self.await_traffic(ctx)
        controller = ctx.cluster.system.controller_broker(ctx.cluster.hosts)
        view, roles = self._choose_roles(ctx, ctx.await_leader(self.chosen), controller)
        leader, next_leader, other = roles.leader, roles.next_leader, roles.other
        done.update(partition=self.partition, leader=leader, next_leader=next_leader, other=other,
                    leader_epoch=view.leader_epoch)
        lead = self.lead if controller is None else self.lead_with_controller
        if controller is None and self._leads_elsewhere(ctx, next_leader):
            done.update(restarted_first=next_leader)
            self.stop_cleanly(ctx, next_leader)  # its leaderships move away
            self.start_node(ctx, next_leader)
            self.await_isr(ctx, next_leader)
        self.cut_off(ctx, isolate_from(next_leader, [leader]))
        time.sleep(self.settle)  # L's appends reach only C
        self.cut_off(ctx, isolate_from(other, [next_leader]))  # added to the first cut
        self.kill(ctx, leader)
        second = self.await_leader(ctx, (leader,))
        done.update(second_leader=second.leader, second_leader_epoch=second.leader_epoch)
        if second.leader == next_leader:
            time.sleep(lead)  # B appends epoch e+1 records where C holds L's tail
            self.kill(ctx, next_leader)
            third = self.await_leader(ctx, (leader, next_leader))
            done.update(third_leader=third.leader, third_leader_epoch=third.leader_epoch)
        self.heal_cut(ctx)
        # L first: once L is back in C's ISR, C takes writes and so records epoch e+2 (before
        # Kafka 2.0.1 a new leader records its epoch only with its first append, KAFKA-7415);
        # B, asking C where epoch e+1 ends before that, gets no answer and truncates to its HW.
        for node in [leader, *sorted(self.down - {leader, next_leader})]:
            if node in self.down:
                self.start_node(ctx, node)
        self.await_isr(ctx, leader)
        time.sleep(self.settle)  # C appends in epoch e+2
        if next_leader in self.down:
            self.start_node(ctx, next_leader)
        self.await_isr(ctx, next_leader)

    def _leads_elsewhere(self, ctx: NemesisContext, node: str) -> bool:
        """Whether `node` leads another partition of the topic (its connections would be held up by
        that partition's stalled sends, and P's would never reach it)."""
        return any(ctx.view(p).leader == node for p in ctx.cluster.partitions(ctx.topic) if p != self.partition)

    def _choose_roles(self, ctx: NemesisContext, view: PartitionView,
                      controller: str | None) -> tuple[PartitionView, Roles]:
        """This partition's view and roles, or another partition's when this one was drawn at random
        and its roles do not fit; ClusterConfigError / HostError saying what is missing."""
        if len(view.replicas) < 3:
            raise ClusterConfigError(f"fast-leader-change needs a replication factor of at least 3; "
                                     f"{ctx.topic}-{self.partition} has replicas {', '.join(view.replicas)}: "
                                     f"create the topic with RF >= 3")
        for candidate in self.candidate_views(ctx, view):
            roles = roles_for(candidate, controller)
            if roles is not None:
                self.partition = candidate.partition
                return candidate, roles
        where = "" if controller is None else (f", with the controller {controller} outside its replicas "
                                               "(a fourth broker) or its first follower")
        raise HostError(f"fast-leader-change: {ctx.topic}-{self.partition} needs a leader and two followers in "
                        f"its ISR{where}; it has ISR {', '.join(view.isr) or 'empty'}: wait until replicas "
                        f"have caught up")
