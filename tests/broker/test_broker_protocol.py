"""The broker answered with raw protocol requests (kafka-python's classes): versions, fencing, errors, framing.

Each test starts its own broker process on 127.0.0.1 (see tests/support/broker_support.py).
"""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.admin.topics import CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest

from fencepost.broker.server.errors import ErrorCode
from tests.support.broker_support import RawClient, make_batch, read_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

FetchTopic = FetchRequest.FetchTopic
FetchPartition = FetchTopic.FetchPartition


def metadata(client: RawClient, topics, version: int = 12, allow: bool = True):
    req_topics = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
    return client.call(MetadataRequest(topics=req_topics, allow_auto_topic_creation=allow), version)


def produce(client: RawClient, topic: str, values: list[bytes], partition: int = 0, acks: int = -1,
            version: int = 9, batch: bytes | None = None):
    records = batch if batch is not None else make_batch(values)
    req = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])
    return client.call(req, version)


def produce_ok(client: RawClient, topic: str, values: list[bytes]) -> int:
    r = produce(client, topic, values).responses[0].partition_responses[0]
    assert r.error_code == 0, r
    return r.base_offset


def fetch(client: RawClient, topic: str, offset: int, epoch: int = -1, version: int = 12, max_wait_ms: int = 0,
          min_bytes: int = 0, **kw):
    req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                       isolation_level=0, session_id=kw.pop("session_id", 0), session_epoch=kw.pop("session_epoch", -1),
                       topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                           partition=0, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=-1,
                           log_start_offset=-1, partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
    return client.call(req, version)


def api_versions(client: RawClient, version: int):
    return client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)


# -- ApiVersions --------------------------------------------------------------

def test_api_versions_v3_lists_what_librdkafka_needs(broker):
    with RawClient(broker.port) as c:
        r = api_versions(c, 3)
    assert r.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert ranges[18] == (0, 3) and ranges[0] == (3, 10) and ranges[1] == (4, 12)
    assert ranges[3] == (0, 12) and ranges[2] == (1, 7) and ranges[23] == (2, 4) and ranges[22][1] >= 4
    for key in (8, 9, 10, 11, 12, 13, 14, 19, 20):
        assert key in ranges


@pytest.mark.parametrize("version", [4, 127])
def test_api_versions_newer_than_supported_gets_v0_unsupported_version(broker, version):
    with RawClient(broker.port) as c:
        c._correlation = 40
        # v4 is flexible: header v2; the body is not read
        c.send_frame(struct.pack(">hhih", 18, version, 41, 3) + b"cli" + b"\x00" + b"\x02x\x021\x00")
        frame = c.recv_frame()
        assert frame is not None
        correlation, error, count = struct.unpack_from(">ihi", frame, 0)
        assert correlation == 41 and error == ErrorCode.UNSUPPORTED_VERSION and count == 1
        assert struct.unpack_from(">hhh", frame, 10) == (18, 0, 3)
        # the client falls back to a version both speak, on the same connection
        assert api_versions(c, 2).error_code == 0


# -- Metadata, topics -------------------------------------------------------------

def test_metadata_auto_creates_for_producers_only_when_allowed(broker):
    with RawClient(broker.port) as c:
        r = metadata(c, ["auto"], version=12)
        t = r.topics[0]
        assert t.error_code == 0 and t.name == "auto" and t.topic_id is not None
        p = t.partitions[0]
        assert (p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) == (0, 1, 0, [1], [1])
        assert r.brokers[0].node_id == 1 and r.brokers[0].port == broker.port and r.controller_id == 1
        assert metadata(c, ["not-there"], version=12, allow=False).topics[0].error_code == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert metadata(c, ["bad/name"], version=12).topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        v0 = metadata(c, [], version=0)  # v0: an empty list means every topic
        assert [t.name for t in v0.topics] == ["auto"]
        assert metadata(c, [], version=1).topics == []  # v1+: empty means none, null means all
        assert [t.name for t in metadata(c, None, version=1).topics] == ["auto"]


