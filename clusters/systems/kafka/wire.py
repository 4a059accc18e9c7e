"""A synchronous Kafka-protocol client for the cluster's control-plane questions to stock
Kafka of any release from 0.10.2 to 4.x: Metadata (brokers, controller, leaders, leader
epochs, ISRs), CreateTopics, FindCoordinator (the broker coordinating a consumer group),
AlterPartitionReassignments (KIP-455, from 2.4), DescribeQuorum (the KRaft quorum's
leader) and the finalized features (ApiVersions v3, KRaft).

Each question opens a connection, asks ApiVersions (v0, which every release answers) and then
asks at the newest version both sides speak, capped (`NEWEST`) below the flexible encodings
where an older one exists (Metadata v7, CreateTopics v4, FindCoordinator v2) — so 0.10.2 is
asked Metadata v2, CreateTopics v1 and FindCoordinator v0, 4.x Metadata v7.
AlterPartitionReassignments and DescribeQuorum exist only in the flexible encoding (v0), which
this client speaks too (request header v2, response header v1). Fields a version lacks read
as unknown: no leader epoch before Metadata v7 (Kafka 2.1), no controller before v1.
kafka-python's generated classes make the bytes.
"""
from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from kafka.protocol.admin.cluster import DescribeQuorumRequest
from kafka.protocol.admin.topics import AlterPartitionReassignmentsRequest, CreateTopicsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from fencepost.clusters.errors import HostError
from fencepost.clusters.systems.framing import recv_exactly

# The newest version asked: never a flexible one where an older version exists.
NEWEST = {MetadataRequest: 7, CreateTopicsRequest: 4, FindCoordinatorRequest: 2,
          AlterPartitionReassignmentsRequest: 0, DescribeQuorumRequest: 0}
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
NOT_CONTROLLER = 41
METADATA_TOPIC = "__cluster_metadata"  # the KRaft quorum's log
MAX_RESPONSE_BYTES = 64 << 20
UNKNOWN = -1
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    error_code: int
    leader: int
    leader_epoch: int  # UNKNOWN before Metadata v7
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Metadata:
    brokers: tuple[int, ...]
    controller: int  # UNKNOWN before Metadata v1
    topics: dict[str, tuple[int, tuple[PartitionMetadata, ...]]]  # name -> (error code, partitions)
    version: int = NEWEST[MetadataRequest]  # the Metadata version the broker was asked


