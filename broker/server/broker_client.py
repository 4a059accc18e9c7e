"""A Kafka-protocol client connection from this broker to another (a follower to its leader).

Owns one TCP connection and its request/response exchange: kafka-python's
request classes encode the request with its header, the response header is
checked against the correlation id and the body decoded. One request at a time
(a follower's fetcher asks, waits, acts). Every failure — refused connection,
timeout, closed socket, undecodable answer — is a `BrokerConnectionError`, and
the connection is closed so the next call reconnects.
"""
from __future__ import annotations

import asyncio
import struct
import sys
from typing import Any

_LENGTH = struct.Struct(">i")
MAX_RESPONSE_BYTES = 256 << 20


class BrokerConnectionError(Exception):
    """The other broker could not be reached or did not answer properly."""


class BrokerClient:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def call(self, request: Any, version: int) -> Any:
        """Send `request` at `version` and return the decoded response."""
        try:
            return await asyncio.wait_for(self._call(request, version), self.timeout_s)
        except BrokerConnectionError:
            self.close()
            raise
        except asyncio.TimeoutError:
            self.close()
            raise BrokerConnectionError(f"{self.address} did not answer {type(request).__name__} "
                                        f"within {self.timeout_s:g}s") from None
        except (OSError, asyncio.IncompleteReadError) as e:
            self.close()
            raise BrokerConnectionError(f"{self.address}: {type(e).__name__}: {e}") from None

    async def _call(self, request: Any, version: int) -> Any:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None  # connected with the writer
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        correlation = self._correlation
        request.API_VERSION = version
        request.with_header(correlation_id=correlation, client_id=self.client_id)
        payload = bytes(request.encode(version=version, header=True))
        self._writer.write(_LENGTH.pack(len(payload)) + payload)
        await self._writer.drain()
        (size,) = _LENGTH.unpack(await self._reader.readexactly(4))
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise BrokerConnectionError(f"{self.address} sent a response frame of {size} bytes")
        frame = await self._reader.readexactly(size)
        (got,) = _LENGTH.unpack_from(frame, 0)
        if got != correlation:
            raise BrokerConnectionError(f"{self.address} answered correlation id {got}, expected {correlation}")
        cls = _response_class(request)
        pos = 5 if cls.flexible_version_q(version) else 4  # flexible response headers carry tagged fields
        try:
            return cls.decode(frame[pos:], version=version)
        except Exception as e:
            raise BrokerConnectionError(f"{self.address}: cannot decode {cls.__name__} v{version}: {e}") from None

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


def _response_class(request: Any) -> Any:
    module = sys.modules[type(request).__module__]
    return getattr(module, type(request).__name__.replace("Request", "Response"))
