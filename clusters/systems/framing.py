"""Reading length-prefixed frames from a blocking socket: the control-plane clients of both
systems (the own controller's protocol, the Kafka protocol) frame with a 4-byte length."""
from __future__ import annotations

import socket


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """Exactly `n` bytes; ConnectionError when the peer closes first."""
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("connection closed mid-frame")
        data += chunk
    return bytes(data)
