"""This broker's link to the controller: registration, heartbeats, requests, and the snapshots it pushes.

Owns one TCP connection to the controller (broker/common/controller_protocol.py),
kept open and re-made when it drops: on every (re)connection the broker
registers (same incarnation for the life of the process) and then heartbeats
at a quarter of the session timeout the controller names. A heartbeat answered
STALE_BROKER_EPOCH (the session expired and the controller fenced this broker)
makes it register again. A request or heartbeat not answered within the request
timeout drops the connection. Snapshots pushed by the controller are handed to
`on_snapshot` in arrival order.

A broker cut off from the controller does not stop serving: it keeps the last
state it was told, as Kafka brokers do — which is what makes the zombie
follower of KAFKA-6880 possible.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from fencepost.broker.common import controller_protocol as protocol
from fencepost.broker.common.controller_protocol import Snapshot

log = logging.getLogger("broker.controller_channel")

RECONNECT_BACKOFF_S = 0.2


class ControllerUnavailable(Exception):
    """No answer from the controller (not connected, connection lost, or timed out)."""


class ControllerChannel:
    def __init__(self, host: str, port: int, node_id: int, advertised: tuple[str, int], truncation: str,
                 on_snapshot: Callable[[Snapshot], None], request_timeout_s: float = 5.0) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.advertised = advertised
        self.truncation = truncation
        self.on_snapshot = on_snapshot
        self.request_timeout_s = request_timeout_s
        self.incarnation = str(uuid.uuid4())
        self.broker_epoch = -1
        self.metadata_version = -1
        self.registered = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._next_id = 0
        self._task: asyncio.Task | None = None
        self._session_timeout_ms = 6000
        self._last_problem = ""

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._drop()

    async def request(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send a request and wait for its answer; raises ControllerUnavailable."""
        if self._writer is None:
            raise ControllerUnavailable(f"not connected to the controller at {self.host}:{self.port}")
        self._next_id += 1
        request_id = self._next_id
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._writer.write(protocol.encode({**message, "id": request_id}))
            return await asyncio.wait_for(future, timeout_s or self.request_timeout_s)
        except asyncio.TimeoutError:
            self._drop()
            raise ControllerUnavailable(f"the controller did not answer {message.get('type')} within "
                                        f"{timeout_s or self.request_timeout_s:g}s") from None
        finally:
            self._pending.pop(request_id, None)

    # the connection

    async def _run(self) -> None:
        while True:
            try:
                reader, self._writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.request_timeout_s)
                reading = asyncio.get_running_loop().create_task(self._read(reader))
                try:
                    await self._register()
                    await self._heartbeat_until_broken(reading)
                finally:
                    reading.cancel()
                    await asyncio.gather(reading, return_exceptions=True)
            except asyncio.CancelledError:
                raise
            except (OSError, asyncio.TimeoutError, ControllerUnavailable, protocol.ProtocolError) as e:
                self._problem(f"controller at {self.host}:{self.port}: {type(e).__name__}: {e}")
            self._drop()
            await asyncio.sleep(RECONNECT_BACKOFF_S)

    def _problem(self, text: str) -> None:
        if text != self._last_problem:
            log.warning("%s; reconnecting", text)
            self._last_problem = text

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                message = await protocol.read_message(reader)
                if message is None:
                    break
                if message.get("type") == protocol.SNAPSHOT:
                    snapshot = Snapshot.from_dict(message["snapshot"])
                    self.metadata_version = max(self.metadata_version, snapshot.version)
                    self.on_snapshot(snapshot)
                elif (future := self._pending.get(message.get("id", 0))) is not None and not future.done():
                    # (request ids start at 1: 0 is no request, as a missing id)
                    future.set_result(message)
        except (OSError, protocol.ProtocolError, KeyError, ValueError, TypeError) as e:
            log.warning("bad message from the controller: %s", e)
        finally:
            self._drop()

    def _drop(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ControllerUnavailable("the connection to the controller was lost"))

    async def _register(self) -> None:
        host, port = self.advertised
        answer = await self.request({"type": protocol.REGISTER, "node_id": self.node_id, "host": host, "port": port,
                                     "incarnation": self.incarnation, "truncation": self.truncation})
        if answer.get("error"):
            raise ControllerUnavailable(f"registration refused: {answer['error']}: {answer.get('message')}")
        self.broker_epoch = int(answer["broker_epoch"])
        self._session_timeout_ms = int(answer.get("session_timeout_ms", self._session_timeout_ms))
        self._last_problem = ""
        self.registered.set()
        log.info("registered with the controller at %s:%d: broker epoch %d, session timeout %d ms", self.host,
                 self.port, self.broker_epoch, self._session_timeout_ms)

    async def _heartbeat_until_broken(self, reading: asyncio.Task) -> None:
        interval = max(self._session_timeout_ms / 4000, 0.05)
        while not reading.done():
            answer = await self.request({"type": protocol.HEARTBEAT, "node_id": self.node_id,
                                         "broker_epoch": self.broker_epoch,
                                         "metadata_version": self.metadata_version})
            if answer.get("error") == "STALE_BROKER_EPOCH":
                log.warning("the controller fenced this broker (session expired): registering again")
                await self._register()
                continue
            if answer.get("error"):
                log.warning("heartbeat refused: %s: %s", answer["error"], answer.get("message"))
            await asyncio.sleep(interval)
