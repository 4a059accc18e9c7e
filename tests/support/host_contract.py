"""Backend-neutral checks of the host contract (clusters/hosts/base.py), shared by every backend's tests.

Each check takes a provisioned `HostSet` or `Host` and uses only the `Host`
interface, so the netns, process, docker and ssh tests call the same functions.
The programs a check runs on a host are tiny Python scripts given to
`host.python -c`; every process a check spawns is killed again before it returns,
also when it fails. Waits poll for a state with a generous deadline; nothing
asserts on elapsed time.
"""
from __future__ import annotations

import json
import os
import posixpath
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import CLUSTER_ENV, NODE_ENV, Host, HostSet, ProcessHandle

WAIT_S = 20.0
CONNECT_TIMEOUT_S = 2.0
LISTENER_PORT = 17_070

# Counts up from the number in argv[1]'s file (0 when there is none), replacing the file
# atomically every few ms, so a reader always sees a whole number and a killed writer
# leaves the last one behind. Prints the value it started from.
COUNTER = """\
import os, sys, time
path = sys.argv[1]
try:
    n = int(open(path).read())
except FileNotFoundError:
    n = 0
print(f"start {n}", flush=True)
while True:
    n += 1
    with open(path + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(path + ".tmp", path)
    time.sleep(0.005)
"""

# Accepts and closes TCP connections on argv[1]:argv[2] forever.
LISTENER = """\
import socket, sys
server = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("listening", flush=True)
while True:
    conn, _ = server.accept()
    conn.close()
"""

# Tries a TCP connect to every host:port in argv[2:] at once, each bounded by argv[1] seconds;
# prints {target: connected} as JSON.
PROBE = """\
import json, socket, sys, threading
timeout, targets, connected = float(sys.argv[1]), sys.argv[2:], {}
def probe(target):
    address, port = target.rsplit(":", 1)
    try:
        with socket.create_connection((address, int(port)), timeout=timeout):
            connected[target] = True
    except OSError:
        connected[target] = False
threads = [threading.Thread(target=probe, args=(t,)) for t in targets]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(connected))
"""


def unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll `predicate` until it returns something truthy; that value. AssertionError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g}s")
        time.sleep(0.02)


def read_text(host: Host, path: str) -> str | None:
    """The file's content on the host, or None when it does not exist (yet)."""
    result = host.run(["cat", path], check=False)
    return result.stdout if result.ok else None


def read_counter(host: Host, path: str) -> int | None:
    text = read_text(host, path)
    return int(text) if text and text.strip().isdigit() else None


def started_lines(host: Host, log: str, count: int) -> list[str] | None:
    """The counter log's `start` lines once there are `count` of them."""
    lines = [line for line in (read_text(host, log) or "").splitlines() if line.startswith("start")]
    return lines if len(lines) >= count else None


def spawn_counter(host: Host, path: str) -> ProcessHandle:
    return host.spawn("counter", [host.python, "-c", COUNTER, path], path + ".log")


def kill_quietly(host: Host, handles: list[ProcessHandle]) -> None:
    """Cleanup after a check: continue and kill-9 what is left; never raises over the check's own failure."""
    try:
        host.kill(handles)
    except HostError:
        pass


# -- run, put/get, spawn markers, state/attach -----------------------------------------------


def check_run(host: Host) -> None:
    """Exit status, stdout and stderr come back; env reaches the command; check=True raises
    a HostError naming the host and the command."""
    script = "import os, sys; print('out', os.environ['FP_CONTRACT']); print('err', file=sys.stderr); sys.exit(3)"
    result = host.run([host.python, "-c", script], check=False, env={"FP_CONTRACT": "value-1"})
    assert result.returncode == 3
    assert not result.ok
    assert result.stdout.strip() == "out value-1"
    assert result.stderr.strip() == "err"
    assert result.host == host.name

    ok = host.run(["echo", "hello"])
    assert ok.ok and ok.stdout == "hello\n"

    with pytest.raises(HostError) as failure:
        host.run(["ls", "/fp-contract-no-such-path"])
    message = str(failure.value)
    assert host.name in message
    assert "ls /fp-contract-no-such-path" in message


def check_put_get(host: Host, local_dir: Path) -> None:
    """A file put on the host reads back byte for byte through get, and is visible to commands there."""
    content = f"fencepost {uuid.uuid4().hex}\n" + "".join(chr(32 + i % 90) for i in range(5000))
    source = local_dir / unique("put-source")
    source.write_text(content)
    remote = posixpath.join(host.workdir, unique("contract"), "nested", "file.txt")
    host.put(source, remote)
    assert read_text(host, remote) == content
    back = local_dir / unique("get-dest") / "deeper" / "file.txt"
    host.get(remote, back)
    assert back.read_bytes() == source.read_bytes()


