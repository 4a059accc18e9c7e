"""The docker objects of a cluster: its network, the two containers of each node, their labels,
running a command in one, and removing them.

A node is two containers, as a Kubernetes pod is a pause container plus the app:
- the holder `fp-<cluster>-<node>_ns` owns the node's network and pid namespaces
  (its address on the cluster network, its iptables rules, its pid numbering) and
  runs a tiny Python init that reaps orphans. It is never paused or killed.
- the node `fp-<cluster>-<node>` joins those namespaces; every process of the
  node runs in it. `docker pause`/`docker kill` act on it alone, so a killed
  node comes back (`docker start`) with the same address and partition rules,
  and pids keep counting up, so a handle from before the kill never names a
  process started after it.
Both carry the labels `fencepost.cluster=<cluster>` and `fencepost.node=<node>`,
the network `fp-<cluster>` the first.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import docker
import docker.errors
from docker.models.containers import Container

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import NAME_PREFIX, CommandResult
from fencepost.clusters.hosts.docker.errors import DOCKER_ERRORS, explain
from fencepost.clusters.hosts.docker.image import NodeImage

CLUSTER_LABEL = "fencepost.cluster"
NODE_LABEL = "fencepost.node"
ROLE_LABEL = "fencepost.role"  # "holder" or "node"
HOLDER_SUFFIX = "_ns"  # "_" cannot occur in a node name (a hostname), so no node's container ends so
KILL_GRACE_S = 5

# PID 1 of the node's pid namespace: reaps every orphan (spawned processes end up its children);
# SIGTERM ends it.
REAPER = """\
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGTERM})
while signal.sigwait({signal.SIGCHLD, signal.SIGTERM}) == signal.SIGCHLD:
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
"""
NODE_MAIN = ["sleep", "infinity"]


@dataclass(frozen=True)
class NodeContainers:
    node: Container
    holder: Container
    address: str


def network_name(cluster: str) -> str:
    return f"{NAME_PREFIX}-{cluster}"


def node_container_name(cluster: str, node: str) -> str:
    return f"{NAME_PREFIX}-{cluster}-{node}"


def holder_container_name(cluster: str, node: str) -> str:
    return node_container_name(cluster, node) + HOLDER_SUFFIX


def create_network(client: docker.DockerClient, cluster: str, subnet: str | None):
    """The cluster's bridge network; docker picks a free subnet unless `subnet` is given."""
    ipam = None
    if subnet is not None:
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet)])
    try:
        return client.networks.create(network_name(cluster), driver="bridge", ipam=ipam,
                                      labels={CLUSTER_LABEL: cluster}, check_duplicate=True)
    except DOCKER_ERRORS as e:
        raise ClusterConfigError(f"could not create the docker network {network_name(cluster)}"
                                 + (f" on subnet {subnet}" if subnet else "") + f": {explain(e)}"
                                 + ("; choose another subnet= or leave it out" if subnet else "")) from None


