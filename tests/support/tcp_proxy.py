"""A TCP proxy for tests that can cut a link as a network partition would, and heal it.

`TcpProxy(target_host, target_port)` listens on 127.0.0.1 (an OS-chosen port,
`.port`) and forwards every connection's bytes both ways to the target, with
half-closes passed on. `cut()` partitions the link: nothing passes in either
direction (bytes read are held and never delivered, end-of-stream is not passed
on either), existing connections stay open, and new connections are accepted
but not connected onwards — the peers see silence, not a drop. `heal()` closes
every connection that existed during the cut on both sides, as a long
partition ends them, discarding what was held; new connections forward again.

The proxy owns one thread, "tcp-proxy <port>": a selectors loop started by
`start()` (or `with`) and stopped and joined by `close()`. `cut()`, `heal()`
and `close()` are commands run by that thread; each returns once it took effect.
"""
from __future__ import annotations

import errno
import queue
import selectors
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

RECV_BYTES = 1 << 16
# Bytes waiting for a slow receiver before the proxy stops reading from the sender
# (TCP's back-pressure, passed on), and bytes held per connection during a cut
# before it stops reading (a partitioned sender's window fills up).
PENDING_LIMIT = 1 << 20
HOLD_LIMIT = 1 << 20
COMMAND_TIMEOUT_S = 10.0


@dataclass(eq=False)
class _Side:
    """One socket of a forwarded connection; `out` holds bytes on their way into it."""
    sock: socket.socket
    out: bytearray = field(default_factory=bytearray)
    read_eof: bool = False  # its peer sent end-of-stream (or failed): nothing more to read
    write_shut: bool = False  # we passed end-of-stream into it
    mask: int = 0  # the events it is registered for


@dataclass(eq=False)
class _Pipe:
    client: _Side
    upstream: _Side | None  # None: accepted during a cut, never connected onwards
    connecting: bool = False
    held: int = 0  # bytes read during the cut, never to be delivered

    def other(self, side: _Side) -> _Side | None:
        return self.upstream if side is self.client else self.client

    def sides(self) -> list[_Side]:
        return [self.client] if self.upstream is None else [self.client, self.upstream]