def check_spawn_markers(host: Host, cluster: str) -> None:
    """A spawned process has the cluster and node markers in its environment and its output in its log."""
    log = posixpath.join(host.workdir, unique("markers") + ".log")
    script = (f"import os; print(os.environ.get({CLUSTER_ENV!r}), os.environ.get({NODE_ENV!r}), "
              "os.environ.get('FP_CONTRACT'))")
    handle = host.spawn("markers", [host.python, "-c", script], log, env={"FP_CONTRACT": "extra"})
    try:
        assert handle.host == host.name and handle.name == "markers" and handle.log == log
        host.wait_for_state([handle], {"gone"}, WAIT_S)
        assert read_text(host, log) == f"{cluster} {host.name} extra\n"
    finally:
        kill_quietly(host, [handle])


def check_reattach(hosts: HostSet, attach: Callable[[Mapping[str, Any]], HostSet]) -> None:
    """state() survives JSON, and attach(state) gives the same nodes, which can observe and signal
    processes spawned through the original HostSet."""
    host = next(iter(hosts))
    path = posixpath.join(host.workdir, unique("reattach"))
    handle = spawn_counter(host, path)
    try:
        again = attach(json.loads(json.dumps(hosts.state())))
        assert again.backend == hosts.backend and again.cluster == hosts.cluster
        assert list(again.hosts) == list(hosts.hosts)
        for name, original in hosts.hosts.items():
            assert again[name].describe() == original.describe()
        twin = again[host.name]
        assert twin.process_state(handle) == "running"
        twin.pause([handle])
        assert host.process_state(handle) == "stopped"
        twin.resume([handle])
        assert host.process_state(handle) == "running"
        twin.kill([handle])
        assert host.process_state(handle) == "gone"
    finally:
        kill_quietly(host, [handle])


# -- pause, kill and restart ------------------------------------------------------------------


def check_pause(host: Host) -> None:
    """A paused counter does not advance; after resume it does."""
    path = posixpath.join(host.workdir, unique("pause-counter"))
    handle = spawn_counter(host, path)
    try:
        started = wait_until(lambda: read_counter(host, path), "the counter writes a first value")
        wait_until(lambda: (read_counter(host, path) or 0) > started, "the counter advances")
        host.pause([handle])
        assert host.process_state(handle) == "stopped"
        frozen = read_counter(host, path)
        time.sleep(0.3)  # ~60 increments if the pause did not hold
        assert read_counter(host, path) == frozen, "the counter advanced while paused"
        assert host.process_state(handle) == "stopped"
        host.resume([handle])
        assert host.process_state(handle) in ("running", "gone")
        wait_until(lambda: (read_counter(host, path) or 0) > frozen, "the counter advances after resume")
    finally:
        kill_quietly(host, [handle])


def check_kill_restart(host: Host) -> None:
    """kill -9 leaves the process gone and its file at the last value; the same command spawned
    again starts from that value and keeps counting."""
    path = posixpath.join(host.workdir, unique("restart-counter"))
    first = spawn_counter(host, path)
    second: ProcessHandle | None = None
    try:
        wait_until(lambda: (read_counter(host, path) or 0) > 10, "the counter reaches 10")
        host.kill([first])
        assert host.process_state(first) == "gone"
        last = read_counter(host, path)
        assert last is not None and last > 10
        time.sleep(0.1)
        assert read_counter(host, path) == last, "the counter advanced after kill -9"

        second = spawn_counter(host, path)
        wait_until(lambda: (read_counter(host, path) or 0) > last, "the restarted counter advances")
        starts = wait_until(lambda: started_lines(host, path + ".log", 2), "the restarted counter logs its start")
        assert starts == ["start 0", f"start {last}"]
    finally:
        kill_quietly(host, [first] + ([second] if second else []))


# -- partitions -------------------------------------------------------------------------------


def listener_target(host: Host) -> str:
    return f"{host.address}:{host.port('contract-listener', LISTENER_PORT)}"


def connectivity(hosts: HostSet) -> dict[tuple[str, str], bool]:
    """{(from, to): connected} for every ordered pair of distinct nodes, probed from inside `from`."""
    found = {}
    for source in hosts:
        targets = {listener_target(h): h.name for h in hosts if h.name != source.name}
        result = source.run([source.python, "-c", PROBE, str(CONNECT_TIMEOUT_S), *targets],
                            timeout=CONNECT_TIMEOUT_S + 30)
        for target, connected in json.loads(result.stdout).items():
            found[(source.name, targets[target])] = connected
    return found


