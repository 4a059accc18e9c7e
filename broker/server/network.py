"""The socket server: asyncio TCP, 4-byte length framing, one request at a time per connection.

Owns connections and framing only. Each connection processes its requests
strictly in arrival order and writes each response before the next request is
handled (as Kafka mutes a channel while a request is in flight), so pipelined
requests of one client are answered in order and appended in order. A frame
whose length is negative or above `max_request_bytes` closes the connection;
so does a `CloseConnection` from the handler. Nothing that one connection
sends can stop the others from being served.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from struct import unpack_from

log = logging.getLogger("broker.network")

# Stop reading from a client that has this many requests (or bytes of them) waiting to be handled.
MAX_QUEUED_REQUESTS = 64
MAX_QUEUED_BYTES = 16 << 20
WRITE_HIGH_WATER = 4 << 20


class CloseConnection(Exception):
    """Raised by a request handler when the connection must be closed instead of answered."""


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """What a handler may know about the connection a request came on."""
    connection_id: int
    peer: str


# frame (without its length prefix), connection -> framed response, or None when no response is due
RequestHandler = Callable[[bytes, ClientConnection], Awaitable[bytes | None]]


class KafkaConnection(asyncio.Protocol):
    def __init__(self, server: SocketServer, connection_id: int) -> None:
        self._server = server
        self._id = connection_id
        self._transport: asyncio.Transport | None = None
        self._info = ClientConnection(connection_id, "?")
        self._buffer = bytearray()
        self._need = 4  # bytes the buffer must hold before the next frame can be cut
        self._queue: deque[bytes] = deque()
        self._queued_bytes = 0
        self._worker: asyncio.Task | None = None
        self._reading_paused = False
        self._writable: asyncio.Future | None = None
        self._closed = False

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self._info = ClientConnection(self._id, f"{peer[0]}:{peer[1]}" if peer else "?")
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self._server._connections[self._id] = self
        log.debug("connection %d from %s", self._id, self._info.peer)

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        buf = self._buffer
        buf += data
        if len(buf) < self._need:
            return
        start = 0
        end = len(buf)
        max_bytes = self._server.max_request_bytes
        while end - start >= 4:
            size = unpack_from(">i", buf, start)[0]
            if size < 0 or size > max_bytes:
                log.warning("closing connection %d from %s: request frame length %d is outside 0..%d "
                            "(max request bytes)", self._id, self._info.peer, size, max_bytes)
                self.close()
                return
            if end - start - 4 < size:
                self._need = size + 4
                break
            self._queue.append(bytes(buf[start + 4:start + 4 + size]))
            self._queued_bytes += size
            start += 4 + size
        else:
            self._need = 4
        if start:
            del buf[:start]
        if self._queue:
            if (len(self._queue) >= MAX_QUEUED_REQUESTS or self._queued_bytes >= MAX_QUEUED_BYTES) \
                    and not self._reading_paused:
                self._reading_paused = True
                assert self._transport is not None  # data comes after connection_made
                self._transport.pause_reading()
            if self._worker is None:
                self._worker = asyncio.get_running_loop().create_task(self._work())

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._server._connections.pop(self._id, None)
        if self._worker is not None:
            self._worker.cancel()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        log.debug("connection %d from %s closed%s", self._id, self._info.peer, f": {exc}" if exc else "")

    def pause_writing(self) -> None:
        if self._writable is None or self._writable.done():
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    # request processing

    async def _work(self) -> None:
        try:
            while self._queue and not self._closed:
                frame = self._queue.popleft()
                self._queued_bytes -= len(frame)
                if self._reading_paused and len(self._queue) < MAX_QUEUED_REQUESTS // 2 \
                        and self._queued_bytes < MAX_QUEUED_BYTES // 2:
                    self._reading_paused = False
                    assert self._transport is not None  # reading was paused on it
                    self._transport.resume_reading()
                try:
                    response = await self._server.handler(frame, self._info)
                except CloseConnection as e:
                    log.info("closing connection %d from %s: %s", self._id, self._info.peer, e)
                    self.close()
                    return
                if response is not None and not self._closed:
                    assert self._transport is not None  # requests come after connection_made
                    self._transport.write(response)
                    if self._writable is not None and not self._writable.done():
                        await self._writable
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug in the handler chain: this connection goes, the server stays
            log.exception("closing connection %d from %s after an unexpected error", self._id, self._info.peer)
            self.close()
        finally:
            self._worker = None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.clear()
            self._queued_bytes = 0
            if self._transport is not None:
                self._transport.close()


class SocketServer:
    """Accepts Kafka clients on one listener and feeds their frames to `handler`."""

    def __init__(self, host: str, port: int, handler: RequestHandler, max_request_bytes: int) -> None:
        self.host = host
        self.port = port
        self.handler = handler
        self.max_request_bytes = max_request_bytes
        self._server: asyncio.base_events.Server | None = None
        self._connections: dict[int, KafkaConnection] = {}
        self._next_id = 0

    def _new_connection(self) -> KafkaConnection:
        self._next_id += 1
        return KafkaConnection(self, self._next_id)

    async def start_listening(self) -> tuple[str, int]:
        """Bind the listener without accepting yet; returns the bound address (the OS picks the port when 0)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._new_connection, self.host, self.port,
                                                reuse_address=True, backlog=512, start_serving=False)
        bound = self._server.sockets[0].getsockname()
        self.port = bound[1]
        return bound[0], bound[1]

    async def start_serving(self) -> None:
        """Accept clients (after the rest of the broker is ready to answer them)."""
        assert self._server is not None
        await self._server.start_serving()

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def stop(self) -> None:
        """Stop accepting, close every connection and wait for their workers to end."""
        if self._server is not None:
            self._server.close()
        workers = []
        for conn in list(self._connections.values()):
            if conn._worker is not None:
                conn._worker.cancel()
                workers.append(conn._worker)
            conn.close()
        if workers:
            await asyncio.gather(*workers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
