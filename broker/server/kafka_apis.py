"""Request dispatch (as Kafka's KafkaApis): frame -> header -> handler -> framed response.

Owns the rules that make every request end in a response or a closed
connection and never in a crash: an undecodable header or body, or an unknown
API key, closes the connection; an ApiVersions version this broker does not
speak gets Kafka's v0 UNSUPPORTED_VERSION answer; another API at a version
outside the advertised range gets that API's error response; a handler
exception is logged with the API key and version and answered with
UNKNOWN_SERVER_ERROR.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

from .apis.api_versions import ApiVersionsApi
from .apis.base import ApiHandler, RequestContext
from .codec import API_VERSIONS_KEY, FrameError, ResponseEncoder, decode_body, decode_header
from .errors import ErrorCode
from .network import ClientConnection, CloseConnection

log = logging.getLogger("broker.apis")


class KafkaApis:
    def __init__(self, handlers: Iterable[ApiHandler]) -> None:
        self._handlers: dict[int, ApiHandler] = {h.api_key: h for h in handlers}
        self._encoder = ResponseEncoder()

    def supported_versions(self) -> list[tuple[int, int, int]]:
        return [(k, h.min_version, h.max_version) for k, h in sorted(self._handlers.items())]

    async def handle(self, frame: bytes, conn: ClientConnection) -> bytes | None:
        try:
            header, pos = decode_header(frame)
        except FrameError as e:
            raise CloseConnection(str(e)) from None
        handler = self._handlers.get(header.api_key)
        if handler is None:
            raise CloseConnection(f"API key {header.api_key} (version {header.api_version}) is not served here")
        version = header.api_version
        if header.api_key == API_VERSIONS_KEY and version > handler.max_version:
            assert isinstance(handler, ApiVersionsApi)
            return self._encode(header.api_key, 0, header.correlation_id, handler.unsupported_version_response())
        try:
            request = decode_body(header, frame, pos)
        except FrameError as e:
            raise CloseConnection(f"{e} (client {header.client_id!r})") from None
        if not handler.min_version <= version <= handler.max_version:
            log.info("%s v%d from %s (client %r) is outside the supported v%d..v%d: UNSUPPORTED_VERSION",
                     type(handler).__name__, version, conn.peer, header.client_id, handler.min_version,
                     handler.max_version)
            response = self._error_response(handler, request, version, ErrorCode.UNSUPPORTED_VERSION, header)
        else:
            try:
                response = await handler.handle(RequestContext(header, conn), request)
            except CloseConnection:
                raise
            except Exception:
                log.exception("handler for API key %d v%d failed (client %r, correlation id %d)", header.api_key,
                              version, header.client_id, header.correlation_id)
                response = self._error_response(handler, request, version, ErrorCode.UNKNOWN_SERVER_ERROR, header)
        if response is None:
            return None
        return self._encode(header.api_key, version, header.correlation_id, response)

    @staticmethod
    def _error_response(handler: ApiHandler, request, version: int, error: ErrorCode, header):
        if header.api_key == 0 and getattr(request, "acks", 1) == 0:
            raise CloseConnection(f"acks=0 produce failed with {error.name}")
        try:
            return handler.error_response(request, version, error)
        except Exception as e:
            raise CloseConnection(f"cannot build the {error.name} response for API key {header.api_key} "
                                  f"v{version}: {type(e).__name__}: {e}") from None

    def _encode(self, api_key: int, version: int, correlation_id: int, response) -> bytes:
        try:
            return self._encoder.encode(api_key, version, correlation_id, response)
        except Exception as e:
            log.exception("cannot encode the response to API key %d v%d", api_key, version)
            raise CloseConnection(f"response encoding failed: {type(e).__name__}: {e}") from None
