"""The docker backend: every node is a container on the cluster's own bridge network.

The cluster gets a user-defined network `fp-<cluster>`; each node a container
`fp-<cluster>-<node>` (hostname = node name, NET_ADMIN) whose address on that
network is the node's address, reached directly from this machine. The
containers' make-up (a namespace holder per node, so a killed node keeps its
address and its partition rules) is in docker_node.py, the image in
docker_image.py.

Faults act on the container: pause = `docker pause`, resume = `docker unpause`,
kill = `docker kill` (every process of the node dies) then `docker start`, so
the node is restarted by spawning again. A node's workdir is the host folder
`<workdir>/<node>` bind-mounted at the same path: data survives kills and the
harness reads logs in place. Partitions are clusters/hosts/iptables.py run in
the node's network namespace.

Options: `image=` a user-built image (default: the offline base image),
`python=` its interpreter (default python3), `subnet=` the network's subnet
(default: docker picks a free one).
"""
from __future__ import annotations

import io
import ipaddress
import posixpath
import re
import signal
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

import docker
import docker.errors
from docker.models.containers import Container

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts import iptables, tc
from fencepost.clusters.hosts.base import (
    CLUSTER_ENV,
    NODE_ENV,
    CommandResult,
    Host,
    HostSet,
    ProcessHandle,
    ProcessState,
    state_of_tasks,
)
from fencepost.clusters.hosts.docker.errors import DOCKER_ERRORS, explain
from fencepost.clusters.hosts.docker.image import node_image
from fencepost.clusters.hosts.docker.node import (
    create_network,
    exec_in,
    holder_container_name,
    labelled_containers,
    labelled_networks,
    network_name,
    node_container_name,
    remove_all,
    start_node,
)

BACKEND = "docker"
OPTIONS = ("image", "python", "subnet")
KERNEL_SHAPING = True  # containers shape packets with this machine's kernel
API_TIMEOUT_S = 900  # a docker API call (a command run included) is cut off after this
NODE_NAME = re.compile(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,62})")  # a hostname label: no "_" (see docker_node)
CLUSTER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,99}")

# Runs as `sh -c SPAWN sh LOG ARGV...`: the program in its own session, output appended to LOG;
# prints its pid. `command -v` first, so a missing program is an error here and not a line in LOG.
SPAWN = """\
log=$1; shift
command -v "$1" >/dev/null 2>&1 || { echo "$1: no such program" >&2; exit 127; }
mkdir -p "$(dirname "$log")" || exit 1
setsid "$@" </dev/null >>"$log" 2>&1 &
echo $!
"""
SIGNAL = 'kill -s "$1" "$2" 2>/dev/null; exit 0'


def connect() -> docker.DockerClient:
    """A client of the daemon DOCKER_HOST (or the local socket) names; ClusterConfigError when none answers."""
    try:
        client = docker.from_env(timeout=API_TIMEOUT_S)
        client.ping()
    except (docker.errors.DockerException, *DOCKER_ERRORS) as e:
        raise ClusterConfigError(f"the docker backend needs a running Docker daemon and none answers ({e}): "
                                 "start it (`dockerd`, or `systemctl start docker`) or choose another "
                                 "backend (--backend netns)") from None
    return client


