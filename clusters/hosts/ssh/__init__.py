"""The ssh backend: every node is a real machine reached over SSH (Jepsen's and ducktape's model).

The machines exist already: `provision` connects to each configured host
(verifying its host key), checks that the remote Python has the project and that
iptables and kill can be run (through `sudo -n` unless the user is root), and
makes the node's work directory. Commands, spawns, signals and partitions are
shell scripts from `ssh_commands` (every argument quoted); files move over SFTP;
one reused connection per node (`ssh_connection`); options in `ssh_options`.

`destroy` kills the cluster's processes (the pids it spawned, and any other
process on the host carrying the cluster's and node's markers, such as ones a
later harness process spawned), removes the FENCEPOST chain and closes the connections; the
work directories stay, as on the other backends. `cleanup()` has no list of
machines to visit, so it removes nothing: a cluster's own `down` cleans its hosts.
"""
from __future__ import annotations

import time
from pathlib import Path
from signal import Signals
from typing import Any, Collection, Iterable, Mapping, Sequence

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import (
    CLUSTER_ENV,
    NODE_ENV,
    CommandResult,
    Host,
    HostSet,
    ProcessHandle,
    ProcessState,
)
from fencepost.clusters.hosts.ssh import commands
from fencepost.clusters.hosts.ssh.connection import SshConnection
from fencepost.clusters.hosts.ssh.options import OPTION_NAMES, SshOptions, parse_options

OPTIONS = OPTION_NAMES

BACKEND = "ssh"
# the local wait for a command outlives its remote `timeout` (TERM, then KILL) by this much
DEADLINE_MARGIN_S = commands.KILL_GRACE_S + 10.0
CONTROL_TIMEOUT_S = 30.0  # state checks, signals, iptables
TIMED_OUT_STATUSES = (124, 137)  # coreutils timeout: TERM sent (124), or KILL (128 + 9)


