"""A small ZooKeeper client for the control plane of a ZooKeeper-mode Kafka cluster: which
brokers are registered, which broker is the controller, each partition's replicas and its
leader, leader epoch and ISR — as the controller and the leaders write them, in every release
(Metadata carries no leader epoch before Kafka 2.1, and a broker's metadata cache learns an
ISR change seconds late in old releases; ZooKeeper holds it at once) — and the one write
fencepost makes: a partition reassignment for releases before 2.4 (no admin API then), the
znode /admin/reassign_partitions that Kafka's controller acts on and deletes when done.

The ZooKeeper wire protocol (jute, big-endian, length-framed) for the few requests needed:
connect, getData, getChildren, create, closeSession. No watches; nothing is ever deleted or
overwritten (a create of a node that exists is refused by ZooKeeper: NodeExists).
"""
from __future__ import annotations

import json
import socket
import struct
from dataclasses import dataclass
from typing import Any

from fencepost.clusters.errors import HostError
from fencepost.clusters.systems.framing import recv_exactly

CREATE = 1
GET_DATA = 4
GET_CHILDREN = 8
CLOSE_SESSION = -11
NO_NODE = -101
NODE_EXISTS = -110
REASSIGN_PATH = "/admin/reassign_partitions"
OPEN_ACL = ((31, "world", "anyone"),)  # every permission to anyone: as Kafka's own tools create it
SESSION_TIMEOUT_MS = 6000
MAX_FRAME = 16 << 20
_INT = struct.Struct(">i")
_CONNECT_REPLY = struct.Struct(">iiq")
_REPLY_HEADER = struct.Struct(">iqi")


@dataclass(frozen=True)
class PartitionState:
    leader: int  # -1: none
    leader_epoch: int
    isr: tuple[int, ...]


class ZooKeeperReader:
    """One session, opened on entry and closed on exit; HostError for anything that goes wrong."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.where = f"ZooKeeper at {host}:{port}"
        self.address = (host, port)
        self.timeout = timeout
        self.xid = 0
        self.sock: socket.socket | None = None

    def __enter__(self) -> ZooKeeperReader:
        try:
            self.sock = socket.create_connection(self.address, timeout=self.timeout)
            self.sock.settimeout(self.timeout)
            # protocol version, last zxid seen, session timeout, session id, password, read-only
            self._send(struct.pack(">iqiqi16s?", 0, 0, SESSION_TIMEOUT_MS, 0, 16, b"\0" * 16, False))
            reply = self._receive()
        except OSError as e:
            self._close_socket()
            raise HostError(f"{self.where} did not answer: {e}") from None
        if len(reply) < _CONNECT_REPLY.size or _CONNECT_REPLY.unpack_from(reply)[1] <= 0:
            self._close_socket()
            raise HostError(f"{self.where} refused a session")
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._request(CLOSE_SESSION, b"")
        except HostError:
            pass  # the server drops the session on its own after its timeout
        finally:
            self._close_socket()

    def get(self, path: str) -> bytes | None:
        """The data of `path`, or None when it does not exist."""
        body = self._request(GET_DATA, _path(path))
        if body is None:
            return None
        (length,) = _INT.unpack_from(body)
        return b"" if length < 0 else body[4:4 + length]

    def children(self, path: str) -> list[str] | None:
        """The children of `path`, or None when it does not exist."""
        body = self._request(GET_CHILDREN, _path(path))
        if body is None:
            return None
        (count,) = _INT.unpack_from(body)
        names, at = [], 4
        for _ in range(max(0, count)):
            (length,) = _INT.unpack_from(body, at)
            names.append(body[at + 4:at + 4 + length].decode())
            at += 4 + length
        return names

    def get_json(self, path: str) -> Any:
        data = self.get(path)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError:
            raise HostError(f"{self.where}: {path} does not hold JSON: {data[:80]!r}") from None

    def create(self, path: str, data: bytes) -> bool:
        """Create a persistent node holding `data`; False when it exists already."""
        acl = _INT.pack(len(OPEN_ACL)) + b"".join(_INT.pack(perms) + _string(scheme) + _string(who)
                                                  for perms, scheme, who in OPEN_ACL)
        body = _string(path) + _INT.pack(len(data)) + data + acl + _INT.pack(0)  # flags: persistent
        error, _ = self._call(CREATE, body)
        if error == NODE_EXISTS:
            return False
        if error != 0:
            raise HostError(f"{self.where} refused to create {path}: error {error}"
                            + (" (its parent does not exist)" if error == NO_NODE else ""))
        return True

    # -- Kafka's znodes ------------------------------------------------------------------------

    def brokers(self) -> list[int]:
        """The registered brokers (/brokers/ids)."""
        return sorted(int(n) for n in self.children("/brokers/ids") or [] if n.isdigit())

    def controller(self) -> int | None:
        found = self.get_json("/controller")
        return found.get("brokerid") if isinstance(found, dict) else None

    def replicas(self, topic: str) -> dict[int, tuple[int, ...]] | None:
        """partition -> assigned replicas in order, or None when the topic does not exist."""
        found = self.get_json(f"/brokers/topics/{topic}")
        if not isinstance(found, dict) or not isinstance(found.get("partitions"), dict):
            return None
        return {int(p): tuple(r) for p, r in found["partitions"].items()}

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        found = self.get_json(f"/brokers/topics/{topic}/partitions/{partition}/state")
        if not isinstance(found, dict):
            return None
        return PartitionState(found.get("leader", -1), found.get("leader_epoch", -1), tuple(found.get("isr", ())))

    def reassign(self, topic: str, partition: int, replicas: tuple[int, ...]) -> bool:
        """Ask the controller to move topic-partition to `replicas` (Kafka's reassign format, v1);
        False when a reassignment is in progress (the node exists: one at a time)."""
        document = {"version": 1, "partitions": [{"topic": topic, "partition": partition,
                                                   "replicas": list(replicas)}]}
        return self.create(REASSIGN_PATH, json.dumps(document).encode())

    # -- the wire ----------------------------------------------------------------------------

    def _request(self, kind: int, body: bytes) -> bytes | None:
        """The reply's body; None when the node does not exist."""
        error, reply = self._call(kind, body)
        if error == NO_NODE:
            return None
        if error != 0:
            raise HostError(f"{self.where} answered with error {error}")
        return reply

    def _call(self, kind: int, body: bytes) -> tuple[int, bytes]:
        """(ZooKeeper's error code, the reply's body)."""
        self.xid += 1
        try:
            self._send(struct.pack(">ii", self.xid, kind) + body)
            reply = self._receive()
        except OSError as e:
            raise HostError(f"{self.where} did not answer: {e}") from None
        xid, _zxid, error = _REPLY_HEADER.unpack_from(reply)
        if xid != self.xid:
            raise HostError(f"{self.where} answered request {xid}, not {self.xid}")
        return error, reply[_REPLY_HEADER.size:]

    def _send(self, payload: bytes) -> None:
        assert self.sock is not None
        self.sock.sendall(_INT.pack(len(payload)) + payload)

    def _receive(self) -> bytes:
        assert self.sock is not None
        (size,) = _INT.unpack(recv_exactly(self.sock, 4))
        if not 0 < size <= MAX_FRAME:
            raise OSError(f"a frame of {size} bytes")
        return recv_exactly(self.sock, size)

    def _close_socket(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _string(text: str) -> bytes:
    encoded = text.encode()
    return _INT.pack(len(encoded)) + encoded


def _path(path: str) -> bytes:
    encoded = path.encode()
    return _INT.pack(len(encoded)) + encoded + b"\0"  # the path, then watch = false