def test_create_and_delete_topics(broker):
    Creatable = CreateTopicsRequest.CreatableTopic
    Config = Creatable.CreatableTopicConfig

    def create(c, name, partitions=3, rf=1, configs=(), version=5):
        return c.call(CreateTopicsRequest(topics=[Creatable(name=name, num_partitions=partitions,
                                                            replication_factor=rf, assignments=[],
                                                            configs=[Config(name=k, value=v) for k, v in configs])],
                                          timeout_ms=5000, validate_only=False), version).topics[0]

    with RawClient(broker.port) as c:
        t = create(c, "made", configs=[("min.insync.replicas", "2")])
        assert t.error_code == 0 and t.num_partitions == 3 and t.replication_factor == 1
        assert [(x.name, x.value) for x in t.configs] == [("min.insync.replicas", "2")]
        assert create(c, "made").error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        assert create(c, "rf3", rf=3).error_code == ErrorCode.INVALID_REPLICATION_FACTOR
        assert create(c, "zero", partitions=0).error_code == ErrorCode.INVALID_PARTITIONS
        assert create(c, "cfg", configs=[("min.insync.replicas", "x")]).error_code == ErrorCode.INVALID_CONFIG
        assert create(c, "toomany", partitions=100_000).error_code == ErrorCode.INVALID_PARTITIONS
        assert len(metadata(c, ["made"]).topics[0].partitions) == 3
        # min.insync.replicas=2 on one broker: acks=all is refused, acks=1 accepted
        r = produce(c, "made", [b"x"], acks=-1).responses[0].partition_responses[0]
        assert r.error_code == ErrorCode.NOT_ENOUGH_REPLICAS and "min.insync.replicas=2" in r.error_message
        assert produce(c, "made", [b"x"], acks=1).responses[0].partition_responses[0].error_code == 0
        d = c.call(DeleteTopicsRequest(topic_names=["made", "ghost"], timeout_ms=5000), 4).responses
        assert [(x.name, x.error_code) for x in d] == [("made", 0), ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert metadata(c, ["made"], allow=False).topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert not (broker.data_dir / "made-0").exists()


# -- Produce --------------------------------------------------------------------

def test_produce_errors_per_partition(broker):
    with RawClient(broker.port) as c:
        metadata(c, ["p"])
        assert produce_ok(c, "p", [b"a", b"b"]) == 0
        assert produce_ok(c, "p", [b"c"]) == 2
        unknown = produce(c, "nope", [b"a"]).responses[0].partition_responses[0]
        assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        bad = bytearray(make_batch([b"z"]))
        bad[-1] ^= 0xFF  # inside the CRC
        corrupt = produce(c, "p", [], batch=bytes(bad)).responses[0].partition_responses[0]
        assert corrupt.error_code == ErrorCode.CORRUPT_MESSAGE and corrupt.error_message
        acks = produce(c, "p", [b"a"], acks=2).responses[0].partition_responses[0]
        assert acks.error_code == ErrorCode.INVALID_REQUIRED_ACKS
        old = produce(c, "p", [b"a"], version=2)  # below the supported v3
        assert old.responses[0].partition_responses[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        got = read_records(fetch(c, "p", 0).responses[0].partitions[0].records)
        assert [(o, v) for o, v, _ in got] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_acks_zero_gets_no_response_and_errors_close_the_connection(broker):
    with RawClient(broker.port) as c:
        metadata(c, ["z"])
        _, payload = c.request_bytes(ProduceRequest(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name="z", partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=make_batch([b"q"]))])]), 9)
        c.send_frame(payload)
        # the next response on this connection answers the next request: nothing came for acks=0
        assert metadata(c, ["z"]).topics[0].name == "z"
        assert read_records(fetch(c, "z", 0).responses[0].partitions[0].records)[0][1] == b"q"
        _, payload = c.request_bytes(ProduceRequest(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name="missing", partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=make_batch([b"q"]))])]), 9)
        c.send_frame(payload)
        assert c.recv_frame() is None  # closed: acks=0 has no other way to report an error
    with RawClient(broker.port) as c:
        assert api_versions(c, 3).error_code == 0


