"""Metadata (key 3): brokers, topics, partition leaders and leader epochs; auto-creates topics producers ask for."""
from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.metadata.metadata import MetadataResponse

from fencepost.broker.common.topics import topic_name_error

from ..errors import ErrorCode
from ..metadata_cache import MetadataCache, TopicMetadata
from ..topic_admin import TopicAdmin
from .base import ApiHandler, RequestContext

log = logging.getLogger("broker.apis.metadata")

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition
_Broker = MetadataResponse.MetadataResponseBroker


class MetadataApi(ApiHandler):
    api_key = 3
    min_version = 0
    max_version = 12

    def __init__(self, metadata: MetadataCache, admin: TopicAdmin, auto_create_topics: bool,
                 default_partitions: int, default_replication_factor: int) -> None:
        self.metadata = metadata
        self.admin = admin
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.version
        topics = []
        requested = request.topics
        if requested is None or (version == 0 and not requested):
            for name in self.metadata.topic_names():
                topics.append(self._topic(self.metadata.topic(name)))
        else:
            allow_create = self.auto_create_topics and (version < 4 or request.allow_auto_topic_creation)
            for t in requested:
                name = t.name
                if name is None and t.topic_id is not None:
                    name = self.metadata.topic_name_for_id(t.topic_id)
                    if name is None:
                        topics.append(_Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), name=None,
                                             topic_id=t.topic_id, partitions=[]))
                        continue
                topics.append(await self._lookup_or_create(name, allow_create))
        brokers = [_Broker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                   for b in self.metadata.alive_brokers()]
        return MetadataResponse(version=version, throttle_time_ms=0, brokers=brokers,
                                cluster_id=self.metadata.cluster_id, controller_id=self.metadata.controller_id,
                                topics=topics)

    async def _lookup_or_create(self, name: str, allow_create: bool) -> Any:
        topic = self.metadata.topic(name)
        if topic is not None:
            return self._topic(topic)
        if topic_name_error(name):
            return _Topic(error_code=int(ErrorCode.INVALID_TOPIC_EXCEPTION), name=name, partitions=[])
        if not allow_create:
            return _Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name, partitions=[])
        result = await self.admin.create_topic(name, self.default_partitions, self.default_replication_factor, {})
        if result.error is ErrorCode.TOPIC_ALREADY_EXISTS:
            existing = self.metadata.topic(name)
            if existing is None:  # created elsewhere, not yet in this broker's metadata
                return _Topic(error_code=int(ErrorCode.LEADER_NOT_AVAILABLE), name=name, partitions=[])
            return self._topic(existing)
        if result.error is not ErrorCode.NONE:
            log.warning("auto-creating topic %r failed: %s", name, result.message)
            return _Topic(error_code=int(result.error), name=name, partitions=[])
        assert result.topic is not None  # a creation that succeeded says what it created
        return self._topic(result.topic)

    @staticmethod
    def _topic(topic: TopicMetadata) -> Any:
        partitions = [
            _Partition(error_code=int(ErrorCode.LEADER_NOT_AVAILABLE if p.leader_id < 0 else ErrorCode.NONE),
                       partition_index=p.partition, leader_id=p.leader_id,
                       leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas), isr_nodes=list(p.isr),
                       offline_replicas=list(p.offline_replicas))
            for _, p in sorted(topic.partitions.items())]
        return _Topic(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.is_internal,
                      partitions=partitions)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        topics = [_Topic(error_code=int(error), name=t.name, topic_id=t.topic_id, partitions=[])
                  for t in (request.topics or [])]
        return MetadataResponse(version=version, brokers=[], cluster_id=self.metadata.cluster_id,
                                controller_id=-1, topics=topics)