class TcpProxy:
    """See the module docstring. `held_bytes` (read during the current cut) and
    `connections` (open forwarded connections) are read-only figures for tests."""

    def __init__(self, target_host: str, target_port: int, listen_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server((listen_host, 0))
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._commands: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = queue.SimpleQueue()
        self._pipes: set[_Pipe] = set()
        self._cut = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._closed = False
        self.held_bytes = 0
        self.connections = 0

    # -- the public side (any thread) -----------------------------------------

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def is_cut(self) -> bool:
        return self._cut

    def start(self) -> TcpProxy:
        if self._thread is not None or self._closed:
            raise RuntimeError(f"proxy on port {self.port} was started already")
        self._selector.register(self._listener, selectors.EVENT_READ, self._accept)
        self._selector.register(self._wake_reader, selectors.EVENT_READ, self._run_commands)
        self._thread = threading.Thread(target=self._loop, name=f"tcp-proxy {self.port}", daemon=True)
        self._thread.start()
        return self

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def cut(self) -> None:
        """Stop forwarding both ways; connections stay open, their bytes are held."""
        self._command(self._do_cut)

    def heal(self) -> None:
        """Close every connection that existed during the cut; forward new ones again.
        Without a cut in effect, nothing happens."""
        self._command(self._do_heal)

    def close(self) -> None:
        """Close every connection and the listener, and join the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._command(self._do_stop)
            self._thread.join(COMMAND_TIMEOUT_S)
            if self._thread.is_alive():
                raise RuntimeError(f"proxy thread on port {self.port} did not stop")
        for pipe in list(self._pipes):
            self._close_pipe(pipe)
        self._selector.close()
        for sock in (self._listener, self._wake_reader, self._wake_writer):
            sock.close()

    def _command(self, action: Callable[[], None]) -> None:
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError(f"proxy on port {self.port} is not running: call start() first")
        done = threading.Event()
        self._commands.put((action, done))
        self._wake_writer.send(b"!")
        if not done.wait(COMMAND_TIMEOUT_S):
            raise RuntimeError(f"proxy thread on port {self.port} did not answer within {COMMAND_TIMEOUT_S}s")

    # -- the proxy thread ---------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping:
            for key, mask in self._selector.select():
                if callable(key.data):  # the listener or the command wake-up
                    key.data(mask)
                else:
                    self._on_event(*key.data, mask)

    def _run_commands(self, _mask: int) -> None:
        try:
            self._wake_reader.recv(4096)
        except BlockingIOError:
            pass
        while True:
            try:
                action, done = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                action()
            finally:
                done.set()

    def _do_cut(self) -> None:
        self._cut = True
        for pipe in self._pipes:
            self._update(pipe)

    def _do_heal(self) -> None:
        if not self._cut:
            return
        for pipe in list(self._pipes):
            self._close_pipe(pipe)
        self.held_bytes = 0
        self._cut = False

    def _do_stop(self) -> None:
        self._stopping = True
        for pipe in list(self._pipes):
            self._close_pipe(pipe)

    def _accept(self, _mask: int) -> None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, ConnectionAbortedError):
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pipe = _Pipe(_Side(sock), None)
        if not self._cut:
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.setblocking(False)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            code = upstream.connect_ex(self.target)
            if code not in (0, errno.EINPROGRESS):
                upstream.close()
                sock.close()  # the target refused: the client sees its connection drop
                return
            pipe.upstream = _Side(upstream)
            pipe.connecting = code != 0
        self._pipes.add(pipe)
        self.connections = len(self._pipes)
        self._update(pipe)

    def _on_event(self, pipe: _Pipe, side: _Side, mask: int) -> None:
        if pipe not in self._pipes:
            return  # closed by an earlier event of this round
        if mask & selectors.EVENT_WRITE:
            if pipe.connecting and side is pipe.upstream:
                if side.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    self._side_failed(pipe, side)
                    return
                pipe.connecting = False
            if not self._flush(pipe, side):
                return
        if mask & selectors.EVENT_READ:
            self._read(pipe, side)
        if pipe in self._pipes:
            self._update(pipe)

    def _read(self, pipe: _Pipe, side: _Side) -> None:
        try:
            data = side.sock.recv(RECV_BYTES)
        except BlockingIOError:
            return
        except OSError:
            self._side_failed(pipe, side)
            return
        other = pipe.other(side)
        if not data:
            side.read_eof = True
            if not self._cut and other is not None:
                self._flush(pipe, other)  # passes the end-of-stream on once `out` is empty
        elif self._cut:
            pipe.held += len(data)
            self.held_bytes += len(data)
        elif other is not None:
            other.out += data
            self._flush(pipe, other)

    def _flush(self, pipe: _Pipe, side: _Side) -> bool:
        """Write what `side` has waiting; pass end-of-stream on after it. False if the pipe closed."""
        if self._cut or (pipe.connecting and side is pipe.upstream):
            return True
        try:
            while side.out:
                sent = side.sock.send(side.out)
                del side.out[:sent]
        except BlockingIOError:
            return True
        except OSError:
            self._side_failed(pipe, side)
            return pipe in self._pipes
        other = pipe.other(side)
        if other is not None and other.read_eof and not side.write_shut:
            side.write_shut = True
            try:
                side.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if all(s.write_shut for s in pipe.sides()) and pipe.upstream is not None:
            self._close_pipe(pipe)  # both directions finished
            return False
        return True

    def _side_failed(self, pipe: _Pipe, side: _Side) -> None:
        if self._cut:
            side.read_eof = True  # in a partition nobody hears of it; heal closes the pipe
            side.out.clear()
            if side is pipe.upstream:
                pipe.connecting = False
            self._update(pipe)
        else:
            self._close_pipe(pipe)

    def _update(self, pipe: _Pipe) -> None:
        for side in pipe.sides():
            other = pipe.other(side)
            mask = 0
            if not side.read_eof:
                if self._cut:
                    readable = pipe.held < HOLD_LIMIT
                else:
                    readable = other is not None and len(other.out) < PENDING_LIMIT and not pipe.connecting
                if readable:
                    mask |= selectors.EVENT_READ
            if pipe.connecting and side is pipe.upstream:
                mask |= selectors.EVENT_WRITE
            elif side.out and not self._cut:
                mask |= selectors.EVENT_WRITE
            if mask == side.mask:
                continue
            if side.mask == 0:
                self._selector.register(side.sock, mask, (pipe, side))
            elif mask == 0:
                self._selector.unregister(side.sock)
            else:
                self._selector.modify(side.sock, mask, (pipe, side))
            side.mask = mask

    def _close_pipe(self, pipe: _Pipe) -> None:
        self._pipes.discard(pipe)
        self.connections = len(self._pipes)
        for side in pipe.sides():
            if side.mask:
                try:
                    self._selector.unregister(side.sock)
                except (KeyError, ValueError):
                    pass
                side.mask = 0
            side.sock.close()
