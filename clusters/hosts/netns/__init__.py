"""The netns backend, the default when root on Linux: every node is a network namespace.

A node shares this machine's filesystem, processes and Python, but has its own
network stack: loopback, `eth0` with its own address on the cluster's bridge, and
its own iptables, where partitions are made (clusters/hosts/iptables.py). Commands
and processes run through `ip netns exec`, which execs, so a spawned process's pid
is the command's. The network itself (bridge, veths, the FORWARD rule) is
clusters/hosts/netns/network.py; docs/hosts/netns.md says how it is built.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts import iptables, tc
from fencepost.clusters.hosts.base import CLUSTER_ENV, NODE_ENV, CommandResult, HostSet, ProcessHandle
from fencepost.clusters.hosts.local_host import LocalHost
from fencepost.clusters.hosts.local_process import local_state, run_local, signal_local, spawn_local
from fencepost.clusters.hosts.netns import network
from fencepost.clusters.hosts.netns.network import ClusterNetwork, NodeLink

BACKEND = "netns"
OPTIONS = ("subnet",)
REQUIRED_TOOLS = {"ip": "iproute2", "iptables": "iptables"}
SBIN_FOLDERS = ("/usr/local/sbin", "/usr/sbin", "/sbin")  # where root's own PATH finds them
DEFAULT_SUBNET = network.DEFAULT_SUBNET
KERNEL_SHAPING = True  # the nodes shape packets with this machine's kernel
KILL_WAIT_S = 10.0
EXEC_WAIT_S = 10.0


def check_options(options: Mapping[str, Any], nodes: int) -> None:
    """The subnet's form and size for `nodes` brokers and a control-plane node (whether it is
    free is checked when the cluster comes up)."""
    if "subnet" not in options:
        return
    subnet = options["subnet"]
    if not isinstance(subnet, str):
        raise ClusterConfigError(f"subnet = {subnet!r}: give an IPv4 network such as {network.DEFAULT_SUBNET}")
    network.plan("check", [f"n{i}" for i in range(nodes + 1)], subnet)


class NetnsHost(LocalHost):
    supports_shaping = True

    def __init__(self, cluster: str, link: NodeLink, workdir: str) -> None:
        self.cluster = cluster
        self.name = link.node
        self.namespace = link.namespace
        self.veth = link.veth
        self.address = link.address
        self.workdir = workdir
        self.python = sys.executable
        self._netem_missing: str | None = None  # why tc netem fails here ("": it works); probed when asked

    def _inside(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *argv]

    def run(self, argv: Sequence[str], *, timeout: float = 30.0, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandResult:
        done = run_local(self.name, self._inside(argv), timeout, False, env)
        result = CommandResult(self.name, tuple(argv), done.returncode, done.stdout, done.stderr)
        return result.check() if check else result

    def spawn(self, name: str, argv: Sequence[str], log: str, *, env: Mapping[str, str] | None = None,
              cwd: str | None = None) -> ProcessHandle:
        marker = {CLUSTER_ENV: self.cluster, NODE_ENV: self.name, **(env or {})}
        launcher = self._inside(argv)
        pid = spawn_local(self.name, launcher, log, marker, cwd or self.workdir)
        wait_for_exec(self.name, pid, launcher)
        return ProcessHandle(self.name, name, pid, log)

    def cut_off(self, peers: Iterable[str]) -> None:
        if not self.run(iptables.chain_ready(), check=False).ok:
            for command in iptables.ensure_chain():
                self.run(command)
        for command in iptables.cut(peers):
            self.run(command)

    def heal(self) -> None:
        if self.run(iptables.chain_ready(), check=False).ok:
            self.run(iptables.heal())

    def uncut(self, peers: Iterable[str]) -> None:
        for command in iptables.uncut(peers):
            self.run(command, check=False)  # gone already (healed) is fine

    def shape(self, netem: Sequence[str]) -> None:
        self.run(tc.shape(netem))

    def unshape(self) -> None:
        if tc.has_netem(self.run(tc.show()).stdout):
            self.run(tc.unshape())

    def shaping_unavailable(self) -> str | None:
        """Probed once, on the node's loopback (`tc.probe`)."""
        if self._netem_missing is None:
            self._netem_missing = tc.probe_on(lambda command: self.run(command, check=False))
        return self._netem_missing or None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "namespace": self.namespace}


