"""InitProducerId (key 22), v0 to v4: a new producer id (epoch 0) for each idempotent producer.

Transactional ids are refused (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): this broker has no
transaction coordinator.
"""
from __future__ import annotations

import logging
from typing import Any

from kafka.protocol.producer.transaction import InitProducerIdResponse

from ..errors import ErrorCode
from ..producer_id_manager import ProducerIdManager
from .base import ApiHandler, RequestContext

log = logging.getLogger("broker.apis.producer_id")


class InitProducerIdApi(ApiHandler):
    api_key = 22
    min_version = 0
    max_version = 4

    def __init__(self, producer_ids: ProducerIdManager) -> None:
        self.producer_ids = producer_ids

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        if request.transactional_id is not None:
            return self.error_response(request, ctx.version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        pid = self.producer_ids.generate_producer_id()
        log.debug("producer id %d for client %s", pid, ctx.client_id)
        return InitProducerIdResponse(version=ctx.version, throttle_time_ms=0, error_code=0, producer_id=pid,
                                      producer_epoch=0)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return InitProducerIdResponse(version=version, throttle_time_ms=0, error_code=int(error), producer_id=-1,
                                      producer_epoch=-1)
