"""Produce (key 0), v3 and up (record batch format v2): appends with acks 0, 1 or -1 (all)."""
from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.producer.produce import ProduceResponse

from ..errors import ErrorCode
from ..metadata_cache import MetadataCache
from ..network import CloseConnection
from ..partition import AppendOutcome, TopicPartition
from ..replica_manager import ReplicaManager
from .base import ApiHandler, RequestContext

log = logging.getLogger("broker.apis.produce")

_TopicResponse = ProduceResponse.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse


class ProduceApi(ApiHandler):
    api_key = 0
    min_version = 3
    max_version = 10

    def __init__(self, replicas: ReplicaManager, metadata: MetadataCache) -> None:
        self.replicas = replicas
        self.metadata = metadata

    async def handle(self, ctx: RequestContext, request: Any) -> Any | None:
        acks = request.acks
        results: dict[TopicPartition, AppendOutcome] = {}
        order: list[TopicPartition] = []
        entries: dict[TopicPartition, bytes] = {}
        for topic in request.topic_data:
            for part in topic.partition_data:
                tp = TopicPartition(topic.name, part.index)
                order.append(tp)
                if acks not in (-1, 0, 1):
                    results[tp] = AppendOutcome(ErrorCode.INVALID_REQUIRED_ACKS,
                                                message=f"acks={acks} is not -1, 0 or 1")
                elif request.transactional_id is not None:
                    results[tp] = AppendOutcome(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                message="transactions are not supported by this broker")
                elif self.metadata.partition(tp.topic, tp.partition) is None:
                    results[tp] = AppendOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                elif not part.records:
                    results[tp] = AppendOutcome(ErrorCode.CORRUPT_MESSAGE, message="no record batch in the request")
                else:
                    entries[tp] = part.records
        if entries:
            results.update(await self.replicas.append_records(acks, request.timeout_ms, entries,
                                                              self.metadata.min_insync_replicas))
        if acks == 0:
            failed = [f"{tp}: {results[tp].error.name}" for tp in order if results[tp].error is not ErrorCode.NONE]
            if failed:
                # acks=0 has no response to carry an error: Kafka closes the connection instead.
                raise CloseConnection(f"acks=0 produce failed ({', '.join(failed[:5])})")
            return None
        return self._response(ctx.version, order, results)

    @staticmethod
    def _response(version: int, order: list[TopicPartition], results: dict[TopicPartition, AppendOutcome]) -> Any:
        by_topic: dict[str, list] = {}
        for tp in order:
            r = results[tp]
            if r.error is not ErrorCode.NONE:
                log.debug("produce to %s: %s %s", tp, r.error.name, r.message or "")
            by_topic.setdefault(tp.topic, []).append(_PartitionResponse(
                index=tp.partition, error_code=int(r.error), base_offset=r.base_offset, log_append_time_ms=-1,
                log_start_offset=r.log_start_offset, record_errors=[],
                error_message=r.message if r.error is not ErrorCode.NONE else None))
        return ProduceResponse(version=version, throttle_time_ms=0, responses=[
            _TopicResponse(name=name, partition_responses=parts) for name, parts in by_topic.items()])

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        order = [TopicPartition(t.name, p.index) for t in request.topic_data for p in t.partition_data]
        return self._response(version, order, {tp: AppendOutcome(error) for tp in order})