class DockerHost(Host):
    """One node: commands and processes run in its container; process state, signals and iptables
    go through its namespace holder, so they work while the node is paused."""

    def __init__(self, client: docker.DockerClient, cluster: str, name: str, address: str, workdir: str,
                 python: str) -> None:
        self.client = client
        self.cluster = cluster
        self.name = name
        self.address = address
        self.workdir = workdir
        self.python = python
        self.container_name = node_container_name(cluster, name)
        self._netem_missing: str | None = None  # why tc netem fails here ("": it works); probed when asked
        self.holder_name = holder_container_name(cluster, name)

    # -- the containers ----------------------------------------------------------------------

    def _get(self, name: str) -> Container:
        try:
            return self.client.containers.get(name)
        except docker.errors.NotFound:
            raise HostError(f"on {self.name}: its container {name} no longer exists (removed by "
                            "`fencepost cleanup` or docker rm?); bring the cluster up again") from None
        except DOCKER_ERRORS as e:
            raise HostError(f"on {self.name}: docker cannot inspect {name}: {explain(e)}") from None

    def container(self) -> Container:
        """The node's container, freshly inspected (its `status` is current)."""
        return self._get(self.container_name)

    def holder(self) -> Container:
        return self._get(self.holder_name)

    # -- commands and processes --------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout: float = 30.0, check: bool = True,
            env: Mapping[str, str] | None = None) -> CommandResult:
        """In the node's container; while it is paused, beside it in its holder (same mounts, so the
        workdir and the system are the same; files the node keeps outside its mounts are not seen)."""
        container = self.container()
        if container.status == "paused":
            container = self.holder()
        result = exec_in(container, self.name, argv, timeout, env)
        return result.check() if check else result

    def spawn(self, name: str, argv: Sequence[str], log: str, *, env: Mapping[str, str] | None = None,
              cwd: str | None = None) -> ProcessHandle:
        marker = {CLUSTER_ENV: self.cluster, NODE_ENV: self.name, **(env or {})}
        result = exec_in(self.container(), self.name, ["sh", "-c", SPAWN, "sh", log, *argv], 30.0,
                         marker, cwd or self.workdir)
        if not result.ok or not result.stdout.strip().isdigit():
            raise HostError(f"on {self.name}: could not spawn {name} (`{' '.join(argv)}`): "
                            f"{(result.stderr or result.stdout).strip() or f'exit {result.returncode}'}")
        return ProcessHandle(self.name, name, int(result.stdout), log)

    def signal(self, handle: ProcessHandle, sig: signal.Signals) -> None:
        exec_in(self.holder(), self.name, ["sh", "-c", SIGNAL, "sh", sig.name.removeprefix("SIG"),
                                           str(handle.pid)], 30.0)

    def process_state(self, handle: ProcessHandle) -> ProcessState:
        stat = exec_in(self.holder(), self.name, ["sh", "-c", f"cat /proc/{handle.pid}/task/*/stat"], 30.0)
        state = state_of_tasks(stat.stdout if stat.ok else "")
        if state == "running" and self.container().status == "paused":
            return "stopped"
        return state

    # -- files ----------------------------------------------------------------------------------

    def put(self, local: Path, remote: str) -> None:
        remote = posixpath.join(self.workdir, remote)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            entry = tar.gettarinfo(str(local), arcname=remote.lstrip("/"))
            entry.uid = entry.gid = 0
            entry.uname = entry.gname = "root"
            with open(local, "rb") as source:
                tar.addfile(entry, source)
        try:
            # Extracted at "/" with the whole path in the member: docker makes the missing parents.
            self.container().put_archive("/", buffer.getvalue())
        except DOCKER_ERRORS as e:
            raise HostError(f"on {self.name}: could not put {local} at {remote}: {explain(e)}") from None

    def get(self, remote: str, local: Path) -> None:
        remote = posixpath.join(self.workdir, remote)
        try:
            stream, stat = self.container().get_archive(remote)
            data = b"".join(stream)
        except docker.errors.NotFound:
            raise HostError(f"on {self.name}: no file {remote} to get") from None
        except DOCKER_ERRORS as e:
            raise HostError(f"on {self.name}: could not get {remote}: {explain(e)}") from None
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise HostError(f"on {self.name}: {remote} is not a regular file "
                                f"({'a folder' if member is not None and member.isdir() else 'empty archive'})")
            extracted = tar.extractfile(member)
            assert extracted is not None  # a regular file's member has its content
            content = extracted.read()
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(content)

    # -- partitions -----------------------------------------------------------------------------

    def _iptables(self, argv: Sequence[str], check: bool = True) -> CommandResult:
        result = exec_in(self.holder(), self.name, argv, 30.0)
        return result.check() if check else result

    def cut_off(self, peers: Iterable[str]) -> None:
        peers = list(peers)
        if not self._iptables(iptables.chain_ready(), check=False).ok:
            for command in iptables.ensure_chain():
                self._iptables(command, check=False)
            self._iptables(iptables.chain_ready())
        for command in iptables.cut(peers):
            self._iptables(command)

    def heal(self) -> None:
        if self._iptables(iptables.chain_ready(), check=False).ok:
            self._iptables(iptables.heal())

    def uncut(self, peers: Iterable[str]) -> None:
        for command in iptables.uncut(peers):
            self._iptables(command, check=False)  # gone already (healed) is fine

    # -- netem (in the holder, which owns the node's network namespace) --------------------------

    supports_shaping = True

    def shape(self, netem: Sequence[str]) -> None:
        self._iptables(tc.shape(netem))

    def unshape(self) -> None:
        if tc.has_netem(self._iptables(tc.show()).stdout):
            self._iptables(tc.unshape())

    def shaping_unavailable(self) -> str | None:
        """Probed once, on the node's loopback (`tc.probe`)."""
        if self._netem_missing is None:
            self._netem_missing = tc.probe_on(lambda command: self._iptables(command, check=False))
        return self._netem_missing or None

    # -- faults on the whole container ----------------------------------------------------------

    def pause(self, handles: Sequence[ProcessHandle]) -> None:
        """`docker pause`: every process of the node freezes (not only `handles`; none: nothing done)."""
        if not handles:
            return
        container = self.container()
        if container.status == "running":
            self._docker(container.pause, "pause")
        self.wait_for_state(handles, {"stopped", "gone"})

    def resume(self, handles: Sequence[ProcessHandle]) -> None:
        """`docker unpause` when the node is paused (also with no handles: it undoes the fault)."""
        container = self.container()
        if container.status == "paused":
            self._docker(container.unpause, "unpause")
        self.wait_for_state(handles, {"running", "gone"})

    def kill(self, handles: Sequence[ProcessHandle]) -> None:
        """`docker kill` (SIGKILL to every process of the node, paused or not), then `docker start`,
        so the node can be restarted by spawning again. No handles: nothing done."""
        if not handles:
            return
        container = self.container()
        if container.status in ("running", "paused"):
            self._docker(container.kill, "kill")
        self._docker(lambda: container.wait(condition="not-running"), "wait for the end of")
        self._docker(container.start, "start")
        self.wait_for_state(handles, {"gone"})

    def ask_to_end(self, handles: Sequence[ProcessHandle]) -> None:
        """Unpause the node first (signals cannot end frozen processes), then SIGTERM."""
        self.resume([])
        super().ask_to_end(handles)

    def _docker(self, action, what: str) -> None:
        try:
            action()
        except DOCKER_ERRORS as e:
            raise HostError(f"on {self.name}: docker {what} {self.container_name} failed: "
                            f"{explain(e)}") from None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "container": self.container_name}


