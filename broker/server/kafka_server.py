"""One broker process, assembled (as Kafka's KafkaServer): startup, periodic duties, clean shutdown.

Owns the order things start and stop in, `meta.properties` (the node id a data
directory belongs to), the periodic duties (the flush timer — lazy mode writes
held appends out on it —, the high-watermark checkpoint timer, and the ISR
shrink check every replica.lag.time.max.ms / 2, as Kafka's) and which
controller decides: with `--controller` the controller process (registration,
heartbeats, pushed snapshots applied by the metadata listener, follower
fetchers), without it the single-node local stand-in. A clean shutdown first
asks the controller to move this broker's leaderships away (controlled
shutdown), stops the fetchers and clients, flushes every log, writes the
checkpoints and closes the log manager, which leaves the clean-shutdown marker.
"""
from __future__ import annotations

import asyncio
import logging
import signal
from pathlib import Path

from fencepost.broker.common import controller_protocol as protocol
from fencepost.broker.common.config import ConfigError
from fencepost.broker.common.durable_file import write_file_atomically

from .apis.api_versions import ApiVersionsApi
from .apis.fetch import FetchApi
from .apis.group_offsets import OffsetCommitApi, OffsetFetchApi
from .apis.groups import FindCoordinatorApi, HeartbeatApi, JoinGroupApi, LeaveGroupApi, SyncGroupApi
from .apis.init_producer_id import InitProducerIdApi
from .apis.list_offsets import ListOffsetsApi
from .apis.metadata import MetadataApi
from .apis.offset_for_leader_epoch import OffsetForLeaderEpochApi
from .apis.produce import ProduceApi
from .apis.topics import CreateTopicsApi, DeleteTopicsApi
from .config import BrokerConfig
from .controller_channel import ControllerChannel, ControllerUnavailable
from .group_coordinator import GroupCoordinator
from .group_routing import GroupRouting
from .kafka_apis import KafkaApis
from .local_controller import LocalController
from .log_backend import DataDirInUse, LogManager
from .metadata_cache import BrokerEndpoint, MetadataCache
from .metadata_listener import MetadataListener
from .network import SocketServer
from .offset_store import OffsetStore
from .producer_id_manager import ProducerIdManager
from .replica_fetcher import FetcherSettings, ReplicaFetcherManager
from .replica_manager import IsrChangeResult, ReplicaManager
from .topic_admin import LocalTopicAdmin, RemoteTopicAdmin
from .truncation import fences_by_leader_epoch, leader_answers_v0

log = logging.getLogger("broker.server")

META_PROPERTIES = "meta.properties"


def check_meta_properties(data_dir: Path, node_id: int, cluster_id: str) -> None:
    """A data directory belongs to one node: refuse to start another node id on it."""
    path = data_dir / META_PROPERTIES
    if path.exists():
        props = dict(line.split("=", 1) for line in path.read_text().splitlines()
                     if "=" in line and not line.startswith("#"))
        found = props.get("node.id")
        if found is not None and found.strip() != str(node_id):
            raise ConfigError(f"{path} says this data directory belongs to node {found.strip()}, "
                              f"not --node-id {node_id}: use that node id or another --data-dir")
        return
    write_file_atomically(path, f"version=1\nnode.id={node_id}\ncluster.id={cluster_id}\n".encode())


