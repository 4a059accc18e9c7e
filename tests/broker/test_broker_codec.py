"""Unit tests of the broker's wire codec: request headers in, response frames out."""
from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from fencepost.broker.server.codec import FrameError, ResponseEncoder, decode_body, decode_header


def encoded_request(request, version: int, correlation_id: int = 7, client_id: str = "cli") -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(version=version, header=True))


def test_non_flexible_header_and_body_decode():
    frame = encoded_request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a")]), 4)
    header, pos = decode_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (3, 4, 7, "cli")
    body = decode_body(header, frame, pos)
    assert [t.name for t in body.topics] == ["a"]
    assert body.allow_auto_topic_creation is True


def test_flexible_header_skips_tagged_fields():
    frame = encoded_request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12, correlation_id=99)
    header, pos = decode_header(frame)
    assert header.correlation_id == 99 and header.api_version == 12
    # header v2 = 10 fixed bytes + client id + 1 byte of (empty) tagged fields
    assert pos == 10 + len("cli") + 1
    body = decode_body(header, frame, pos)
    assert body.topics is None and body.allow_auto_topic_creation is False


def test_header_with_null_client_id():
    frame = struct.pack(">hhih", 18, 0, 5, -1)
    header, pos = decode_header(frame)
    assert header.client_id is None and pos == 10


@pytest.mark.parametrize("frame, fragment", [
    (b"", "shorter than a request header"),
    (struct.pack(">hhi", 3, 1, 1), "shorter than a request header"),
    (struct.pack(">hhih", 3, 1, 1, 50) + b"abc", "does not fit"),
    (struct.pack(">hhih", 3, 1, 1, -7), "does not fit"),
    (struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe", "not UTF-8"),
    (struct.pack(">hhih", 999, 0, 1, -1), "unknown or unsupported API key 999"),
    (struct.pack(">hhih", 3, 99, 1, -1), "beyond this broker's codec"),
    (struct.pack(">hhih", 3, 12, 1, -1) + b"\x05\x01", "tagged fields run past"),
    (struct.pack(">hhih", 3, 12, 1, -1) + b"\x01\x00\x7f", "tagged fields run past"),
])
def test_bad_headers_raise_frame_error(frame, fragment):
    with pytest.raises(FrameError, match=fragment):
        decode_header(frame)


def test_api_versions_beyond_codec_still_has_a_header():
    frame = struct.pack(">hhih", 18, 77, 3, 2) + b"ab" + b"\x00" + b"garbage"
    header, _ = decode_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 77, 3)


def test_truncated_body_raises_frame_error():
    frame = encoded_request(FetchRequest(max_wait_ms=1, min_bytes=1, topics=[
        FetchRequest.FetchTopic(topic="t", partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=100)])]), 11)
    header, pos = decode_header(frame)
    with pytest.raises(FrameError, match="cannot decode FetchRequest v11"):
        decode_body(header, frame[:-10], pos)


def split_response(frame: bytes) -> tuple[int, int, bytes]:
    size, correlation = struct.unpack_from(">ii", frame, 0)
    return size, correlation, frame[8:]


def test_response_header_v0_for_non_flexible():
    enc = ResponseEncoder()
    resp = MetadataResponse(version=4, throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1, topics=[])
    frame = enc.encode(3, 4, 42, resp)
    size, correlation, body = split_response(frame)
    assert size == len(frame) - 4 and correlation == 42
    assert MetadataResponse.decode(body, version=4).cluster_id == "c"


def test_response_header_v1_for_flexible():
    enc = ResponseEncoder()
    resp = FetchResponse(version=12, throttle_time_ms=0, error_code=0, session_id=0, responses=[])
    frame = enc.encode(1, 12, 5, resp)
    size, correlation, rest = split_response(frame)
    assert size == len(frame) - 4 and correlation == 5
    assert rest[0] == 0  # empty tagged fields of response header v1
    assert FetchResponse.decode(rest[1:], version=12).responses == []


def test_api_versions_response_header_never_flexible():
    enc = ResponseEncoder()
    resp = ApiVersionsResponse(version=3, error_code=0, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=3)], throttle_time_ms=0)
    frame = enc.encode(18, 3, 9, resp)
    _, correlation, body = split_response(frame)
    assert correlation == 9
    decoded = ApiVersionsResponse.decode(body, version=3)  # body right after the correlation id
    assert decoded.api_keys[0].max_version == 3


def test_encoder_reuses_its_buffer_without_mixing_frames():
    enc = ResponseEncoder()
    big = FetchResponse(version=12, responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[
        FetchResponse.FetchableTopicResponse.PartitionData(partition_index=0, high_watermark=1,
                                                           records=b"x" * 200_000)])])
    small = MetadataResponse(version=1, brokers=[], controller_id=1, topics=[])
    first = enc.encode(1, 12, 1, big)
    second = enc.encode(3, 1, 2, small)
    assert len(first) > 200_000 and len(second) < 100
    assert struct.unpack_from(">i", first, 0)[0] == len(first) - 4
    assert first.count(b"x" * 1000) >= 1 and b"x" not in second
