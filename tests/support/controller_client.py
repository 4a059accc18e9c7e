"""Test and tool support for the controller: a synchronous protocol client, and the controller as a process.

- `ControllerClient(port)`: one connection; `request(dict) -> dict` sends a
  request with the next "id" and returns its answer; snapshot pushes that arrive
  meanwhile are kept in `pushes` and read with `next_push(timeout)`.
- `start_controller(data_dir, ...)` starts `python -m fencepost.broker controller` on
  127.0.0.1 with an OS-chosen port (read back from its log line
  `controller listening on HOST:PORT`) and returns a `ControllerProcess` that can
  be stopped (SIGTERM), killed (SIGKILL) and restarted on the same data dir.
"""
from __future__ import annotations

import re
import select
import socket
import struct
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from tests.support.broker_support import recv_exact
from tests.support.managed_process import ManagedProcess

_LISTENING = re.compile(r"controller listening on ([0-9.]+):(\d+)")


class ConnectionClosed(Exception):
    """The controller closed the connection."""


class ControllerClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.pushes: deque[dict[str, Any]] = deque()
        self._next_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> ControllerClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(orjson.dumps(message))

    def send_raw(self, body: bytes, length: int | None = None) -> None:
        """One frame: `length` (default len(body)) as a 4-byte big-endian int, then `body`."""
        self.sock.sendall(struct.pack(">i", len(body) if length is None else length) + body)

    def receive(self) -> dict[str, Any]:
        """The next message; raises ConnectionClosed when the controller closed the connection."""
        head = recv_exact(self.sock, 4)
        body = recv_exact(self.sock, struct.unpack(">i", head)[0]) if head is not None else None
        if body is None:
            raise ConnectionClosed("the controller closed the connection")
        return orjson.loads(body)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send `message` with a fresh "id"; its answer (pushes received meanwhile go to `pushes`)."""
        self._next_id += 1
        request_id = self._next_id
        self.send({**message, "id": request_id})
        while True:
            reply = self.receive()
            if reply.get("id") == request_id:
                return reply
            if reply.get("id") is not None:
                raise AssertionError(f"answer to request {reply.get('id')} while waiting for {request_id}: {reply}")
            self.pushes.append(reply)

    def call(self, kind: str, **fields: Any) -> dict[str, Any]:
        """request({"type": kind, **fields}), asserting it succeeded."""
        reply = self.request({"type": kind, **fields})
        assert reply["error"] is None, f"{kind} {fields} failed: {reply}"
        return reply

    def poll_pushes(self) -> None:
        """Move the pushes already arrived (without waiting) into `pushes`."""
        while select.select([self.sock], [], [], 0)[0]:
            self.pushes.append(self.receive())

    def next_push(self, timeout: float = 10) -> dict[str, Any] | None:
        """The oldest push not yet taken, waiting up to `timeout` seconds for one; None if none came."""
        deadline = time.monotonic() + timeout
        while not self.pushes:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            reply = self.receive()
            if reply.get("id") is not None:
                raise AssertionError(f"an answer arrived while only pushes were expected: {reply}")
            self.pushes.append(reply)
        return self.pushes.popleft()

    def is_closed_by_peer(self, timeout: float = 10) -> bool:
        """True when the controller closes the connection within `timeout` (pushes meanwhile are kept)."""
        try:
            while select.select([self.sock], [], [], timeout)[0]:
                self.pushes.append(self.receive())
        except (ConnectionClosed, ConnectionResetError):
            return True
        return False


class ControllerProcess:
    """`python -m fencepost.broker controller` started by a test (its stdout and stderr go to `log_file`)."""

    def __init__(self, data_dir: Path, log_file: Path, port: int, extra_args: tuple[str, ...]) -> None:
        self.data_dir = data_dir
        self.log_file = log_file
        self.port = port
        self.extra_args = extra_args
        self.process: ManagedProcess | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.process.proc if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def log_text(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def client(self, timeout: float = 10) -> ControllerClient:
        return ControllerClient(self.port, timeout=timeout)

    def _launch(self, port: int, timeout: float) -> None:
        cmd = [sys.executable, "-m", "fencepost.broker", "controller", "--listen", f"127.0.0.1:{port}",
               "--data-dir", str(self.data_dir), *self.extra_args]
        self.process = ManagedProcess("controller", cmd, self.log_file, _LISTENING)
        self.port = int(self.process.wait_ready(self.process.launch(), timeout).group(2))

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM and wait; returns the exit status."""
        return self.process.stop(timeout) if self.process else 0

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def restart(self, timeout: float = 15, same_port: bool = True) -> None:
        """Start again on the same data directory (and port, unless `same_port` is False)."""
        assert not self.alive(), "stop or kill the controller before restarting it"
        self._launch(self.port if same_port else 0, timeout)


def start_controller(data_dir: Path, *, port: int = 0, log_file: Path | None = None,
                     extra_args: tuple[str, ...] = (), timeout: float = 15) -> ControllerProcess:
    data_dir = Path(data_dir)
    c = ControllerProcess(data_dir, log_file or data_dir.parent / "controller.log", port, tuple(extra_args))
    c._launch(port, timeout)
    return c
