"""Fault names, their targets, and the fault spec syntax `kill,pause,partition:majorities-ring`.

A spec string is a comma-separated list of `FAULT[:TARGET]`. Without a target a
fault takes its default (`one` for partition, pause, kill, power-cut, netem and
restart; `leader` for client-partition; `all` for rolling-restart; a random partition
of the topic for the scenarios and reassign, whose target is a partition number) —
except in the random schedule, which draws the target of such a fault anew at each
start (`DRAWN_TARGETS`).

Role targets (`ROLE_TARGETS`: leader, follower, active-controller, group-coordinator)
name one node by what it does, resolved when the fault starts (nemesis/roles.py).
Parsing is pure and checks names only; whether a cluster can take a fault
(partitions on this backend, lazy disks for power-cut and the durability scenarios, enough brokers) is
`nemesis.catalog.check_fault`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.clusters import ClusterConfigError

# Every target names who is hit; the control plane is never hit unless named (`controller`,
# `active-controller`).
ROLE_TARGETS = ("leader", "follower", "active-controller", "group-coordinator")
PARTITION_TARGETS = ("one", "minority", "majority", "majorities-ring", "bridge", "leader", "controller",
                     "follower", "active-controller", "group-coordinator")
PROCESS_TARGETS = ("one", "minority", "majority", "all", "leader", "controller",
                   "follower", "active-controller", "group-coordinator")
# Cut off from the harness's clients: one broker, never the control plane.
CLIENT_PARTITION_TARGETS = ("leader", "one", "follower", "group-coordinator")
NETEM_TARGETS = ("one", "minority", "majority", "all", "leader", "follower")
ROLLING_TARGETS = ("all",)
# What the random schedule draws from, at each start, for a fault named without a target
# (Jepsen's combined nemesis does the same); never the control plane.
DRAWN_PROCESS_TARGETS = ("one", "minority", "majority", "all", "leader")
DRAWN_TARGETS = {
    "partition": ("one", "minority", "majority", "majorities-ring", "bridge", "leader"),
    "pause": DRAWN_PROCESS_TARGETS, "kill": DRAWN_PROCESS_TARGETS, "power-cut": DRAWN_PROCESS_TARGETS,
    "client-partition": ("leader", "one"), "netem": ("one", "minority", "all"),
    "restart": DRAWN_PROCESS_TARGETS,
}
RANDOM_PARTITION = "random"  # a scenario's default: a partition of the topic drawn from the seeded RNG


@dataclass(frozen=True)
class FaultKind:
    name: str
    targets: tuple[str, ...]  # empty where the target is a partition number
    default_target: str
    scenario: bool  # runs its steps to the end when started; nothing stays active
    what: str
    cuts_network: bool = False  # needs a backend that can make partitions
    least_brokers: int = 1  # whatever the target (a target may need more: `catalog.check_fault`)
    partition_target: bool = False  # the target is a partition number of the topic (or `random`)
    shapes_traffic: bool = False  # needs a backend that can shape a node's packets (tc netem)
    # The nemesis ops (history `f`) that start the fault and heal it; "" for scenarios and
    # clean restarts, whose steps heal themselves.
    start_f: str = ""
    stop_f: str = ""


FAULT_KINDS: dict[str, FaultKind] = {k.name: k for k in (
    FaultKind("partition", PARTITION_TARGETS, "one", False, "cut the network (iptables DROP in the nodes)",
              cuts_network=True, start_f="start-partition", stop_f="stop-partition"),
    FaultKind("pause", PROCESS_TARGETS, "one", False, "SIGSTOP the node's processes; heal: SIGCONT",
              start_f="pause", stop_f="resume"),
    FaultKind("kill", PROCESS_TARGETS, "one", False, "kill -9 the node's processes; heal: start them again",
              start_f="kill", stop_f="start"),
    FaultKind("power-cut", PROCESS_TARGETS, "one", False,
              "lose what the node's lazy disks hold unsynced, kill -9 (flush = lazy); heal: start them again",
              start_f="power-cut", stop_f="start"),
    FaultKind("leader-bounce", (), RANDOM_PARTITION, True,
              "KIP-101 scenario 1: pause the leader, kill -9 and restart a follower, kill the leader, "
              "wait for the election, restart the old leader", least_brokers=2, partition_target=True),
    FaultKind("zombie", (), RANDOM_PARTITION, True,
              "KAFKA-6880: cut a follower off from the control plane only, move leadership twice, heal",
              cuts_network=True, least_brokers=3, partition_target=True),
    FaultKind("fast-leader-change", (), RANDOM_PARTITION, True,
              "KAFKA-6361: cut the next leader off from the leader, kill the leader, then the next one "
              "before the third replica refetches; heal, restart both", cuts_network=True, least_brokers=3,
              partition_target=True),
    FaultKind("client-partition", CLIENT_PARTITION_TARGETS, "leader", False,
              "cut one broker off from the harness's clients (producers, consumers) while the brokers "
              "still see each other (iptables DROP of the clients' address)", cuts_network=True,
              start_f="start-client-partition", stop_f="stop-client-partition"),
    FaultKind("netem", NETEM_TARGETS, "one", False,
              "degrade the node's outgoing packets (tc netem: delay with jitter, loss, duplication, "
              "reordering); heal: remove the qdisc", shapes_traffic=True, start_f="start-netem", stop_f="stop-netem"),
    FaultKind("restart", PROCESS_TARGETS, "one", True,
              "a clean restart: SIGTERM (controlled shutdown), then start the node again"),
    FaultKind("rolling-restart", ROLLING_TARGETS, "all", True,
              "every broker in turn: a clean restart, then wait until it is back in every ISR"),
    FaultKind("reassign", (), RANDOM_PARTITION, False,
              "move a partition's replicas to other brokers (the admin API, or ZooKeeper before 2.4); "
              "heal: move them back", partition_target=True, start_f="start-reassign", stop_f="stop-reassign"),
    FaultKind("kip101-divergence", (), RANDOM_PARTITION, True,
              "KIP-101 scenario 2: power-cut every replica, the leader with more on disk; the one with less "
              "returns first and leads, then the old leader (flush = lazy)", least_brokers=2, partition_target=True),
    FaultKind("last-replica-standing", (), RANDOM_PARTITION, True,
              "KIP-966: cut the followers off from the leader until its ISR is itself, power-cut it, heal, "
              "restart it (flush = lazy)", cuts_network=True, least_brokers=2, partition_target=True),
)}


def stops_by_f(kinds: dict[str, FaultKind], extra: dict[str, tuple[str, ...]] | None = None
               ) -> dict[str, tuple[str, ...]]:
    """Heal op (`stop_f`) -> the faults of `kinds` it heals, in catalogue order, with `extra` added."""
    stops: dict[str, tuple[str, ...]] = {}
    for kind in kinds.values():
        if kind.stop_f:
            stops[kind.stop_f] = (*stops.get(kind.stop_f, ()), kind.name)
    for f, names in (extra or {}).items():
        stops[f] = (*stops.get(f, ()), *names)
    return stops


def fault_ops(name: str) -> tuple[str, str]:
    """(start f, stop f) of the fault `name`: the nemesis ops its start and heal record."""
    kind = FAULT_KINDS[name]
    return kind.start_f, kind.stop_f


# Faults that need the cluster on lazy disks (flush = "lazy"): a run that names one gets it by default.
LAZY_FAULTS = ("power-cut", "kip101-divergence", "last-replica-standing")


@dataclass(frozen=True)
class FaultSpec:
    """One fault aimed at one target, e.g. `partition:majorities-ring`, `kill:one`, `zombie:2`.
    `drawn`: named without a target (the target is the default); the random schedule then
    draws one at each start from DRAWN_TARGETS. Not part of equality."""
    name: str
    target: str
    drawn: bool = field(default=False, compare=False)

    @property
    def kind(self) -> FaultKind:
        return FAULT_KINDS[self.name]

    @property
    def scenario(self) -> bool:
        return self.kind.scenario

    def __str__(self) -> str:
        return f"{self.name}:{self.target}"


def parse_fault(text: str, context: str | None = None) -> FaultSpec:
    """One `FAULT[:TARGET]`; ClusterConfigError naming the bad part and the valid names."""
    where = f" in {context!r}" if context is not None and context != text else ""
    name, colon, target = text.strip().partition(":")
    name, target = name.strip(), target.strip()
    kind = FAULT_KINDS.get(name)
    if kind is None:
        raise ClusterConfigError(f"unknown fault {name!r}{where}: choose from {', '.join(FAULT_KINDS)}")
    if not colon:
        return FaultSpec(name, kind.default_target, drawn=not kind.partition_target and name in DRAWN_TARGETS)
    if kind.partition_target:
        if target != RANDOM_PARTITION and not (target.isdigit() and target.isascii()):
            raise ClusterConfigError(f"{name}:{target}{where}: the target of {name} is a partition number "
                                     f"of the topic (e.g. {name}:0), or {RANDOM_PARTITION}")
        return FaultSpec(name, str(int(target)) if target.isdigit() else target)
    if target not in kind.targets:
        raise ClusterConfigError(f"unknown target {target!r} for {name}{where}: "
                                 f"its targets are {', '.join(kind.targets)}")
    return FaultSpec(name, target)


def parse_faults(text: str) -> tuple[FaultSpec, ...]:
    """`kill,pause,partition:majorities-ring` -> three FaultSpecs, in order (a fault may repeat)."""
    if not text.strip():
        raise ClusterConfigError(f"no fault given: write FAULT[:TARGET] separated by commas, e.g. "
                                 f"kill,pause,partition:majorities-ring; faults are {', '.join(FAULT_KINDS)}")
    parts = [p.strip() for p in text.split(",")]
    if any(not p for p in parts):
        raise ClusterConfigError(f"fault spec {text!r} has an empty part: write FAULT[:TARGET] separated by "
                                 f"commas, e.g. kill,pause,partition:majorities-ring; faults are "
                                 f"{', '.join(FAULT_KINDS)}")
    return tuple(parse_fault(p, text) for p in parts)
