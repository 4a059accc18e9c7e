"""TcpProxy against a real echo server: bytes forwarded both ways, half-closes
passed on, a cut holds everything (old and new connections stay open, nothing
passes), a heal drops every connection of the cut, and close() joins its thread."""
from __future__ import annotations

import socket
import threading
from typing import Iterator

import pytest

from tests.support.broker_support import recv_exact, wait_until
from tests.support.tcp_proxy import TcpProxy


class EchoServer:
    """Echoes every connection's bytes back; records what it received and how many
    connections it accepted. One accept thread plus one thread per connection,
    all joined by close()."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received = bytearray()
        self.accepted = 0
        self.ended = 0  # connections whose client side ended (EOF or reset)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._accepter = threading.Thread(target=self._accept_loop, name="echo accept")
        self._accepter.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self._conns.append(conn)
            t = threading.Thread(target=self._echo, args=(conn,), name="echo conn")
            self._threads.append(t)
            t.start()

    def _echo(self, conn: socket.socket) -> None:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                with self._lock:
                    self.received += data
                conn.sendall(data)
        except OSError:
            pass
        with self._lock:
            self.ended += 1
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._accepter.join()
        for conn in self._conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join()
        for conn in self._conns:
            conn.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[TcpProxy]:
    with TcpProxy("127.0.0.1", echo.port) as p:
        yield p


def connect(proxy: TcpProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def dropped(sock: socket.socket) -> bool:
    """True when the peer closed or reset the connection (reads end)."""
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def nothing_to_read(sock: socket.socket) -> bool:
    sock.settimeout(0.2)
    try:
        sock.recv(1)
    except TimeoutError:
        return True
    finally:
        sock.settimeout(5)
    return False


def test_bytes_are_forwarded_both_ways_on_several_connections(proxy, echo):
    a, b = connect(proxy), connect(proxy)
    with a, b:
        a.sendall(b"hello")
        b.sendall(b"world!")
        assert recv_exact(a, 5) == b"hello"
        assert recv_exact(b, 6) == b"world!"
        assert echo.accepted == 2 and proxy.connections == 2


def test_a_large_payload_passes_intact(proxy):
    payload = bytes(range(256)) * 16384  # 4 MiB: more than any buffer on the way
    with connect(proxy) as s:
        sender = threading.Thread(target=s.sendall, args=(payload,))
        sender.start()
        got = recv_exact(s, len(payload))
        sender.join()
    assert got == payload


def test_a_half_close_is_passed_on_and_the_connection_then_ends(proxy, echo):
    with connect(proxy) as s:
        s.sendall(b"last words")
        s.shutdown(socket.SHUT_WR)
        assert recv_exact(s, 10) == b"last words"
        assert dropped(s)  # the echo server closed its side after our end-of-stream
    wait_until(lambda: proxy.connections == 0, what="the proxy to close the finished connection")
    assert echo.ended == 1


def test_a_cut_holds_bytes_of_existing_connections_without_closing_them(proxy, echo):
    with connect(proxy) as s:
        s.sendall(b"before")
        assert recv_exact(s, 6) == b"before"
        proxy.cut()
        assert proxy.is_cut
        s.sendall(b"during the cut")
        wait_until(lambda: proxy.held_bytes == 14, what="the proxy to hold the bytes sent during the cut")
        assert bytes(echo.received) == b"before"
        assert nothing_to_read(s)  # neither delivered nor dropped
        assert proxy.connections == 1 and echo.ended == 0


def test_a_cut_hides_an_end_of_stream(proxy, echo):
    with connect(proxy) as s:
        s.sendall(b"x")
        assert recv_exact(s, 1) == b"x"
        proxy.cut()
        s.shutdown(socket.SHUT_WR)
        assert nothing_to_read(s)
        assert echo.ended == 0


def test_a_connection_made_during_a_cut_is_accepted_but_reaches_nothing(proxy, echo):
    proxy.cut()
    with connect(proxy) as s:  # accepted: the connect succeeds
        s.sendall(b"anyone?")
        wait_until(lambda: proxy.held_bytes == 7, what="the proxy to hold the bytes")
        assert echo.accepted == 0 and echo.received == b""
        assert nothing_to_read(s)


def test_heal_drops_every_connection_of_the_cut_and_discards_what_was_held(proxy, echo):
    old = connect(proxy)
    old.sendall(b"1")
    assert recv_exact(old, 1) == b"1"
    proxy.cut()
    new_during_cut = connect(proxy)
    old.sendall(b"held")
    new_during_cut.sendall(b"held too")
    wait_until(lambda: proxy.held_bytes == 12, what="the proxy to hold the bytes")
    proxy.heal()
    assert not proxy.is_cut
    with old, new_during_cut:
        assert dropped(old) and dropped(new_during_cut)
    wait_until(lambda: echo.ended == 1, what="the echo server to see its connection end")
    assert bytes(echo.received) == b"1"
    assert proxy.connections == 0 and proxy.held_bytes == 0
    with connect(proxy) as fresh:  # forwarding again
        fresh.sendall(b"back")
        assert recv_exact(fresh, 4) == b"back"


def test_heal_without_a_cut_keeps_connections(proxy):
    with connect(proxy) as s:
        s.sendall(b"a")
        assert recv_exact(s, 1) == b"a"
        proxy.heal()
        s.sendall(b"b")
        assert recv_exact(s, 1) == b"b"


def test_a_refused_target_drops_the_client():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free_port = probe.getsockname()[1]  # nothing listens there once closed
    with TcpProxy("127.0.0.1", free_port) as p:
        with connect(p) as s:
            assert dropped(s)
        assert p.connections == 0


def test_close_joins_the_thread_and_stops_listening(echo):
    p = TcpProxy("127.0.0.1", echo.port).start()
    s = connect(p)
    s.sendall(b"z")
    assert recv_exact(s, 1) == b"z"
    thread = p._thread
    p.close()
    assert thread is not None and not thread.is_alive()
    assert dropped(s)
    s.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", p.port), timeout=5)
    p.close()  # idempotent
    with pytest.raises(RuntimeError, match="not running"):
        p.cut()
