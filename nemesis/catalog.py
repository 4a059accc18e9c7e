"""From a FaultSpec to its Fault object, and whether a cluster can take a fault at all —
asked up front, before anything runs, so a run is refused with a configuration error
(exit 254) rather than failing its first action.
"""
from __future__ import annotations

from fencepost.clusters import Cluster, ClusterConfigError
from fencepost.nemesis.durability import Kip101Divergence, LastReplicaStanding
from fencepost.nemesis.fast_leader_change import FastLeaderChange
from fencepost.nemesis.faults import Fault, KillFault, PartitionFault, PauseFault, PowerCutFault
from fencepost.nemesis.netem import NetemOptions
from fencepost.nemesis.network_faults import ClientPartitionFault, NetemFault
from fencepost.nemesis.reassign import ReassignFault
from fencepost.nemesis.restarts import RestartFault, RollingRestart
from fencepost.nemesis.scenarios import LeaderBounce, Zombie
from fencepost.nemesis.spec import LAZY_FAULTS, FaultSpec
from fencepost.nemesis.targets import least_brokers

FAULT_CLASSES: dict[str, type[Fault]] = {
    "partition": PartitionFault, "pause": PauseFault, "kill": KillFault, "power-cut": PowerCutFault,
    "leader-bounce": LeaderBounce, "zombie": Zombie, "fast-leader-change": FastLeaderChange,
    "client-partition": ClientPartitionFault, "netem": NetemFault, "restart": RestartFault,
    "rolling-restart": RollingRestart, "reassign": ReassignFault,
    "kip101-divergence": Kip101Divergence, "last-replica-standing": LastReplicaStanding,
}
# What a target needs of the system (System.cannot names why it cannot).
TARGET_FEATURES = {"group-coordinator": "group-coordinator"}
LEAST_BROKERS = {("partition", "minority"): 3, ("partition", "bridge"): 3, ("partition", "majorities-ring"): 3}
POWER_CUT_FIX = ("start it on the lazy filesystem: flush = \"lazy\" (`fencepost run --flush lazy`, "
                 "`fencepost cluster up --flush lazy`, or flush = \"lazy\" in the run's TOML)")


def new_fault(spec: FaultSpec) -> Fault:
    return FAULT_CLASSES[spec.name](spec)


def check_fault(spec: FaultSpec, cluster: Cluster, netem: dict | None = None) -> None:
    """ClusterConfigError saying what to change when this cluster cannot take `spec` (`netem`: the
    netem fault's settings, checked too)."""
    if spec.kind.cuts_network and not cluster.supports_partitions:
        try:
            cluster.partition({})  # raises the backend's own explanation
        except ClusterConfigError as e:
            raise ClusterConfigError(f"fault {spec}: {e}") from None
        raise ClusterConfigError(f"fault {spec}: the {cluster.spec.backend} backend cannot make partitions")
    if spec.name == "client-partition" and cluster.client_address is None:
        raise ClusterConfigError(f"fault {spec}: the {cluster.spec.backend} backend cannot tell where the "
                                 "harness's clients come from, so it cannot cut a broker off from them: use the "
                                 "netns backend (or docker)")
    if spec.kind.shapes_traffic:
        if not cluster.supports_shaping:
            raise ClusterConfigError(f"fault {spec}: the {cluster.spec.backend} backend cannot shape a node's "
                                     "packets (tc netem in the node's own network namespace): use the netns "
                                     "backend as root, or docker")
        NetemOptions.from_mapping(netem)
        why = cluster.shaping_unavailable()
        if why:
            raise ClusterConfigError(f"fault {spec}: {why}")
    for feature in (TARGET_FEATURES.get(spec.target), "reassign" if spec.name == "reassign" else None):
        why = cluster.system.cannot(feature) if feature else None
        if why:
            raise ClusterConfigError(f"fault {spec}: {why}")
    if spec.name == "reassign" and len(cluster.broker_nodes) < 2:
        raise ClusterConfigError(f"fault {spec} needs at least 2 brokers to move replicas between; cluster "
                                 f"{cluster.name} has {len(cluster.broker_nodes)}")
    if spec.name in LAZY_FAULTS:
        check_lazy_disks(spec, cluster)
    brokers = len(cluster.broker_nodes)
    least = max(spec.kind.least_brokers, LEAST_BROKERS.get((spec.name, spec.target), least_brokers(spec.target)))
    if brokers < least:
        raise ClusterConfigError(f"fault {spec} needs at least {least} brokers; cluster {cluster.name} has "
                                 f"{brokers}: choose another target or a bigger cluster")
    if spec.target == "controller" and not cluster.control_nodes:
        raise ClusterConfigError(f"fault {spec}: the {cluster.system.name} system has no control-plane nodes")


def check_lazy_disks(spec: FaultSpec, cluster: Cluster) -> None:
    """The nodes `spec` may power-cut are on lazy disks (a power cut must lose what they did not
    make durable, which a kill -9 never does: the page cache survives it)."""
    hit = cluster.control_nodes if spec.target == "controller" else cluster.broker_nodes
    missing = [n for n in hit if n not in cluster.disks]
    if not missing:
        return
    if not cluster.disks:
        raise ClusterConfigError(f"fault {spec}: cluster {cluster.name} was not started on the lazy filesystem, "
                                 f"so a power cut would lose nothing a kill -9 keeps (the page cache survives "
                                 f"it); {POWER_CUT_FIX}")
    raise ClusterConfigError(f"fault {spec}: {', '.join(missing)} keep their data off the lazy filesystem "
                             f"(only {', '.join(cluster.disks.nodes)} are on it), so a power cut could not lose "
                             "their unsynced writes: choose a target among the brokers")
