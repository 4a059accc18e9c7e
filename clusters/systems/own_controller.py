"""A synchronous client for the own controller's protocol (broker/common/controller_protocol.py:
a 4-byte big-endian length, then a JSON object), for the cluster's control-plane
questions: describe the state, create a topic. One request per connection.
"""
from __future__ import annotations

import socket
import struct
from typing import Any

import orjson

from fencepost.clusters.errors import HostError
from fencepost.clusters.systems.framing import recv_exactly

_LENGTH = struct.Struct(">i")


def call_controller(host: str, port: int, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request, return its answer; HostError when unreachable, closed, or refused."""
    what = f"the controller at {host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            body = orjson.dumps({**message, "id": 1})
            sock.sendall(_LENGTH.pack(len(body)) + body)
            while True:
                reply = orjson.loads(recv_exactly(sock, _LENGTH.unpack(recv_exactly(sock, 4))[0]))
                if reply.get("id") == 1:
                    break
    except (OSError, orjson.JSONDecodeError, struct.error) as e:
        raise HostError(f"{what} did not answer {message.get('type')!r}: {e}") from None
    if reply.get("error"):
        raise HostError(f"{what} refused {message.get('type')!r}: {reply['error']}: {reply.get('message', '')}")
    return reply

