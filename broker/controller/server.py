"""The controller's network side: broker connections, requests answered in order, snapshot pushes, session expiry.

One asyncio task per connection reads requests and answers each at once (the
state machine is synchronous; a change is persisted, fsync included, before
its answer or any push is written). A connection belongs to a node once that
node registered or heartbeated on it; a newer connection of the same node
closes the older one. After every change the snapshot is pushed to every
node's connection. Writes never wait: they go to the connection's transport
buffer (its outgoing queue), and a connection whose buffer grows beyond
`max_pending_bytes` (a broker that stopped reading) is cut off.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from typing import Any

from fencepost.broker.common.controller_protocol import (
    HEARTBEAT,
    REGISTER,
    SNAPSHOT,
    ProtocolError,
    Snapshot,
    encode,
    read_message,
)

from .changes import describe_changes
from .config import ControllerConfig
from .requests import HANDLERS, apply_request
from .state import ControllerState
from .store import ControllerStore, StoreError

log = logging.getLogger("broker.controller.server")

MAX_PENDING_BYTES = 32 << 20


class Connection:
    """One broker's (or tool's) connection: the node it speaks for, and writes that never block."""

    def __init__(self, writer: asyncio.StreamWriter, max_pending_bytes: int) -> None:
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.node_id: int | None = None
        self.max_pending_bytes = max_pending_bytes
        self.closed = False

    def __str__(self) -> str:
        return self.peer if self.node_id is None else f"{self.peer} (broker {self.node_id})"

    def send(self, frame: bytes) -> None:
        if self.closed:
            return
        self.writer.write(frame)
        pending = self.writer.transport.get_write_buffer_size()
        if pending > self.max_pending_bytes:
            log.warning("connection %s: %d bytes wait to be sent (limit %d): the peer stopped reading; closing it",
                        self, pending, self.max_pending_bytes)
            self.closed = True
            self.writer.transport.abort()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()


class ControllerServer:
    def __init__(self, config: ControllerConfig, state: ControllerState, store: ControllerStore, *,
                 clock: Callable[[], float] = time.monotonic, max_pending_bytes: int = MAX_PENDING_BYTES) -> None:
        self.config = config
        self.state = state
        self.store = store
        self.clock = clock
        self.max_pending_bytes = max_pending_bytes
        self.failure: StoreError | None = None  # set when the state could not be persisted: the controller stops
        self._connections: dict[Connection, asyncio.Task] = {}
        self._by_node: dict[int, Connection] = {}
        self._stopped = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._expiry: asyncio.Task | None = None

    async def start(self) -> tuple[str, int]:
        """Listen, start the session expiry task and the SIGTERM/SIGINT handlers; the bound (host, port)."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        self._server = await asyncio.start_server(self._serve_connection, self.config.listen_host,
                                                  self.config.listen_port)
        self._expiry = loop.create_task(self._expire_sessions())
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    def connected_nodes(self) -> set[int]:
        """Nodes with an open connection (pushes go to these)."""
        return set(self._by_node)

    def request_stop(self) -> None:
        self._stopped.set()

    async def serve_until_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._expiry is not None:
            self._expiry.cancel()
        for conn, task in list(self._connections.items()):
            conn.close()
            task.cancel()
        await asyncio.gather(*([self._expiry] if self._expiry else []), *self._connections.values(),
                             return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    # -- connections ---------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(writer, self.max_pending_bytes)
        task = asyncio.current_task()
        assert task is not None
        self._connections[conn] = task
        log.debug("connection from %s", conn)
        try:
            while not conn.closed:
                message = await read_message(reader)
                if message is None:
                    break
                if message.get("type") not in HANDLERS:
                    log.warning("connection %s: unknown message type %r (expected one of %s); closing it",
                                conn, message.get("type"), ", ".join(HANDLERS))
                    break
                self._handle(conn, message)
        except ProtocolError as e:
            log.warning("connection %s: %s; closing it", conn, e)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("connection %s: failed while handling a request; closing it", conn)
        finally:
            self._connections.pop(conn, None)
            if conn.node_id is not None and self._by_node.get(conn.node_id) is conn:
                del self._by_node[conn.node_id]
            conn.close()
            log.debug("connection %s closed", conn)

    def _claim(self, conn: Connection, node_id: int) -> None:
        """`conn` now speaks for `node_id`: the node's earlier connection, if any, is closed."""
        old = self._by_node.get(node_id)
        if old is not None and old is not conn:
            log.info("broker %d connected again from %s: closing its earlier connection %s", node_id, conn.peer, old)
            old.close()
        if conn.node_id is not None and conn.node_id != node_id and self._by_node.get(conn.node_id) is conn:
            del self._by_node[conn.node_id]
        conn.node_id = node_id
        self._by_node[node_id] = conn

    # -- requests and changes ------------------------------------------------

    def _handle(self, conn: Connection, message: dict[str, Any]) -> None:
        kind = message["type"]
        before = self.state.snapshot()
        response, changed = apply_request(self.state, message, self.clock())
        if changed and not self._persist(before, f"{kind} from {conn}"):
            conn.close()
            return
        conn.send(encode({"id": message.get("id"), **response}))
        accepted = response["error"] is None
        if accepted and kind in (REGISTER, HEARTBEAT):
            self._claim(conn, message["node_id"])
        if accepted and kind == REGISTER:
            log.info("broker %d registered from %s: broker epoch %d, incarnation %s, endpoint %s:%d, truncation %s",
                     message["node_id"], conn.peer, response["broker_epoch"], message["incarnation"],
                     message["host"], message["port"], message.get("truncation"))
        elif not accepted:
            log.info("%s from %s refused: %s %s", kind, conn, response["error"], response["message"])
        if changed:
            self._push_all()
        elif accepted and kind == HEARTBEAT and message.get("metadata_version", -1) < self.state.version:
            conn.send(self._snapshot_frame())

    def _persist(self, before: Snapshot, cause: str) -> bool:
        """Save the changed state and log what changed; on failure, stop the controller (answering would lie)."""
        try:
            self.store.save(self.state)
        except StoreError as e:
            log.critical("%s; stopping: a change that is not on disk must not be answered or pushed", e)
            self.failure = e
            self.request_stop()
            return False
        for line in describe_changes(before, self.state.snapshot()):
            log.info("%s: %s", cause, line)
        return True

    def _snapshot_frame(self) -> bytes:
        return encode({"type": SNAPSHOT, "snapshot": self.state.snapshot().to_dict()})

    def _push_all(self) -> None:
        frame = self._snapshot_frame()
        for conn in list(self._by_node.values()):
            conn.send(frame)

    async def _expire_sessions(self) -> None:
        interval = self.config.expiry_check_interval_s
        while not self._stopped.is_set():
            await asyncio.sleep(interval)
            try:
                before = self.state.snapshot()
                _, changed = self.state.expire(self.clock())
                if changed and self._persist(before, "session expiry"):
                    self._push_all()
            except Exception:
                log.exception("session expiry check failed; trying again in %.3f s", interval)
