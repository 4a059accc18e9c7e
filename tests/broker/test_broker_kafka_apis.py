"""Unit tests of request dispatch (KafkaApis): handler failures, unsupported versions, undecodable frames."""
from __future__ import annotations

import asyncio
import logging
import struct

import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from fencepost.broker.server.apis.api_versions import ApiVersionsApi
from fencepost.broker.server.apis.base import ApiHandler
from fencepost.broker.server.errors import ErrorCode
from fencepost.broker.server.kafka_apis import KafkaApis
from fencepost.broker.server.network import ClientConnection, CloseConnection

CONN = ClientConnection(1, "127.0.0.1:1")


class FlakyMetadata(ApiHandler):
    """Metadata v1..v9 whose handler raises for a topic named "boom"."""
    api_key, min_version, max_version = 3, 1, 9

    async def handle(self, ctx, request):
        if request.topics and request.topics[0].name == "boom":
            raise KeyError("boom")
        return MetadataResponse(version=ctx.version, brokers=[], controller_id=5, topics=[])

    def error_response(self, request, version, error):
        return MetadataResponse(version=version, brokers=[], controller_id=-1, topics=[
            MetadataResponse.MetadataResponseTopic(error_code=int(error), name=t.name, partitions=[])
            for t in request.topics or []])


def apis() -> KafkaApis:
    result = KafkaApis([FlakyMetadata(), ApiVersionsApi(lambda: result.supported_versions())])
    return result


def frame_of(request, version: int, correlation_id: int = 11) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id="t")
    return bytes(request.encode(version=version, header=True))


def answer(frame: bytes) -> tuple[int, bytes]:
    response = asyncio.run(apis().handle(frame, CONN))
    size, correlation = struct.unpack_from(">ii", response, 0)
    assert size == len(response) - 4
    return correlation, response[8:]


def metadata_request(name: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)])


def test_a_handler_exception_is_logged_and_answered_with_unknown_server_error(caplog):
    with caplog.at_level(logging.ERROR, logger="broker.apis"):
        correlation, body = answer(frame_of(metadata_request("boom"), 4, correlation_id=77))
    assert correlation == 77
    topic = MetadataResponse.decode(body, version=4).topics[0]
    assert (topic.name, topic.error_code) == ("boom", ErrorCode.UNKNOWN_SERVER_ERROR)
    record = next(r for r in caplog.records if "failed" in r.getMessage())
    assert "API key 3 v4" in record.getMessage() and record.exc_info is not None


def test_a_served_api_at_an_unadvertised_version_gets_its_error_response():
    _, body = answer(frame_of(metadata_request("x"), 11))
    topic = MetadataResponse.decode(body[1:], version=11).topics[0]  # flexible: header tagged fields first
    assert topic.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_api_versions_lists_the_handlers_and_answers_newer_versions_with_v0():
    _, body = answer(frame_of(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3))
    listed = ApiVersionsResponse.decode(body, version=3)
    assert [(k.api_key, k.min_version, k.max_version) for k in listed.api_keys] == [(3, 1, 9), (18, 0, 3)]
    newer = struct.pack(">hhih", 18, 9, 3, 1) + b"t" + b"\x00"
    correlation, body = answer(newer)
    assert correlation == 3 and struct.unpack_from(">hi", body, 0) == (ErrorCode.UNSUPPORTED_VERSION, 1)


@pytest.mark.parametrize("frame", [
    struct.pack(">hhih", 42, 0, 1, -1),  # DeleteGroups: known to the codec, not served
    struct.pack(">hhih", 3, 1, 1, -1) + b"\x00\x00",  # Metadata v1 body cut short
    b"\x00\x03",  # not even a header
])
def test_frames_that_cannot_be_answered_close_the_connection(frame):
    with pytest.raises(CloseConnection):
        asyncio.run(apis().handle(frame, CONN))
