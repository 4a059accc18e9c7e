"""Targeted scenarios: fixed sequences of faults against one partition of the topic, each
step recorded, each wait on the control plane's view bounded by the context's timeout,
and the cluster always left healed (whatever the scenario cut, paused or stopped is
undone, recorded, also when a step failed).

- `leader-bounce` (KIP-101 scenario 1, KAFKA-1211): with leader L and F the follower the
  controller would elect next (the first ISR member after L in replica order): pause L;
  kill -9 F and start it (it truncates — to its HW checkpoint in `hw` mode — and cannot
  refetch from the paused L); after `settle` seconds kill -9 L; wait for a new leader;
  start L; wait until L is back in the ISR. Where a restarted broker leaves the ISR (stock
  Kafka: its ZooKeeper session ends), F is made to truncate by a leader change instead,
  with G the follower elected next and F the other — the controller, when the controller
  is a broker (ZooKeeper mode), so that F hears of the change: pause G for `settle`
  seconds (L's high watermark, and the one F learns, wait for G); cut F off from L and G;
  resume G and wait `settle` (G catches up: L acknowledges records F holds beyond the
  high watermark it knows); kill -9 L; wait for G to lead (F truncates and cannot
  refetch); kill -9 G; wait for F to lead; heal; start L and G; wait until both are in
  the ISR. That needs partitions and RF >= 3.
- `zombie` (KAFKA-6880, KIP-320): first wait until writes to the partition are being
  acknowledged (as fast-leader-change does: the bug needs records in flight); Z, a random follower in the
  ISR (where the controller is a broker: not the controller, and L the partition's preferred replica), is
  cut off from the control plane only (it still reaches L and the other brokers); wait until Z is fenced
  (out of the ISR, or a new leader epoch: the controller bumps it when it drops Z, and
  before Kafka 2.1 the leader may take a still-fetching Z back in at once); pause the other followers
  (where the controller is a broker: only L's successor, so that the controller is never paused) for
  `hold` seconds (writes L takes then reach Z, never the successor), stop L cleanly (controlled shutdown:
  leadership moves to the paused successor) and resume them as soon as a leader other than L and Z is named
  (at most HANDOVER_WAIT_S later; not when L has exited, which on Kafka takes longer than a
  ZooKeeper session); wait for the new leader L2; start L, wait until it is in the ISR;
  stop L2 (leadership moves again), wait for a leader, start L2, wait until it is in the
  ISR; heal the cut and wait until Z is back in the ISR and counted alive by the control
  plane again (registered in ZooKeeper). Needs partitions and RF >= 3.

The scenario itself is one action (f = its name) around its steps: invoke
`{"topic", "partition"}`, info with the nodes it chose and the leaders it saw.
Steps are actions of their own, their value naming the scenario: `pause`, `resume`,
`kill`, `stop` (clean), `start`, `start-partition`, `stop-partition`, and the waits
`await-leader`, `await-isr` and `await-fenced` (info: the view that ended the wait), and
`await-high-watermark` {partition, above, high_watermark, passed}.
"""
from __future__ import annotations

import time
from typing import Any, ContextManager

from fencepost.clusters import ClusterConfigError, HostError, NotRejoining, PartitionView
from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.faults import Fault
from fencepost.nemesis.grudges import Grudge, grudge_json, isolate_from
from fencepost.nemesis.recording import Outcome, recorded
from fencepost.nemesis.spec import RANDOM_PARTITION, FaultSpec
from fencepost.nemesis.watermarks import await_above, high_watermark

ACTION_ERRORS = (HostError, ClusterConfigError, OSError)
SETTLE_S = 1.0
ZOMBIE_HOLD_S = 1.0  # below the own system's session (3 s) and replica lag (5 s) timeouts
HANDOVER_WAIT_S = 1.5  # held + this stays below a session (3 s): a held successor keeps its session
TRAFFIC_RECORDS = 20  # acknowledged records a scenario that needs writes in flight waits for first
TRAFFIC_WAIT_S = 10.0  # ... at most: a run's producers start within seconds; a one-shot has none


