"""Faults of the network beyond node-to-node partitions: the harness's clients cut off from a
broker, and degraded packets (tc netem).

| fault | start | stop |
|---|---|---|
| client-partition | `start-client-partition` {target, grudge: {node: ["clients"]}} — the node drops the clients' address (`Cluster.partition`), the brokers still see each other | `stop-client-partition` {grudge} — exactly those cuts lifted (`Cluster.reconnect`); other partitions stay |
| netem | `start-netem` {target, nodes, netem: {delay_ms, ...}} — `tc qdisc replace ... netem` on each node | `stop-netem` {nodes} — the qdisc removed |

Role targets (`leader`, `follower`, `group-coordinator`) also record what they resolved to.
"""
from __future__ import annotations

from fencepost.nemesis.context import NemesisContext
from fencepost.nemesis.faults import Fault, ProcessFault
from fencepost.nemesis.grudges import Grudge, from_clients, grudge_json
from fencepost.nemesis.netem import NetemOptions
from fencepost.nemesis.recording import recorded
from fencepost.nemesis.spec import FaultSpec, fault_ops
from fencepost.nemesis.targets import pick_nodes

CLIENTS = "clients"  # the grudge peer standing for the harness's clients (clusters.cluster.CLIENTS)


class ClientPartitionFault(Fault):
    def __init__(self, spec: FaultSpec) -> None:
        super().__init__(spec)
        self.grudge: Grudge | None = None

    @property
    def active(self) -> bool:
        return self.grudge is not None

    def start(self, ctx: NemesisContext) -> None:
        target = self.spec.target
        with recorded(ctx.recorder, fault_ops("client-partition")[0], {"target": target}) as op:
            node, about = self._role_node(ctx)
            if "skipped" in about:
                op.value = self.done = {"target": target, **about}
                return
            if node is None:  # `one`
                node = pick_nodes("one", ctx.cluster.broker_nodes, ctx.cluster.control_nodes, ctx.rng)[0]
            self.grudge = from_clients(node, CLIENTS)
            op.value = self.done = {"target": target, **about, "grudge": grudge_json(self.grudge)}
            ctx.cluster.partition(self.grudge)

    def stop(self, ctx: NemesisContext) -> None:
        if self.grudge is None:
            return
        with recorded(ctx.recorder, fault_ops("client-partition")[1], {"grudge": grudge_json(self.grudge)}):
            ctx.cluster.reconnect(self.grudge)
        self.grudge = None


class NetemFault(ProcessFault):
    """tc netem on each node a target picks (the nodes as for pause and kill)."""
    start_f, stop_f = fault_ops("netem")

    def settings(self, ctx: NemesisContext) -> dict:
        self._options = NetemOptions.from_mapping(ctx.netem)
        return {"netem": self._options.to_json()}

    def apply(self, ctx: NemesisContext, node: str) -> None:
        ctx.cluster.shape(node, self._options.tc_args())

    def undo(self, ctx: NemesisContext, node: str) -> None:
        ctx.cluster.unshape(node)
