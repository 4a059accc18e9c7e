"""What this broker knows of the cluster: live brokers, topics, their partitions' leaders, epochs, replicas and ISR.

Owns the read side of cluster metadata, the answer to Metadata requests and the
source of each topic's configs (min.insync.replicas). It is updated by whoever
decides metadata — on one node, the local controller; later, the controller
process through its pushes. It decides nothing itself.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionMetadata]
    configs: dict[str, str] = field(default_factory=dict)
    is_internal: bool = False

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


class MetadataCache:
    def __init__(self, cluster_id: str, controller_id: int, default_min_insync_replicas: int = 1) -> None:
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.default_min_insync_replicas = default_min_insync_replicas
        self._brokers: dict[int, BrokerEndpoint] = {}
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}

    # updates

    def set_broker(self, endpoint: BrokerEndpoint) -> None:
        self._brokers[endpoint.node_id] = endpoint

    def remove_broker(self, node_id: int) -> None:
        self._brokers.pop(node_id, None)

    def put_topic(self, topic: TopicMetadata) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic.name

    def remove_topic(self, name: str) -> None:
        topic = self._topics.pop(name, None)
        if topic is not None:
            self._by_id.pop(topic.topic_id, None)

    # queries

    def alive_brokers(self) -> list[BrokerEndpoint]:
        return [self._brokers[n] for n in sorted(self._brokers)]

    def broker(self, node_id: int) -> BrokerEndpoint | None:
        return self._brokers.get(node_id)

    def topic(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def topic_name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def partition(self, topic: str, partition: int) -> PartitionMetadata | None:
        t = self._topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def min_insync_replicas(self, topic: str) -> int:
        t = self._topics.get(topic)
        if t is not None and "min.insync.replicas" in t.configs:
            return int(t.configs["min.insync.replicas"])
        return self.default_min_insync_replicas
