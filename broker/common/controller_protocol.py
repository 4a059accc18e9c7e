"""The controller <-> broker protocol: framing, message types, and the cluster state snapshot.

Kafka's inter-broker APIs (BrokerRegistration, BrokerHeartbeat, AlterPartition,
LeaderAndIsr, UpdateMetadata) are not in the client codec, so this protocol is
our own, kept to what they carry. Every message is one frame: a 4-byte
big-endian length, then a JSON object. A broker opens one TCP connection to the
controller and keeps it; on it the broker sends requests and the controller
answers each (same "id"), and the controller also pushes messages without an id.

Requests (broker -> controller), each answered by {"id": N, "error": null | NAME,
"message": text, ...}:

  register        {node_id, host, port, incarnation, truncation}
                  -> {broker_epoch}. A new incarnation of a known node is a
                  restart: it keeps its ISR places, and partitions it led get a
                  new leader epoch (KIP-101: a leader that crashed and came back
                  leads in a new epoch). The controller then pushes a snapshot.
  heartbeat       {node_id, broker_epoch, metadata_version}
                  -> {} ; STALE_BROKER_EPOCH when the session expired (the
                  broker was fenced and must register again). A heartbeat whose
                  metadata_version is behind gets a snapshot pushed.
  alter_partition {node_id, broker_epoch, topic, partition, leader_epoch,
                  partition_epoch, isr}
                  -> {partition: PartitionState}; errors NOT_LEADER_OR_FOLLOWER,
                  FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION (stale partition
                  epoch), INVALID_REQUEST (an ISR with a non-replica, a
                  duplicate, or without the leader), INELIGIBLE_REPLICA (a
                  fenced broker added), STALE_BROKER_EPOCH,
                  UNKNOWN_TOPIC_OR_PARTITION.
  create_topic    {name, partitions, replication_factor, configs, validate_only}
                  -> {topic: TopicState}; errors TOPIC_ALREADY_EXISTS,
                  INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS,
                  INVALID_REPLICATION_FACTOR, INVALID_CONFIG.
  delete_topic    {name} -> {} ; UNKNOWN_TOPIC_OR_PARTITION.
  shutdown        {node_id, broker_epoch} -> {} once the node is fenced and its
                  leaderships moved (Kafka's controlled shutdown).
  describe        {} -> {snapshot: Snapshot} (for tools and tests).

Pushes (controller -> broker):

  snapshot        {snapshot: Snapshot}: the whole cluster state at `version`.
                  It plays UpdateMetadata (brokers, topics) and LeaderAndIsr (a
                  broker acts on every partition it is a replica of whose leader
                  epoch is newer than the one it has, and takes ISR changes of
                  partitions it leads from a newer partition epoch).

Error names are Kafka's ErrorCode names, so a broker maps them to its client
answers unchanged.
"""
from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field
from typing import Any

import orjson

from fencepost.broker.common.modes import TRUNCATION_MODES  # noqa: F401 (a register message's "truncation" is one of them)

MAX_FRAME_BYTES = 64 << 20
_LENGTH = struct.Struct(">i")

# message types
REGISTER = "register"
HEARTBEAT = "heartbeat"
ALTER_PARTITION = "alter_partition"
CREATE_TOPIC = "create_topic"
DELETE_TOPIC = "delete_topic"
SHUTDOWN = "shutdown"
DESCRIBE = "describe"
SNAPSHOT = "snapshot"

NO_LEADER = -1


class ProtocolError(Exception):
    """A frame that is not a controller protocol message; the connection is closed."""


def encode(message: dict[str, Any]) -> bytes:
    body = orjson.dumps(message)
    return _LENGTH.pack(len(body)) + body


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None at a clean end of stream. Raises ProtocolError on a bad frame."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise ProtocolError("connection closed inside a frame length") from None
    (size,) = _LENGTH.unpack(head)
    if not 0 < size <= MAX_FRAME_BYTES:
        raise ProtocolError(f"frame length {size} is outside 1..{MAX_FRAME_BYTES}")
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise ProtocolError(f"connection closed inside a {size}-byte frame") from None
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ProtocolError(f"frame is not JSON: {e}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type", ""), str):
        raise ProtocolError("frame is not a JSON object with a string 'type'")
    return message


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    fenced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.host, "port": self.port, "fenced": self.fenced}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BrokerInfo:
        return cls(int(d["node_id"]), str(d["host"]), int(d["port"]), bool(d.get("fenced", False)))


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition as the controller decided it. The leader epoch changes with every
    leadership change; the partition epoch with every change at all (leader or ISR)."""
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "leader": self.leader, "leader_epoch": self.leader_epoch,
                "partition_epoch": self.partition_epoch, "replicas": list(self.replicas), "isr": list(self.isr)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PartitionState:
        return cls(int(d["partition"]), int(d["leader"]), int(d["leader_epoch"]), int(d["partition_epoch"]),
                   tuple(int(r) for r in d["replicas"]), tuple(int(r) for r in d["isr"]))


@dataclass(frozen=True, slots=True)
class TopicState:
    name: str
    topic_id: str
    partitions: dict[int, PartitionState]
    configs: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "topic_id": self.topic_id, "configs": dict(self.configs),
                "partitions": [p.to_dict() for _, p in sorted(self.partitions.items())]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TopicState:
        parts = [PartitionState.from_dict(p) for p in d["partitions"]]
        return cls(str(d["name"]), str(d["topic_id"]), {p.partition: p for p in parts},
                   {str(k): str(v) for k, v in d.get("configs", {}).items()})


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The whole cluster state; `version` grows with every change the controller makes."""
    version: int
    controller_id: int
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicState]

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "controller_id": self.controller_id,
                "brokers": [b.to_dict() for _, b in sorted(self.brokers.items())],
                "topics": [t.to_dict() for _, t in sorted(self.topics.items())]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        brokers = [BrokerInfo.from_dict(b) for b in d["brokers"]]
        topics = [TopicState.from_dict(t) for t in d["topics"]]
        return cls(int(d["version"]), int(d.get("controller_id", -1)), {b.node_id: b for b in brokers},
                   {t.name: t for t in topics})
