"""The process backend: every node is a set of plain processes on 127.0.0.1.

No isolation: nodes differ only by port (each (node, service) gets its own,
chosen below the kernel's ephemeral range and kept for the cluster's life) and
by work directory. Pause, kill and restart work; a partition cannot be made
and asking for one is a configuration error.
"""
from __future__ import annotations

import random
import signal
import socket
import sys
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.hosts.base import CLUSTER_ENV, NODE_ENV, CommandResult, HostSet, ProcessHandle
from fencepost.clusters.hosts.local_host import LocalHost
from fencepost.clusters.hosts.local_process import marked_processes, run_local, signal_local, spawn_local

BACKEND = "process"
LOOPBACK = "127.0.0.1"
NO_PARTITIONS = ("the process backend cannot make partitions: its nodes all share 127.0.0.1. "
                 "Use --backend netns (as root on Linux) or --backend docker, or choose faults "
                 "without partitions (kill, pause)")


def free_port(taken: Iterable[int] = ()) -> int:
    """A port free on 127.0.0.1 now, below the ephemeral range (so no outgoing connection takes it
    while the service it is kept for is down)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    taken = set(taken)
    candidates = [p for p in range(10_000, max(low, 10_001)) if p not in taken]
    random.shuffle(candidates)
    for port in candidates[:500]:
        try:
            with socket.create_server((LOOPBACK, port)):
                return port
        except OSError:
            continue
    raise ClusterConfigError(f"no free port found on {LOOPBACK} below {low}")


class ProcessHost(LocalHost):
    supports_partitions = False

    def __init__(self, cluster: str, name: str, workdir: str, ports: Mapping[str, int] | None = None,
                 taken: set[int] | None = None) -> None:
        self.cluster = cluster
        self.name = name
        self.address = LOOPBACK
        self.workdir = workdir
        self.python = sys.executable
        self.ports = dict(ports or {})
        self._taken = taken if taken is not None else set(self.ports.values())

    def run(self, argv: Sequence[str], *, timeout: float = 30.0, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandResult:
        return run_local(self.name, argv, timeout, check, env)

    def spawn(self, name: str, argv: Sequence[str], log: str, *, env: Mapping[str, str] | None = None,
              cwd: str | None = None) -> ProcessHandle:
        marker = {CLUSTER_ENV: self.cluster, NODE_ENV: self.name, **(env or {})}
        pid = spawn_local(self.name, argv, log, marker, cwd or self.workdir)
        return ProcessHandle(self.name, name, pid, log)

    def cut_off(self, peers: Iterable[str]) -> None:
        raise ClusterConfigError(NO_PARTITIONS)

    def heal(self) -> None:
        """Nothing is ever cut here."""

    def port(self, service: str, default: int) -> int:
        if service not in self.ports:
            self.ports[service] = free_port(self._taken)
            self._taken.add(self.ports[service])
        return self.ports[service]


class ProcessHostSet(HostSet[ProcessHost]):
    backend = BACKEND

    def __init__(self, cluster: str, hosts: dict[str, ProcessHost]) -> None:
        self.cluster = cluster
        self.hosts = hosts

    def state(self) -> dict[str, Any]:
        return {"backend": BACKEND, "cluster": self.cluster,
                "nodes": {n: {"workdir": h.workdir, "ports": h.ports} for n, h in self.hosts.items()}}

    def destroy(self) -> None:
        """kill -9 whatever still carries this cluster's marker; nothing else was made (work dirs are kept)."""
        for pid in marked_processes(self.cluster):
            signal_local(pid, signal.SIGKILL)


def provision(cluster: str, nodes: Sequence[str], workdir: Path,
              options: Mapping[str, Any] | None = None, shared_paths: Sequence[str] = ()) -> ProcessHostSet:
    """`shared_paths` need nothing: the nodes are processes of this machine."""
    if options:
        raise ClusterConfigError(f"the process backend takes no options; got {sorted(options)}")
    taken: set[int] = set()
    hosts = {}
    for node in nodes:
        (workdir / node).mkdir(parents=True, exist_ok=True)
        hosts[node] = ProcessHost(cluster, node, str(workdir / node), taken=taken)
    return ProcessHostSet(cluster, hosts)


def attach(state: Mapping[str, Any]) -> ProcessHostSet:
    taken = {p for node in state["nodes"].values() for p in node["ports"].values()}
    return ProcessHostSet(state["cluster"], {
        n: ProcessHost(state["cluster"], n, node["workdir"], node["ports"], taken)
        for n, node in state["nodes"].items()})


def cleanup(clusters: Collection[str] = ()) -> list[str]:
    """Nothing of its own to remove: its strays are processes, which cleanup finds by their marker."""
    return []
