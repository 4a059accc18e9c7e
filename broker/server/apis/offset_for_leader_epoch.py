"""OffsetForLeaderEpoch (key 23), v2 to v4: the end offset of a leader epoch, with current-epoch fencing.

A broker in `kip101` truncation mode answers replicas (v3+, replica id >= 0) as
v0 did: the start of the first larger epoch or the log end, and no epoch.
Clients always get the KIP-279 answer.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.offsets import OffsetForLeaderEpochResponse

from ..errors import ErrorCode
from ..partition import EpochEndOffset, TopicPartition
from ..replica_manager import ReplicaManager
from .base import ApiHandler, RequestContext

_Topic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_Partition = _Topic.EpochEndOffset


class OffsetForLeaderEpochApi(ApiHandler):
    api_key = 23
    min_version = 2
    max_version = 4

    def __init__(self, replicas: ReplicaManager, answer_replicas_as_v0: bool = False) -> None:
        self.replicas = replicas
        self.answer_replicas_as_v0 = answer_replicas_as_v0

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        v0 = self.answer_replicas_as_v0 and ctx.version >= 3 and request.replica_id >= 0
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                partition = self.replicas.partition(TopicPartition(t.topic, p.partition))
                if partition is None:
                    r = EpochEndOffset(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                else:
                    r = partition.last_offset_for_leader_epoch(p.current_leader_epoch, p.leader_epoch, v0)
                parts.append(_Partition(error_code=int(r.error), partition=p.partition, leader_epoch=r.leader_epoch,
                                        end_offset=r.end_offset))
            topics.append(_Topic(topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(version=ctx.version, throttle_time_ms=0, topics=topics)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=[
            _Topic(topic=t.topic, partitions=[_Partition(error_code=int(error), partition=p.partition)
                                              for p in t.partitions]) for t in request.topics])
