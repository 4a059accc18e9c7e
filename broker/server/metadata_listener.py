"""Applies the controller's snapshots to this broker: metadata, and leadership changes (LeaderAndIsr).

Owns the step from "what the controller decided" to "what this broker does":
the metadata cache gets the live brokers and the topics; each partition this
broker is a replica of becomes led here (a newer leader epoch naming this
node), followed (a newer leader epoch naming another node, or no leader: the
follower then waits), or takes a newer ISR (same epoch, newer partition
epoch). Topics gone from the snapshot are deleted here. Snapshots older than
the last applied one are ignored; after shutdown began none is applied.
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from fencepost.broker.common.controller_protocol import NO_LEADER, PartitionState, Snapshot

from .metadata_cache import BrokerEndpoint, MetadataCache, PartitionMetadata, TopicMetadata
from .partition import TopicPartition
from .replica_fetcher import ReplicaFetcherManager
from .replica_manager import ReplicaManager

log = logging.getLogger("broker.metadata_listener")


def topic_metadata(name: str, topic_id: str, partitions: dict[int, PartitionState],
                   configs: dict[str, str]) -> TopicMetadata:
    return TopicMetadata(name, uuid.UUID(topic_id), {
        i: PartitionMetadata(i, p.leader, p.leader_epoch, p.replicas, p.isr) for i, p in partitions.items()},
        dict(configs))


class MetadataListener:
    def __init__(self, node_id: int, metadata: MetadataCache, replicas: ReplicaManager,
                 fetchers: ReplicaFetcherManager) -> None:
        self.node_id = node_id
        self.metadata = metadata
        self.replicas = replicas
        self.fetchers = fetchers
        self.version = -1
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.applied = asyncio.Event()  # set after each snapshot applied (waiters clear it)
        self.stopped = False

    def apply(self, snapshot: Snapshot) -> None:
        if self.stopped or snapshot.version <= self.version:
            return
        self.version = snapshot.version
        self.endpoints = {b.node_id: (b.host, b.port) for b in snapshot.brokers.values()}
        for node_id in [b.node_id for b in self.metadata.alive_brokers()]:
            if node_id not in snapshot.brokers or snapshot.brokers[node_id].fenced:
                self.metadata.remove_broker(node_id)
        for b in snapshot.brokers.values():
            if not b.fenced:
                self.metadata.set_broker(BrokerEndpoint(b.node_id, b.host, b.port))
        for name in self.metadata.topic_names():
            if name not in snapshot.topics:
                self._delete_topic(name)
        for topic in snapshot.topics.values():
            self.metadata.put_topic(topic_metadata(topic.name, topic.topic_id, topic.partitions, topic.configs))
            min_isr = self.metadata.min_insync_replicas(topic.name)
            for state in topic.partitions.values():
                if self.node_id in state.replicas:
                    self._apply_partition(TopicPartition(topic.name, state.partition), state, min_isr)
        self.applied.set()

    def _delete_topic(self, name: str) -> None:
        topic = self.metadata.topic(name)
        self.metadata.remove_topic(name)
        for i in topic.partitions if topic else ():
            tp = TopicPartition(name, i)
            self.fetchers.remove_partition(tp)
            if self.replicas.partition(tp) is not None:
                self.replicas.stop_replica(tp, delete=True)
                log.info("%s: deleted (its topic is gone)", tp)

    def _apply_partition(self, tp: TopicPartition, state: PartitionState, min_isr: int) -> None:
        p = self.replicas.partition(tp)
        if state.leader == self.node_id:
            if p is None or not p.is_leader or p.leader_epoch < state.leader_epoch:
                self.fetchers.remove_partition(tp)
                p = self.replicas.make_leader(tp, state.leader_epoch, state.replicas, state.isr, state.partition_epoch)
                log.info("%s: leader in epoch %d from offset %d, ISR %s", tp, state.leader_epoch,
                         p.log.log_end_offset, list(state.isr))
            elif p.leader_epoch == state.leader_epoch and state.partition_epoch > p.partition_epoch:
                p.update_isr(state.isr, state.partition_epoch)
            p.min_insync_replicas = min_isr
            return
        if p is not None and not p.is_leader and p.leader_id == state.leader and p.leader_epoch >= state.leader_epoch:
            p.isr, p.partition_epoch = state.isr, max(p.partition_epoch, state.partition_epoch)
            return
        if p is not None and p.leader_epoch > state.leader_epoch:
            return  # an older word than what this replica already acts on
        self.fetchers.remove_partition(tp)
        p, _ = self.replicas.make_follower(tp, state.leader, state.leader_epoch, state.replicas, state.isr,
                                           state.partition_epoch)
        p.min_insync_replicas = min_isr
        endpoint = self.endpoints.get(state.leader)
        if state.leader == NO_LEADER or endpoint is None:
            log.info("%s: no leader in epoch %d; waiting", tp, state.leader_epoch)
            return
        self.fetchers.add_partition(tp, state.leader, endpoint[0], endpoint[1], state.leader_epoch)
        log.info("%s: follower of %d in epoch %d from log end %d (HW %d)", tp, state.leader, state.leader_epoch,
                 p.log.log_end_offset, p.high_watermark)
