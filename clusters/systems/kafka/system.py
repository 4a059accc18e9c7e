"""Stock Apache Kafka as a `System`: brokers `n1`..`nN` (node id i), and the control plane —
in ZooKeeper mode one `zk` node running ZooKeeper from the same classpath (so it can be
partitioned, paused and killed like the brokers); in KRaft mode either every broker
is also a controller (combined, the default) or `controllers=K` controller-only nodes
`c1`..`cK` (node ids 1001..).

Control-plane questions (who leads, in which epoch, with which ISR): in ZooKeeper mode asked of
ZooKeeper, where the controller and the leaders write them (every release has the leader epoch
there; Metadata has it only from 2.1, and an old broker learns an ISR change seconds late); when
ZooKeeper does not answer (paused, killed) and in KRaft mode, asked of the brokers with the
Metadata API, all of them at once: a partition's view is the one with the highest leader epoch,
the leader's own answer first among equals, so one broker cut off with stale metadata does not
mislead the nemesis.
"""
from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Mapping, Sequence

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import Host, HostSet
from fencepost.clusters.lazyfs.mount import LazyOptions
from fencepost.clusters.systems.base import PartitionView, ProcessSpec, System, TopicSpec, read_replica_logs
from fencepost.clusters.systems.kafka import config, dist, wire
from fencepost.clusters.systems.kafka.options import KafkaOptions
from fencepost.clusters.systems.kafka.zookeeper import ZooKeeperReader

ZOOKEEPER_NODE = "zk"
CONTROLLER_ID_BASE = 1000
POLL_S = 0.2
ASK_TIMEOUT_S = 1.5
NO_LEADER = -1
ERROR_TOPIC_EXISTS = 36
RETRIABLE_CREATE_ERRORS = {7, 41, 5}  # request timed out, not controller, leader not available
HERE = Path(__file__).resolve().parent