class Connection:
    """One TCP connection to a broker; requests one at a time, each answered before the next."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.where = f"the Kafka broker at {host}:{port}"
        self.timeout = timeout
        self.correlation = 0
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise HostError(f"{self.where} did not answer: {e}") from None
        self.sock.settimeout(timeout)
        self.versions: dict[int, tuple[int, int]] = {}

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def ask(self, request: Any, version: int) -> Any:
        """Send one request at `version`, return its decoded response (HostError when garbled)."""
        self.correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self.correlation, client_id="fencepost")
        payload = bytes(request.encode(version=version, header=True))
        name = type(request).__name__
        try:
            self.sock.sendall(_LENGTH.pack(len(payload)) + payload)
            (size,) = _LENGTH.unpack(recv_exactly(self.sock, 4))
            if not 4 <= size <= MAX_RESPONSE_BYTES:
                raise HostError(f"{self.where} sent a response frame of {size} bytes")
            frame = recv_exactly(self.sock, size)
        except (OSError, struct.error) as e:
            raise HostError(f"{self.where} did not answer {name}: {e}") from None
        (correlation,) = _LENGTH.unpack_from(frame, 0)
        if correlation != self.correlation:
            raise HostError(f"{self.where} answered correlation id {correlation}, not {self.correlation}")
        response_class = getattr(sys.modules[type(request).__module__], name.replace("Request", "Response"))
        try:
            if response_class.flexible_version_q(version):  # header v1: the correlation id, then tags
                return response_class.decode(frame, version=version, header=True)
            return response_class.decode(frame[4:], version=version)
        except Exception as e:  # the generated decoders raise whatever bad bytes provoke
            raise HostError(f"{self.where}: cannot decode its {response_class.__name__} v{version}: {e}") from None

    def version_for(self, request_class: type) -> int:
        """The newest version of `request_class` both sides speak (ApiVersions asked once)."""
        if not self.versions:
            answer = self.ask(ApiVersionsRequest(), 0)
            if answer.error_code != 0:
                raise HostError(f"{self.where} answered ApiVersions with error {answer.error_code}")
            self.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        key, name = request_class.API_KEY, request_class.__name__.removesuffix("Request")
        if key not in self.versions:
            raise HostError(f"{self.where} does not serve {name} (API key {key})")
        low, high = self.versions[key]
        version = min(high, NEWEST[request_class])
        if version < low:
            raise HostError(f"{self.where} speaks {name} v{low}..v{high} only; fencepost asks up to "
                            f"v{NEWEST[request_class]}")
        return version


def metadata(host: str, port: int, topics: Sequence[str] | None, timeout: float) -> Metadata:
    """The broker's view of the cluster and of `topics` (None: every topic; []: none — v0 cannot
    ask for no topic and answers all, which callers ignore)."""
    with Connection(host, port, timeout) as connection:
        version = connection.version_for(MetadataRequest)
        wanted = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        if version == 0 and wanted is None:
            wanted = []  # v0 has no null: an empty list means every topic
        answer = connection.ask(MetadataRequest(topics=wanted, allow_auto_topic_creation=False), version)
    controller = answer.controller_id if version >= 1 else UNKNOWN
    return Metadata(
        brokers=tuple(sorted(b.node_id for b in answer.brokers)),
        controller=UNKNOWN if controller is None else controller,
        topics={t.name: (t.error_code, tuple(
            PartitionMetadata(p.partition_index, p.error_code, p.leader_id,
                              p.leader_epoch if version >= 7 else UNKNOWN,
                              tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in sorted(t.partitions, key=lambda p: p.partition_index)))
                for t in answer.topics},
        version=version)


def create_topic(host: str, port: int, name: str, partitions: int, replication_factor: int,
                 configs: dict[str, str], timeout: float) -> tuple[int, str | None]:
    """(error code, message) of creating one topic (no message before CreateTopics v1)."""
    config = CreateTopicsRequest.CreatableTopic.CreatableTopicConfig
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
        configs=[config(name=k, value=v) for k, v in configs.items()])
    with Connection(host, port, timeout + 2) as connection:
        version = connection.version_for(CreateTopicsRequest)
        answer = connection.ask(CreateTopicsRequest(topics=[topic], timeout_ms=int(timeout * 1000),
                                                    validate_only=False), version)
    result = answer.topics[0]
    return result.error_code, result.error_message if version >= 1 else None


def find_coordinator(host: str, port: int, group: str, timeout: float) -> tuple[int, int]:
    """(error code, node id) of the coordinator of consumer group `group`, as this broker tells it
    (COORDINATOR_NOT_AVAILABLE while the offsets topic is being made)."""
    with Connection(host, port, timeout) as connection:
        version = connection.version_for(FindCoordinatorRequest)
        request = FindCoordinatorRequest(key=group, key_type=0) if version >= 1 else FindCoordinatorRequest(key=group)
        answer = connection.ask(request, version)
    return answer.error_code, answer.node_id


def coordinator_named(brokers: Iterable[tuple[str, int]], group: str, timeout: float) -> int | None:
    """The node id of group `group`'s coordinator, as the first of `brokers` (address, port) that
    answers names it; None when none does."""
    for host, port in brokers:
        try:
            code, node = find_coordinator(host, port, group, timeout)
        except HostError:
            continue
        if code == 0 and node >= 0:
            return node
    return None


def alter_partition_reassignment(host: str, port: int, topic: str, partition: int, replicas: Sequence[int],
                                 timeout: float) -> tuple[int, str | None]:
    """(error code, message) of asking this broker to move topic-partition to `replicas` (KIP-455;
    the controller answers, a ZooKeeper-mode broker that is not the controller says NOT_CONTROLLER)."""
    request_class = AlterPartitionReassignmentsRequest
    topic_entry = request_class.ReassignableTopic(
        name=topic, partitions=[request_class.ReassignableTopic.ReassignablePartition(
            partition_index=partition, replicas=list(replicas))])
    with Connection(host, port, timeout + 2) as connection:
        version = connection.version_for(request_class)
        answer = connection.ask(request_class(timeout_ms=int(timeout * 1000), topics=[topic_entry]), version)
    if answer.error_code:
        return answer.error_code, answer.error_message
    for response in answer.responses:
        for p in response.partitions:
            if p.partition_index == partition:
                return p.error_code, p.error_message
    return 0, None


def quorum_leader(host: str, port: int, timeout: float) -> int:
    """The node id of the KRaft quorum's leader (the active controller), as this node tells it
    (DescribeQuorum; UNKNOWN when it knows none)."""
    request_class = DescribeQuorumRequest
    topic = request_class.TopicData(topic_name=METADATA_TOPIC,
                                    partitions=[request_class.TopicData.PartitionData(partition_index=0)])
    with Connection(host, port, timeout) as connection:
        version = connection.version_for(request_class)
        answer = connection.ask(request_class(topics=[topic]), version)
    if answer.error_code:
        raise HostError(f"{connection.where} answered DescribeQuorum with error {answer.error_code}")
    for t in answer.topics:
        for p in t.partitions:
            if p.error_code:
                raise HostError(f"{connection.where} answered DescribeQuorum with error {p.error_code}")
            return p.leader_id if p.leader_id is not None and p.leader_id >= 0 else UNKNOWN
    return UNKNOWN


def finalized_features(host: str, port: int, timeout: float) -> dict[str, int] | None:
    """The cluster's finalized feature levels as the broker knows them (ApiVersions v3, Kafka 2.7+:
    `metadata.version`, `eligible.leader.replicas.version`, ...), each at its max level; None
    when the broker does not speak ApiVersions v3."""
    with Connection(host, port, timeout) as connection:
        connection.version_for(MetadataRequest)  # fills in the versions the broker speaks
        low, high = connection.versions.get(ApiVersionsRequest.API_KEY, (0, 0))
        if high < 3:
            return None
        answer = connection.ask(ApiVersionsRequest(client_software_name="fencepost", client_software_version="1"), 3)
    if answer.error_code != 0:
        raise HostError(f"{connection.where} answered ApiVersions v3 with error {answer.error_code}")
    return {f.name: f.max_version_level for f in answer.finalized_features or ()}