class SshHost(Host):
    """One node: a machine reached over its own reused SSH connection."""

    def __init__(self, cluster: str, name: str, address: str, port: int, workdir: str, options: SshOptions,
                 spawned: Iterable[ProcessHandle] = ()) -> None:
        self.cluster = cluster
        self.name = name
        self.address = address
        self.ssh_port = port
        self.workdir = workdir
        self.python = options.python
        self.options = options
        self.spawned: list[ProcessHandle] = list(spawned)
        self.connection = SshConnection(options.target(name, address, port))

    def _exec(self, command: str, argv: Sequence[str], timeout: float) -> CommandResult:
        status, out, err = self.connection.exec(command, timeout + DEADLINE_MARGIN_S, " ".join(argv))
        return CommandResult(self.name, tuple(argv), status, out, err)

    def run(self, argv: Sequence[str], *, timeout: float = 30.0, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandResult:
        if not argv:
            raise ValueError("run needs a command: argv is empty")
        started = time.monotonic()
        result = self._exec(commands.run_script(argv, timeout, env), argv, timeout)
        if result.returncode in TIMED_OUT_STATUSES and time.monotonic() - started >= timeout:
            raise HostError(f"on {self.name}: `{' '.join(argv)}` did not finish within {timeout:g}s")
        if result.returncode == commands.NOT_INSTALLED_STATUS and "failed to run command" in result.stderr:
            raise HostError(f"on {self.name}: `{argv[0]}` is not installed (running `{' '.join(argv)}`): "
                            f"{result.stderr.strip()}")
        return result.check() if check else result

    def spawn(self, name: str, argv: Sequence[str], log: str, *, env: Mapping[str, str] | None = None,
              cwd: str | None = None) -> ProcessHandle:
        if not argv:
            raise ValueError("spawn needs a command: argv is empty")
        marker = {CLUSTER_ENV: self.cluster, NODE_ENV: self.name, **(env or {})}
        script = commands.spawn_script(argv, log, cwd or self.workdir, marker)
        result = self._exec(script, argv, CONTROL_TIMEOUT_S)
        if result.returncode == commands.NOT_INSTALLED_STATUS:
            raise HostError(f"on {self.name}: `{argv[0]}` is not installed (spawning `{' '.join(argv)}`)")
        result.check()
        try:
            pid = int(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise HostError(f"on {self.name}: spawning `{' '.join(argv)}` printed no pid: "
                            f"{(result.stdout + result.stderr).strip()!r}") from None
        handle = ProcessHandle(self.name, name, pid, log)
        self.spawned.append(handle)
        return handle

    def signal(self, handle: ProcessHandle, sig: Signals) -> None:
        script = commands.signal_script(handle.pid, self.cluster, self.name, sig, self.options.sudo)
        result = self._exec(script, ["kill", "-s", sig.name, str(handle.pid)], CONTROL_TIMEOUT_S)
        if not result.ok:
            raise HostError(f"on {self.name}: sending {sig.name} to {handle.name} (pid {handle.pid}) failed: "
                            f"{result.stderr.strip()}" + self._sudo_hint())

    def process_state(self, handle: ProcessHandle) -> ProcessState:
        result = self._exec(commands.state_script(handle.pid, self.cluster, self.name),
                            ["cat", f"/proc/{handle.pid}/stat"], CONTROL_TIMEOUT_S).check()
        return commands.parse_stat(result.stdout)

    def put(self, local: Path, remote: str) -> None:
        parent = remote.rsplit("/", 1)[0]
        if parent:
            self.run(["mkdir", "-p", parent])
        self.connection.sftp_call(lambda sftp: sftp.put(str(local), remote), f"copying {local} to {remote}")

    def get(self, remote: str, local: Path) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        self.connection.sftp_call(lambda sftp: sftp.get(remote, str(local)), f"copying {remote} to {local}")

    def cut_off(self, peers: Iterable[str]) -> None:
        peers = list(peers)
        if peers:
            self._privileged(commands.cut_script(peers, self.options.sudo), ["iptables", "cut", *peers])

    def heal(self) -> None:
        self._privileged(commands.heal_script(self.options.sudo), ["iptables", "heal"])

    def _privileged(self, script: str, argv: Sequence[str]) -> None:
        result = self._exec(script, argv, CONTROL_TIMEOUT_S)
        if not result.ok:
            raise HostError(f"on {self.name}: `{' '.join(argv)}` exited {result.returncode}: "
                            f"{result.stderr.strip()}" + self._sudo_hint())

    def _sudo_hint(self) -> str:
        if not self.options.sudo:
            return ""
        return (f" (as {self.options.user} through `sudo -n`: the sudoers file there must let "
                f"{self.options.user} run iptables and kill with NOPASSWD)")

    def prepare(self) -> None:
        """Provision's checks: the remote Python has the project; iptables and kill can be run;
        the work directory exists. Each failure says what to install or configure."""
        script = commands.prepare_script(self.python, self.workdir, self.options.sudo)
        result = self._exec(script, ["(provision's checks)"], CONTROL_TIMEOUT_S)
        where = f"{self.name} ({self.connection.target.where})"
        why = result.stderr.strip()
        if result.returncode == commands.PREPARE_PYTHON:
            raise ClusterConfigError(
                f"on {where}: `{self.python} -c 'import fencepost.broker'` failed ({why}): install fencepost for "
                f"that interpreter there, or set the ssh option python to an interpreter that has it")
        if result.returncode == commands.PREPARE_RIGHTS:
            raise ClusterConfigError(f"on {where}: cannot run iptables and kill as needed: {why}"
                                     + (self._sudo_hint() or " (install iptables there)"))
        if not result.ok:
            raise HostError(f"on {where}: cannot make the work directory {self.workdir} "
                            f"(exit {result.returncode}): {why}")

    def clear(self) -> None:
        """kill -9 this node's processes (the recorded ones and any other carrying its markers),
        wait until they are gone, and remove the FENCEPOST chain."""
        script = commands.destroy_script(self.cluster, self.name, [h.pid for h in self.spawned],
                                         self.options.sudo)
        result = self._exec(script, ["(destroy: kill -9, remove the FENCEPOST chain)"], CONTROL_TIMEOUT_S)
        if not result.ok:
            raise HostError(f"on {self.name}: killing its processes and removing the FENCEPOST chain failed: "
                            f"{result.stderr.strip()}" + self._sudo_hint())
        self.spawned.clear()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "ssh": self.connection.target.where}

    def to_state(self) -> dict[str, Any]:
        return {"address": self.address, "port": self.ssh_port, "workdir": self.workdir,
                "spawned": [h.to_dict() for h in self.spawned]}


class SshHostSet(HostSet[SshHost]):
    """The machines of one cluster; its state holds the options and each node's spawned pids."""

    backend = BACKEND

    def __init__(self, cluster: str, options: SshOptions, hosts: dict[str, SshHost]) -> None:
        self.cluster = cluster
        self.options = options
        self.hosts = hosts

    def state(self) -> dict[str, Any]:
        return {"backend": BACKEND, "cluster": self.cluster, "options": self.options.to_state(),
                "nodes": {n: h.to_state() for n, h in self.hosts.items()}}

    def destroy(self) -> None:
        """Every host is visited even when one fails; the failures are reported together."""
        failures = []
        for host in self.hosts.values():
            try:
                host.clear()
            except (HostError, ClusterConfigError) as failed:
                failures.append(str(failed))
            finally:
                host.connection.close()
        if failures:
            raise HostError(f"destroying the ssh cluster {self.cluster} left things behind: "
                            + "; ".join(failures))

    def close(self) -> None:
        """Close the connections (for a harness process that attached and is done)."""
        for host in self.hosts.values():
            host.connection.close()


def provision(cluster: str, nodes: Sequence[str], workdir: Path,
              options: Mapping[str, Any] | None = None, shared_paths: Sequence[str] = ()) -> SshHostSet:
    """Connect to the machine of each node and check it; `workdir` (local) is not used."""
    if shared_paths:
        raise ClusterConfigError(f"the ssh backend cannot run a system that needs this machine's "
                                 f"{', '.join(shared_paths)} on its nodes (their files are not copied there); "
                                 "use the netns or docker backend")
    parsed, endpoints = parse_options(cluster, nodes, options)
    hosts = {node: SshHost(cluster, node, address, port, parsed.node_workdir(cluster, node), parsed)
             for node, (address, port) in endpoints.items()}
    host_set = SshHostSet(cluster, parsed, hosts)
    try:
        for host in hosts.values():
            host.connection.connect()
            host.prepare()
    except BaseException:
        host_set.close()
        raise
    return host_set


def attach(state: Mapping[str, Any]) -> SshHostSet:
    """The same hosts; connections open on first use."""
    options = SshOptions.from_state(state["options"])
    cluster = state["cluster"]
    return SshHostSet(cluster, options, {
        n: SshHost(cluster, n, node["address"], int(node["port"]), node["workdir"], options,
                   [ProcessHandle.from_dict(h) for h in node.get("spawned", [])])
        for n, node in state["nodes"].items()})


def cleanup(clusters: Collection[str] = ()) -> list[str]:
    """Nothing: without a cluster's configuration there are no machines to visit. A cluster's
    own `down` (HostSet.destroy) kills its processes and removes its chain on every host."""
    return []
