"""The interface of a system under test: which nodes it needs, what runs on each,
where clients connect, and what it says about a partition's leader and ISR.

The `Cluster` (clusters/cluster.py) starts and stops the processes a system
describes on the hosts; the system itself keeps no process state, so a cluster
re-attached from its saved state works with a fresh System of the same options.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts.base import Host, HostSet
from fencepost.clusters.lazyfs.mount import LazyOptions
from fencepost.clusters.systems import durable


@dataclass(frozen=True)
class ProcessSpec:
    """One long-lived process of a node: its role, command, log file, and the port that
    accepts TCP connections (from the harness) once it is ready. Before each start the
    `files` (path on the host, text) are written and the `setup` command, if any, run."""
    role: str
    argv: tuple[str, ...]
    log: str
    ready_port: int
    files: tuple[tuple[str, str], ...] = ()
    setup: tuple[str, ...] = ()
    restart_within_s: float = 0.0  # one that exits on start is started again while this lasts


@dataclass(frozen=True)
class PartitionView:
    """A partition as the system's control plane sees it, in node names."""
    topic: str
    partition: int
    leader: str | None
    leader_epoch: int
    replicas: tuple[str, ...]
    isr: tuple[str, ...]


@dataclass(frozen=True)
class TopicSpec:
    name: str = "fp"
    partitions: int = 3
    replication_factor: int = 3
    configs: Mapping[str, str] | None = None


