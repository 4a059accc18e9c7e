"""Fetch (key 1), v4 to v12: reads with current-leader-epoch fencing and long polling; sessionless.

Fetch sessions (KIP-227) are declined: a full fetch (session id 0) is always
answered with session id 0, which tells the client no session was created;
an incremental fetch of an unknown session gets FETCH_SESSION_ID_NOT_FOUND.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse

from ..errors import ErrorCode
from ..partition import ReadOutcome, TopicPartition
from ..replica_manager import FetchParams, FetchPartitionRequest, ReplicaManager
from .base import ApiHandler, RequestContext

_TopicResponse = FetchResponse.FetchableTopicResponse
_PartitionData = _TopicResponse.PartitionData
_EpochEndOffset = _PartitionData.EpochEndOffset


class FetchApi(ApiHandler):
    api_key = 1
    min_version = 4
    max_version = 12

    def __init__(self, replicas: ReplicaManager, fetch_max_bytes: int) -> None:
        self.replicas = replicas
        self.fetch_max_bytes = fetch_max_bytes

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        version = ctx.version
        if version >= 7:
            if request.session_id != 0:
                return self._top_level_error(version, ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
            if request.session_epoch > 0:
                return self._top_level_error(version, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        cap = self.fetch_max_bytes
        reqs = [FetchPartitionRequest(TopicPartition(t.topic, p.partition), p.fetch_offset,
                                      min(p.partition_max_bytes, cap), p.current_leader_epoch, p.last_fetched_epoch)
                for t in request.topics for p in t.partitions]
        params = FetchParams(request.replica_id, request.max_wait_ms, request.min_bytes,
                             min(request.max_bytes, cap))
        results = await self.replicas.fetch_messages(params, reqs)
        read_committed = request.isolation_level == 1
        return self._response(version, results, read_committed)

    @staticmethod
    def _response(version: int, results: list[tuple[FetchPartitionRequest, ReadOutcome]], read_committed: bool) -> Any:
        topics: list = []
        current_topic = None
        for req, r in results:
            diverging = None
            if r.diverging_epoch is not None and version >= 12:
                diverging = _EpochEndOffset(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
            part = _PartitionData(
                partition_index=req.tp.partition, error_code=int(r.error), high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
                diverging_epoch=diverging, aborted_transactions=[] if read_committed else None,
                preferred_read_replica=-1, records=r.records)
            if current_topic is None or current_topic.topic != req.tp.topic:
                current_topic = _TopicResponse(topic=req.tp.topic, partitions=[])
                topics.append(current_topic)
            current_topic.partitions.append(part)
        return FetchResponse(version=version, throttle_time_ms=0, error_code=0, session_id=0, responses=topics)

    @staticmethod
    def _top_level_error(version: int, error: ErrorCode) -> Any:
        return FetchResponse(version=version, throttle_time_ms=0, error_code=int(error), session_id=0, responses=[])

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        results = [(FetchPartitionRequest(TopicPartition(t.topic, p.partition), p.fetch_offset, 0), ReadOutcome(error))
                   for t in request.topics for p in t.partitions]
        resp = self._response(version, results, False)
        if version >= 7:
            resp.error_code = int(error)
        return resp
