"""A running cluster: hosts from one backend, a system's processes on them, and the
operations faults are made of.

`Cluster.up(spec, directory)` provisions hosts, starts the system on them and
waits until it is ready; `Cluster.attach(directory)` picks a running cluster up
again from its saved state (another command, another process). The state
(clusters/state_file.py) is saved before anything is started and after every change
of processes, cuts or shaped links, so `down`, `heal` and `fencepost cleanup` always
know what exists. Node-level operations (start, stop, kill, pause, resume,
partition, reconnect, shape, heal) are what the nemesis (nemesis/) composes faults
from, with the system's answers about roles (active controller, group coordinator)
and its reassignment of replicas; `heal()` undoes every fault: cuts removed, netem
removed, paused processes continued, stopped nodes started (control plane first).
With a system's `flush = "lazy"` the nodes' data folders are lazy disks
(clusters/disks/), mounted before any process starts and unmounted at `down`;
`power_cut(node)` loses what the node had not made durable.
"""
from __future__ import annotations

import signal
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from fencepost.clusters.disks import LazyDisks
from fencepost.clusters.disks.node_disk import CutLoss
from fencepost.clusters.errors import ClusterConfigError, HostError, NotRejoining
from fencepost.clusters.hosts import backend_module
from fencepost.clusters.hosts.base import Host, HostSet, ProcessHandle
from fencepost.clusters.lazyfs.build import daemon_binary
from fencepost.clusters.recovery import Recovery
from fencepost.clusters.state_file import check_name, load_state, save_state
from fencepost.clusters.systems import system_for
from fencepost.clusters.systems.base import PartitionView, ProcessSpec, System, TopicSpec
from fencepost.clusters.systems.markers import FatalMarker, fatal_markers

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
RESTART_PAUSE_S = 0.5
POLL_S = 0.05
NodeState = str  # "running", "paused", "down" (no process), "partial" (some of its processes down)
CLIENTS = "clients"  # a grudge's peer that stands for the harness's clients (producers, consumers, control plane)


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    system: str = "own"
    brokers: int = 3
    backend: str = "process"
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    system_options: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "backend_options": dict(self.backend_options),
                "system_options": dict(self.system_options)}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ClusterSpec:
        return ClusterSpec(data["name"], data["system"], int(data["brokers"]), data["backend"],
                           dict(data.get("backend_options") or {}), dict(data.get("system_options") or {}))


