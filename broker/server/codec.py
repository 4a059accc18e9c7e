"""Wire codec: request frames in, response frames out (kafka-python's generated protocol classes).

Owns the request header (v1, or v2 with tagged fields when the API version is
flexible), the choice of request/response classes by API key, and the response
header (v0, or v1 with tagged fields when flexible — except ApiVersions, whose
response header never has tagged fields so a client can always read it).
A frame that cannot be decoded raises `FrameError`: the connection is closed,
as Kafka does when no response can be addressed.
"""
from __future__ import annotations

from dataclasses import dataclass
from struct import pack_into, unpack_from
from typing import Any

from kafka.protocol.admin.topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.schemas.fields.codecs import Bytes, EncodeBuffer, String
from kafka.protocol.schemas.fields.simple import SimpleField

API_VERSIONS_KEY = 18

# api key -> (request class, response class), for every API this broker answers.
MESSAGE_CLASSES: dict[int, tuple[Any, Any]] = {
    cls.API_KEY: (cls, resp)
    for cls, resp in [
        (ProduceRequest, ProduceResponse),
        (FetchRequest, FetchResponse),
        (ListOffsetsRequest, ListOffsetsResponse),
        (MetadataRequest, MetadataResponse),
        (OffsetCommitRequest, OffsetCommitResponse),
        (OffsetFetchRequest, OffsetFetchResponse),
        (FindCoordinatorRequest, FindCoordinatorResponse),
        (JoinGroupRequest, JoinGroupResponse),
        (HeartbeatRequest, HeartbeatResponse),
        (LeaveGroupRequest, LeaveGroupResponse),
        (SyncGroupRequest, SyncGroupResponse),
        (ApiVersionsRequest, ApiVersionsResponse),
        (CreateTopicsRequest, CreateTopicsResponse),
        (DeleteTopicsRequest, DeleteTopicsResponse),
        (InitProducerIdRequest, InitProducerIdResponse),
        (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    ]
}


class FrameError(Exception):
    """A request frame no response can be built for; the connection must be closed."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def _read_uvarint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if shift > 28:
            raise FrameError("unsigned varint longer than 5 bytes in the request header")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def decode_header(frame: bytes) -> tuple[RequestHeader, int]:
    """The request header and the position where the body starts.

    Raises FrameError when the header is cut short, the API key is not one this
    broker knows, or the version is beyond what its codec can read (except for
    ApiVersions, which is always answered).
    """
    if len(frame) < 10:
        raise FrameError(f"request frame of {len(frame)} bytes is shorter than a request header (10 bytes)")
    api_key, api_version, correlation_id, client_len = unpack_from(">hhih", frame, 0)
    pos = 10
    if client_len < -1 or pos + max(client_len, 0) > len(frame):
        raise FrameError(f"request header client_id length {client_len} does not fit the {len(frame)}-byte frame")
    client_id = None
    if client_len >= 0:
        try:
            client_id = frame[pos:pos + client_len].decode("utf-8")
        except UnicodeDecodeError as e:
            raise FrameError(f"request header client_id is not UTF-8: {e}") from None
        pos += client_len
    classes = MESSAGE_CLASSES.get(api_key)
    if classes is None:
        raise FrameError(f"unknown or unsupported API key {api_key} (version {api_version})")
    request_class = classes[0]
    if api_key == API_VERSIONS_KEY:
        flexible = api_version >= 3
    else:
        if not 0 <= api_version <= request_class.max_version:
            raise FrameError(f"API {request_class.name} version {api_version} is beyond this broker's codec "
                             f"(0..{request_class.max_version})")
        flexible = request_class.flexible_version_q(api_version)
    if flexible:
        try:
            count, pos = _read_uvarint(frame, pos)
            for _ in range(count):
                _tag, pos = _read_uvarint(frame, pos)
                size, pos = _read_uvarint(frame, pos)
                pos += size
        except IndexError:
            raise FrameError("request header tagged fields run past the end of the frame") from None
        if pos > len(frame):
            raise FrameError("request header tagged fields run past the end of the frame")
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def decode_body(header: RequestHeader, frame: bytes, pos: int) -> Any:
    """The request body, decoded with the generated class of its API key and version.

    Raises FrameError when the bytes do not decode, or decode to a null where the
    schema allows none (the generated decoders accept a null anywhere).
    """
    request_class = MESSAGE_CLASSES[header.api_key][0]
    version = header.api_version
    try:
        body = request_class.decode(memoryview(frame)[pos:], version=version)
    except Exception as e:  # the generated decoders raise whatever bad bytes provoke
        raise FrameError(f"cannot decode {request_class.name} v{version} body: "
                         f"{type(e).__name__}: {e}") from None
    _check_nulls(body, request_class._struct, version, request_class.name)
    return body


# (struct id, version) -> [(field name, kind, nested struct or None)] for fields that may not be null
_NULL_PLANS: dict[tuple[int, int], list[tuple[str, str, Any]]] = {}


def _null_plan(struct: Any, version: int) -> list[tuple[str, str, Any]]:
    key = (id(struct), version)
    plan = _NULL_PLANS.get(key)
    if plan is None:
        plan = []
        for f in struct.untagged_fields(version):
            nullable = f.nullable_for_version_q(version)
            if f.is_struct_array():
                plan.append((f.name, "struct-array" if not nullable else "nullable-struct-array", f.array_of))
            elif f.is_array():
                if not nullable:
                    plan.append((f.name, "value", None))
            elif f.is_struct():
                plan.append((f.name, "struct" if not nullable else "nullable-struct", f))
            elif isinstance(f, SimpleField) and (f._type is Bytes or isinstance(f._type, String)) and not nullable:
                plan.append((f.name, "value", None))
        _NULL_PLANS[key] = plan
    return plan


def _check_nulls(obj: Any, struct: Any, version: int, path: str) -> None:
    for name, kind, nested in _null_plan(struct, version):
        value = getattr(obj, name)
        if value is None:
            if kind.startswith("nullable"):
                continue
            raise FrameError(f"{path}.{name} is null, which v{version} does not allow")
        if kind.endswith("struct-array"):
            for i, item in enumerate(value):
                _check_nulls(item, nested, version, f"{path}.{name}[{i}]")
        elif kind.endswith("struct"):
            _check_nulls(value, nested, version, f"{path}.{name}")


def response_class(api_key: int, api_version: int) -> Any:
    """The generated response class for an API key, to be instantiated with version=api_version."""
    return MESSAGE_CLASSES[api_key][1]


class ResponseEncoder:
    """Encodes response frames into one reusable buffer (one per server; the event loop is single-threaded)."""

    def __init__(self) -> None:
        self._out = EncodeBuffer(1 << 16)

    def encode(self, api_key: int, api_version: int, correlation_id: int, response: Any) -> bytes:
        """The framed response: size, response header, body."""
        cls = MESSAGE_CLASSES[api_key][1]
        body_flexible = cls.flexible_version_q(api_version)
        header_flexible = body_flexible and api_key != API_VERSIONS_KEY
        out = self._out
        out.reset()
        out.ensure(9)
        pack_into(">i", out.buf, 4, correlation_id)
        out.pos = 8
        if header_flexible:
            out.buf[8] = 0  # no tagged fields in the response header
            out.pos = 9
        encode = cls._struct.compiled_encode_into(api_version, compact=body_flexible, tagged=body_flexible)
        encode(response, out)
        pack_into(">i", out.buf, 0, out.pos - 4)
        with memoryview(out.buf) as view:
            return bytes(view[:out.pos])