def start_node(client: docker.DockerClient, cluster: str, node: str, image: NodeImage,
               workdir: str, fuse: bool = False) -> NodeContainers:
    """The holder on the cluster network, then the node in its namespaces; both running. `fuse`:
    the node may mount FUSE filesystems (/dev/fuse, CAP_SYS_ADMIN: its lazy disks)."""
    mounts = [docker.types.Mount(p, p, type="bind", read_only=True) for p in image.mounts]
    mounts.append(docker.types.Mount(workdir, workdir, type="bind"))
    common = dict(image=image.tag, cap_add=["NET_ADMIN"], mounts=mounts, environment=dict(image.env),
                  detach=True)
    labels = {CLUSTER_LABEL: cluster, NODE_LABEL: node}
    try:
        holder = client.containers.run(command=[image.python, "-c", REAPER],
                                       name=holder_container_name(cluster, node), hostname=node,
                                       network=network_name(cluster), labels={**labels, ROLE_LABEL: "holder"},
                                       **common)
        namespaces = f"container:{holder.id}"
        extra = dict(devices=["/dev/fuse:/dev/fuse:rwm"], cap_add=["NET_ADMIN", "SYS_ADMIN"]) if fuse else {}
        container = client.containers.run(command=NODE_MAIN, name=node_container_name(cluster, node),
                                          network_mode=namespaces, pid_mode=namespaces,
                                          labels={**labels, ROLE_LABEL: "node"}, **{**common, **extra})
    except DOCKER_ERRORS as e:
        raise HostError(f"on {node}: could not start its containers from image {image.tag}: "
                        f"{explain(e)}") from None
    holder.reload()
    address = holder.attrs["NetworkSettings"]["Networks"].get(network_name(cluster), {}).get("IPAddress")
    if holder.status != "running" or not address:
        output = holder.logs(tail=20).decode(errors="replace").strip()
        raise HostError(f"on {node}: its namespace holder {holder.name} is {holder.status} "
                        f"(address {address or 'none'}) right after start"
                        + (f"; it printed: {output}" if output else ""))
    return NodeContainers(container, holder, address)


def exec_in(container: Container, node: str, argv: Sequence[str], timeout: float,
            env: Mapping[str, str] | None = None, workdir: str | None = None) -> CommandResult:
    """Run `argv` in the container (bounded by coreutils `timeout` inside), unchecked. A container
    that cannot run it (paused, stopped, removed) or a missing program is a HostError."""
    shown = shlex.join(argv)
    wrapped = ["timeout", "-k", str(KILL_GRACE_S), f"{timeout:.3f}", *argv]
    try:
        code, (out, err) = container.exec_run(wrapped, environment=dict(env or {}), workdir=workdir, demux=True)
    except docker.errors.NotFound:
        raise HostError(f"on {node}: cannot run `{shown}`: its container {container.name} no longer "
                        "exists (removed by `fencepost cleanup` or docker rm?)") from None
    except DOCKER_ERRORS as e:
        why = explain(e)
        if "paused" in why:
            why = "the node is paused (docker pause); resume it first"
        raise HostError(f"on {node}: cannot run `{shown}` in {container.name}: {why}") from None
    stdout = (out or b"").decode(errors="replace")
    stderr = (err or b"").decode(errors="replace")
    if code == 124:
        raise HostError(f"on {node}: `{shown}` did not finish within {timeout:g}s")
    if code in (126, 127) and stderr.startswith("timeout: failed to run command"):
        raise HostError(f"on {node}: `{argv[0]}` is not installed or not executable there "
                        f"(running `{shown}`): {stderr.strip()}")
    return CommandResult(node, tuple(argv), code, stdout, stderr)


def labelled_containers(client: docker.DockerClient, cluster: str | None) -> list[Container]:
    """The containers of `cluster` (any cluster when None) whose names carry our prefix,
    node containers before holders (a node lives in its holder's namespaces)."""
    label = CLUSTER_LABEL if cluster is None else f"{CLUSTER_LABEL}={cluster}"
    found = [c for c in client.containers.list(all=True, filters={"label": label})
             if c.name.startswith(NAME_PREFIX + "-")]
    return sorted(found, key=lambda c: (c.labels.get(ROLE_LABEL) == "holder", c.name))


def labelled_networks(client: docker.DockerClient, cluster: str | None) -> list:
    label = CLUSTER_LABEL if cluster is None else f"{CLUSTER_LABEL}={cluster}"
    return [n for n in client.networks.list(filters={"label": label}) if n.name.startswith(NAME_PREFIX + "-")]


def remove_all(containers: Iterable[Container], networks: Iterable) -> list[str]:
    """Force-remove them (already gone is fine); what was removed."""
    removed = []
    for container in containers:
        try:
            container.remove(force=True, v=True)
            removed.append(f"container {container.name}")
        except docker.errors.NotFound:
            pass
    for network in networks:
        try:
            network.remove()
            removed.append(f"network {network.name}")
        except docker.errors.NotFound:
            pass
    return removed
