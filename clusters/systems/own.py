"""The own system: one `python -m fencepost.broker controller` node and N `python -m fencepost.broker serve`
brokers (node names `controller`, `n1`..`nN`; broker n<i> has node id i).

Configured for chaos: session and lag timeouts short enough that faults resolve
in seconds, `min.insync.replicas=2` by default, the truncation mode and the
flush mode chosen per cluster. `flush = "lazy"` puts each broker's data directory on a
lazy disk (clusters/disks.py, the mechanism stock Kafka uses) and runs the broker with
`--flush os` and an fsync of every log each `flush_interval_ms` (default 1000): a power cut
loses what the last fsync did not cover. (The broker's own in-process `--flush lazy` buffer
stays a broker feature for its unit tests; clusters do not use it.)
Control-plane questions go to the controller over its own protocol.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import Host, HostSet
from fencepost.clusters.lazyfs.mount import MODELS as LAZY_MODELS
from fencepost.clusters.lazyfs.mount import LazyOptions
from fencepost.clusters.modes import FLUSH_MODES, TRUNCATION_MODES
from fencepost.clusters.systems.base import PartitionView, ProcessSpec, System, TopicSpec, read_replica_logs

# the Kafka-protocol control-plane client: the own brokers speak the protocol as stock Kafka's do
from fencepost.clusters.systems.kafka import wire
from fencepost.clusters.systems.own_controller import call_controller

CONTROLLER_NODE = "controller"
BROKER_PORT = 9092
COORDINATOR_ASK_TIMEOUT_S = 2.0
CONTROLLER_PORT = 9093
LAZY_FLUSH_INTERVAL_MS = 1000  # with flush = "lazy": the broker's fsync period unless flush_interval_ms says
NO_LEADER = -1
POLL_S = 0.1


@dataclass(frozen=True)
class OwnOptions:
    truncation: str = "kip320"
    flush: str = "os"
    flush_interval_ms: int | None = None  # the broker's default per flush mode (lazy: 1000)
    lazy_model: str = "journal"  # the lazy filesystem's metadata model (flush = "lazy")
    session_timeout_ms: int = 3000
    replica_lag_time_max_ms: int = 5000
    min_insync_replicas: int = 2
    hw_checkpoint_interval_ms: int = 5000

    @staticmethod
    def from_mapping(options: Mapping[str, Any]) -> OwnOptions:
        known = {f.name: f for f in fields(OwnOptions)}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ClusterConfigError(f"the own system has no option {', '.join(map(repr, unknown))}; "
                                     f"its options are {', '.join(known)}")
        values = dict(options)
        for name, value in values.items():
            if name in ("truncation", "flush", "lazy_model"):
                continue
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ClusterConfigError(f"own system option {name}={value!r}: give a whole number >= 0")
        opts = OwnOptions(**values)
        if opts.truncation not in TRUNCATION_MODES:
            stock = " (release names a stock Kafka release's own protocol)" if opts.truncation == "release" else ""
            raise ClusterConfigError(f"truncation {opts.truncation!r} on the own system: choose one of "
                                     f"{', '.join(TRUNCATION_MODES)}{stock}")
        if opts.flush not in FLUSH_MODES:
            raise ClusterConfigError(f"flush {opts.flush!r}: choose one of {', '.join(FLUSH_MODES)}")
        if opts.lazy_model not in LAZY_MODELS:
            raise ClusterConfigError(f"lazy_model {opts.lazy_model!r}: choose {' or '.join(LAZY_MODELS)} (the "
                                     "lazy filesystem's metadata model, docs/LAZYFS.md)")
        return opts


class OwnSystem(System):
    name = "own"

    def __init__(self, options: OwnOptions) -> None:
        self.settings = options

    @staticmethod
    def from_options(options: Mapping[str, Any]) -> OwnSystem:
        return OwnSystem(OwnOptions.from_mapping(options))

    def options(self) -> dict[str, Any]:
        return asdict(self.settings)

    def provenance(self) -> dict[str, Any]:
        s = self.settings
        return {"flush": s.flush, "lazy_model": s.lazy_model if s.flush == "lazy" else None}

    def lazy_options(self) -> LazyOptions | None:
        return LazyOptions(model=self.settings.lazy_model) if self.settings.flush == "lazy" else None

    def lazy_folders(self, host: Host) -> list[str]:
        """Each broker's data directory (the controller's state is not what a power cut tests)."""
        if self.settings.flush != "lazy" or host.name == CONTROLLER_NODE:
            return []
        return [f"{host.workdir}/data"]

    def protocol_description(self) -> str:
        from fencepost.clusters.systems.kafka.release import PROTOCOL_NAMES
        return f"the own broker, truncation {self.settings.truncation} ({PROTOCOL_NAMES[self.settings.truncation]})"

    def node_names(self, brokers: int) -> list[str]:
        if brokers < 1:
            raise ClusterConfigError(f"--nodes {brokers}: a cluster needs at least one broker")
        return [CONTROLLER_NODE, *(f"n{i}" for i in range(1, brokers + 1))]

    def broker_nodes(self, nodes: list[str]) -> list[str]:
        return [n for n in nodes if n != CONTROLLER_NODE]

    def control_nodes(self, nodes: list[str]) -> list[str]:
        return [CONTROLLER_NODE]

    def _controller(self, hosts: HostSet) -> tuple[str, int]:
        host = hosts[CONTROLLER_NODE]
        return host.address, host.port("controller", CONTROLLER_PORT)

    def process_specs(self, host: Host, hosts: HostSet) -> list[ProcessSpec]:
        s = self.settings
        log_dir = f"{host.workdir}/logs"
        if host.name == CONTROLLER_NODE:
            port = host.port("controller", CONTROLLER_PORT)
            command = (host.python, "-m", "fencepost.broker", "controller", "--listen", f"{host.address}:{port}",
                    "--data-dir", f"{host.workdir}/data", "--session-timeout-ms", str(s.session_timeout_ms))
            return [ProcessSpec("controller", command, f"{log_dir}/controller.log", port)]
        port = host.port("broker", BROKER_PORT)
        controller_host, controller_port = self._controller(hosts)
        argv = [host.python, "-m", "fencepost.broker", "serve", "--node-id", str(broker_id(host.name)),
                "--listen", f"{host.address}:{port}", "--data-dir", f"{host.workdir}/data",
                "--controller", f"{controller_host}:{controller_port}", "--truncation", s.truncation,
                "--flush", "os" if s.flush == "lazy" else s.flush, "--min-insync-replicas", str(s.min_insync_replicas),
                "--replica-lag-time-max-ms", str(s.replica_lag_time_max_ms),
                "--hw-checkpoint-interval-ms", str(s.hw_checkpoint_interval_ms)]
        interval = LAZY_FLUSH_INTERVAL_MS if s.flush == "lazy" and s.flush_interval_ms is None else s.flush_interval_ms
        if interval is not None:
            argv += ["--flush-interval-ms", str(interval)]
        return [ProcessSpec("broker", tuple(argv), f"{log_dir}/broker.log", port)]

    def bootstrap(self, hosts: HostSet) -> str:
        return ",".join(f"{address}:{port}" for address, port in _broker_endpoints(hosts))

    def describe(self, hosts: HostSet, timeout: float = 5.0) -> dict[str, Any]:
        """The controller's whole state (protocol.py's Snapshot, as JSON)."""
        address, port = self._controller(hosts)
        return call_controller(address, port, {"type": "describe"}, timeout)["snapshot"]

    def wait_until_ready(self, hosts: HostSet, timeout: float) -> None:
        want = {broker_id(h.name) for h in hosts if h.name != CONTROLLER_NODE}
        deadline = time.monotonic() + timeout
        missing = want
        while True:
            try:
                brokers = self.describe(hosts)["brokers"]
                missing = want - {int(b["node_id"]) for b in brokers if not b.get("fenced")}
            except HostError:
                pass
            if not missing:
                return
            if time.monotonic() > deadline:
                raise HostError(f"brokers {', '.join(f'n{i}' for i in sorted(missing))} did not register "
                                f"with the controller within {timeout:g}s (see their logs)")
            time.sleep(POLL_S)

    def create_topic(self, hosts: HostSet, topic: TopicSpec, timeout: float) -> None:
        address, port = self._controller(hosts)
        configs = {"min.insync.replicas": str(self.settings.min_insync_replicas), **(topic.configs or {})}
        call_controller(address, port, {"type": "create_topic", "name": topic.name,
                                        "partitions": topic.partitions,
                                        "replication_factor": topic.replication_factor,
                                        "configs": {k: str(v) for k, v in configs.items()},
                                        "validate_only": False}, timeout)
        deadline = time.monotonic() + timeout
        while any(self.partition_view(hosts, topic.name, p).leader is None for p in range(topic.partitions)):
            if time.monotonic() > deadline:
                raise HostError(f"topic {topic.name}: not every partition had a leader within {timeout:g}s")
            time.sleep(POLL_S)

    def _topic(self, hosts: HostSet, topic: str, timeout: float) -> dict[str, Any]:
        for t in self.describe(hosts, timeout)["topics"]:
            if t["name"] == topic:
                return t
        raise HostError(f"the controller knows no topic {topic!r}")

    def partitions(self, hosts: HostSet, topic: str, timeout: float = 5.0) -> list[int]:
        return sorted(int(p["partition"]) for p in self._topic(hosts, topic, timeout)["partitions"])

    def partition_view(self, hosts: HostSet, topic: str, partition: int, timeout: float = 5.0) -> PartitionView:
        for p in self._topic(hosts, topic, timeout)["partitions"]:
            if int(p["partition"]) == partition:
                leader = int(p["leader"])
                return PartitionView(topic, partition, None if leader == NO_LEADER else node_name(leader),
                                     int(p["leader_epoch"]), tuple(node_name(r) for r in p["replicas"]),
                                     tuple(node_name(r) for r in p["isr"]))
        raise HostError(f"topic {topic!r} has no partition {partition}")

    def cannot(self, feature: str) -> str | None:
        if feature == "group-coordinator":
            return None
        if feature == "reassign":
            return ("the own controller (broker/controller/) cannot move a partition's replicas: its "
                    "protocol has no reassignment request; use stock Kafka (--system kafka:VERSION)")
        return super().cannot(feature)

    def active_controller(self, hosts: HostSet) -> str | None:
        return CONTROLLER_NODE

    def group_coordinator(self, hosts: HostSet, group: str) -> str | None:
        node = wire.coordinator_named(_broker_endpoints(hosts), group, COORDINATOR_ASK_TIMEOUT_S)
        return None if node is None else node_name(node)

    def restart_keeps_isr_place(self) -> bool:
        return True

    def replica_log_lines(self, host: Host, timeout: float) -> list[bytes]:
        return read_replica_logs(host, f"{host.workdir}/data", timeout)


def _broker_endpoints(hosts: HostSet) -> list[tuple[str, int]]:
    """(address, port) of every broker: each node but the controller."""
    return [(h.address, h.port("broker", BROKER_PORT)) for h in hosts if h.name != CONTROLLER_NODE]


def broker_id(node: str) -> int:
    if not (node.startswith("n") and node[1:].isdigit()):
        raise ClusterConfigError(f"{node!r} is not a broker node name (n1, n2, ...)")
    return int(node[1:])


def node_name(node_id: int) -> str:
    return f"n{node_id}"
