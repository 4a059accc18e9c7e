"""From a FaultSpec to its Fault object, and whether a cluster can take a fault at all —
asked up front, before anything runs, so a run is refused with a configuration error
(exit 254) rather than failing its first action.
"""
from __future__ import annotations

from clusters.cluster import Cluster
from clusters.errors import ClusterConfigError
from nemesis.faults import Fault, KillFault, PartitionFault, PauseFault, PowerCutFault
from nemesis.fast_leader_change import FastLeaderChange
from nemesis.scenarios import LeaderBounce, Zombie
from nemesis.spec import FaultSpec
from nemesis.targets import least_brokers

FAULT_CLASSES: dict[str, type[Fault]] = {
    "partition": PartitionFault, "pause": PauseFault, "kill": KillFault, "power-cut": PowerCutFault,
    "leader-bounce": LeaderBounce, "zombie": Zombie, "fast-leader-change": FastLeaderChange,
}
LEAST_BROKERS = {("partition", "minority"): 3, ("partition", "bridge"): 3, ("partition", "majorities-ring"): 3}
POWER_CUT_FIX = ("start the cluster so that kill -9 loses unflushed writes: for the own system the flush mode "
                 "lazy (`fencepost cluster up --flush lazy`, or system option flush = \"lazy\")")


def new_fault(spec: FaultSpec) -> Fault:
    return FAULT_CLASSES[spec.name](spec)


def check_fault(spec: FaultSpec, cluster: Cluster) -> None:
    """ClusterConfigError saying what to change when this cluster cannot take `spec`."""
    if spec.kind.cuts_network and not cluster.supports_partitions:
        try:
            cluster.partition({})  # raises the backend's own explanation
        except ClusterConfigError as e:
            raise ClusterConfigError(f"fault {spec}: {e}") from None
        raise ClusterConfigError(f"fault {spec}: the {cluster.spec.backend} backend cannot make partitions")
    if spec.name == "power-cut" and not cluster.system.loses_unflushed_writes_on_kill():
        raise ClusterConfigError(f"fault {spec}: a kill -9 of this {cluster.system.name} cluster loses no "
                                 f"unflushed write, so it would be a plain kill; {POWER_CUT_FIX}")
    brokers = len(cluster.broker_nodes)
    least = max(spec.kind.least_brokers, LEAST_BROKERS.get((spec.name, spec.target), least_brokers(spec.target)))
    if brokers < least:
        raise ClusterConfigError(f"fault {spec} needs at least {least} brokers; cluster {cluster.name} has "
                                 f"{brokers}: choose another target or a bigger cluster")
    if spec.target == "controller" and not cluster.control_nodes:
        raise ClusterConfigError(f"fault {spec}: the {cluster.system.name} system has no control-plane nodes")