class System(ABC):
    name: str

    @abstractmethod
    def options(self) -> dict[str, Any]:
        """JSON-able; `system_for(name, options)` gives an equal system."""

    @abstractmethod
    def node_names(self, brokers: int) -> list[str]:
        """Every host this system needs for `brokers` brokers, in start order."""

    @abstractmethod
    def broker_nodes(self, nodes: list[str]) -> list[str]:
        """The nodes clients produce to."""

    @abstractmethod
    def control_nodes(self, nodes: list[str]) -> list[str]:
        """The nodes of the control plane (controller, ZooKeeper): the `controller` partition target."""

    @abstractmethod
    def process_specs(self, host: Host, hosts: HostSet) -> list[ProcessSpec]:
        """What runs on `host`, in start order."""

    @abstractmethod
    def bootstrap(self, hosts: HostSet) -> str:
        """bootstrap.servers for clients."""

    @abstractmethod
    def wait_until_ready(self, hosts: HostSet, timeout: float) -> None:
        """Until every broker is registered with the control plane (HostError naming the missing ones)."""

    @abstractmethod
    def create_topic(self, hosts: HostSet, topic: TopicSpec, timeout: float) -> None:
        """Create and wait until every partition has a leader."""

    @abstractmethod
    def partition_view(self, hosts: HostSet, topic: str, partition: int, timeout: float = 5.0) -> PartitionView:
        """The control plane's current view (HostError when it cannot be asked)."""

    @abstractmethod
    def partitions(self, hosts: HostSet, topic: str, timeout: float = 5.0) -> list[int]:
        """The partition numbers of `topic`."""

    @abstractmethod
    def replica_log_lines(self, host: Host, timeout: float) -> list[bytes]:
        """The broker's on-disk logs as final.jsonl lines (docs/FORMATS.md, final.jsonl `replica` and
        `replica-state`); read after the broker stopped. HostError when it cannot be read."""

    def process_ready(self, host: Host, hosts: HostSet, role: str) -> bool:
        """Whether a started process whose port accepts is ready (e.g. registered); True unless said."""
        return True

    def host_paths(self) -> list[str]:
        """Folders of this machine the hosts must see at the same path (read-only), e.g. jars."""
        return []

    def controller_broker(self, hosts: HostSet) -> str | None:
        """The broker node acting as controller, where the controller is a broker (Kafka's
        ZooKeeper mode); None where the control plane runs apart."""
        return None

    def registered_brokers(self, hosts: HostSet) -> set[str] | None:
        """The brokers the control plane now counts as alive (Kafka's ZooKeeper mode: those with a
        session, /brokers/ids); None where it cannot be told. A broker can be in an ISR without
        being alive: Kafka before 2.1 lets a leader take back a follower that still fetches."""
        return None

    def brokers_are_voters(self) -> bool:
        """Whether every broker is also a member of the controller quorum (KRaft's combined mode): a
        cut between brokers then cuts the control plane too."""
        return False

    def restart_keeps_isr_place(self) -> bool:
        """Whether a broker killed and restarted quickly is still in the ISRs it was in (the own
        controller keeps it; Kafka's controller drops a broker whose session ended)."""
        return False

    def provenance(self) -> dict[str, Any]:
        """What the system under test is, beyond its name (release, build, runtime): test.json's
        `versions` section holds it."""
        return {}

    def observed_provenance(self, hosts: HostSet) -> dict[str, Any]:
        """What the running cluster itself says it is (asked once it is up), for test.json's
        `versions` beside `provenance()`; HostError when it cannot be asked."""
        return {}

    def protocol_description(self) -> str:
        """The replication protocol under test, in words, for reports."""
        return ""

    def lazy_options(self) -> LazyOptions | None:
        """How the nodes' lazy disks behave when the system runs with `flush = "lazy"` (their data
        folders on the lazy filesystem, so that a power cut loses what was not made durable);
        None otherwise."""
        return None

    def lazy_folders(self, host: Host) -> list[str]:
        """The folders of `host` that go on lazy disks with `flush = "lazy"` (what the node must not
        lose: its logs and metadata); none for a node that keeps nothing (or keeps it elsewhere)."""
        return []

    # -- what a node durably kept (nemesis/durability.py asks; clusters/systems/durable.py answers) -------

    def partition_log_bytes(self, host: Host, folders: Sequence[str], topic: str, partition: int,
                            timeout: float) -> int | None:
        """The bytes of the partition's log segments in `folders` of `host` as its programs see them
        (after a power cut: what was durable); None when the host cannot tell."""
        return durable.partition_log_bytes(host, folders, topic, partition, timeout)

    def checkpointed_high_watermark(self, data_dir: Path, topic: str, partition: int) -> int | None:
        """The partition's high watermark in the replication-offset-checkpoint of `data_dir` (a
        data folder of this machine: a lazy disk's durable copy); None when it holds none."""
        return durable.checkpointed_high_watermark(data_dir, topic, partition)

    # -- roles and admin actions the faults use (nemesis/roles.py, nemesis/reassign.py) -------------

    def cannot(self, feature: str) -> str | None:
        """Why this system cannot do `feature` — "group-coordinator" (name the broker coordinating a
        consumer group), "reassign" (move a partition's replicas) — or None when it can."""
        return f"the {self.name} system cannot {feature}"

    def active_controller(self, hosts: HostSet) -> str | None:
        """The node acting as controller now; None when it cannot be told at this moment."""
        control = self.control_nodes(list(hosts.hosts))
        return control[0] if len(control) == 1 else None

    def group_coordinator(self, hosts: HostSet, group: str) -> str | None:
        """The broker coordinating `group` now; None when none answers yet."""
        raise ClusterConfigError(self.cannot("group-coordinator") or "no group coordinator")

    def reassign(self, hosts: HostSet, topic: str, partition: int, replicas: Sequence[str], timeout: float) -> None:
        """Move the partition's replicas to `replicas` (the first the preferred leader); returns once
        the system accepted the request. HostError when it refused or did not answer."""
        raise ClusterConfigError(self.cannot("reassign") or "no reassignment")


def read_replica_logs(host: Host, data_dir: str, timeout: float) -> list[bytes]:
    """`python -m fencepost.broker dump-log` on the node over a data directory (the own broker's, or stock
    Kafka's: same layout); exit 1 is a torn tail it reported and skipped."""
    done = host.run([host.python, "-m", "fencepost.broker", "dump-log", "--data-dir", data_dir, "--node", host.name],
                    timeout=timeout, check=False)
    if done.returncode not in (0, 1):
        done.check()
    return [line.encode() for line in done.stdout.splitlines() if line.strip()]