class Scenario(Fault):
    """Runs to its end in start(); nothing stays active, stop() has nothing to undo."""

    def __init__(self, spec: FaultSpec) -> None:
        super().__init__(spec)
        self.paused: set[str] = set()
        self.down: set[str] = set()
        self.cut = False
        self.partition: int | None = None

    @property
    def active(self) -> bool:
        return False

    @property
    def chosen(self) -> int:
        """The partition start() chose: what run() and its steps act on."""
        assert self.partition is not None, "start() chooses the partition before run()"
        return self.partition

    def stop(self, ctx: NemesisContext) -> None:
        """Nothing: a scenario heals itself before start() returns."""

    def start(self, ctx: NemesisContext) -> None:
        wanted = None if self.spec.target == RANDOM_PARTITION else int(self.spec.target)
        with recorded(ctx.recorder, self.spec.name, {"topic": ctx.topic, "partition": wanted}) as op:
            self.partition = ctx.choose_partition(wanted)
            op.value = self.done = {"topic": ctx.topic, "partition": self.partition}
            try:
                self.run(ctx, self.done)
            except BaseException:
                self._restore(ctx, raise_errors=False)
                raise
            self._restore(ctx, raise_errors=True)

    def run(self, ctx: NemesisContext, done: dict[str, Any]) -> None:
        """The steps; `done` (the scenario's info value) gets the nodes chosen and the leaders seen."""
        raise NotImplementedError

    # -- steps: each recorded, each remembered for _restore ---------------------------------

    def _step(self, ctx: NemesisContext, f: str, value: dict[str, Any]) -> ContextManager[Outcome]:
        return recorded(ctx.recorder, f, {**value, "scenario": self.spec.name})

    def pause(self, ctx: NemesisContext, nodes: list[str]) -> None:
        with self._step(ctx, "pause", {"nodes": nodes}):
            for node in nodes:
                self.paused.add(node)
                ctx.cluster.pause(node)

    def resume(self, ctx: NemesisContext, nodes: list[str]) -> None:
        with self._step(ctx, "resume", {"nodes": nodes}):
            for node in nodes:
                ctx.cluster.resume(node)
                self.paused.discard(node)

    def kill(self, ctx: NemesisContext, node: str) -> None:
        with self._step(ctx, "kill", {"nodes": [node]}):
            self.down.add(node)
            ctx.cluster.kill(node)
            self.paused.discard(node)

    def stop_cleanly(self, ctx: NemesisContext, node: str) -> None:
        """SIGTERM: the broker's controlled shutdown moves its leaderships away."""
        with self._step(ctx, "stop", {"nodes": [node]}):
            self.down.add(node)
            ctx.cluster.stop(node, ctx.timeout)

    def start_node(self, ctx: NemesisContext, node: str) -> None:
        with self._step(ctx, "start", {"nodes": [node]}):
            ctx.cluster.start(node, ctx.timeout)
            self.down.discard(node)

    def cut_off(self, ctx: NemesisContext, grudge: Grudge) -> None:
        with self._step(ctx, "start-partition", {"grudge": grudge_json(grudge)}):
            self.cut = True
            ctx.cluster.partition(grudge)

    def heal_cut(self, ctx: NemesisContext) -> None:
        with self._step(ctx, "stop-partition", {}):
            ctx.cluster.heal_network()
            self.cut = False

    def await_leader(self, ctx: NemesisContext, not_in: tuple[str, ...]) -> PartitionView:
        with self._step(ctx, "await-leader", {"partition": self.partition, "not_in": list(not_in)}) as op:
            view = ctx.await_leader(self.chosen, not_in)
            op.value = {**op.value, **view_json(view)}
        return view

    def await_isr(self, ctx: NemesisContext, node: str, member: bool = True,
                  registered: bool = False) -> PartitionView:
        """Until `node` is in (out of) the partition's ISR — and with `registered`, also counted as
        alive by the control plane where it can tell (Cluster.registered_brokers); a wait to rejoin
        ends at once, with NotRejoining, when the node never will (its broker exited, or it gave the
        partition up)."""
        what = f"{node} {'in' if member else 'out of'} the ISR" + (" and registered" if registered else "")

        def reached(view: PartitionView) -> bool:
            if (node in view.isr) == member:
                return not registered or node in (ctx.cluster.registered_brokers() or {node})
            if member and (why := ctx.cluster.recovery.not_rejoining(node, ctx.topic, view.partition)):
                raise NotRejoining(f"{ctx.topic}-{view.partition}: {why}")
            return False
        value = ({"partition": self.partition, "node": node, "in_isr": member}
                 | ({"registered": True} if registered else {}))
        with self._step(ctx, "await-isr", value) as op:
            view = ctx.await_view(self.chosen, reached, what)
            op.value = {**op.value, **view_json(view)}
        return view

    def high_watermark(self, ctx: NemesisContext) -> int | None:
        """The partition's high watermark, asked of its leader (None when it does not answer)."""
        return high_watermark(ctx.cluster.bootstrap, ctx.topic, self.chosen)

    def await_high_watermark(self, ctx: NemesisContext, above: int | None,
                             unknown: str = "no checkpointed high watermark", timeout: float | None = None) -> None:
        """Until the partition's high watermark (asked of its leader) is above `above`; recorded as
        `await-high-watermark`. Not reached in `timeout` (default the context's): recorded, and the
        scenario goes on. `above` None: skipped, and `unknown` says why."""
        with self._step(ctx, "await-high-watermark", {"partition": self.partition, "above": above}) as op:
            if above is None:
                op.value = {**op.value, "skipped": unknown}
                return
            reached = await_above(ctx.cluster.bootstrap, ctx.topic, self.chosen, above,
                                  ctx.timeout if timeout is None else timeout)
            op.value = {**op.value, "high_watermark": reached, "passed": reached is not None and reached > above}

    def await_traffic(self, ctx: NemesisContext, records: int = TRAFFIC_RECORDS) -> None:
        """Until `records` more writes to the partition are acknowledged: a scenario whose bug needs
        records in flight, started before the producers reach the partition (the first seconds of a
        run on stock Kafka), would act on an empty log and find nothing. Without writes (a one-shot
        `fencepost nemesis start`) it goes on after TRAFFIC_WAIT_S."""
        start = self.high_watermark(ctx)
        self.await_high_watermark(ctx, None if start is None else start + records - 1,
                                  unknown="the partition's leader did not answer", timeout=TRAFFIC_WAIT_S)

    def candidate_views(self, ctx: NemesisContext, view: PartitionView) -> list[PartitionView]:
        """This partition's view, then — when it was drawn at random — every other partition's, in
        a seeded random order: where a scenario may look when its roles do not fit here."""
        candidates = [view]
        if self.spec.target == RANDOM_PARTITION and ctx.partition is None:
            others = [p for p in ctx.cluster.partitions(ctx.topic) if p != self.partition]
            candidates += [ctx.view(p) for p in ctx.rng.sample(others, len(others))]
        return candidates

    def _restore(self, ctx: NemesisContext, raise_errors: bool) -> None:
        """Undo what is still cut, paused or down (control plane first); errors raised after trying all."""
        errors = []
        control = ctx.cluster.control_nodes
        undo = ([lambda: self.heal_cut(ctx)] if self.cut else []) \
            + ([lambda: self.resume(ctx, sorted(self.paused))] if self.paused else []) \
            + [lambda n=n: self.start_node(ctx, n) for n in sorted(self.down, key=lambda n: (n not in control, n))]
        for action in undo:
            try:
                action()
            except ACTION_ERRORS as e:
                errors.append(str(e))
        if errors and raise_errors:
            raise HostError(f"{self.spec.name} could not undo all it did: {'; '.join(errors)}")