class DockerHostSet(HostSet[DockerHost]):
    backend = BACKEND

    def __init__(self, client: docker.DockerClient, cluster: str, hosts: dict[str, DockerHost],
                 image: str, gateway: str | None = None) -> None:
        self.client = client
        self.cluster = cluster
        self.hosts = hosts
        self.image = image
        self.gateway = gateway  # the network's gateway: where this machine's traffic comes from

    @property
    def client_address(self) -> str | None:
        """The network's gateway: the harness on this machine reaches the containers through the
        bridge, whose address on the network is the gateway (None for a state saved before it
        was kept)."""
        return self.gateway

    def state(self) -> dict[str, Any]:
        return {"backend": BACKEND, "cluster": self.cluster, "network": network_name(self.cluster),
                "image": self.image, "gateway": self.gateway,
                "nodes": {n: {"address": h.address, "workdir": h.workdir, "python": h.python,
                              "container": h.container_name} for n, h in self.hosts.items()}}

    def destroy(self) -> None:
        """Remove this cluster's containers (everything running in them dies) and its network.
        Work directories on this machine are kept; so is the image (a cache)."""
        try:
            remove_all(labelled_containers(self.client, self.cluster), labelled_networks(self.client, self.cluster))
        except DOCKER_ERRORS as e:
            raise HostError(f"could not remove the docker containers of cluster {self.cluster}: "
                            f"{explain(e)}") from None


def network_gateway(network: Any) -> str:
    """The gateway address of a docker network (docker's choice: the subnet's first host when
    it names none)."""
    network.reload()
    config = network.attrs["IPAM"]["Config"][0]
    return config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"], strict=False).hosts()))


