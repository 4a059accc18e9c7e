"""A synchronous Kafka-protocol client for the cluster's control-plane questions to stock
Kafka: Metadata (brokers, leaders, leader epochs, ISRs) and CreateTopics. One request per
connection, kafka-python's generated classes for the bytes; versions every Kafka from
3.0 to 4.x answers (Metadata v7, CreateTopics v4: both before flexible encoding).
"""
from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from clusters.errors import HostError
from clusters.systems.framing import recv_exactly

METADATA_VERSION = 7
CREATE_TOPICS_VERSION = 4
MAX_RESPONSE_BYTES = 64 << 20
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    error_code: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Metadata:
    brokers: tuple[int, ...]
    controller: int
    topics: dict[str, tuple[int, tuple[PartitionMetadata, ...]]]  # name -> (error code, partitions)


def call(host: str, port: int, request: Any, version: int, timeout: float) -> Any:
    """Send one request, return the decoded response; HostError when unreachable or garbled."""
    where = f"the Kafka broker at {host}:{port}"
    request.API_VERSION = version
    request.with_header(correlation_id=1, client_id="fencepost")
    payload = bytes(request.encode(version=version, header=True))
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(_LENGTH.pack(len(payload)) + payload)
            (size,) = _LENGTH.unpack(recv_exactly(sock, 4))
            if not 4 <= size <= MAX_RESPONSE_BYTES:
                raise HostError(f"{where} sent a response frame of {size} bytes")
            frame = recv_exactly(sock, size)
    except (OSError, struct.error) as e:
        raise HostError(f"{where} did not answer {type(request).__name__}: {e}") from None
    (correlation,) = _LENGTH.unpack_from(frame, 0)
    if correlation != 1:
        raise HostError(f"{where} answered correlation id {correlation}, not 1")
    response_class = getattr(sys.modules[type(request).__module__],
                             type(request).__name__.replace("Request", "Response"))
    try:
        return response_class.decode(frame[4:], version=version)
    except Exception as e:  # the generated decoders raise whatever bad bytes provoke
        raise HostError(f"{where}: cannot decode its {response_class.__name__}: {e}") from None


def metadata(host: str, port: int, topics: Sequence[str] | None, timeout: float) -> Metadata:
    wanted = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
    answer = call(host, port, MetadataRequest(topics=wanted, allow_auto_topic_creation=False),
                  METADATA_VERSION, timeout)
    return Metadata(
        brokers=tuple(sorted(b.node_id for b in answer.brokers)),
        controller=answer.controller_id,
        topics={t.name: (t.error_code, tuple(
            PartitionMetadata(p.partition_index, p.error_code, p.leader_id, p.leader_epoch,
                              tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in sorted(t.partitions, key=lambda p: p.partition_index)))
                for t in answer.topics})


def create_topic(host: str, port: int, name: str, partitions: int, replication_factor: int,
                 configs: dict[str, str], timeout: float) -> tuple[int, str | None]:
    """(error code, message) of creating one topic."""
    config = CreateTopicsRequest.CreatableTopic.CreatableTopicConfig
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
        configs=[config(name=k, value=v) for k, v in configs.items()])
    answer = call(host, port, CreateTopicsRequest(topics=[topic], timeout_ms=int(timeout * 1000),
                                                  validate_only=False), CREATE_TOPICS_VERSION, timeout + 2)
    result = answer.topics[0]
    return result.error_code, result.error_message