class LeaderBounce(Scenario):
    def __init__(self, spec: FaultSpec, settle: float = SETTLE_S) -> None:
        super().__init__(spec)
        self.settle = settle

    def run(self, ctx: NemesisContext, done: dict[str, Any]) -> None:
        view = ctx.await_leader(self.chosen)
        leader = view.leader
        if len(view.replicas) < 2:
            raise ClusterConfigError(f"leader-bounce needs a replication factor of at least 2; "
                                     f"{ctx.topic}-{self.partition} has replicas {', '.join(view.replicas)}")
        followers = [r for r in view.replicas if r in view.isr and r != leader]
        if not followers:
            raise HostError(f"leader-bounce: {ctx.topic}-{self.partition} has no follower in its ISR "
                            f"({', '.join(view.isr)}) to bounce; wait until replicas have caught up")
        if not ctx.cluster.system.restart_keeps_isr_place():
            return self._through_a_leader_it_cannot_reach(ctx, done, view)
        follower = followers[0]  # the one the controller elects next
        done.update(leader=leader, follower=follower, leader_epoch=view.leader_epoch)
        self.pause(ctx, [leader])
        self.kill(ctx, follower)
        self.start_node(ctx, follower)
        time.sleep(self.settle)  # the follower truncates and asks the paused leader in vain
        self.kill(ctx, leader)
        elected = self.await_leader(ctx, (leader,))
        done.update(new_leader=elected.leader, new_leader_epoch=elected.leader_epoch)
        self.start_node(ctx, leader)
        self.await_isr(ctx, leader)


    def _through_a_leader_it_cannot_reach(self, ctx: NemesisContext, done: dict[str, Any],
                                          view: PartitionView) -> None:
        """Where a restarted broker leaves the ISR (stock Kafka), F truncates on a leader change it
        hears of while cut off; G is the follower elected next, F the other (the controller, when
        the controller is a broker, so that F hears of the change)."""
        view, (next_leader, follower) = self._bounce_roles(ctx, view)
        leader = view.leader
        done.update(partition=self.partition, leader=leader, follower=follower, next_leader=next_leader,
                    leader_epoch=view.leader_epoch)
        self.pause(ctx, [next_leader])
        time.sleep(self.settle)  # G falls behind; L's high watermark waits for it, F's with it
        self.cut_off(ctx, {follower: frozenset({leader, next_leader})})
        self.resume(ctx, [next_leader])
        time.sleep(self.settle)  # G catches up: L acknowledges what F holds beyond the HW F knows
        self.kill(ctx, leader)
        self.await_leader(ctx, (leader,))  # G: F becomes its follower and truncates
        self.kill(ctx, next_leader)
        elected = self.await_leader(ctx, (leader, next_leader))
        done.update(new_leader=elected.leader, new_leader_epoch=elected.leader_epoch)
        self.heal_cut(ctx)
        for node in (leader, next_leader):
            self.start_node(ctx, node)
        for node in (leader, next_leader):
            self.await_isr(ctx, node)

    def _bounce_roles(self, ctx: NemesisContext, view: PartitionView) -> tuple[PartitionView, tuple[str, str]]:
        """(the view, (G, F)) for this partition, or for another one when the partition was drawn
        at random and roles do not fit here."""
        controller = ctx.cluster.system.controller_broker(ctx.cluster.hosts)
        for candidate in self.candidate_views(ctx, view):
            followers = [r for r in candidate.replicas if r in candidate.isr and r != candidate.leader]
            if candidate.leader is not None and len(followers) >= 2 and controller in (None, followers[1]):
                self.partition = candidate.partition
                return candidate, (followers[0], followers[1])
        where = "" if controller is None else f" with the controller {controller} as its second follower"
        raise HostError(f"leader-bounce: no partition of {ctx.topic} has a leader and two followers in its ISR"
                        f"{where}; wait until replicas have caught up (RF >= 3 needed)")


