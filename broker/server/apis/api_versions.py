"""ApiVersions (key 18): the API keys and version ranges this broker answers."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.metadata.api_versions import ApiVersionsResponse

from ..errors import ErrorCode
from .base import ApiHandler, RequestContext

Versions = list[tuple[int, int, int]]  # (api key, min version, max version)


class ApiVersionsApi(ApiHandler):
    api_key = 18
    min_version = 0
    max_version = 3

    def __init__(self, supported: Callable[[], Versions]) -> None:
        self._supported = supported

    def _keys(self, version: int) -> list:
        return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, lo, hi in sorted(self._supported())]

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        return ApiVersionsResponse(version=ctx.version, error_code=0, api_keys=self._keys(ctx.version),
                                   throttle_time_ms=0)

    def error_response(self, request: Any, version: int, error: ErrorCode) -> Any:
        return ApiVersionsResponse(version=version, error_code=int(error), api_keys=[], throttle_time_ms=0)

    def unsupported_version_response(self) -> Any:
        """Kafka's answer to an ApiVersions version it does not know: a v0 body with the error and
        the ApiVersions range, so the client can retry with a version both sides speak."""
        return ApiVersionsResponse(version=0, error_code=int(ErrorCode.UNSUPPORTED_VERSION), api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=self.api_key, min_version=self.min_version,
                                           max_version=self.max_version)])
