"""The faults that stay active until stopped: partition, pause, kill, power-cut.

A `Fault` object is one application of a fault: `start(ctx)` decides whom it
hits (from the context's seeded RNG and, for `leader`, the control plane's
view) and applies it; `stop(ctx)` undoes what start decided — also after a start
that failed half-way, so the driver keeps the object as soon as it exists.
Each start and stop is one recorded action (an `invoke` line, then an `info` line
with what was done):

| fault | start | stop |
|---|---|---|
| partition | `start-partition` {target, grudge} — cluster.partition(grudge) | `stop-partition` {grudge} — cluster.heal_network() (every cut, as Jepsen's :stop) |
| pause | `pause` {target, nodes} — SIGSTOP | `resume` {nodes} — SIGCONT |
| kill | `kill` {target, nodes} — kill -9 | `start` {nodes} — the node's processes started again |
| power-cut | `power-cut` {target, nodes, lost} — the node's lazy disks drop what is not durable, kill -9, the disks mounted again (`Cluster.power_cut`); `lost` per node: bytes, files, entries | `start` {nodes} |

With a role target (`leader`, `follower`, `active-controller`, `group-coordinator`:
nemesis/roles.py) the values also say what the role resolved to (for `leader`: the topic,
partition and leader).

The faults added since (client-partition, netem: nemesis/network_faults.py; restart,
rolling-restart: nemesis/restarts.py; reassign: nemesis/reassign.py) are built the same way.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.grudges import Grudge, grudge_for, grudge_json
from fencepost.nemesis.recording import recorded
from fencepost.nemesis.roles import resolve_role
from fencepost.nemesis.spec import ROLE_TARGETS, FaultSpec, fault_ops
from fencepost.nemesis.targets import pick_nodes


class Fault(ABC):
    """One application of a fault (a new object per start)."""

    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec
        self.done: dict[str, Any] | None = None  # the info value of the start: what it did

    @abstractmethod
    def start(self, ctx: NemesisContext) -> None:
        """Decide and apply; recorded. Raises what the cluster raised (after recording it)."""

    @abstractmethod
    def stop(self, ctx: NemesisContext) -> None:
        """Undo what start decided (idempotent; nothing when start decided nothing); recorded."""

    @property
    @abstractmethod
    def active(self) -> bool:
        """Whether there is something for stop() to undo."""

    def _role_node(self, ctx: NemesisContext) -> tuple[str | None, dict[str, Any]]:
        """The node a role target (`leader`, `follower`, ...) hits and what the op records of it;
        (None, {}) for other targets. None with `"skipped"` recorded when the role has no node
        within a short wait: the fault then does nothing, and the schedule goes on."""
        if self.spec.target not in ROLE_TARGETS:
            return None, {}
        return resolve_role(ctx, self.spec.target)


class PartitionFault(Fault):
    def __init__(self, spec: FaultSpec) -> None:
        super().__init__(spec)
        self.grudge: Grudge | None = None

    @property
    def active(self) -> bool:
        return self.grudge is not None

    def start(self, ctx: NemesisContext) -> None:
        target = self.spec.target
        with recorded(ctx.recorder, fault_ops("partition")[0], {"target": target}) as op:
            leader, about = self._role_node(ctx)
            if "skipped" in about:
                op.value = self.done = {"target": target, **about}
                return
            cluster = ctx.cluster
            self.grudge = grudge_for(target, cluster.broker_nodes, cluster.control_nodes, ctx.rng, leader)
            op.value = self.done = {"target": target, **about, "grudge": grudge_json(self.grudge)}
            cluster.partition(self.grudge)

    def stop(self, ctx: NemesisContext) -> None:
        if self.grudge is None:
            return
        with recorded(ctx.recorder, fault_ops("partition")[1], {"grudge": grudge_json(self.grudge)}):
            ctx.cluster.heal_network()
        self.grudge = None


class ProcessFault(Fault):
    """A fault applied node by node to the processes of the nodes a target picks."""
    start_f: str
    stop_f: str

    def __init__(self, spec: FaultSpec) -> None:
        super().__init__(spec)
        self.nodes: list[str] = []

    @property
    def active(self) -> bool:
        return bool(self.nodes)

    def start(self, ctx: NemesisContext) -> None:
        target = self.spec.target
        with recorded(ctx.recorder, self.start_f, {"target": target}) as op:
            leader, about = self._role_node(ctx)
            if "skipped" in about:
                op.value = self.done = {"target": target, **about, "nodes": []}
                return
            cluster = ctx.cluster
            self.nodes = pick_nodes(target, cluster.broker_nodes, cluster.control_nodes, ctx.rng, leader)
            op.value = self.done = {"target": target, **about, "nodes": self.nodes, **self.settings(ctx)}
            for node in self.nodes:
                self.apply(ctx, node)

    def stop(self, ctx: NemesisContext) -> None:
        if not self.nodes:
            return
        control = ctx.cluster.control_nodes
        order = [n for n in self.nodes if n in control] + [n for n in self.nodes if n not in control]
        with recorded(ctx.recorder, self.stop_f, {"nodes": self.nodes}):
            for node in order:
                self.undo(ctx, node)
        self.nodes = []

    def settings(self, ctx: NemesisContext) -> dict[str, Any]:
        """What the start's info records beside the nodes (the netem fault: its settings)."""
        return {}

    @abstractmethod
    def apply(self, ctx: NemesisContext, node: str) -> None: ...

    @abstractmethod
    def undo(self, ctx: NemesisContext, node: str) -> None: ...


class PauseFault(ProcessFault):
    start_f, stop_f = fault_ops("pause")

    def apply(self, ctx: NemesisContext, node: str) -> None:
        ctx.cluster.pause(node)

    def undo(self, ctx: NemesisContext, node: str) -> None:
        ctx.cluster.resume(node)


class KillFault(ProcessFault):
    start_f, stop_f = fault_ops("kill")

    def apply(self, ctx: NemesisContext, node: str) -> None:
        ctx.cluster.kill(node)

    def undo(self, ctx: NemesisContext, node: str) -> None:
        """Start what is not running (a no-op for a node another fault restarted already)."""
        ctx.cluster.start(node, ctx.timeout)


class PowerCutFault(KillFault):
    """A power cut of each node: what its lazy disks hold that was not made durable is lost, its
    processes are killed (the cluster must run on lazy disks: checked up front, catalog.check_fault)."""
    start_f, stop_f = fault_ops("power-cut")

    def apply(self, ctx: NemesisContext, node: str) -> None:
        loss = ctx.cluster.power_cut(node)
        if self.done is not None:
            self.done.setdefault("lost", {})[node] = loss.to_json()
