"""The host interface every backend implements (docs/hosts/), and its value types.

A `Host` is one node of a test cluster: it runs commands, spawns long-lived
processes with their log files, signals them, moves files, cuts itself off from
peer addresses and heals, and says its address. A `HostSet` is the hosts one
backend provisioned for one cluster: it can describe itself as JSON-able state
(so another process — `fencepost cluster down`, `fencepost nemesis heal` —
re-attaches to the same hosts) and destroy them.

Paths given to a host (`log`, `cwd`, `put`/`get` remote paths) are paths on
that host; `Host.workdir` is a directory there that belongs to this node and
survives process restarts (data directories and logs go under it).
Every process a backend spawns carries the environment marker
`FENCEPOST_CLUSTER=<cluster name>` so that `fencepost cleanup` can find strays.
"""
from __future__ import annotations

import signal
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, Mapping, Sequence, TypeVar

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.processes import CLUSTER_ENV as CLUSTER_ENV  # the marker: clusters/processes.py
from fencepost.clusters.processes import ProcessState as ProcessState
from fencepost.clusters.processes import state_of_tasks as state_of_tasks

NODE_ENV = "FENCEPOST_NODE"
NAME_PREFIX = "fp"  # every namespace, link, container, network and chain we make starts with it
STATE_POLL_S = 0.01


@dataclass(frozen=True)
class CommandResult:
    """What a command run on a host returned."""
    host: str
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def check(self) -> CommandResult:
        """Self, or a HostError naming the host, the command, its status and its stderr."""
        if self.returncode != 0:
            detail = (self.stderr or self.stdout).strip()[-2000:]
            raise HostError(f"on {self.host}: `{' '.join(self.argv)}` exited {self.returncode}"
                            + (f": {detail}" if detail else ""))
        return self


@dataclass(frozen=True)
class ProcessHandle:
    """A long-lived process spawned on a host: enough to signal it from any harness process."""
    host: str  # the node name
    name: str  # its role on the node, e.g. "broker", "controller", "sshd"
    pid: int  # as the host sees it (inside a container: the container's pid namespace)
    log: str  # its log file, a path on the host

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ProcessHandle:
        return ProcessHandle(str(data["host"]), str(data["name"]), int(data["pid"]), str(data["log"]))