class NetnsHostSet(HostSet[NetnsHost]):
    backend = BACKEND

    def __init__(self, net: ClusterNetwork, workdirs: Mapping[str, str]) -> None:
        self.net = net
        self.cluster = net.cluster
        self.hosts = {link.node: NetnsHost(net.cluster, link, workdirs[link.node]) for link in net.nodes}

    @property
    def bridge(self) -> str:
        return self.net.bridge

    @property
    def client_address(self) -> str | None:
        return self.net.bridge_address  # the harness reaches every namespace through the bridge

    def state(self) -> dict[str, Any]:
        return {"backend": BACKEND, "cluster": self.cluster, "subnet": self.net.subnet,
                "bridge": self.net.bridge, "bridge_address": self.net.bridge_address,
                "forward_rule_comment": self.net.rule_comment,
                "nodes": {link.node: {"namespace": link.namespace, "veth": link.veth, "address": link.address,
                                      "workdir": self.hosts[link.node].workdir}
                          for link in self.net.nodes}}

    def destroy(self) -> None:
        """Kill every process left in the namespaces, then remove the namespaces, the veths, the
        bridge and the FORWARD rule; what is already gone is skipped. Work directories stay."""
        for link in self.net.nodes:
            kill_namespace_processes(link.namespace)
        for link in self.net.nodes:
            network.delete_link(link.veth)  # takes its peer, eth0, with it
            network.delete_namespace(link.namespace)
        network.delete_link(self.net.bridge)
        network.delete_forward_rules(self.net.bridge)


def wait_for_exec(node: str, pid: int, launcher: Sequence[str]) -> None:
    """Wait until `ip netns exec` has become the command (or ended): before that it may still be
    outside the namespace, where destroy's `ip netns pids` would not find it."""
    launcher_cmdline = "\0".join(launcher).encode() + b"\0"
    deadline = time.monotonic() + EXEC_WAIT_S
    while True:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return
        if cmdline not in (launcher_cmdline, b"") or local_state(pid) == "gone":  # b"": mid-execve
            return
        if time.monotonic() > deadline:
            raise HostError(f"on {node}: `{shlex.join(launcher)}` (pid {pid}) did not exec its command "
                            f"within {EXEC_WAIT_S:g}s")
        time.sleep(0.002)


