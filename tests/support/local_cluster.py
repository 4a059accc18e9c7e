"""A replicated own-broker cluster on 127.0.0.1 for tests and benchmarks: one
controller process and N broker processes, each broker reaching the controller
through its own TcpProxy so that its controller link alone can be cut.

`LocalCluster(base_dir, brokers=3, truncation="kip320", ...)` is a context
manager. Entering it starts the controller (data base_dir/controller, log
base_dir/controller.log) and brokers 1..N, named "n1".."nN" (data base_dir/nI,
log base_dir/nI.log), and waits until every broker is registered and unfenced.
Every process keeps the port chosen for it up front across restarts. The
methods kill, stop, start, restart, pause and resume brokers, kill and restart
the controller, cut and heal a broker's controller link, create topics and
read the controller's state (`describe`, `partition_state`, `leader`) and wait
for a condition on it. `close()` (also on leaving the `with`) resumes paused
brokers, heals cut links, stops every process it started (SIGTERM, then SIGKILL
after a timeout) and closes the proxies; it signals only pids it started.

A process's stderr is appended to its log file (the broker and the controller
log there; a crash before logging starts leaves its traceback there too), and
a process that dies on start is reported with the tail of that log.
"""
from __future__ import annotations

import re
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

import orjson

from fencepost.broker.common.controller_protocol import NO_LEADER, PartitionState, Snapshot, TopicState
from fencepost.clusters.errors import HostError
from fencepost.clusters.hosts.local_process import local_state
from fencepost.clusters.hosts.process import free_port
from fencepost.clusters.systems import own_controller
from tests.support.broker_support import RawClient
from tests.support.managed_process import POLL_INTERVAL_S, START_TIMEOUT_S, STOP_TIMEOUT_S, ClusterError, ManagedProcess
from tests.support.tcp_proxy import TcpProxy

WAIT_TIMEOUT_S = 30.0
METADATA_VERSION = 7  # the first with partition leader epochs; not flexible


def _wait_for_process_state(pid: int, stopped: bool, timeout: float = 5.0) -> None:
    """Until the kernel shows the process stopped (or no longer stopped); gone counts as done."""
    wanted = {"stopped", "gone"} if stopped else {"running", "gone"}
    deadline = time.monotonic() + timeout
    while local_state(pid) not in wanted:
        if time.monotonic() > deadline:
            raise ClusterError(f"process {pid} did not {'stop' if stopped else 'continue'} within {timeout:g}s")
        time.sleep(0.005)


def node_name(node: int) -> str:
    return f"n{node}"


def call_controller(host: str, port: int, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """One request to the controller on a fresh connection (clusters/systems/own_controller.py);
    its answer. ClusterError when the controller cannot be reached, closes the connection or
    refuses the request."""
    try:
        return own_controller.call_controller(host, port, message, timeout)
    except HostError as e:
        raise ClusterError(str(e)) from None


def broker_partition_view(port: int, topic: str, timeout: float = 2.0) -> dict[int, tuple[int, int]] | None:
    """What one broker answers in Metadata for `topic`: {partition: (leader, leader_epoch)},
    or None when the topic is unknown to it or it does not answer."""
    from kafka.protocol.metadata.metadata import MetadataRequest

    try:
        with RawClient(port, timeout=timeout) as client:
            request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                      allow_auto_topic_creation=False)
            response = client.call(request, METADATA_VERSION)
    except (OSError, AssertionError):
        return None
    for t in response.topics:
        if t.name == topic and t.error_code == 0:
            return {p.partition_index: (p.leader_id, p.leader_epoch) for p in t.partitions}
    return None