class Zombie(Scenario):
    def __init__(self, spec: FaultSpec, hold: float = ZOMBIE_HOLD_S) -> None:
        super().__init__(spec)
        self.hold = hold

    def run(self, ctx: NemesisContext, done: dict[str, Any]) -> None:
        self.await_traffic(ctx)
        view = ctx.await_leader(self.chosen)
        if len(view.replicas) < 3:
            raise ClusterConfigError(f"zombie needs a replication factor of at least 3; "
                                     f"{ctx.topic}-{self.partition} has replicas {', '.join(view.replicas)}")
        controller = ctx.cluster.system.controller_broker(ctx.cluster.hosts)
        view, zombie, successor = self._roles(ctx, view, controller)
        leader = view.leader
        # Where the controller runs apart, both other followers are held back; where it is a broker,
        # only L's successor, so that the controller (L or the third follower) is never paused.
        held = sorted(r for r in view.isr if r not in (leader, zombie)) if controller is None else [successor]
        done.update(partition=self.partition, leader=leader, zombie=zombie, leader_epoch=view.leader_epoch,
                    held=held)
        self.cut_off(ctx, isolate_from(zombie, ctx.cluster.control_nodes))
        self.await_fenced(ctx, zombie, view.leader_epoch)
        self.pause(ctx, held)
        time.sleep(self.hold)  # what the leader takes now reaches the zombie, never L's successor
        second = self.stop_handing_over(ctx, leader, zombie, held)
        self.start_node(ctx, leader)
        self.await_isr(ctx, leader)
        self.stop_cleanly(ctx, second)
        third = self.await_leader(ctx, (second, zombie))
        self.start_node(ctx, second)
        self.await_isr(ctx, second)
        done.update(leaders=[leader, second, third.leader], leader_epoch_after=third.leader_epoch)
        self.heal_cut(ctx)
        # In the ISR is not enough: before 2.1 the leader takes a still-fetching zombie back while
        # the controller counts it dead, and a scenario started then would wait for a fencing that
        # never comes (the zombie is fenced already).
        self.await_isr(ctx, zombie, registered=True)

    def stop_handing_over(self, ctx: NemesisContext, leader: str, zombie: str, held: list[str]) -> str:
        """Stop L cleanly and resume the held followers as soon as a leader other than L and Z is
        named (L's controlled shutdown has moved its leadership), not when L's process has exited;
        returns that leader. A Kafka broker takes 1-8 s to exit after its controlled shutdown: a
        successor held that long lost its ZooKeeper session (3 s), the controller took it out, the
        partition's ISR was the zombie alone and no leader could be elected until the cut healed.
        The `stop` step spans the whole stop; the wait for the hand-over (at most HANDOVER_WAIT_S:
        where no view names the successor while it is held, it is resumed then) and the resume are
        recorded inside it."""
        with self._step(ctx, "stop", {"nodes": [leader]}):
            self.down.add(leader)
            finish = ctx.cluster.begin_stop(leader)
            try:
                with self._step(ctx, "await-leader", {"partition": self.partition, "not_in": [leader, zombie]}) as op:
                    try:
                        view = ctx.await_leader(self.chosen, (leader, zombie), timeout=HANDOVER_WAIT_S)
                        op.value = {**op.value, **view_json(view)}
                    except HostError as e:
                        op.value = {**op.value, "not_yet": str(e)}
            finally:
                self.resume(ctx, held)
            finish(ctx.timeout)
        return self.await_leader(ctx, (leader, zombie)).leader

    def await_fenced(self, ctx: NemesisContext, zombie: str, epoch: int) -> PartitionView:
        """Until the controller has fenced Z: Z out of the ISR, or a new leader epoch (Kafka's
        controller bumps it when it drops a replica; before 2.1 the leader may take a zombie that
        still fetches back into the ISR within a moment, KAFKA-7128)."""
        fenced = {"partition": self.partition, "node": zombie, "leader_epoch": epoch}
        with self._step(ctx, "await-fenced", fenced) as op:
            view = ctx.await_view(self.chosen, lambda v: zombie not in v.isr or v.leader_epoch > epoch,
                                  f"{zombie} fenced (out of the ISR, or a leader epoch after {epoch})")
            op.value = {**op.value, **view_json(view)}
        return view

    def _roles(self, ctx: NemesisContext, view: PartitionView,
               controller: str | None) -> tuple[PartitionView, str, str]:
        """(the view, Z, L's successor) for this partition, or for another one when it was drawn at
        random and roles do not fit. The successor is the ISR member the controller elects when L
        stops: the first in replica order other than L and Z. Where the controller is a broker
        (Kafka's ZooKeeper mode) it must be neither Z (the controller fences a broker whose session
        ends, never itself) nor the successor (which is paused), and L must be the partition's
        preferred replica, so that leadership comes back to L — the broker Z still fetches from —
        when the successor stops."""
        for candidate in self.candidate_views(ctx, view):
            followers = [r for r in candidate.isr if r != candidate.leader]
            if candidate.leader is None or len(followers) < 2:
                continue
            if controller is None:
                zombie = ctx.rng.choice(sorted(followers))
                self.partition = candidate.partition
                return candidate, zombie, next(r for r in candidate.replicas if r in followers and r != zombie)
            if candidate.replicas[:1] != (candidate.leader,):
                continue
            for zombie in ctx.rng.sample(sorted(followers), len(followers)):
                successor = next(r for r in candidate.replicas if r in followers and r != zombie)
                if controller not in (zombie, successor):
                    self.partition = candidate.partition
                    return candidate, zombie, successor
        where = "" if controller is None else (f", led by its preferred replica, and followers that let the "
                                               f"controller {controller} be neither the zombie nor the next leader")
        raise HostError(f"zombie: no partition of {ctx.topic} has a leader and two followers in its ISR{where}; "
                        f"{ctx.topic}-{self.partition} has ISR {', '.join(view.isr) or 'empty'}: wait until "
                        "replicas have caught up")


def view_json(view: PartitionView) -> dict[str, Any]:
    return {"leader": view.leader, "leader_epoch": view.leader_epoch, "isr": list(view.isr)}
