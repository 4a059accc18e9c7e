"""CreateTopics (key 19, v2 to v7) and DeleteTopics (key 20, v1 to v6)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.admin.topics import CreateTopicsResponse, DeleteTopicsResponse

from ..errors import ErrorCode
from ..metadata_cache import MetadataCache
from ..topic_admin import TopicAdmin
from .base import ApiHandler, RequestContext

_Created = CreateTopicsResponse.CreatableTopicResult
_Config = _Created.CreatableTopicConfigs
_Deleted = DeleteTopicsResponse.DeletableTopicResult
DYNAMIC_TOPIC_CONFIG = 1  # config_source of a config set on the topic


class CreateTopicsApi(ApiHandler):
    api_key = 19
    min_version = 2
    max_version = 7

    def __init__(self, admin: TopicAdmin, default_partitions: int, default_replication_factor: int) -> None:
        self.admin = admin
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        results = []
        seen: set[str] = set()
        for t in request.topics:
            if t.name in seen:
                results.append(_Created(name=t.name, error_code=int(ErrorCode.INVALID_REQUEST),
                                        error_message=f"topic {t.name!r} appears twice in the request"))
                continue
            seen.add(t.name)
            if t.assignments:
                results.append(_Created(name=t.name, error_code=int(ErrorCode.INVALID_REQUEST),
                                        error_message="manual replica assignments are not supported"))
                continue
            partitions = self.default_partitions if t.num_partitions == -1 else t.num_partitions
            rf = self.default_replication_factor if t.replication_factor == -1 else t.replication_factor
            configs = {c.name: c.value for c in t.configs}
            r = await self.admin.create_topic(t.name, partitions, rf, configs, validate_only=request.validate_only)
            if r.error is not ErrorCode.NONE:
                results.append(_Created(name=t.name, error_code=int(r.error), error_message=r.message,
                                        num_partitions=-1, replication_factor=-1, configs=None))
                continue
            topic = r.topic
            assert topic is not None  # a creation that succeeded says what it created
            results.append(_Created(
                name=t.name, topic_id=topic.topic_id, error_code=0, error_message=None,
                num_partitions=len(topic.partitions), replication_factor=topic.replication_factor,
                configs=[_Config(name=k, value=v, read_only=False, config_source=DYNAMIC_TOPIC_CONFIG,
                                 is_sensitive=False) for k, v in sorted(topic.configs.items())]))
        return CreateTopicsResponse(version=ctx.version, throttle_time_ms=0, topics=results)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=[
            _Created(name=t.name, error_code=int(error), error_message=None, configs=None) for t in request.topics])


class DeleteTopicsApi(ApiHandler):
    api_key = 20
    min_version = 1
    max_version = 6

    def __init__(self, admin: TopicAdmin, metadata: MetadataCache,
                 on_deleted: Callable[[str], None]) -> None:
        self.admin = admin
        self.metadata = metadata
        self.on_deleted = on_deleted

    def _names(self, request: Any, version: int) -> list[tuple[str | None, Any]]:
        if version >= 6:
            return [(t.name if t.name is not None else self.metadata.topic_name_for_id(t.topic_id), t.topic_id)
                    for t in request.topics]
        return [(name, None) for name in request.topic_names]

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        results = []
        for name, topic_id in self._names(request, ctx.version):
            if name is None:
                results.append(_Deleted(name=None, topic_id=topic_id, error_code=int(ErrorCode.UNKNOWN_TOPIC_ID),
                                        error_message=f"no topic has id {topic_id}"))
                continue
            r = await self.admin.delete_topic(name)
            if r.error is ErrorCode.NONE:
                self.on_deleted(name)
            results.append(_Deleted(name=name, topic_id=r.topic.topic_id if r.topic else topic_id,
                                    error_code=int(r.error), error_message=r.message))
        return DeleteTopicsResponse(version=ctx.version, throttle_time_ms=0, responses=results)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return DeleteTopicsResponse(version=version, throttle_time_ms=0, responses=[
            _Deleted(name=name, topic_id=tid, error_code=int(error)) for name, tid in self._names(request, version)])