class LocalCluster:
    """See the module docstring. Node ids are 1..brokers."""

    def __init__(self, base_dir: Path, brokers: int = 3, truncation: str = "kip320",
                 session_timeout_ms: int = 6000, broker_args: tuple[str, ...] = (),
                 node_args: dict[int, tuple[str, ...]] | None = None) -> None:
        if brokers < 1:
            raise ValueError(f"brokers={brokers}: a cluster needs at least one broker")
        unknown = set(node_args or {}) - set(range(1, brokers + 1))
        if unknown:
            raise ValueError(f"node_args names nodes {sorted(unknown)}, but the nodes are 1..{brokers}")
        self.base_dir = Path(base_dir)
        self.truncation = truncation
        self.session_timeout_ms = session_timeout_ms
        self.controller_port = free_port()
        self._node_ids = list(range(1, brokers + 1))
        self._ports = {node: free_port() for node in self._node_ids}
        self._proxies: dict[int, TcpProxy] = {}
        self.controller = ManagedProcess(
            "controller",
            [sys.executable, "-m", "fencepost.broker", "controller", "--listen", f"127.0.0.1:{self.controller_port}",
             "--data-dir", str(self.base_dir / "controller"), "--session-timeout-ms", str(session_timeout_ms)],
            self.base_dir / "controller.log", re.compile(r"controller listening on "))
        self._brokers: dict[int, ManagedProcess] = {}
        self._broker_args = tuple(broker_args)
        self._node_args = dict(node_args or {})

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> LocalCluster:
        try:
            self.start_all()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start_all(self, timeout: float = WAIT_TIMEOUT_S) -> None:
        """The controller, one proxy per broker, every broker; then wait until all are registered."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.controller.wait_ready(self.controller.launch())
        for node in self._node_ids:
            self._proxies[node] = TcpProxy("127.0.0.1", self.controller_port).start()
            self._brokers[node] = self._broker_process(node)
        offsets = {node: self._brokers[node].launch() for node in self._node_ids}
        for node, offset in offsets.items():
            self._brokers[node].wait_ready(offset)
        for node in self._node_ids:
            self.wait_for_fenced(node, False, timeout)

    def _broker_process(self, node: int) -> ManagedProcess:
        command = [sys.executable, "-m", "fencepost.broker", "serve", "--node-id", str(node),
                   "--listen", f"127.0.0.1:{self._ports[node]}", "--data-dir", str(self.data_dir(node)),
                   "--controller", self._proxies[node].address, "--truncation", self.truncation,
                   *self._broker_args, *self._node_args.get(node, ())]
        return ManagedProcess(node_name(node), command, self.base_dir / f"{node_name(node)}.log",
                              re.compile(rf"broker {node} listening on "))

    def close(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop everything we started (brokers first, then the controller); close the proxies."""
        problems: list[str] = []
        for proxy in self._proxies.values():
            if proxy.is_cut:
                proxy.heal()  # a clean shutdown talks to the controller
        live = [b for b in self._brokers.values() if b.alive()]
        for b in live:
            b.terminate()
        for b in live:
            try:
                b.wait_exit(timeout)
            except ClusterError as e:
                problems.append(str(e))
        try:
            self.controller.stop(timeout)
        except ClusterError as e:
            problems.append(str(e))
        for proxy in self._proxies.values():
            proxy.close()
        if problems:
            raise ClusterError("\n\n".join(problems))

    # -- addresses and files ---------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return list(self._node_ids)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self._ports[node]}" for node in self._node_ids)

    def port(self, node: int) -> int:
        self._check_node(node)
        return self._ports[node]

    def data_dir(self, node: int) -> Path:
        self._check_node(node)
        return self.base_dir / node_name(node)

    def log_file(self, node: int) -> Path:
        return self._broker(node).log_file

    def log_text(self, node: int) -> str:
        path = self._broker(node).log_file
        return path.read_text(errors="replace") if path.exists() else ""

    def controller_log_text(self) -> str:
        path = self.controller.log_file
        return path.read_text(errors="replace") if path.exists() else ""

    def proxy(self, node: int) -> TcpProxy:
        self._check_node(node)
        return self._proxies[node]

    def pid(self, node: int) -> int:
        return self._broker(node).pid

    def alive(self, node: int) -> bool:
        return self._broker(node).alive()

    def paused(self, node: int) -> bool:
        return self._broker(node).paused

    def exit_status(self, node: int) -> int | None:
        """The broker's exit status (negative: the signal that ended it); None while it runs."""
        proc = self._broker(node).proc
        return None if proc is None else proc.poll()

    def _check_node(self, node: int) -> None:
        if node not in self._ports:
            raise ValueError(f"node {node!r} is not in this cluster: its nodes are {self._node_ids}")

    def _broker(self, node: int) -> ManagedProcess:
        self._check_node(node)
        if node not in self._brokers:
            raise ClusterError("the cluster was not started: use `with LocalCluster(...)` or start_all()")
        return self._brokers[node]

    # -- faults ------------------------------------------------------------------------

    def kill(self, node: int) -> None:
        """SIGKILL the broker and reap it."""
        self._broker(node).kill()

    def stop(self, node: int, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM (a clean shutdown) and wait; the exit status."""
        return self._broker(node).stop(timeout)

    def stop_brokers(self, timeout: float = STOP_TIMEOUT_S) -> dict[int, int]:
        """SIGTERM every live broker at once and wait for all; their exit statuses."""
        live = {node: b for node, b in self._brokers.items() if b.alive()}
        for b in live.values():
            b.terminate()
        return {node: b.wait_exit(timeout) for node, b in live.items()}

    def start(self, node: int, timeout: float = START_TIMEOUT_S) -> None:
        """Start a stopped or killed broker on its port and data dir; wait for its listening line."""
        b = self._broker(node)
        b.wait_ready(b.launch(), timeout)

    def restart(self, node: int, timeout: float = START_TIMEOUT_S) -> None:
        """A clean stop (if running), then start."""
        self.stop(node)
        self.start(node, timeout)

    def pause(self, node: int) -> None:
        """SIGSTOP, and wait until the kernel shows the process stopped (signals arrive asynchronously)."""
        b = self._broker(node)
        b.signal(signal.SIGSTOP)
        b.paused = True
        _wait_for_process_state(b.pid, stopped=True)

    def resume(self, node: int) -> None:
        """SIGCONT, and wait until the process runs again."""
        b = self._broker(node)
        b.signal(signal.SIGCONT)
        b.paused = False
        _wait_for_process_state(b.pid, stopped=False)

    def kill_controller(self) -> None:
        self.controller.kill()

    def restart_controller(self, timeout: float = START_TIMEOUT_S) -> None:
        """A clean stop of the controller (if running), then start on the same port and data dir."""
        self.controller.stop()
        self.controller.wait_ready(self.controller.launch(), timeout)

    def cut_controller(self, node: int) -> None:
        """Partition the broker from the controller (its link only; clients still reach it)."""
        self.proxy(node).cut()

    def heal_controller(self, node: int) -> None:
        self.proxy(node).heal()

    # -- the controller's state ----------------------------------------------------------

    def controller_call(self, message: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        return call_controller("127.0.0.1", self.controller_port, message, timeout)

    def describe(self) -> Snapshot:
        return Snapshot.from_dict(self.controller_call({"type": "describe"})["snapshot"])

    def try_describe(self) -> Snapshot | None:
        """describe(), or None while the controller cannot be reached or answer."""
        try:
            return self.describe()
        except (OSError, ClusterError):
            return None

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     configs: dict[str, str] | None = None, timeout: float = WAIT_TIMEOUT_S) -> TopicState:
        """Create through the controller, then wait until every partition has a leader
        and every replica broker answers Metadata with that leader and epoch."""
        self.controller_call({"type": "create_topic", "name": name, "partitions": partitions,
                              "replication_factor": replication_factor,
                              "configs": {k: str(v) for k, v in (configs or {}).items()},
                              "validate_only": False})

        def ready() -> bool:
            snap = self.try_describe()
            topic = snap.topics.get(name) if snap else None
            if topic is None or len(topic.partitions) != partitions:
                return False
            for state in topic.partitions.values():
                if state.leader == NO_LEADER:
                    return False
            return all(self._broker_agrees(node, name, topic)
                       for node in {r for s in topic.partitions.values() for r in s.replicas})

        self.wait_until(ready, timeout, f"topic {name!r} to have leaders known to every replica broker")
        return self.describe().topics[name]

    def _broker_agrees(self, node: int, topic: str, state: TopicState) -> bool:
        view = broker_partition_view(self._ports[node], topic)
        if view is None:
            return False
        return all(view.get(p) == (s.leader, s.leader_epoch) for p, s in state.partitions.items())

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        snap = self.describe()
        if topic not in snap.topics:
            raise ClusterError(f"the controller knows no topic {topic!r}; it knows {sorted(snap.topics)}")
        parts = snap.topics[topic].partitions
        if partition not in parts:
            raise ClusterError(f"topic {topic!r} has no partition {partition}; it has {sorted(parts)}")
        return parts[partition]

    def leader(self, topic: str, partition: int) -> int:
        """The leader the controller chose (NO_LEADER = -1 when there is none)."""
        return self.partition_state(topic, partition).leader

    # -- waiting ---------------------------------------------------------------------

    def wait_until(self, predicate: Callable[[], Any], timeout: float = WAIT_TIMEOUT_S,
                   what: str = "a condition") -> Any:
        """Poll `predicate` until it returns something true (returned); AssertionError
        naming `what` and the controller's last state on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() >= deadline:
                snap = self.try_describe()
                state = orjson.dumps(snap.to_dict()).decode() if snap else "(controller unreachable)"
                raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; "
                                     f"the controller's state: {state}")
            time.sleep(POLL_INTERVAL_S)

    def wait_for_fenced(self, node: int, fenced: bool, timeout: float = WAIT_TIMEOUT_S) -> None:
        """Until the controller shows `node` registered and fenced (True) or unfenced (False)."""
        self._check_node(node)

        def check() -> bool:
            snap = self.try_describe()
            info = snap.brokers.get(node) if snap else None
            return info is not None and info.fenced == fenced

        want = "fenced" if fenced else "registered and unfenced"
        self.wait_until(check, timeout, f"{node_name(node)} to be {want}")

    def wait_for_leader(self, topic: str, partition: int, not_in: tuple[int, ...] = (),
                        timeout: float = WAIT_TIMEOUT_S) -> int:
        """Until the partition has a leader outside `not_in` that itself answers Metadata
        as leader in the controller's epoch; that leader's node id."""

        def check() -> int | None:
            snap = self.try_describe()
            topic_state = snap.topics.get(topic) if snap else None
            state = topic_state.partitions.get(partition) if topic_state else None
            if state is None or state.leader == NO_LEADER or state.leader in not_in:
                return None
            view = broker_partition_view(self._ports[state.leader], topic)
            if view is None or view.get(partition) != (state.leader, state.leader_epoch):
                return None
            return state.leader

        return self.wait_until(check, timeout, f"a leader of {topic}-{partition} outside {list(not_in)}")

    def wait_for_isr(self, topic: str, partition: int, isr_size: int | None = None,
                     members: tuple[int, ...] | None = None, timeout: float = WAIT_TIMEOUT_S) -> PartitionState:
        """Until the ISR has `isr_size` members, or exactly `members`, or (neither given)
        every replica; the partition's state then."""

        def check() -> PartitionState | None:
            snap = self.try_describe()
            topic_state = snap.topics.get(topic) if snap else None
            state = topic_state.partitions.get(partition) if topic_state else None
            if state is None:
                return None
            if members is not None:
                return state if set(state.isr) == set(members) else None
            if isr_size is not None:
                return state if len(state.isr) == isr_size else None
            return state if set(state.isr) == set(state.replicas) else None

        want = (f"members {sorted(members)}" if members is not None
                else f"{isr_size} members" if isr_size is not None else "every replica")
        return self.wait_until(check, timeout, f"the ISR of {topic}-{partition} to have {want}")