def test_idempotent_producer_ids_and_duplicate_batches(broker):
    with RawClient(broker.port) as c:
        ids = [c.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4) for _ in range(3)]
        assert all(r.error_code == 0 and r.producer_epoch == 0 for r in ids)
        pids = [r.producer_id for r in ids]
        assert len(set(pids)) == 3
        txn = c.call(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000), 4)
        assert txn.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        metadata(c, ["idem"])
        batch = make_batch([b"once"], producer_id=pids[0], producer_epoch=0, base_sequence=0)
        first = produce(c, "idem", [], batch=batch).responses[0].partition_responses[0]
        again = produce(c, "idem", [], batch=batch).responses[0].partition_responses[0]
        assert first.error_code == again.error_code == 0 and first.base_offset == again.base_offset == 0
        assert len(read_records(fetch(c, "idem", 0).responses[0].partitions[0].records)) == 1
    broker.stop()
    broker.restart()
    with RawClient(broker.port) as c:
        later = c.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4).producer_id
    assert later > max(pids)


# -- Fetch, ListOffsets, OffsetForLeaderEpoch: epochs ---------------------------

def test_leader_epoch_fencing_after_restart(broker):
    with RawClient(broker.port) as c:
        metadata(c, ["e"])
        produce_ok(c, "e", [b"a", b"b", b"c"])
    broker.stop()
    broker.restart()  # a restarted broker leads in a new epoch: 1
    with RawClient(broker.port) as c:
        assert metadata(c, ["e"]).topics[0].partitions[0].leader_epoch == 1
        produce_ok(c, "e", [b"d"])
        stale = fetch(c, "e", 0, epoch=0).responses[0].partitions[0]
        assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH and stale.records in (b"", None)
        future = fetch(c, "e", 0, epoch=2).responses[0].partitions[0]
        assert future.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        for epoch in (1, -1):
            ok = fetch(c, "e", 0, epoch=epoch).responses[0].partitions[0]
            assert ok.error_code == 0 and ok.high_watermark == 4 and ok.log_start_offset == 0
            assert ok.last_stable_offset == 4
            assert [(o, v, e) for o, v, e in read_records(ok.records)] == [
                (0, b"a", 0), (1, b"b", 0), (2, b"c", 0), (3, b"d", 1)]
        assert fetch(c, "e", 0, epoch=0, version=8).responses[0].partitions[0].error_code == 0  # no epoch before v9

        def epoch_end(requested, current=-1, version=2):
            req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                topic="e", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
                    partition=0, current_leader_epoch=current, leader_epoch=requested)])])
            p = c.call(req, version).topics[0].partitions[0]
            return p.error_code, p.leader_epoch, p.end_offset

        assert epoch_end(0) == (0, 0, 3)  # epoch 0 ended where epoch 1 began
        assert epoch_end(1) == (0, 1, 4)  # the current epoch ends at the log end
        assert epoch_end(0, current=0, version=4)[0] == ErrorCode.FENCED_LEADER_EPOCH
        assert epoch_end(5)[1:] == (-1, -1)

        def list_offset(ts, current=-1, version=7):
            req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name="e", partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=current, timestamp=ts)])])
            p = c.call(req, version).topics[0].partitions[0]
            return p.error_code, p.offset, p.leader_epoch

        assert list_offset(-2) == (0, 0, 0)
        assert list_offset(-1) == (0, 4, 1)
        assert list_offset(1_001) == (0, 1, 0)  # make_batch stamps 1000, 1001, ...
        assert list_offset(10**15) == (0, -1, -1)
        assert list_offset(-3) == (0, 2, 0)  # "c" at 1002 is the newest timestamp ("d" is stamped 1000)
        assert list_offset(-1, current=0)[0] == ErrorCode.FENCED_LEADER_EPOCH
        assert list_offset(-1, version=1)[1] == 4


def test_fetch_offsets_out_of_range_and_sessions(broker):
    with RawClient(broker.port) as c:
        metadata(c, ["r"])
        produce_ok(c, "r", [b"a"])
        assert fetch(c, "r", 2).responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch(c, "r", 1).responses[0].partitions[0].records in (b"", None)
        assert fetch(c, "nope", 0).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert fetch(c, "r", 0, session_id=77, session_epoch=3).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        new_session = fetch(c, "r", 0, session_id=0, session_epoch=0)  # asks for a session: declined, full answer
        assert new_session.error_code == 0 and new_session.session_id == 0
        assert read_records(new_session.responses[0].partitions[0].records)[0][1] == b"a"


