"""Committed group offsets: OffsetCommit (key 8, v2 to v8) and OffsetFetch (key 9, v1 to v7)."""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer.group import OffsetCommitResponse, OffsetFetchResponse

from ..errors import ErrorCode
from ..offset_store import CommittedOffset
from .base import RequestContext
from .groups import CoordinatedApi

_CommitTopic = OffsetCommitResponse.OffsetCommitResponseTopic
_CommitPartition = _CommitTopic.OffsetCommitResponsePartition
_FetchTopic = OffsetFetchResponse.OffsetFetchResponseTopic
_FetchPartition = _FetchTopic.OffsetFetchResponsePartition


class OffsetCommitApi(CoordinatedApi):
    api_key = 8
    min_version = 2
    max_version = 8

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        offsets = {(t.name, p.partition_index): CommittedOffset(p.committed_offset, p.committed_leader_epoch,
                                                                 p.committed_metadata)
                   for t in request.topics for p in t.partitions}
        errors = self.groups.commit_offsets(request.group_id, request.member_id,
                                            request.generation_id_or_member_epoch, offsets)
        return self._response(ctx.version, request, lambda tp: errors[tp])

    @staticmethod
    def _response(version: int, request: Any, error_of) -> Any:
        return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=[
            _CommitTopic(name=t.name, partitions=[
                _CommitPartition(partition_index=p.partition_index,
                                 error_code=int(error_of((t.name, p.partition_index))))
                for p in t.partitions]) for t in request.topics])

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return self._response(version, request, lambda tp: error)


class OffsetFetchApi(CoordinatedApi):
    api_key = 9
    min_version = 1
    max_version = 7

    async def serve(self, ctx: RequestContext, request: Any) -> Any:
        if request.topics is None:
            wanted = None
        else:
            wanted = [(t.name, p) for t in request.topics for p in t.partition_indexes]
        committed = self.groups.fetch_offsets(request.group_id, wanted)
        by_topic: dict[str, list] = {}
        for (topic, partition), c in committed.items():
            by_topic.setdefault(topic, []).append(_FetchPartition(
                partition_index=partition, committed_offset=c.offset if c else -1,
                committed_leader_epoch=c.leader_epoch if c else -1, metadata=c.metadata if c else "",
                error_code=0))
        return OffsetFetchResponse(version=ctx.version, throttle_time_ms=0, error_code=0, topics=[
            _FetchTopic(name=name, partitions=parts) for name, parts in by_topic.items()])

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        topics = [_FetchTopic(name=t.name, partitions=[
            _FetchPartition(partition_index=p, committed_offset=-1, metadata="", error_code=int(error))
            for p in t.partition_indexes]) for t in (request.topics or [])]
        return OffsetFetchResponse(version=version, throttle_time_ms=0, error_code=int(error), topics=topics)