class KafkaServer:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.bound: tuple[str, int] | None = None
        self._stopped = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self.log_manager: LogManager | None = None
        self.socket_server: SocketServer | None = None
        self.groups: GroupCoordinator | None = None
        self.channel: ControllerChannel | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.listener: MetadataListener | None = None

    async def startup(self) -> tuple[str, int]:
        c = self.config
        c.data_dir.mkdir(parents=True, exist_ok=True)
        check_meta_properties(c.data_dir, c.node_id, c.cluster_id)
        self.log_manager = LogManager(c.data_dir, flush=c.flush, segment_bytes=c.segment_bytes)
        self.metadata = MetadataCache(c.cluster_id, controller_id=c.node_id,
                                      default_min_insync_replicas=c.min_insync_replicas)
        self.replicas = ReplicaManager(
            c.node_id, self.log_manager, replica_lag_time_max_ms=c.replica_lag_time_max_ms,
            isr_changer=self._change_isr if c.controller else None,
            require_epoch_start_to_join_isr=fences_by_leader_epoch(c.truncation))
        if c.controller:
            self.fetchers = ReplicaFetcherManager(FetcherSettings(
                c.node_id, c.truncation, fetch_wait_max_ms=c.replica_fetch_wait_max_ms,
                backoff_ms=c.replica_fetch_backoff_ms, request_timeout_ms=c.replica_request_timeout_ms),
                self.replicas)
            self.listener = MetadataListener(c.node_id, self.metadata, self.replicas, self.fetchers)
            self.local_controller = None
        else:
            self.local_controller = LocalController(c.node_id, c.data_dir, self.metadata, self.replicas,
                                                    c.max_partitions)
        self.producer_ids = ProducerIdManager(c.data_dir, node_id=c.node_id)
        self.offsets = OffsetStore(c.data_dir, fsync=c.flush == "fsync")
        self.offsets.open()
        self.groups = GroupCoordinator(
            self.offsets, initial_rebalance_delay_ms=c.group_initial_rebalance_delay_ms,
            min_session_timeout_ms=c.group_min_session_timeout_ms,
            max_session_timeout_ms=c.group_max_session_timeout_ms,
            topic_exists=lambda t, p: self.metadata.partition(t, p) is not None)

        if c.controller:
            self.channel = ControllerChannel(c.controller[0], c.controller[1], c.node_id, ("", 0), c.truncation,
                                             self.listener.apply)
            admin = RemoteTopicAdmin(self.channel, self.metadata, self.listener)
        else:
            admin = LocalTopicAdmin(self.local_controller)
        routing = GroupRouting(self.metadata, c.node_id)
        handlers = [
            ProduceApi(self.replicas, self.metadata),
            FetchApi(self.replicas, c.fetch_max_bytes),
            ListOffsetsApi(self.replicas),
            MetadataApi(self.metadata, admin, c.auto_create_topics, c.num_partitions,
                        c.default_replication_factor),
            OffsetCommitApi(self.groups, routing),
            OffsetFetchApi(self.groups, routing),
            FindCoordinatorApi(routing),
            JoinGroupApi(self.groups, routing),
            HeartbeatApi(self.groups, routing),
            LeaveGroupApi(self.groups, routing),
            SyncGroupApi(self.groups, routing),
            CreateTopicsApi(admin, c.num_partitions, c.default_replication_factor),
            DeleteTopicsApi(admin, self.metadata, self.groups.on_topic_deleted),
            InitProducerIdApi(self.producer_ids),
            OffsetForLeaderEpochApi(self.replicas, leader_answers_v0(c.truncation)),
        ]
        apis = KafkaApis([*handlers, ApiVersionsApi(lambda: apis.supported_versions())])

        self.socket_server = SocketServer(c.listen_host, c.listen_port, apis.handle, c.max_request_bytes)
        self.bound = await self.socket_server.start_listening()
        host = c.advertised_host or self.bound[0]
        port = c.advertised_port or self.bound[1]
        self.metadata.set_broker(BrokerEndpoint(c.node_id, host, port))
        if self.channel is not None:
            self.channel.advertised = (host, port)
            self.channel.start()
        else:
            # Topics are loaded once the broker knows its own endpoint: leaders are this node.
            self.local_controller.load({tp: self.log_manager.get(*tp).latest_epoch
                                        for tp in self.log_manager.partitions()})
        await self.socket_server.start_serving()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._periodic_duties()))
        log.info("broker %d listening on %s:%d (advertised %s:%d), data dir %s, flush %s, truncation %s, "
                 "controller %s", c.node_id, self.bound[0], self.bound[1], host, port, c.data_dir, c.flush,
                 c.truncation, "%s:%d" % c.controller if c.controller else "local")
        return self.bound

    async def _periodic_duties(self) -> None:
        """The flush timer (lazy mode: the only time held appends reach the OS) and HW checkpoints."""
        loop = asyncio.get_running_loop()
        flush_s = self.config.effective_flush_interval_ms / 1000
        checkpoint_s = self.config.hw_checkpoint_interval_ms / 1000
        next_flush = loop.time() + flush_s if flush_s > 0 else None
        next_checkpoint = loop.time() + checkpoint_s if checkpoint_s > 0 else None
        isr_s = self.config.replica_lag_time_max_ms / 2000
        next_isr_check = loop.time() + isr_s if self.config.controller else None
        while True:
            due = [t for t in (next_flush, next_checkpoint, next_isr_check) if t is not None]
            if not due:
                return
            await asyncio.sleep(max(min(due) - loop.time(), 0))
            now = loop.time()
            try:
                if next_flush is not None and now >= next_flush:
                    self.replicas.flush_all()
                    next_flush = now + flush_s
                if next_checkpoint is not None and now >= next_checkpoint:
                    self.replicas.checkpoint_high_watermarks()
                    next_checkpoint = now + checkpoint_s
                if next_isr_check is not None and now >= next_isr_check:
                    self.replicas.maybe_shrink_isrs(now * 1000)
                    next_isr_check = now + isr_s
            except Exception:
                log.exception("periodic flush or checkpoint failed; retrying on the next period")
                next_flush = now + flush_s if flush_s > 0 else None
                next_checkpoint = now + checkpoint_s if checkpoint_s > 0 else None
                next_isr_check = now + isr_s if next_isr_check is not None else None

    async def _change_isr(self, tp, leader_epoch: int, partition_epoch: int, isr: tuple[int, ...]) -> IsrChangeResult:
        answer = await self.channel.request({
            "type": protocol.ALTER_PARTITION, "node_id": self.config.node_id,
            "broker_epoch": self.channel.broker_epoch, "topic": tp.topic, "partition": tp.partition,
            "leader_epoch": leader_epoch, "partition_epoch": partition_epoch, "isr": list(isr)})
        if answer.get("error"):
            return IsrChangeResult(f"{answer['error']}: {answer.get('message')}")
        state = protocol.PartitionState.from_dict(answer["partition"])
        return IsrChangeResult(None, state.isr, state.partition_epoch)

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leaderships away before it goes (bounded wait)."""
        if self.channel is None or not self.channel.registered.is_set():
            return
        try:
            answer = await self.channel.request({"type": protocol.SHUTDOWN, "node_id": self.config.node_id,
                                                 "broker_epoch": self.channel.broker_epoch}, timeout_s=5)
            if answer.get("error"):
                log.warning("controlled shutdown refused: %s: %s", answer["error"], answer.get("message"))
            else:
                log.info("controlled shutdown: the controller moved this broker's leaderships")
        except ControllerUnavailable as e:
            log.warning("controlled shutdown not possible (%s): shutting down anyway", e)

    def request_stop(self) -> None:
        self._stopped.set()

    async def serve_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        await self._stopped.wait()

    async def shutdown(self) -> None:
        log.info("shutting down")
        await _bounded(self._controlled_shutdown(), "the controlled shutdown")
        if self.listener is not None:
            self.listener.stopped = True
        if self.fetchers is not None:
            await _bounded(self.fetchers.shutdown(), "stopping the replica fetchers")
        if self.channel is not None:
            await _bounded(self.channel.stop(), "closing the controller channel")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.socket_server is not None:
            await _bounded(self.socket_server.stop(), "closing client connections")
        if self.groups is not None:
            self.groups.shutdown()
            self.offsets.close()
        if self.log_manager is not None:
            self.replicas.flush_all()
            self.replicas.checkpoint_high_watermarks()
            self.log_manager.close()
        log.info("shutdown complete")


SHUTDOWN_STEP_TIMEOUT_S = 6.0


async def _bounded(step, what: str) -> None:
    """One shutdown step, given up after SHUTDOWN_STEP_TIMEOUT_S: the logs are flushed and the
    checkpoints written whatever a peer does."""
    try:
        await asyncio.wait_for(step, SHUTDOWN_STEP_TIMEOUT_S)
    except asyncio.TimeoutError:
        log.warning("%s took longer than %gs; going on with the shutdown", what, SHUTDOWN_STEP_TIMEOUT_S)


async def run(config: BrokerConfig) -> int:
    """Serve until SIGTERM/SIGINT; 0 after a clean shutdown, 1 when the broker could not start."""
    server = KafkaServer(config)
    try:
        try:
            await server.startup()
        except (ConfigError, DataDirInUse) as e:
            log.error("cannot start: %s", e)
            return 1
        except OSError as e:
            log.error("cannot start: %s (is --listen %s:%d free and --data-dir %s writable?)", e,
                      config.listen_host, config.listen_port, config.data_dir)
            return 1
        except Exception:
            log.exception("cannot start")
            return 1
        await server.serve_until_stopped()
    finally:
        await server.shutdown()
    return 0
