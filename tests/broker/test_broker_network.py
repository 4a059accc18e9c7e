"""Unit tests of the socket server: framing over arbitrary TCP chunking, in-order answers, closing on errors."""
from __future__ import annotations

import asyncio
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.broker.server.network import ClientConnection, CloseConnection, SocketServer


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def echo_server(max_request_bytes: int = 1 << 16) -> SocketServer:
    """Answers b"ok:" + payload; b"close" closes; b"boom" raises; b"slow" answers after a pause; b"none" is silent."""
    async def handle(frame: bytes, conn: ClientConnection) -> bytes | None:
        if frame == b"close":
            raise CloseConnection("asked to")
        if frame == b"boom":
            raise RuntimeError("handler bug")
        if frame == b"slow":
            await asyncio.sleep(0.05)
        if frame == b"none":
            return None
        return framed(b"ok:" + frame)

    server = SocketServer("127.0.0.1", 0, handle, max_request_bytes)
    await server.start_listening()
    await server.start_serving()
    return server


async def read_answers(reader: asyncio.StreamReader, count: int) -> list[bytes]:
    out = []
    for _ in range(count):
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        out.append(await reader.readexactly(size))
    return out


@settings(max_examples=40, deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=20),
       cuts=st.lists(st.integers(1, 50), min_size=1, max_size=30))
def test_frames_cut_anywhere_are_answered_in_order(payloads, cuts):
    payloads = [p for p in payloads if p not in (b"close", b"boom", b"slow", b"none")] or [b"x"]
    wire = b"".join(framed(p) for p in payloads)

    async def scenario():
        server = await echo_server()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        pos = i = 0
        while pos < len(wire):
            step = cuts[i % len(cuts)]
            writer.write(wire[pos:pos + step])
            await writer.drain()
            await asyncio.sleep(0)
            pos += step
            i += 1
        answers = await read_answers(reader, len(payloads))
        writer.close()
        await server.stop()
        return answers

    assert asyncio.run(scenario()) == [b"ok:" + p for p in payloads]


def test_slow_request_does_not_reorder_answers():
    async def scenario():
        server = await echo_server()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(framed(b"slow") + framed(b"none") + framed(b"fast"))
        answers = await read_answers(reader, 2)
        writer.close()
        await server.stop()
        return answers

    assert asyncio.run(scenario()) == [b"ok:slow", b"ok:fast"]


def test_errors_close_only_their_own_connection():
    async def scenario():
        server = await echo_server(max_request_bytes=1000)
        r0, w0 = await asyncio.open_connection("127.0.0.1", server.port)
        results = []
        for bad in (framed(b"close"), framed(b"boom"), struct.pack(">i", -1), struct.pack(">i", 1001)):
            r, w = await asyncio.open_connection("127.0.0.1", server.port)
            w.write(bad + framed(b"after"))
            results.append(await r.read())  # EOF: closed, and "after" never answered
            w0.write(framed(b"alive"))
            assert await read_answers(r0, 1) == [b"ok:alive"]
        assert server.connection_count == 1
        w0.close()
        await server.stop()
        return results

    assert asyncio.run(scenario()) == [b"", b"", b"", b""]


def test_stop_closes_every_connection_even_with_work_in_flight():
    async def scenario():
        server = await echo_server()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(framed(b"slow"))
        await asyncio.sleep(0.01)
        await server.stop()
        return await reader.read()

    assert asyncio.run(scenario()) == b""
