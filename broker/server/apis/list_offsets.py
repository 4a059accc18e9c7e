"""ListOffsets (key 2), v1 to v7: earliest (-2), latest (-1), max timestamp (-3), or by timestamp; epochs from v4."""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.offsets import ListOffsetsResponse

from ..errors import ErrorCode
from ..partition import TimestampOffset, TopicPartition
from ..replica_manager import ReplicaManager
from .base import ApiHandler, RequestContext

_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Partition = _Topic.ListOffsetsPartitionResponse


class ListOffsetsApi(ApiHandler):
    api_key = 2
    min_version = 1
    max_version = 7

    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        # Clients (replica id < 0) see only committed offsets; the isolation level changes nothing
        # here since there are no transactions (last stable offset = high watermark).
        only_committed = request.replica_id < 0
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                partition = self.replicas.partition(TopicPartition(t.name, p.partition_index))
                if partition is None:
                    r = TimestampOffset(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                else:
                    r = partition.fetch_offset_for_timestamp(p.timestamp, p.current_leader_epoch, only_committed)
                parts.append(_Partition(partition_index=p.partition_index, error_code=int(r.error),
                                        timestamp=r.timestamp, offset=r.offset, leader_epoch=r.leader_epoch))
            topics.append(_Topic(name=t.name, partitions=parts))
        return ListOffsetsResponse(version=ctx.version, throttle_time_ms=0, topics=topics)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=[
            _Topic(name=t.name, partitions=[_Partition(partition_index=p.partition_index, error_code=int(error))
                                            for p in t.partitions]) for t in request.topics])