class KafkaSystem(System):
    name = "kafka"

    def __init__(self, options: KafkaOptions) -> None:
        self.settings = options

    @staticmethod
    def from_options(options: Mapping[str, Any], say=None) -> KafkaSystem:
        opts = KafkaOptions.from_mapping(options)
        if not opts.libs:
            found = dist.resolve(opts.version or None, opts.kafka_home or None,
                                 **({"say": say} if say else {}))
            opts = KafkaOptions(**{**opts.to_dict(), "version": found.version, "libs": found.libs,
                                   "scala": found.scala})
        elif not Path(opts.libs).is_dir():
            raise ClusterConfigError(f"the Kafka jars of this cluster ({opts.libs}) are gone; "
                                     "resolve them again with a new cluster")
        return KafkaSystem(opts.checked(opts.version))

    def options(self) -> dict[str, Any]:
        return self.settings.to_dict()

    def provenance(self) -> dict[str, Any]:
        s = self.settings
        return {"kafka": s.version, "scala": s.scala or None, "mode": s.mode,
                "inter_broker_protocol": s.inter_broker_protocol, "java": dist.java_version(),
                "flush": s.flush, "lazy_model": s.lazy_model if s.flush == "lazy" else None,
                "eligible_leader_replicas": s.elr_on}

    def observed_provenance(self, hosts: HostSet) -> dict[str, Any]:
        """The finalized features the first broker that answers reports (KRaft: `metadata.version`,
        `eligible.leader.replicas.version`, ...), as Kafka itself keeps them in its metadata."""
        if self.zookeeper_mode:
            return {}
        last: HostError | None = None
        for host in self._brokers(hosts):
            try:
                found = wire.finalized_features(host.address, host.port("broker", config.BROKER_PORT), ASK_TIMEOUT_S)
            except HostError as e:
                last = e
                continue
            return {} if found is None else {"finalized_features": found}
        raise last or HostError("no broker to ask for the finalized features")

    def lazy_options(self) -> LazyOptions | None:
        return LazyOptions(model=self.settings.lazy_model) if self.settings.flush == "lazy" else None

    def lazy_folders(self, host: Host) -> list[str]:
        """log.dirs of every broker and KRaft controller (the metadata log lives there too); not
        the ZooKeeper node's, which fsyncs every transaction anyway."""
        if self.settings.flush != "lazy" or host.name == ZOOKEEPER_NODE:
            return []
        return [f"{host.workdir}/data"]

    def protocol_description(self) -> str:
        return self.settings.protocol_description()

    def host_paths(self) -> list[str]:
        libs = Path(self.settings.libs)
        return sorted({str(libs), str(libs.resolve()), *java_config_folders()})

    # -- topology ------------------------------------------------------------------------

    @property
    def zookeeper_mode(self) -> bool:
        return self.settings.mode == "zk"

    def node_names(self, brokers: int) -> list[str]:
        if brokers < 1:
            raise ClusterConfigError(f"--nodes {brokers}: a cluster needs at least one broker")
        control = ([ZOOKEEPER_NODE] if self.zookeeper_mode
                   else [f"c{i}" for i in range(1, self.settings.controllers + 1)])
        return [*control, *(f"n{i}" for i in range(1, brokers + 1))]

    def broker_nodes(self, nodes: list[str]) -> list[str]:
        return [n for n in nodes if is_broker(n)]

    def control_nodes(self, nodes: list[str]) -> list[str]:
        return [n for n in nodes if not is_broker(n)]

    def _brokers(self, hosts: HostSet) -> list[Host]:
        return [h for h in hosts if is_broker(h.name)]

    def _voters(self, hosts: HostSet) -> list[config.Endpoint]:
        voters = [h for h in hosts if h.name.startswith("c")] or self._brokers(hosts)
        return [config.Endpoint(node_id(h.name), h.address, h.port("controller", config.CONTROLLER_PORT))
                for h in voters]

    # -- processes ----------------------------------------------------------------------------

    def _java(self, host: Host, main: str, *args: str, heap_mb: int | None = None) -> tuple[str, ...]:
        java = shutil.which("java") or "java"
        heap = heap_mb or self.settings.heap_mb
        return (java, f"-Xms{heap}m", f"-Xmx{heap}m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
                f"-Dlog4j.configuration=file:{HERE / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}",
                "-Dzookeeper.admin.enableServer=false", "-cp", f"{self.settings.libs}/*", main, *args)

    def process_specs(self, host: Host, hosts: HostSet) -> list[ProcessSpec]:
        log_dir = f"{host.workdir}/logs"
        data_dir = f"{host.workdir}/data"
        brokers = len(self._brokers(hosts))
        if host.name == ZOOKEEPER_NODE:
            port = host.port("zookeeper", config.ZOOKEEPER_PORT)
            argv = self._java(host, "org.apache.zookeeper.server.ZooKeeperServerMain", str(port), data_dir,
                              str(config.ZOOKEEPER_TICK_MS), heap_mb=256)
            return [ProcessSpec("zookeeper", argv, f"{log_dir}/zookeeper.log", port)]
        properties_file = f"{host.workdir}/server.properties"
        if self.zookeeper_mode:
            zk = hosts[ZOOKEEPER_NODE]
            port = host.port("broker", config.BROKER_PORT)
            props = config.zk_broker_properties(
                self.settings, config.Endpoint(node_id(host.name), host.address, port), data_dir,
                f"{zk.address}:{zk.port('zookeeper', config.ZOOKEEPER_PORT)}", brokers)
            setup: tuple[str, ...] = ()
        else:
            voters = self._voters(hosts)
            is_voter = any(v.node_id == node_id(host.name) for v in voters)
            broker_port = host.port("broker", config.BROKER_PORT) if is_broker(host.name) else None
            controller_port = host.port("controller", config.CONTROLLER_PORT) if is_voter else None
            port = controller_port or broker_port  # a voter listens before the quorum forms; a broker after
            props = config.kraft_properties(self.settings, node_id(host.name), host.address, broker_port,
                                            controller_port, data_dir, voters, brokers)
            format_storage = " ".join(_quote(a) for a in self._java(
                host, "kafka.tools.StorageTool", "format", "-t", config.CLUSTER_ID, "-c", properties_file,
                *config.format_features(self.settings), heap_mb=256))
            setup = ("sh", "-c", f"test -e {_quote(data_dir)}/meta.properties || exec {format_storage}")
        role = "broker" if is_broker(host.name) else "controller"
        # a broker restarted within its old ZooKeeper session's life exits (NodeExists): start it again
        restart_within = self.settings.session_timeout_ms / 1000 + 10 if self.zookeeper_mode else 0.0
        return [ProcessSpec(role, self._java(host, "kafka.Kafka", properties_file), f"{log_dir}/{role}.log",
                            port, files=((properties_file, config.render(props)),), setup=setup,
                            restart_within_s=restart_within)]

    def process_ready(self, host: Host, hosts: HostSet, role: str) -> bool:
        """A broker is ready once its own metadata lists it (registered, and unfenced in KRaft). A
        KRaft voter is ready when it listens: its broker cannot register before a quorum of
        voters, which start after it."""
        if role != "broker" or any(v.node_id == node_id(host.name) for v in self._voters(hosts)) \
                and not self.zookeeper_mode:
            return True
        try:
            answer = wire.metadata(host.address, host.port("broker", config.BROKER_PORT), [], ASK_TIMEOUT_S)
        except HostError:
            return False
        return node_id(host.name) in answer.brokers

    def bootstrap(self, hosts: HostSet) -> str:
        return ",".join(f"{h.address}:{h.port('broker', config.BROKER_PORT)}" for h in self._brokers(hosts))

    # -- the control plane's view ------------------------------------------------------------------

    def _ask_all(self, hosts: HostSet, topics: list[str] | None, timeout: float) -> dict[int, wire.Metadata]:
        """Every broker's answer that came within the timeout, by broker id."""
        brokers = self._brokers(hosts)
        per_broker = min(ASK_TIMEOUT_S, timeout)

        def ask(host: Host) -> wire.Metadata | None:
            try:
                return wire.metadata(host.address, host.port("broker", config.BROKER_PORT), topics, per_broker)
            except HostError:
                return None
        with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
            answers = list(pool.map(ask, brokers))
        return {node_id(h.name): a for h, a in zip(brokers, answers) if a is not None}

    def wait_until_ready(self, hosts: HostSet, timeout: float) -> None:
        want = {node_id(h.name) for h in self._brokers(hosts)}
        deadline = time.monotonic() + timeout
        while True:
            answers = self._ask_all(hosts, [], timeout)
            missing = want - set(answers) if not answers else \
                min((want - set(a.brokers) for a in answers.values()), key=len)
            if not missing:
                return
            if time.monotonic() > deadline:
                raise HostError(f"brokers {', '.join(node_name(i) for i in sorted(missing))} did not register "
                                f"with the {'ZooKeeper' if self.zookeeper_mode else 'KRaft'} control plane "
                                f"within {timeout:g}s (see their logs)")
            time.sleep(POLL_S)

    def create_topic(self, hosts: HostSet, topic: TopicSpec, timeout: float) -> None:
        configs = {"min.insync.replicas": str(self.settings.min_insync_replicas),
                   "unclean.leader.election.enable": "false", **(topic.configs or {})}
        deadline = time.monotonic() + timeout
        last = "no broker answered"
        while True:
            for host in self._brokers(hosts):
                try:
                    code, message = wire.create_topic(
                        host.address, host.port("broker", config.BROKER_PORT), topic.name, topic.partitions,
                        topic.replication_factor, {k: str(v) for k, v in configs.items()}, min(10.0, timeout))
                except HostError as e:
                    last = str(e)
                    continue
                if code == 0:
                    return self._await_leaders(hosts, topic, deadline)
                if code not in RETRIABLE_CREATE_ERRORS:
                    raise HostError(f"Kafka refused to create topic {topic.name}: error {code}: {message}")
                last = f"error {code}: {message}"
            if time.monotonic() > deadline:
                raise HostError(f"topic {topic.name} could not be created within {timeout:g}s ({last})")
            time.sleep(POLL_S)

    def _await_leaders(self, hosts: HostSet, topic: TopicSpec, deadline: float) -> None:
        while True:
            try:
                views = [self.partition_view(hosts, topic.name, p) for p in range(topic.partitions)]
                if all(v.leader is not None for v in views):
                    return
            except HostError:
                pass
            if time.monotonic() > deadline:
                raise HostError(f"topic {topic.name}: not every partition had a leader in time")
            time.sleep(POLL_S)

    def _zookeeper(self, hosts: HostSet, timeout: float) -> ZooKeeperReader:
        zk = hosts[ZOOKEEPER_NODE]
        return ZooKeeperReader(zk.address, zk.port("zookeeper", config.ZOOKEEPER_PORT), min(ASK_TIMEOUT_S, timeout))

    def _zookeeper_view(self, hosts: HostSet, topic: str, partition: int | None,
                        timeout: float) -> tuple[dict[int, tuple[int, ...]], PartitionView | None] | None:
        """(partition -> replicas, the partition's view) from ZooKeeper; None when it does not answer."""
        if not self.zookeeper_mode:
            return None
        try:
            with self._zookeeper(hosts, timeout) as zk:
                replicas = zk.replicas(topic)
                state = zk.partition_state(topic, partition) \
                    if replicas is not None and partition in replicas else None
        except HostError:
            return None  # ZooKeeper paused, killed or cut: the brokers' metadata answers instead
        if replicas is None:
            raise HostError(f"no Kafka broker knows topic {topic!r} (ZooKeeper has no /brokers/topics/{topic})")
        if partition is None:
            return replicas, None
        if partition not in replicas:
            raise HostError(f"topic {topic!r} has no partition {partition}")
        if state is None:  # created, not yet given a leader by the controller
            named = tuple(node_name(r) for r in replicas[partition])
            return replicas, PartitionView(topic, partition, None, -1, named, ())
        leader = None if state.leader == NO_LEADER else node_name(state.leader)
        return replicas, PartitionView(topic, partition, leader, state.leader_epoch,
                                       tuple(node_name(r) for r in replicas[partition]),
                                       tuple(node_name(r) for r in state.isr))

    def _partitions(self, hosts: HostSet, topic: str,
                    timeout: float) -> dict[int, list[tuple[int, wire.PartitionMetadata]]]:
        """partition -> [(answering broker, its view)] from every broker that knows the topic."""
        seen: dict[int, list[tuple[int, wire.PartitionMetadata]]] = {}
        answers = self._ask_all(hosts, [topic], timeout)
        if not answers:
            raise HostError(f"no Kafka broker answered a Metadata request within {min(ASK_TIMEOUT_S, timeout):g}s")
        for broker, answer in answers.items():
            code, partitions = answer.topics.get(topic, (3, ()))
            if code != 0:
                continue
            for p in partitions:
                seen.setdefault(p.partition, []).append((broker, p))
        if not seen:
            raise HostError(f"no Kafka broker knows topic {topic!r}")
        return seen

    def partitions(self, hosts: HostSet, topic: str, timeout: float = 5.0) -> list[int]:
        found = self._zookeeper_view(hosts, topic, None, timeout)
        if found is not None:
            return sorted(found[0])
        return sorted(self._partitions(hosts, topic, timeout))

    def partition_view(self, hosts: HostSet, topic: str, partition: int, timeout: float = 5.0) -> PartitionView:
        found = self._zookeeper_view(hosts, topic, partition, timeout)
        if found is not None and found[1] is not None:
            return found[1]
        views = self._partitions(hosts, topic, timeout).get(partition)
        if not views:
            raise HostError(f"topic {topic!r} has no partition {partition}")
        broker, best = max(views, key=lambda v: (v[1].leader_epoch, v[1].leader == v[0]))
        leader = None if best.leader == NO_LEADER or best.error_code == 5 else node_name(best.leader)
        return PartitionView(topic, partition, leader, best.leader_epoch,
                             tuple(node_name(r) for r in best.replicas), tuple(node_name(r) for r in best.isr))

    def controller_broker(self, hosts: HostSet) -> str | None:
        if not self.zookeeper_mode:
            return None
        try:
            with self._zookeeper(hosts, ASK_TIMEOUT_S) as zk:
                controller = zk.controller()
            if controller is not None:
                return node_name(controller)
        except HostError:
            pass  # ask the brokers instead
        answers = self._ask_all(hosts, [], ASK_TIMEOUT_S)
        ids = {a.controller for a in answers.values() if a.controller >= 0}
        if len(ids) != 1:
            raise HostError(f"the brokers do not agree on a controller ({sorted(ids) or 'none named'}); "
                            "wait until the cluster has settled")
        return node_name(ids.pop())

    def registered_brokers(self, hosts: HostSet) -> set[str] | None:
        if not self.zookeeper_mode:
            return None
        try:
            with self._zookeeper(hosts, ASK_TIMEOUT_S) as zk:
                return {node_name(b) for b in zk.brokers()}
        except HostError:
            return None

    def brokers_are_voters(self) -> bool:
        return not self.zookeeper_mode and self.settings.controllers == 0

    def replica_log_lines(self, host: Host, timeout: float) -> list[bytes]:
        return read_replica_logs(host, f"{host.workdir}/data", timeout)

    # -- roles and reassignment (nemesis/roles.py, nemesis/reassign.py) ------------------------------

    def cannot(self, feature: str) -> str | None:
        if feature in ("group-coordinator", "reassign"):
            return None  # every release: FindCoordinator; reassignment by the admin API or ZooKeeper
        return super().cannot(feature)

    def active_controller(self, hosts: HostSet) -> str | None:
        """ZooKeeper mode: the controller broker; KRaft: the quorum's leader (DescribeQuorum, asked of
        the brokers, which forward it, then of the controllers)."""
        if self.zookeeper_mode:
            try:
                return self.controller_broker(hosts)
            except HostError:
                return None
        for host in [*self._brokers(hosts), *(h for h in hosts if not is_broker(h.name))]:
            port = host.port("broker" if is_broker(host.name) else "controller",
                             config.BROKER_PORT if is_broker(host.name) else config.CONTROLLER_PORT)
            try:
                leader = wire.quorum_leader(host.address, port, ASK_TIMEOUT_S)
            except HostError:
                continue
            if leader != wire.UNKNOWN:
                return node_name(leader)
        return None

    def group_coordinator(self, hosts: HostSet, group: str) -> str | None:
        node = wire.coordinator_named(((h.address, h.port("broker", config.BROKER_PORT)) for h in self._brokers(hosts)),
                                      group, ASK_TIMEOUT_S)
        return None if node is None else node_name(node)

    def reassign(self, hosts: HostSet, topic: str, partition: int, replicas: Sequence[str], timeout: float) -> None:
        """From 2.4 the admin API (KIP-455), asked of the controller (ZooKeeper mode) or of any broker
        (KRaft: it forwards); before, the znode /admin/reassign_partitions, which the controller
        acts on one reassignment at a time: while the znode of an earlier one is there (the controller
        deletes it a moment after the replicas changed), this waits for it up to `timeout`)."""
        ids = tuple(node_id(r) for r in replicas)
        if not self.settings.release.at_least(2, 4):
            deadline = time.monotonic() + timeout
            with self._zookeeper(hosts, timeout) as zk:
                while not zk.reassign(topic, partition, ids):
                    if time.monotonic() >= deadline:
                        raise HostError(f"ZooKeeper still holds /admin/reassign_partitions after {timeout:g} s: "
                                        f"an earlier reassignment has not ended (Kafka {self.settings.version} "
                                        f"moves one at a time)")
                    time.sleep(0.5)
            return
        controller = self.controller_broker(hosts) if self.zookeeper_mode else None
        brokers = self._brokers(hosts)
        order = [h for h in brokers if h.name == controller] + [h for h in brokers if h.name != controller]
        last = "no broker answered"
        for host in order:
            try:
                code, message = wire.alter_partition_reassignment(
                    host.address, host.port("broker", config.BROKER_PORT), topic, partition, ids,
                    min(timeout, 10.0))
            except HostError as e:
                last = str(e)
                continue
            if code == 0:
                return
            last = f"error {code}: {message or ''}"
            if code != wire.NOT_CONTROLLER:
                break
        raise HostError(f"Kafka refused to move {topic}-{partition} to {', '.join(replicas)}: {last}")


def java_config_folders() -> set[str]:
    """The folders outside /usr that the JDK's configuration links into (Debian keeps
    java.security and friends under /etc/java-17-openjdk): a container needs them too."""
    java = shutil.which("java")
    if java is None:
        return set()
    home = Path(java).resolve().parent.parent
    folders = set()
    for top in (home / "conf", home / "lib" / "security"):
        for path in top.rglob("*") if top.is_dir() else ():
            if path.is_symlink():
                target = path.resolve()
                if target.parts[1:2] != ("usr",) and len(target.parts) > 2:
                    folders.add(str(Path(*target.parts[:3])))
    return folders


def is_broker(node: str) -> bool:
    return node.startswith("n") and node[1:].isdigit()


def node_id(node: str) -> int:
    if is_broker(node):
        return int(node[1:])
    if node.startswith("c") and node[1:].isdigit():
        return CONTROLLER_ID_BASE + int(node[1:])
    raise ClusterConfigError(f"{node!r} is not a Kafka node name (n1.., c1..)")


def node_name(node: int) -> str:
    return f"c{node - CONTROLLER_ID_BASE}" if node > CONTROLLER_ID_BASE else f"n{node}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
