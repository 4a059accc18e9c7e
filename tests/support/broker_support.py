"""Test support for the own broker: start `python -m fencepost.broker serve` as a process, talk raw protocol to it.

- `start_broker(data_dir, ...)` starts a broker on 127.0.0.1 with an OS-chosen
  port (read back from its log) and returns a `BrokerProcess` that can be
  stopped (SIGTERM), killed (SIGKILL) and restarted on the same port and data dir.
- `broker` is a pytest fixture: one fresh broker per test, in tmp_path.
- `RawClient` sends kafka-python protocol objects (or raw bytes) over one socket.
"""
from __future__ import annotations

import re
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.managed_process import ManagedProcess

_LISTENING = re.compile(r"broker \d+ listening on ([0-9.]+):(\d+)")


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """Exactly `n` bytes from `sock`, or None if the peer closed or reset first."""
    chunks = []
    while n:
        try:
            chunk = sock.recv(n)
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class BrokerProcess:
    """`python -m fencepost.broker serve` started by a test (its stdout and stderr go to `log_file`)."""

    def __init__(self, data_dir: Path, log_file: Path, node_id: int, port: int,
                 extra_args: tuple[str, ...]) -> None:
        self.data_dir = data_dir
        self.log_file = log_file
        self.node_id = node_id
        self.port = port
        self.extra_args = extra_args
        self.process: ManagedProcess | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.process.proc if self.process else None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def log_text(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def _launch(self, timeout: float) -> None:
        cmd = [sys.executable, "-m", "fencepost.broker", "serve", "--node-id", str(self.node_id),
               "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(self.data_dir), *self.extra_args]
        self.process = ManagedProcess(f"broker {self.node_id}", cmd, self.log_file, _LISTENING)
        self.port = int(self.process.wait_ready(self.process.launch(), timeout).group(2))

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM (clean shutdown) and wait; returns the exit status."""
        return self.process.stop(timeout) if self.process else 0

    def kill(self) -> None:
        """SIGKILL: no flush, no checkpoint, no clean-shutdown marker."""
        if self.process is not None:
            self.process.kill()

    def restart(self, timeout: float = 15) -> None:
        """Start again on the same port and data directory (after stop() or kill())."""
        assert not self.alive(), "stop or kill the broker before restarting it"
        self._launch(timeout)


def start_broker(data_dir: Path, *, node_id: int = 1, port: int = 0, log_file: Path | None = None,
                 extra_args: tuple[str, ...] = (), timeout: float = 15) -> BrokerProcess:
    data_dir = Path(data_dir)
    log_file = log_file or data_dir.parent / f"broker-{node_id}.log"
    b = BrokerProcess(data_dir, log_file, node_id, port, tuple(extra_args))
    b._launch(timeout)
    return b


@pytest.fixture
def broker(tmp_path):
    b = start_broker(tmp_path / "data")
    yield b
    b.kill() if not b.alive() else b.stop()


# -- raw protocol -------------------------------------------------------------

class RawClient:
    """One socket speaking Kafka's framing; requests are kafka-python protocol objects or raw bytes."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def recv_frame(self) -> bytes | None:
        """The next response frame (without its length), or None if the broker closed the connection."""
        head = self._recv_exact(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes | None:
        return recv_exact(self.sock, n)

    def request_bytes(self, request: Any, version: int, client_id: str = "raw-test") -> tuple[int, bytes]:
        self._correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id=client_id)
        return self._correlation, bytes(request.encode(version=version, header=True))

    def call(self, request: Any, version: int) -> Any:
        """Send a request object at `version` and decode the response (response header checked)."""
        correlation, payload = self.request_bytes(request, version)
        self.send_frame(payload)
        frame = self.recv_frame()
        assert frame is not None, f"broker closed the connection instead of answering {type(request).__name__}"
        response_class = type(request).__name__.replace("Request", "Response")
        module = sys.modules[type(request).__module__]
        cls = getattr(module, response_class)
        (got_correlation,) = struct.unpack_from(">i", frame, 0)
        assert got_correlation == correlation
        pos = 4
        if cls.flexible_version_q(version) and cls.API_KEY != 18:
            assert frame[4] == 0, "response header tagged fields"
            pos = 5
        return cls.decode(frame[pos:], version=version)


def wait_until(predicate, timeout: float = 10, interval: float = 0.05, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# -- record batches (kafka-python's v2 batch builder and reader) ----------------

def make_batch(values: list[bytes], timestamp_ms: int = 1_000, producer_id: int = -1, producer_epoch: int = -1,
               base_sequence: int = -1) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 24)
    for i, v in enumerate(values):
        builder.append(i, timestamp=timestamp_ms + i, key=None, value=v, headers=[])
    return bytes(builder.build())


def read_records(data: bytes) -> list[tuple[int, bytes, int]]:
    """(offset, value, batch leader epoch) of every record in a fetch response's records."""
    from kafka.record.memory_records import MemoryRecords
    out = []
    records = MemoryRecords(data)
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        for r in batch:
            out.append((r.offset, r.value, batch.leader_epoch))