def test_long_poll_fetch_is_woken_by_an_append(broker):
    with RawClient(broker.port) as consumer, RawClient(broker.port) as producer:
        metadata(producer, ["lp"])
        _, payload = consumer.request_bytes(FetchRequest(
            replica_id=-1, max_wait_ms=600_000, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
            session_epoch=-1, topics=[FetchTopic(topic="lp", partitions=[FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""), 11)
        consumer.send_frame(payload)
        # the same broker keeps answering other clients while the fetch waits
        assert api_versions(producer, 3).error_code == 0
        produce_ok(producer, "lp", [b"wake"])
        frame = consumer.recv_frame()  # with no wake-up this waits 10 minutes and the test times out
        body = FetchResponse.decode(frame[4:], version=11)
        assert read_records(body.responses[0].partitions[0].records)[0][1] == b"wake"


# -- framing and robustness ---------------------------------------------------------

def test_pipelined_requests_are_answered_in_order(broker):
    with RawClient(broker.port) as c:
        metadata(c, ["pipe"])
        sent = []
        blob = b""
        for i in range(60):
            req = (ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[
                ProduceRequest.TopicProduceData(name="pipe", partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=make_batch([b"%d" % i]))])]),
                9) if i % 2 == 0 else (ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
            correlation, payload = c.request_bytes(*req)
            sent.append(correlation)
            blob += struct.pack(">i", len(payload)) + payload
        c.sock.sendall(blob)
        got = [struct.unpack_from(">i", c.recv_frame(), 0)[0] for _ in sent]
        assert got == sent
        values = [v for _, v, _ in read_records(fetch(c, "pipe", 0).responses[0].partitions[0].records)]
        assert values == [b"%d" % i for i in range(0, 60, 2)]


@pytest.mark.parametrize("frame, why", [
    (struct.pack(">i", -5), "negative length"),
    (struct.pack(">i", 200 * 1024 * 1024), "length above max request bytes"),
    (struct.pack(">i", 12) + b"\x00\x07garbage!!!", "garbage that is no request header"),
    (struct.pack(">i", 10) + struct.pack(">hhih", 57, 0, 1, -1), "API key not served"),
    (struct.pack(">i", 10) + struct.pack(">hhih", 4242, 0, 1, -1), "unknown API key"),
    (struct.pack(">i", 10) + struct.pack(">hhih", 1, 99, 1, -1), "version beyond the codec"),
    (struct.pack(">i", 14) + struct.pack(">hhih", 3, 1, 1, -1) + b"\x7f\xff\xff\xff", "body cut short"),
])
def test_bad_frames_close_only_their_connection(broker, frame, why):
    with RawClient(broker.port) as bystander, RawClient(broker.port) as bad:
        assert api_versions(bystander, 3).error_code == 0
        bad.sock.sendall(frame)
        assert bad.recv_frame() is None, why
        assert api_versions(bystander, 3).error_code == 0
    assert broker.alive()
    assert "closing connection" in broker.log_text()


def test_client_that_disconnects_mid_request(broker):
    for cut in (2, 8, 30):
        c = RawClient(broker.port)
        _, payload = c.request_bytes(MetadataRequest(topics=None), 12)
        c.sock.sendall((struct.pack(">i", len(payload)) + payload)[:cut])
        c.close()
    with RawClient(broker.port) as c:
        metadata(c, ["still"])
        assert produce_ok(c, "still", [b"ok"]) == 0
    assert broker.alive()


def test_unsupported_version_of_a_served_api_gets_an_error_response(broker):
    with RawClient(broker.port) as c:
        metadata(c, ["u"])
        r = fetch(c, "u", 0, version=3)  # Fetch v3 is below the supported v4
        assert r.responses[0].partitions[0].error_code == ErrorCode.UNSUPPORTED_VERSION