def check_options(cluster: str, nodes: Sequence[str], options: Mapping[str, Any]) -> str | None:
    """Validate names and options; the subnet (normalised) or None."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ClusterConfigError(f"unknown docker backend option(s) {', '.join(unknown)}: "
                                 f"it takes {', '.join(OPTIONS)}")
    if not CLUSTER_NAME.fullmatch(cluster):
        raise ClusterConfigError(f"cluster name {cluster!r} cannot name docker containers: use letters, "
                                 "digits, '_', '.', '-', starting with a letter or digit")
    for node in nodes:
        if not NODE_NAME.fullmatch(node):
            raise ClusterConfigError(f"node name {node!r} is not a hostname: use letters, digits and '-' "
                                     "(up to 63, starting with a letter or digit)")
    if len(set(nodes)) != len(nodes):
        raise ClusterConfigError(f"node names repeat: {', '.join(nodes)}")
    subnet = options.get("subnet")
    if subnet is None:
        return None
    try:
        network = ipaddress.ip_network(str(subnet), strict=True)
    except ValueError as e:
        raise ClusterConfigError(f"subnet={subnet!r} is not a network in CIDR form ({e}); "
                                 "e.g. subnet=10.78.0.0/24") from None
    if network.version != 4 or not network.is_private or network.num_addresses < len(nodes) + 4:
        raise ClusterConfigError(f"subnet={subnet} must be a private IPv4 network with room for "
                                 f"{len(nodes)} nodes and the gateway, e.g. subnet=10.78.0.0/24")
    return str(network)


def provision(cluster: str, nodes: Sequence[str], workdir: Path,
              options: Mapping[str, Any] | None = None, shared_paths: Sequence[str] = (),
              fuse: bool = False) -> DockerHostSet:
    """`fuse`: the node containers get /dev/fuse and CAP_SYS_ADMIN (lazy disks, clusters/disks/);
    the default image only (the daemon runs this machine's libfuse3)."""
    options = dict(options or {})
    subnet = check_options(cluster, nodes, options)
    if fuse and options.get("image") is not None:
        raise ClusterConfigError(f"flush = \"lazy\" with the docker option image={options['image']}: the lazy "
                                 "filesystem's daemon in the containers runs this machine's build and libfuse3, which "
                                 "the default image mounts: leave image= out")
    client = connect()
    taken = ([c.name for c in labelled_containers(client, cluster)]
             + [n.name for n in labelled_networks(client, cluster)])
    if taken:
        raise ClusterConfigError(f"cluster {cluster} has docker objects already ({', '.join(taken)}): "
                                 "take it down (fencepost cluster down) or remove leftovers with "
                                 "`fencepost cleanup`")
    image = node_image(client, options.get("image"), options.get("python"))
    image = replace(image, mounts=(*image.mounts, *(p for p in shared_paths if p not in image.mounts)))
    workdir = workdir.resolve()
    hosts: dict[str, DockerHost] = {}
    network = create_network(client, cluster, subnet)
    try:
        gateway = network_gateway(network)
        for node in nodes:
            node_dir = workdir / node
            node_dir.mkdir(parents=True, exist_ok=True)
            made = start_node(client, cluster, node, image, str(node_dir), fuse=fuse)
            hosts[node] = DockerHost(client, cluster, node, made.address, str(node_dir), image.python)
            hosts[node].run([image.python, "-c", "pass"])  # the interpreter works inside: say so now if not
    except BaseException:
        remove_all(labelled_containers(client, cluster), labelled_networks(client, cluster))
        raise
    return DockerHostSet(client, cluster, hosts, image.tag, gateway)


def attach(state: Mapping[str, Any]) -> DockerHostSet:
    client = connect()
    cluster = state["cluster"]
    hosts = {n: DockerHost(client, cluster, n, node["address"], node["workdir"], node["python"])
             for n, node in state["nodes"].items()}
    for host in hosts.values():
        host.container()  # HostError now when the cluster's containers are gone
    return DockerHostSet(client, cluster, hosts, state["image"], state.get("gateway"))


def cleanup(clusters: Collection[str] = ()) -> list[str]:
    """Remove every container and network labelled `fencepost.cluster` (any cluster, or only the
    named `clusters`) with our name prefix, and nothing else; what was removed. Images stay:
    they are a cache. ClusterConfigError when no daemon answers (then nothing could be checked)."""
    client = connect()
    if not clusters:
        return remove_all(labelled_containers(client, None), labelled_networks(client, None))
    return remove_all([c for name in clusters for c in labelled_containers(client, name)],
                      [n for name in clusters for n in labelled_networks(client, name)])