class Host(ABC):
    """One node. Backends implement the abstract methods; pause/resume/kill have
    signal-based defaults that a backend may replace (docker pauses containers)."""

    name: str
    address: str  # what peers and the harness's clients connect to
    workdir: str  # this node's own directory, on the host
    python: str  # the Python interpreter to run project code with, on the host
    supports_partitions: bool = True
    supports_shaping: bool = False  # tc netem on the node's own interface (netns, docker)

    @abstractmethod
    def run(self, argv: Sequence[str], *, timeout: float = 30.0, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandResult:
        """Run a command to completion on the host; with `check`, a non-zero exit raises HostError."""

    @abstractmethod
    def spawn(self, name: str, argv: Sequence[str], log: str, *, env: Mapping[str, str] | None = None,
              cwd: str | None = None) -> ProcessHandle:
        """Start a long-lived process in its own session, stdout and stderr appended to `log`; don't wait."""

    @abstractmethod
    def signal(self, handle: ProcessHandle, sig: signal.Signals) -> None:
        """Send a signal to the process; a process already gone is not an error."""

    @abstractmethod
    def process_state(self, handle: ProcessHandle) -> ProcessState:
        """running, stopped (SIGSTOP or a frozen container), or gone (exited, killed, a zombie)."""

    @abstractmethod
    def put(self, local: Path, remote: str) -> None:
        """Copy a local file to the host (parent folders made)."""

    @abstractmethod
    def get(self, remote: str, local: Path) -> None:
        """Copy a file from the host (local parent folders made)."""

    @abstractmethod
    def cut_off(self, peers: Iterable[str]) -> None:
        """Drop every packet from and to these addresses (added to any cut already in place)."""

    @abstractmethod
    def heal(self) -> None:
        """Remove every cut this host has; idempotent."""

    def uncut(self, peers: Iterable[str]) -> None:
        """Lift the cuts of these addresses only (one copy of each rule `cut_off` added); a cut
        already gone is no error. Backends whose cuts cannot be lifted one by one refuse."""
        raise ClusterConfigError(f"on {self.name}: this backend cannot lift one cut alone")

    def shape(self, netem: Sequence[str]) -> None:
        """Degrade the node's outgoing packets: `tc qdisc replace dev IFACE root netem NETEM...`
        (replacing any netem in place). Backends that cannot refuse with why."""
        raise ClusterConfigError(f"on {self.name}: this backend cannot shape a node's packets (tc netem): "
                                 "use the netns or docker backend")

    def unshape(self) -> None:
        """Remove the netem qdisc `shape` put on; nothing when there is none."""

    def shaping_unavailable(self) -> str | None:
        """Why `shape` cannot work on this node (no tc netem in its kernel, ...), or None."""
        return None if self.supports_shaping else "this backend cannot shape a node's packets (tc netem)"

    def port(self, service: str, default: int) -> int:
        """The port `service` listens on here: `default` where each node has its own address;
        the process backend gives each (node, service) its own port, kept for the cluster's life."""
        return default

    # -- faults with signal-based defaults ---------------------------------------------

    def pause(self, handles: Sequence[ProcessHandle]) -> None:
        """Freeze the processes (SIGSTOP) and wait until the kernel shows them stopped."""
        for h in handles:
            self.signal(h, signal.SIGSTOP)
        self.wait_for_state(handles, {"stopped", "gone"})

    def resume(self, handles: Sequence[ProcessHandle]) -> None:
        for h in handles:
            self.signal(h, signal.SIGCONT)
        self.wait_for_state(handles, {"running", "gone"})

    def kill(self, handles: Sequence[ProcessHandle]) -> None:
        """kill -9 and wait until they are gone. A paused process dies too."""
        for h in handles:
            self.signal(h, signal.SIGKILL)
        self.wait_for_state(handles, {"gone"})

    def terminate(self, handles: Sequence[ProcessHandle], timeout: float = 20.0) -> None:
        """SIGTERM (continuing paused ones first), then SIGKILL what outlives `timeout`."""
        self.ask_to_end(handles)
        self.await_end(handles, timeout)

    def ask_to_end(self, handles: Sequence[ProcessHandle]) -> None:
        """The first half of `terminate`: SIGTERM (continuing paused ones first); returns at once."""
        for h in handles:
            self.signal(h, signal.SIGCONT)
            self.signal(h, signal.SIGTERM)

    def await_end(self, handles: Sequence[ProcessHandle], timeout: float = 20.0) -> None:
        """The second half of `terminate`: until they are gone; SIGKILL what outlives `timeout`."""
        try:
            self.wait_for_state(handles, {"gone"}, timeout)
        except HostError:
            self.kill(handles)

    def wait_for_state(self, handles: Sequence[ProcessHandle], states: set[str], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        for h in handles:
            while (state := self.process_state(h)) not in states:
                if time.monotonic() > deadline:
                    raise HostError(f"on {self.name}: {h.name} (pid {h.pid}) is {state}, not "
                                    f"{' or '.join(sorted(states))}, after {timeout:g}s")
                time.sleep(STATE_POLL_S)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address, "workdir": self.workdir}


H = TypeVar("H", bound=Host)  # a backend's own kind of host


class HostSet(ABC, Generic[H]):
    """The hosts of one cluster on one backend."""

    backend: str
    cluster: str
    hosts: dict[str, H]

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """JSON-able; `attach(state)` of the backend's module rebuilds an equal HostSet."""

    @abstractmethod
    def destroy(self) -> None:
        """Kill what runs on the hosts and remove them and everything made for them; idempotent."""

    @property
    def client_address(self) -> str | None:
        """The address the harness's clients reach the nodes from, as a node sees them: what a cut
        of a node off from the clients drops (None where this backend cannot tell it)."""
        return None

    def __getitem__(self, node: str) -> H:
        try:
            return self.hosts[node]
        except KeyError:
            raise HostError(f"no node {node!r} in cluster {self.cluster}: its nodes are "
                            f"{', '.join(self.hosts)}") from None

    def __iter__(self) -> Iterator[H]:
        return iter(self.hosts.values())