def format_matrix(matrix: Mapping[tuple[str, str], bool]) -> str:
    return ", ".join(f"{a}->{b}:{'ok' if ok else 'cut'}" for (a, b), ok in sorted(matrix.items()))


def start_listeners(hosts: HostSet) -> list[tuple[Host, ProcessHandle]]:
    """A TCP listener on every node (at `listener_target(host)`), each ready to accept when this returns.
    Stop them with `stop_listeners`."""
    listeners: list[tuple[Host, ProcessHandle]] = []
    try:
        for host in hosts:
            address, port = listener_target(host).rsplit(":", 1)
            log = posixpath.join(host.workdir, unique("listener") + ".log")
            listeners.append((host, host.spawn("listener", [host.python, "-c", LISTENER, address, port], log)))
        for host, handle in listeners:
            wait_until(lambda: "listening" in (read_text(host, handle.log) or ""), f"listener on {host.name}")
    except BaseException:
        stop_listeners(listeners)
        raise
    return listeners


def stop_listeners(listeners: list[tuple[Host, ProcessHandle]]) -> None:
    for host, handle in listeners:
        kill_quietly(host, [handle])


def check_partition(hosts: HostSet) -> None:
    """Cut the first node off from the others (a symmetric grudge: it drops them, they drop it):
    TCP connects between it and the others fail both ways while those among the others succeed;
    after heal on every node all succeed again. Needs at least three nodes."""
    nodes = list(hosts)
    assert len(nodes) >= 3, "check_partition needs at least three nodes"
    victim, others = nodes[0], nodes[1:]
    listeners = start_listeners(hosts)
    try:
        before = connectivity(hosts)
        assert all(before.values()), f"before the cut: {format_matrix(before)}"

        victim.cut_off([h.address for h in others])
        for host in others:
            host.cut_off([victim.address])
        during = connectivity(hosts)
        expected = {(a, b): victim.name not in (a, b) for (a, b) in during}
        assert during == expected, f"during the cut: {format_matrix(during)}"

        for host in nodes:
            host.heal()
        after = connectivity(hosts)
        assert all(after.values()), f"after heal: {format_matrix(after)}"
        victim.heal()  # idempotent
    finally:
        for host in nodes:
            try:
                host.heal()
            except HostError:
                pass
        stop_listeners(listeners)


def check_no_partitions(host: Host) -> None:
    """A backend without partitions says so: cut_off raises ClusterConfigError, heal is a no-op."""
    assert host.supports_partitions is False
    with pytest.raises(ClusterConfigError):
        host.cut_off(["127.0.0.2"])
    host.heal()


def free_subnet(first: int, last: int) -> str:
    """A /24 in 10.77.<first..last> that nothing on this machine routes (each test module keeps to
    its own range, since tests run beside other clusters). FENCEPOST_TEST_SUBNETS=A-B puts every
    module in 10.77.<A..B> instead (people sharing a machine each keep to their own)."""
    from fencepost.clusters.hosts.netns import network as netns_network

    override = os.environ.get("FENCEPOST_TEST_SUBNETS")
    if override:
        first, last = (int(part) for part in override.split("-", 1))
    for third in range(first, last + 1):
        candidate = f"10.77.{third}.0/24"
        if not netns_network.subnet_users(candidate):
            return candidate
    raise AssertionError(f"no free /24 in 10.77.{first}.0-10.77.{last}.255 for a test cluster")


class HostContractTests:
    """The contract as test methods, for a backend's test module to subclass as `TestContract`
    with a `hosts` fixture (a HostSet of nodes n1..n3) and `attach` (its backend's attach)."""

    attach: Callable[[Mapping[str, Any]], HostSet]

    def test_run(self, hosts):
        check_run(hosts["n1"])

    def test_put_get(self, hosts, tmp_path: Path):
        check_put_get(hosts["n2"], tmp_path)

    def test_spawn_markers(self, hosts):
        check_spawn_markers(hosts["n3"], hosts.cluster)

    def test_pause(self, hosts):
        check_pause(hosts["n1"])

    def test_kill_restart(self, hosts):
        check_kill_restart(hosts["n2"])

    def test_reattach(self, hosts):
        check_reattach(hosts, type(self).attach)

    def test_partition(self, hosts):
        check_partition(hosts)
