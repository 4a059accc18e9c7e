"""Clean restarts as faults: SIGTERM (the broker's controlled shutdown: it hands its
leaderships over before it exits), then the node started again. They heal themselves:
nothing stays active, so a schedule only starts them.

| fault | action (invoke -> info) | its steps |
|---|---|---|
| `restart` | `restart` {target} -> {target, nodes} (+ the role a role target resolved to) | `stop` {nodes: [n], scenario: "restart"} for each node, then `start` {nodes: [n], ...} for each (control plane first) |
| `rolling-restart` | `rolling-restart` {target: "all"} -> {target, nodes: the order} | for each broker in turn (seeded order; the active controller last when it is a broker): `stop`, `start`, then `await-isr` {node, topic, partitions}: until it is back in the ISR of every partition of the topic it replicates |

A node stopped is always started again, also when a step failed (the error is recorded and
the nemesis goes on; the final heal starts whatever is still down). Waits are bounded by the
context's timeout; a broker that will never rejoin (it gave a partition up:
`Recovery.not_rejoining`, clusters/recovery.py) ends the wait at once.
"""
from __future__ import annotations

from fencepost.clusters import ClusterConfigError, HostError, NotRejoining
from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.faults import Fault
from fencepost.nemesis.recording import recorded
from fencepost.nemesis.targets import pick_nodes


class _SelfHealing(Fault):
    """Runs to its end in start(); stop() has nothing to undo."""

    @property
    def active(self) -> bool:
        return False

    def stop(self, ctx: NemesisContext) -> None:
        """Nothing: the nodes were started again before start() returned."""

    def _stop_node(self, ctx: NemesisContext, node: str) -> None:
        with recorded(ctx.recorder, "stop", {"nodes": [node], "scenario": self.spec.name}):
            ctx.cluster.stop(node, ctx.timeout)

    def _start_node(self, ctx: NemesisContext, node: str) -> None:
        with recorded(ctx.recorder, "start", {"nodes": [node], "scenario": self.spec.name}):
            ctx.cluster.start(node, ctx.timeout)


class RestartFault(_SelfHealing):
    def start(self, ctx: NemesisContext) -> None:
        target = self.spec.target
        with recorded(ctx.recorder, "restart", {"target": target}) as op:
            node, about = self._role_node(ctx)
            if "skipped" in about:
                op.value = self.done = {"target": target, **about, "nodes": []}
                return
            cluster = ctx.cluster
            nodes = pick_nodes(target, cluster.broker_nodes, cluster.control_nodes, ctx.rng, node)
            op.value = self.done = {"target": target, **about, "nodes": nodes}
            stopped: list[str] = []
            try:
                for n in nodes:
                    self._stop_node(ctx, n)
                    stopped.append(n)
            finally:
                control = cluster.control_nodes
                for n in [n for n in stopped if n in control] + [n for n in stopped if n not in control]:
                    self._start_node(ctx, n)


class RollingRestart(_SelfHealing):
    def start(self, ctx: NemesisContext) -> None:
        with recorded(ctx.recorder, "rolling-restart", {"target": self.spec.target}) as op:
            cluster = ctx.cluster
            order = sorted(cluster.broker_nodes)
            ctx.rng.shuffle(order)
            controller = _controller_if_any(ctx)
            if controller in order:
                order.remove(controller)
                order.append(controller)  # as operators do: the controller moves once, at the end
            op.value = self.done = {"target": self.spec.target, "nodes": order}
            for node in order:
                self._stop_node(ctx, node)
                self._start_node(ctx, node)
                self._await_back(ctx, node)

    def _await_back(self, ctx: NemesisContext, node: str) -> None:
        """Until `node` is in the ISR of every partition of the topic it is a replica of."""
        cluster = ctx.cluster
        partitions = cluster.wait_for(lambda: cluster.partitions(ctx.topic), ctx.timeout,
                                      f"the partitions of topic {ctx.topic!r}")
        with recorded(ctx.recorder, "await-isr", {"node": node, "topic": ctx.topic, "partitions": partitions,
                                                  "in_isr": True, "scenario": self.spec.name}):
            def back() -> bool:
                for p in partitions:
                    view = cluster.partition_view(ctx.topic, p)
                    if node in view.replicas and node not in view.isr:
                        why = cluster.recovery.not_rejoining(node, ctx.topic, p)
                        if why:
                            raise NotRejoining(f"{ctx.topic}-{p}: {why}")
                        return False
                return True
            cluster.wait_for(back, ctx.timeout, f"{node} back in every ISR of {ctx.topic}")


def _controller_if_any(ctx: NemesisContext) -> str | None:
    try:
        return ctx.cluster.active_controller()
    except (HostError, ClusterConfigError):  # a system without the notion: any order will do
        return None
