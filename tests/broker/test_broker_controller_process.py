"""`python -m fencepost.broker controller` as a real process, spoken to by fake brokers
(tests/support/controller_client.py)."""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fencepost.broker.common.controller_protocol import encode, read_message
from fencepost.broker.controller.config import ControllerConfig
from fencepost.broker.controller.server import ControllerServer
from fencepost.broker.controller.state import ControllerState
from fencepost.broker.controller.store import ControllerStore, StoreError
from tests.support.controller_client import ControllerClient, ControllerProcess, start_controller
from tests.support.paths import ROOT

SESSION_MS = 60000  # no broker expires unless a test wants it to
SHORT_SESSION_MS = 1500


def run_controller(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fencepost.broker", "controller", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def controller(tmp_path):
    c = start_controller(tmp_path / "data", extra_args=("--session-timeout-ms", str(SESSION_MS)))
    yield c
    c.stop() if c.alive() else None


def register(client: ControllerClient, node: int, incarnation: str = "i1", session_ms: int = SESSION_MS) -> int:
    """Register fake broker `node` (advertising port 9000 + node); its broker epoch."""
    reply = client.call("register", node_id=node, host="127.0.0.1", port=9000 + node, incarnation=incarnation,
                        truncation="kip320")
    assert reply["session_timeout_ms"] == session_ms
    return reply["broker_epoch"]


def latest_push(client: ControllerClient, until, timeout: float = 15, keep_alive=()) -> dict:
    """Pushes to `client` until one satisfies `until(snapshot)`; the `keep_alive` brokers (client, node, epoch)
    heartbeat meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for other, node, broker_epoch in keep_alive:
            other.call("heartbeat", node_id=node, broker_epoch=broker_epoch, metadata_version=0)
        push = client.next_push(timeout=0.1)
        while push is not None:
            assert push["type"] == "snapshot"
            if until(push["snapshot"]):
                return push["snapshot"]
            push = client.next_push(timeout=0)
    raise AssertionError(f"no pushed snapshot satisfied the condition within {timeout}s")


def partitions(snapshot: dict, topic: str = "fp") -> list[dict]:
    return next(t for t in snapshot["topics"] if t["name"] == topic)["partitions"]


def fenced(snapshot: dict) -> set[int]:
    return {b["node_id"] for b in snapshot["brokers"] if b["fenced"]}


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_three_brokers_a_topic_and_a_broker_that_stops_heartbeating(tmp_path):
    controller = start_controller(tmp_path / "data", extra_args=("--session-timeout-ms", str(SHORT_SESSION_MS)))
    try:
        with contextlib.ExitStack() as stack:
            clients = {n: stack.enter_context(controller.client()) for n in (1, 2, 3)}
            three_brokers_and_one_falls_silent(controller, clients)
    finally:
        controller.stop()


def three_brokers_and_one_falls_silent(controller: ControllerProcess, clients: dict[int, ControllerClient]) -> None:
    epochs = {n: register(c, n, session_ms=SHORT_SESSION_MS) for n, c in clients.items()}
    assert sorted(epochs.values()) == list(epochs.values())
    created = clients[1].call("create_topic", name="fp", partitions=3, replication_factor=3,
                              configs={"min.insync.replicas": "2"}, validate_only=False)
    assert [p["replicas"] for p in created["topic"]["partitions"]] == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    for c in clients.values():  # every registered broker gets the topic pushed
        snap = latest_push(c, lambda s: any(t["name"] == "fp" for t in s["topics"]))
        assert [p["leader"] for p in partitions(snap)] == [1, 2, 3]
        assert snap["brokers"] == [{"node_id": n, "host": "127.0.0.1", "port": 9000 + n, "fenced": False}
                                   for n in (1, 2, 3)]
    alive = [(clients[n], n, epochs[n]) for n in (1, 3)]
    # 2 falls silent: it is fenced, leaves every ISR, and p1 moves to 3 in a new epoch
    for n in (1, 3):
        snap = latest_push(clients[n], lambda s: 2 in fenced(s), keep_alive=alive)
        assert fenced(snap) == {2}
        p1 = partitions(snap)[1]
        assert (p1["leader"], p1["leader_epoch"], p1["isr"]) == (3, 1, [3, 1])
        assert all(2 not in p["isr"] for p in partitions(snap))
    reply = clients[2].request({"type": "heartbeat", "node_id": 2, "broker_epoch": epochs[2], "metadata_version": 0})
    assert reply["error"] == "STALE_BROKER_EPOCH"
    log = controller.log_text()
    assert "session expiry: broker 2 fenced" in log
    assert "session expiry: fp-1: leader 2 -> 3, leader epoch 0 -> 1, ISR [2, 3, 1] -> [3, 1]" in log


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_kill_9_and_restart_resumes_the_state(controller: ControllerProcess):
    with controller.client() as b1, controller.client() as b2:
        epochs = {1: register(b1, 1), 2: register(b2, 2)}
        b1.call("create_topic", name="fp", partitions=2, replication_factor=2, configs={})
        p0 = b1.call("describe")["snapshot"]["topics"][0]["partitions"][0]
        b1.call("alter_partition", node_id=1, broker_epoch=epochs[1], topic="fp", partition=0,
                leader_epoch=p0["leader_epoch"], partition_epoch=p0["partition_epoch"], isr=[1])
        before = b1.call("describe")["snapshot"]
    controller.kill()
    controller.restart()
    with controller.client() as b1:
        assert b1.call("describe")["snapshot"] == before
        b1.call("heartbeat", node_id=1, broker_epoch=epochs[1], metadata_version=0)  # its session resumed
        assert b1.next_push()["snapshot"] == before  # a heartbeat behind the current version gets the snapshot
        assert register(b1, 3) > max(epochs.values())
    state = json.loads((controller.data_dir / "controller-state.json").read_text())
    assert state["version"] == before["version"] + 1


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_garbage_frame_or_unknown_type_closes_only_that_connection(controller: ControllerProcess):
    with controller.client() as good:
        garbage_closes_only_its_connection(controller, good)


def garbage_closes_only_its_connection(controller: ControllerProcess, good: ControllerClient) -> None:
    register(good, 1)
    for bad_frame in [(b"not json", None), (b"[1,2]", None), (b"{}", 1 << 30), (b'{"type": "frobnicate"}', None)]:
        with controller.client() as bad:
            bad.send_raw(*bad_frame)
            assert bad.is_closed_by_peer()
    assert good.call("describe")["snapshot"]["brokers"][0]["node_id"] == 1
    log = controller.log_text()
    assert "frame is not JSON" in log and "unknown message type 'frobnicate'" in log
    bad_fields = good.request({"type": "create_topic", "name": "x", "partitions": "3", "replication_factor": 1})
    assert bad_fields["error"] == "INVALID_REQUEST" and "'partitions' must be int" in bad_fields["message"]
    assert controller.alive()


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_reconnecting_broker_replaces_its_old_connection(controller: ControllerProcess):
    with controller.client() as old, controller.client() as other, controller.client() as new:
        register(old, 1)
        epoch = register(other, 2)
        new.call("heartbeat", node_id=2, broker_epoch=epoch, metadata_version=10**9)
        assert other.is_closed_by_peer()
        new.call("create_topic", name="fp", partitions=1, replication_factor=2, configs={})
        assert partitions(new.next_push()["snapshot"])[0]["replicas"] == [1, 2]
        assert partitions(latest_push(old, lambda s: bool(s["topics"])))[0]["replicas"] == [1, 2]


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_sigterm_exits_0_and_a_second_controller_on_the_dir_is_refused(controller: ControllerProcess, tmp_path):
    r = run_controller("--listen", "127.0.0.1:0", "--data-dir", str(controller.data_dir))
    assert r.returncode == 1 and "in use by another controller process" in r.stderr, r.stderr
    assert controller.stop() == 0


@pytest.mark.integration
def test_a_corrupt_state_file_is_refused_with_its_name(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "controller-state.json").write_text('{"format": 1, "version": ')
    r = run_controller("--listen", "127.0.0.1:0", "--data-dir", str(data))
    assert r.returncode == 1
    assert f"{data / 'controller-state.json'} is not a readable controller state" in r.stderr
    assert "move it away" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--listen", "127.0.0.1:x", "--data-dir", "d"], "--listen must be HOST:PORT"),
    (["--listen", "127.0.0.1:0"], "the following arguments are required: --data-dir"),
    (["--listen", "127.0.0.1:0", "--data-dir", "d", "--session-timeout-ms", "0"], "--session-timeout-ms must be"),
    (["--listen", "127.0.0.1:0", "--data-dir", "d", "--session-timeout-ms", "soon"], "invalid int value"),
    (["--listen", "127.0.0.1:0", "--data-dir", "d", "--log-level", "LOUD"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line(args, message, tmp_path):
    r = run_controller(*[a if a != "d" else str(tmp_path / "d") for a in args])
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not os.path.exists(tmp_path / "d")


# -- the server in this process: outgoing limits and persistence failures -------------

async def call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, message: dict) -> dict | None:
    """Send `message`, return its answer (skipping pushes), or None if the connection closed first."""
    writer.write(encode(message))
    while True:
        reply = await read_message(reader)
        if reply is None or reply.get("id") == message["id"]:
            return reply


async def serve_here(data_dir: Path, store: ControllerStore, **kw) -> tuple[ControllerServer, int]:
    config = ControllerConfig("127.0.0.1", 0, data_dir, session_timeout_ms=SESSION_MS)
    server = ControllerServer(config, store.load(SESSION_MS, time.monotonic()), store, **kw)
    _, port = await server.start()
    return server, port


def register_message(node: int) -> dict:
    return {"type": "register", "id": node, "node_id": node, "host": "h", "port": 1, "incarnation": "x"}


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_broker_that_stops_reading_is_cut_off_without_stalling_the_others(tmp_path):
    """A 64 KiB outgoing limit; broker 1 never reads its pushes, broker 2 keeps creating topics."""
    async def scenario() -> tuple[list, bool]:
        store = ControllerStore(tmp_path / "data")
        server, port = await serve_here(tmp_path / "data", store, max_pending_bytes=64 << 10)
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect(("127.0.0.1", port))
        stalled = await asyncio.open_connection(sock=raw)
        active = await asyncio.open_connection("127.0.0.1", port)
        for node, conn in ((1, stalled), (2, active)):
            await call(*conn, register_message(node))
        errors = []
        while len(errors) < 100 and 1 in server.connected_nodes():
            reply = await call(*active, {"type": "create_topic", "id": 10 + len(errors), "name": f"t{len(errors)}",
                                         "partitions": 200, "replication_factor": 2, "configs": {}})
            errors.append(reply["error"])
        cut_off = server.connected_nodes() == {2}
        for _, w in (stalled, active):
            w.close()
        await server.stop()
        store.close()
        return errors, cut_off

    errors, cut_off = asyncio.run(scenario())
    assert cut_off, f"broker 1's connection was still open after {len(errors)} topics"
    assert errors == [None] * len(errors)


class _FullDisk(ControllerStore):
    def save(self, state: ControllerState) -> None:
        raise StoreError("cannot write controller-state.json: [Errno 28] No space left on device")


@pytest.mark.integration
@pytest.mark.timeout(60)
def test_a_change_that_cannot_be_saved_is_not_answered_and_stops_the_controller(tmp_path):
    async def scenario() -> tuple[dict | None, StoreError | None]:
        store = _FullDisk(tmp_path / "data")
        server, port = await serve_here(tmp_path / "data", store)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        reply = await call(reader, writer, register_message(1))
        writer.close()
        await asyncio.wait_for(server.serve_until_stopped(), 30)
        await server.stop()
        store.close()
        return reply, server.failure

    reply, failure = asyncio.run(scenario())
    assert reply is None and "No space left" in str(failure)