def kill_namespace_processes(namespace: str) -> list[int]:
    """SIGKILL every process whose network namespace is `namespace`, and wait until they are gone."""
    pids = network.namespace_pids(namespace)
    for pid in pids:
        signal_local(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    for pid in pids:
        while local_state(pid) != "gone":
            if time.monotonic() > deadline:
                raise HostError(f"on {namespace}: pid {pid} outlived kill -9 for {KILL_WAIT_S:g}s")
            time.sleep(0.01)
    return pids


def unavailable_reason() -> str | None:
    """Why the netns backend cannot work on this machine (not Linux, not root, a tool missing), or None."""
    if not sys.platform.startswith("linux"):
        return f"the netns backend needs Linux network namespaces; this is {sys.platform}"
    if os.geteuid() != 0:
        return "the netns backend needs root (it makes namespaces, links and iptables rules)"
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if not missing:
        return None
    elsewhere = _in_sbin(missing)
    if len(elsewhere) == len(missing):
        folders = sorted({os.path.dirname(found) for found in elsewhere.values()})
        return (f"the netns backend needs {' and '.join(f'`{t}`' for t in missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} in {' and '.join(folders)} but not on PATH (a user's PATH "
                f"kept through sudo?): add {os.pathsep.join(folders)} to PATH")
    return (f"the netns backend needs {' and '.join(f'`{t}` (Debian package {REQUIRED_TOOLS[t]})' for t in missing)}, "
            "not found on PATH")


def _in_sbin(tools: Iterable[str]) -> dict[str, str]:
    """Where each of `tools` is in the sbin folders (those found): a user's PATH kept through sudo
    (`sudo env "PATH=$PATH" ...`) lacks them on Debian."""
    return {tool: found for tool in tools
            if (found := shutil.which(tool, path=os.pathsep.join(SBIN_FOLDERS))) is not None}


def check_machine() -> None:
    """Root, and the tools the backend runs; ClusterConfigError saying what to do otherwise."""
    reason = unavailable_reason()
    if reason is None:
        return
    if not sys.platform.startswith("linux"):
        raise ClusterConfigError(f"{reason}: use --backend process or --backend docker")
    if os.geteuid() != 0:
        raise ClusterConfigError(f"{reason}: run as root, or use --backend process (no partitions)")
    fix = "" if len(_in_sbin(REQUIRED_TOOLS)) == len(REQUIRED_TOOLS) else ": install it, e.g. with scripts/provision"
    raise ClusterConfigError(f"{reason} (PATH is {os.environ.get('PATH', '')}){fix}")


def check_free(net: ClusterNetwork) -> None:
    """Refuse a cluster whose names or subnet something on this machine already holds."""
    links = set(network.link_names())
    taken = [name for name in [net.bridge, *(link.veth for link in net.nodes)] if name in links]
    taken += sorted(set(network.namespaces()) & {link.namespace for link in net.nodes})
    if taken:
        owner = network.link_alias(net.bridge)
        raise ClusterConfigError(
            f"cluster {net.cluster!r} cannot be made: {', '.join(taken)} already exist"
            + (f" (the bridge belongs to {owner!r})" if owner else "")
            + ": take the old cluster down (`fencepost cluster down`), or remove what crashed runs left "
              "(`fencepost cleanup`), or choose another cluster name")
    users = network.subnet_users(net.subnet)
    if users:
        raise ClusterConfigError(f"subnet {net.subnet} is already in use on this machine: {'; '.join(users)}. "
                                 "Choose a free subnet with the netns option `subnet` (e.g. --backend-option "
                                 "subnet=10.78.0.0/24), or take down the cluster using it")


def provision(cluster: str, nodes: Sequence[str], workdir: Path,
              options: Mapping[str, Any] | None = None, shared_paths: Sequence[str] = ()) -> NetnsHostSet:
    """`shared_paths` need nothing: namespaces share this machine's files."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ClusterConfigError(f"unknown netns backend option(s) {unknown}: it takes {', '.join(OPTIONS)}")
    net = network.plan(cluster, nodes, str(options.get("subnet", network.DEFAULT_SUBNET)))
    check_machine()
    check_free(net)
    workdirs = {}
    for node in nodes:
        (workdir / node).mkdir(parents=True, exist_ok=True)
        workdirs[node] = str(workdir / node)
    hosts = NetnsHostSet(net, workdirs)
    try:
        for command in network.build_commands(net):
            network.run_root(command)
    except BaseException:
        hosts.destroy()
        raise
    return hosts


def attach(state: Mapping[str, Any]) -> NetnsHostSet:
    links = tuple(NodeLink(node, entry["namespace"], entry["veth"], entry["address"])
                  for node, entry in state["nodes"].items())
    net = ClusterNetwork(state["cluster"], state["subnet"], state["bridge"], state["bridge_address"], links)
    return NetnsHostSet(net, {node: entry["workdir"] for node, entry in state["nodes"].items()})


def cleanup(clusters: Collection[str] = ()) -> list[str]:
    """Remove every namespace named `fp-*` (killing what runs in it), every link named `fpb*` or
    `fpv*`, and every root-namespace iptables rule with a `fencepost:` comment; nothing else.
    With `clusters` named, only theirs (netns_network.owned_*), so a crashed run can be
    cleaned while other clusters run. What was removed, one description each."""
    check_machine()
    removed = []
    ours = [ns for ns in network.namespaces() if network.owned_namespace(ns, clusters)]
    killed = {ns: kill_namespace_processes(ns) for ns in ours}
    # links before namespaces: a namespace's veth otherwise vanishes later, asynchronously
    for name in network.link_names():
        if network.owned_link(name, clusters) and network.delete_link(name):
            removed.append(f"link {name}")
    for namespace in ours:
        if network.delete_namespace(namespace):
            removed.append(f"namespace {namespace}"
                           + (f" (killed pids {killed[namespace]})" if killed[namespace] else ""))
    for rule in network.our_rules():
        if network.owned_rule(rule, clusters) and network.delete_rule(rule):
            removed.append(f"iptables rule {' '.join(rule)}")
    return removed