class Cluster:
    def __init__(self, spec: ClusterSpec, directory: Path, hosts: HostSet, system: System,
                 processes: Mapping[str, Mapping[str, ProcessHandle]] | None = None,
                 cuts: Mapping[str, Iterable[str]] | None = None, created: str | None = None,
                 shaped: Mapping[str, Iterable[str]] | None = None,
                 disks: LazyDisks | None = None) -> None:
        self.spec = spec
        self.directory = directory
        self.hosts = hosts
        self.system = system
        self.processes: dict[str, dict[str, ProcessHandle]] = {n: dict(p) for n, p in (processes or {}).items()}
        self.cuts: dict[str, list[str]] = {n: sorted(p) for n, p in (cuts or {}).items()}
        self.shaped: dict[str, list[str]] = {n: list(a) for n, a in (shaped or {}).items()}  # node -> netem args
        self.created = created or datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.disks = disks or LazyDisks()
        self.log_starts: dict[tuple[str, str], int] = {}  # (node, role) -> its log's size when last started
        self.recovery = Recovery(self)  # whether its partitions can still recover (recovery.py)
        self._saving = threading.RLock()  # the processes table, changed and saved by side-by-side starts

    # -- life ---------------------------------------------------------------------------

    @staticmethod
    def up(spec: ClusterSpec, directory: Path, timeout: float = READY_TIMEOUT_S,
           on_step: Callable[[str], None] | None = None) -> Cluster:
        """Provision, start, wait until ready. On failure everything made is removed again."""
        check_name(spec.name)
        directory = directory.resolve()  # processes run in their own working directories
        system = system_for(spec.system, spec.system_options)
        nodes = system.node_names(spec.brokers)
        step = on_step or (lambda message: None)
        lazy = system.lazy_options()
        if lazy is not None:
            LazyDisks.check_backend(spec.backend)
        step(f"provisioning {len(nodes)} {spec.backend} hosts")
        shared, needs = system.host_paths(), {}
        if lazy is not None and spec.backend == "docker":  # the daemon runs in the containers
            shared, needs = [*shared, str(daemon_binary().parent)], {"fuse": True}
        hosts = backend_module(spec.backend).provision(spec.name, nodes, directory / "nodes",
                                                       dict(spec.backend_options), shared, **needs)
        cluster = Cluster(spec, directory, hosts, system)
        try:
            cluster.save()
            if lazy is not None:
                plan = LazyDisks.plan(hosts, system.lazy_folders)
                step(f"mounting lazy disks ({lazy.model}) on {', '.join(plan)}")
                cluster.disks.mount_all(hosts, plan, lazy, on_mounted=cluster.save)
            control = system.control_nodes(nodes)
            for node in control:  # in order: a broker needs its control plane up
                step(f"starting {node}")
                cluster.start(node, timeout)
            brokers = [n for n in nodes if n not in control]
            step(f"starting {', '.join(brokers)}")
            with ThreadPoolExecutor(max_workers=len(brokers) or 1) as pool:  # side by side: JVMs start slowly
                for started in [pool.submit(cluster.start, node, timeout) for node in brokers]:
                    started.result()
            step("waiting for every broker to register")
            system.wait_until_ready(hosts, timeout)
        except BaseException:
            cluster.down()
            raise
        return cluster

    @staticmethod
    def attach(directory: Path) -> Cluster:
        directory = directory.resolve()
        state = load_state(directory)
        try:
            spec = ClusterSpec.from_dict(state["spec"])
            hosts = backend_module(spec.backend).attach(state["hosts"])
            processes = {n: {r: ProcessHandle.from_dict(h) for r, h in roles.items()}
                         for n, roles in state.get("processes", {}).items()}
            return Cluster(spec, directory, hosts, system_for(spec.system, state.get("system_options", {})),
                           processes, state.get("cuts"), state.get("created"), state.get("shaped"),
                           LazyDisks.attach(hosts, state.get("lazy_disks")))
        except (KeyError, TypeError, ValueError) as e:
            raise ClusterConfigError(f"{directory}/cluster.json is not a cluster state this version can read "
                                     f"({type(e).__name__}: {e}); remove its leftovers with "
                                     "`fencepost cleanup`") from None

    def state(self) -> dict[str, Any]:
        return {"spec": self.spec.to_dict(), "created": self.created, "system_options": self.system.options(),
                "hosts": self.hosts.state(), "bootstrap": self.bootstrap,
                "nodes": {n: self.hosts[n].describe() for n in self.nodes},
                "processes": {n: {r: h.to_dict() for r, h in roles.items()} for n, roles in self.processes.items()},
                "cuts": self.cuts, "shaped": self.shaped, "lazy_disks": self.disks.state()}

    def save(self) -> None:
        with self._saving:  # nodes may be started side by side
            save_state(self.directory, self.state())

    def down(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Heal cuts, stop every process (SIGTERM, then SIGKILL), remove the hosts, unmount the lazy
        disks (cleanly: everything made durable first). Idempotent."""
        problems = []
        self._merge_saved_processes()
        for node in self.nodes:
            try:
                self.hosts[node].heal()
            except (HostError, ClusterConfigError):
                pass
        for node in reversed(self.nodes):
            try:
                self.stop(node, timeout)
            except HostError as e:
                problems.append(str(e))
        try:
            self.disks.unmount_all()  # before the hosts go: a container's mounts go with it
        except HostError as e:
            problems.append(str(e))
        self.hosts.destroy()
        self.cuts = {}
        self.shaped = {}  # the qdiscs went with the namespaces or containers
        self.save()
        if problems:
            raise HostError("; ".join(problems))

    def _merge_saved_processes(self) -> None:
        """Take in processes another command started meanwhile (its handles are in the saved state)."""
        try:
            saved = load_state(self.directory).get("processes", {})
        except ClusterConfigError:
            return
        for node, roles in saved.items():
            for role, data in roles.items():
                handle = ProcessHandle.from_dict(data)
                mine = self.processes.setdefault(node, {}).get(role)
                if mine is None or (mine != handle and node in self.hosts.hosts
                                    and self.hosts[node].process_state(mine) == "gone"):
                    self.processes[node][role] = handle

    # -- topology -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def nodes(self) -> list[str]:
        return list(self.hosts.hosts)

    @property
    def broker_nodes(self) -> list[str]:
        return self.system.broker_nodes(self.nodes)

    @property
    def control_nodes(self) -> list[str]:
        return self.system.control_nodes(self.nodes)

    def address(self, node: str) -> str:
        return self.hosts[node].address

    @property
    def bootstrap(self) -> str:
        return self.system.bootstrap(self.hosts)

    @property
    def supports_partitions(self) -> bool:
        return all(h.supports_partitions for h in self.hosts)

    @property
    def supports_shaping(self) -> bool:
        return all(h.supports_shaping for h in self.hosts)

    def shaping_unavailable(self) -> str | None:
        """Why no node's packets can be shaped (the backend, or its kernel, has no netem), or None."""
        return next((why for h in self.hosts if (why := h.shaping_unavailable())), None)

    @property
    def client_address(self) -> str | None:
        """Where the harness's clients come from, as a node sees them (None: this backend cannot tell)."""
        return self.hosts.client_address

    # -- processes -------------------------------------------------------------------------

    def node_state(self, node: str) -> NodeState:
        host = self.hosts[node]
        states = [host.process_state(h) for h in self.processes.get(node, {}).values()]
        if not states or all(s == "gone" for s in states):
            return "down"
        if "gone" in states:
            return "partial"
        return "paused" if "stopped" in states else "running"

    def start(self, node: str, timeout: float = READY_TIMEOUT_S) -> None:
        """Start the node's processes that are not running, each waited for until it is ready: its
        port accepts and the system calls it ready. One that exits on start is started again while
        its spec's `restart_within_s` lasts (stock Kafka refuses to start while its last ZooKeeper
        session lives)."""
        host = self.hosts[node]
        with self._saving:
            running = self.processes.setdefault(node, {})
        for spec in self.system.process_specs(host, self.hosts):
            current = running.get(spec.role)
            if current is not None and host.process_state(current) != "gone":
                continue
            first = time.monotonic()
            while True:
                self._prepare(node, spec, timeout)
                self.log_starts[(node, spec.role)] = self._log_size(node, spec.log)
                handle = host.spawn(spec.role, spec.argv, spec.log)
                with self._saving:
                    running[spec.role] = handle
                    self.save()
                if self._wait_ready(node, handle, spec, first + timeout):
                    break
                if time.monotonic() - first > spec.restart_within_s:
                    raise HostError(f"{handle.name} on {node} exited on start; the end of {handle.log}:\n"
                                    f"{self.log_tail(node, handle.name)}")
                time.sleep(RESTART_PAUSE_S)

    def _prepare(self, node: str, spec: ProcessSpec, timeout: float) -> None:
        host = self.hosts[node]
        for path, text in spec.files:
            with tempfile.TemporaryDirectory(prefix="fencepost-") as scratch:
                local = Path(scratch) / "file"
                local.write_text(text)
                host.put(local, path)
        if spec.setup:
            done = host.run(spec.setup, timeout=timeout, check=False)
            if not done.ok:
                raise HostError(f"{spec.role} on {node}: its set-up command {' '.join(spec.setup)} failed "
                                f"(exit {done.returncode}): {(done.stderr or done.stdout).strip()[-2000:]}")
            if node in self.disks:
                # what a set-up command writes (Kafka's storage format, which fsyncs meta.properties but
                # not bootstrap.checkpoint) was written long before any power cut on a real machine
                self.disks.disk(node).writeback()

    def _wait_ready(self, node: str, handle: ProcessHandle, spec: ProcessSpec, deadline: float) -> bool:
        """True once ready; False when the process exited first; HostError at the deadline."""
        host = self.hosts[node]
        listening = False
        while True:
            if host.process_state(handle) == "gone":
                return False
            if not listening:
                try:
                    with socket.create_connection((host.address, spec.ready_port), timeout=1.0):
                        listening = True
                except OSError:
                    pass
            if listening and self.system.process_ready(host, self.hosts, spec.role):
                return True
            if time.monotonic() > deadline:
                what = ("was not ready" if listening
                        else f"did not accept connections on {host.address}:{spec.ready_port}")
                raise HostError(f"{handle.name} on {node} {what} in time; the end of {handle.log}:\n"
                                f"{self.log_tail(node, handle.name)}")
            time.sleep(POLL_S)

    def _log_size(self, node: str, path: str) -> int:
        """The size of a log file on the node (0 when it does not exist yet)."""
        try:
            done = self.hosts[node].run(["stat", "-c", "%s", path], check=False, timeout=10)
        except HostError:
            return 0
        return int(done.stdout.strip()) if done.ok and done.stdout.strip().isdigit() else 0

    def log_since_start(self, node: str, role: str) -> str:
        """What the node's `role` process logged since this Cluster last started it (its whole
        log for a cluster attached from saved state)."""
        handle = self.processes.get(node, {}).get(role)
        if handle is None:
            return ""
        offset = self.log_starts.get((node, role), 0)
        try:
            done = self.hosts[node].run(["tail", "-c", f"+{offset + 1}", handle.log], check=False, timeout=10)
        except HostError:
            return ""
        return done.stdout if done.ok else ""

    def fatal_markers(self, node: str) -> list[FatalMarker]:
        """The fatal markers (clusters/systems/markers.py) the node logged since it was last started."""
        return [m for role in self.processes.get(node, {})
                for m in fatal_markers(self.system.name, node, self.log_since_start(node, role))]

    def log_tail(self, node: str, role: str, lines: int = 30) -> str:
        handle = self.processes.get(node, {}).get(role)
        if handle is None:
            return "(never started)"
        try:
            return self.hosts[node].run(["tail", "-n", str(lines), handle.log], check=False, timeout=10).stdout
        except HostError as e:
            return f"(could not read it: {e})"

    def _handles(self, node: str) -> list[ProcessHandle]:
        self.hosts[node]  # names the node when unknown
        return list(self.processes.get(node, {}).values())

    def stop(self, node: str, timeout: float = STOP_TIMEOUT_S) -> None:
        """A clean stop: SIGCONT + SIGTERM, SIGKILL after `timeout`."""
        self.hosts[node].terminate(self._live(node), timeout)

    def begin_stop(self, node: str) -> Callable[[float], None]:
        """`stop` in two halves, so a caller can act while the node shuts down: SIGCONT + SIGTERM
        now; the call it returns, given a timeout, waits until the node's processes are gone
        (SIGKILL after the timeout)."""
        host, live = self.hosts[node], self._live(node)
        host.ask_to_end(live)
        return lambda timeout: host.await_end(live, timeout)

    def kill(self, node: str) -> None:
        """kill -9 every process of the node (a paused one too)."""
        if self.disks.kills_with_signals(node):
            Host.kill(self.hosts[node], self._live(node))  # signals: the backend's kill would end its lazy disk
        else:
            self.hosts[node].kill(self._live(node))

    def pause(self, node: str) -> None:
        self.hosts[node].pause(self._live(node))

    def power_cut(self, node: str) -> CutLoss:
        """The node loses power: what its lazy disks hold that is not durable is dropped, its
        processes are killed (kill -9), its disks are mounted again (its processes are not started:
        `start` does that). Its processes are stopped (SIGSTOP) first: they do nothing after the
        cut. ClusterConfigError when the node has no lazy disk."""
        disk = self.disks.disk(node)
        self._freeze(node)  # the moment of the cut: nothing the node does after it may reach its disks
        try:
            return disk.power_cut(lambda: self.kill(node))
        finally:
            self.save()  # the daemons' pids changed

    def _freeze(self, node: str) -> None:
        """SIGSTOP the node's processes (signals, not the backend's pause: docker's would freeze the
        node's lazy filesystem daemon too) and wait until they are stopped."""
        host = self.hosts[node]
        live = self._live(node)
        for handle in live:
            host.signal(handle, signal.SIGSTOP)
        host.wait_for_state(live, {"stopped", "gone"})

    def writeback(self, node: str) -> None:
        """Everything the node's lazy disks hold becomes durable (the kernel writing dirty pages back)."""
        self.disks.disk(node).writeback()

    def resume(self, node: str) -> None:
        self.hosts[node].resume(self._live(node))

    def _live(self, node: str) -> list[ProcessHandle]:
        host = self.hosts[node]
        return [h for h in self._handles(node) if host.process_state(h) != "gone"]

    # -- network ----------------------------------------------------------------------------

    def partition(self, grudge: Mapping[str, Iterable[str]]) -> None:
        """Each node in `grudge` drops traffic from and to the nodes listed for it (added to
        existing cuts); the peer CLIENTS stands for the harness's clients. ClusterConfigError on a
        backend without partitions, or that cannot tell where the clients are."""
        if not self.supports_partitions:
            self.hosts[self.nodes[0]].cut_off([])  # raises the backend's own explanation
        for node, peers in grudge.items():
            peers = sorted(set(peers))
            if not peers:
                continue
            self.hosts[node].cut_off([self._peer_address(p) for p in peers])
            self.cuts[node] = sorted(set(self.cuts.get(node, [])) | set(peers))
            self.save()

    def _peer_address(self, peer: str) -> str:
        if peer != CLIENTS:
            return self.address(peer)  # names an unknown node
        if self.hosts.client_address is None:
            raise ClusterConfigError(f"the {self.spec.backend} backend cannot cut a node off from the clients: "
                                     "use the netns backend")
        return self.hosts.client_address

    def reconnect(self, grudge: Mapping[str, Iterable[str]]) -> None:
        """Lift exactly the cuts `partition(grudge)` made (others stay): each node stops dropping
        the peers listed for it. A cut healed already is no error."""
        for node, peers in grudge.items():
            peers = sorted(set(peers))
            if not peers:
                continue
            self.hosts[node].uncut([self._peer_address(p) for p in peers])
            left = sorted(set(self.cuts.get(node, [])) - set(peers))
            if left:
                self.cuts[node] = left
            else:
                self.cuts.pop(node, None)
            self.save()

    def heal_network(self) -> None:
        for node in self.nodes:
            self.hosts[node].heal()
        self.cuts = {}
        self.save()

    def shape(self, node: str, netem: Iterable[str]) -> None:
        """Degrade the packets `node` sends (tc netem with these arguments, replacing any netem
        it has); ClusterConfigError on a backend that cannot."""
        args = list(netem)
        self.hosts[node].shape(args)
        self.shaped[node] = args
        self.save()

    def unshape(self, node: str) -> None:
        self.hosts[node].unshape()
        self.shaped.pop(node, None)
        self.save()

    def heal(self, timeout: float = READY_TIMEOUT_S) -> list[str]:
        """Undo every fault; what was done, one line each."""
        done = []
        if self.cuts:
            done.append(f"healed the network ({', '.join(sorted(self.cuts))} had cuts)")
        if self.supports_partitions:
            self.heal_network()
        for node in sorted(self.shaped):
            self.unshape(node)
            done.append(f"removed netem on {node}")
        for node in self.nodes:
            if self.node_state(node) == "paused":
                self.resume(node)
                done.append(f"resumed {node}")
        for node in [*self.control_nodes, *self.broker_nodes]:
            if self.node_state(node) in ("down", "partial"):
                self.start(node, timeout)
                done.append(f"started {node}")
        return done

    # -- the system's view ------------------------------------------------------------------------

    def create_topic(self, topic: TopicSpec, timeout: float = READY_TIMEOUT_S) -> None:
        self.system.create_topic(self.hosts, topic, timeout)

    def partitions(self, topic: str) -> list[int]:
        return self.system.partitions(self.hosts, topic)

    def partition_view(self, topic: str, partition: int) -> PartitionView:
        return self.system.partition_view(self.hosts, topic, partition)

    def registered_brokers(self) -> set[str] | None:
        """The brokers the control plane now counts as alive; None where it cannot be told."""
        return self.system.registered_brokers(self.hosts)

    def active_controller(self) -> str | None:
        """The node acting as controller now (None when it cannot be told at this moment)."""
        return self.system.active_controller(self.hosts)

    def group_coordinator(self, group: str) -> str | None:
        """The broker coordinating consumer group `group` now (None when none answers yet);
        ClusterConfigError where the system has no single coordinator."""
        return self.system.group_coordinator(self.hosts, group)

    def reassign(self, topic: str, partition: int, replicas: list[str], timeout: float = READY_TIMEOUT_S) -> None:
        """Ask the system to move the partition's replicas to `replicas` (in that order: the first is
        the preferred leader); returns once the request is accepted, not when the move is done."""
        self.system.reassign(self.hosts, topic, partition, replicas, timeout)

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        """Until `condition()` is truthy (HostError from it counts as not yet, but NotRejoining ends
        the wait); its value."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = condition()
            except NotRejoining:
                raise
            except HostError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise HostError(f"cluster {self.name}: gave up waiting {timeout:g}s for {what}")
            time.sleep(POLL_S * 2)

    def replica_log_lines(self, timeout: float = READY_TIMEOUT_S) -> tuple[list[bytes], list[str]]:
        """Every broker's on-disk log as final.jsonl lines, and the nodes that could not be read (why)."""
        lines: list[bytes] = []
        problems: list[str] = []
        for node in self.broker_nodes:
            try:
                lines += self.system.replica_log_lines(self.hosts[node], timeout)
            except HostError as e:
                problems.append(f"{node}: {e}")
        return lines, problems

    def collect_logs(self, destination: Path) -> list[Path]:
        """Every process's log copied to destination/<node>/<file>; the copies made."""
        copied = []
        for node, roles in self.processes.items():
            for handle in roles.values():
                target = destination / node / Path(handle.log).name
                try:
                    self.hosts[node].get(handle.log, target)
                    copied.append(target)
                except (HostError, OSError):
                    continue
        return copied

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.spec.backend, "system": self.spec.system,
                "bootstrap": self.bootstrap, "cuts": self.cuts,
                "nodes": {n: {"address": self.address(n), "state": self.node_state(n),
                              "pids": {r: h.pid for r, h in self.processes.get(n, {}).items()}}
                          for n in self.nodes}}

