"""The nodes' lazy disks: with a system's `flush = "lazy"`, the folders where a node keeps what
it must not lose (Kafka's `log.dirs`, which hold the KRaft metadata log too; the own broker's
data directory) are lazy filesystems (clusters/lazyfs/, docs/LAZYFS.md), so that a power cut of
the node loses exactly what its programs had not made durable.

Which folders: `System.lazy_folders(host)`; how the filesystem behaves: `System.lazy_options()`
(the metadata model). Each folder is the mount point; its backing folder, which holds the durable
state, is `<workdir>/durable/<the folder's path below the workdir>`.

Where the daemon runs, per backend:
- `process`, `netns`: on this machine, in its mount namespace (`LocalDisk`). A process started
  under `ip netns exec` gets its own copy of the mount table when it starts, so the mounts are
  made before any process of the cluster starts, and again after each cut before the node's
  processes start again (the fault's stop starts them).
- `docker`: inside the node's container (`ContainerDisk`, container_disk.py; what every disk
  is: node_disk.py), which is then made with /dev/fuse and CAP_SYS_ADMIN: a container sees
  only the mounts of its own mount table (this machine's root mount is private, so a mount made
  here after a power cut would not reach it). The default image only (it runs this machine's /usr: libfuse3, and the
  daemon binary from this machine's cache).
- `ssh`: refused (the daemon would have to be built and driven on remote machines).

A power cut of a node, in the order the lazy filesystem requires (clusters/lazyfs/mount.py):
drop every one of its mounts (unsynced changes lost, every request answered with EIO), kill -9
its processes, then unmount and mount each again. A `writeback` makes everything of a node's
disks durable, as the kernel's write-back of dirty pages would. Teardown unmounts cleanly
(everything made durable first, as a clean unmount of a disk); `fencepost cleanup` removes what a
harness killed with -9 left (clusters/lazyfs/cleanup.py: the daemons by their environment
marker, the mounts by type and source).
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Mapping

from fencepost.clusters.disks.container_disk import ContainerDisk
from fencepost.clusters.disks.node_disk import CutLoss, NodeDisk, backing_folder
from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import Host, HostSet
from fencepost.clusters.lazyfs import LazyMount, LazyOptions

LOCAL_BACKENDS = ("process", "netns")


class LocalDisk(NodeDisk):
    """Lazy mounts on this machine (process and netns backends)."""

    def __init__(self, node: str, mounts: list[LazyMount]) -> None:
        self.node = node
        self.mounts = mounts

    @staticmethod
    def make(host: Host, cluster: str, folders: list[str], options: LazyOptions) -> LocalDisk:
        disk = LocalDisk(host.name, [])
        try:
            for folder in folders:
                disk.mounts.append(LazyMount.mount(folder, backing_folder(host, folder), cluster, options))
        except BaseException:
            disk.unmount()
            raise
        return disk

    @property
    def folders(self) -> list[str]:
        return [str(m.mountpoint) for m in self.mounts]

    @property
    def backings(self) -> list[str]:
        return [str(m.backing) for m in self.mounts]

    def power_cut(self, kill: Callable[[], None]) -> CutLoss:
        lost = [m.drop() for m in self.mounts]
        kill()
        return CutLoss.of([m.remount(answer) for m, answer in zip(self.mounts, lost)])

    def writeback(self) -> None:
        for m in self.mounts:
            m.checkpoint()

    def unmount(self) -> None:
        problems = []
        for m in reversed(self.mounts):
            try:
                m.unmount()
            except (HostError, OSError) as e:
                problems.append(str(e))
        if problems:
            raise HostError("; ".join(problems))

    def state(self) -> dict[str, Any]:
        return {"kind": "local", "node": self.node, "mounts": [m.state() for m in self.mounts]}


class LazyDisks:
    """The lazy disks of a cluster's nodes (none when its system does not flush lazily)."""

    def __init__(self, disks: Mapping[str, NodeDisk] | None = None, options: LazyOptions | None = None) -> None:
        self.disks: dict[str, NodeDisk] = dict(disks or {})
        self.options = options

    @staticmethod
    def plan(hosts: HostSet, lazy_folders: Callable[[Host], list[str]]) -> dict[str, list[str]]:
        """node -> the folders that go on lazy mounts (nodes with none left out)."""
        return {h.name: folders for h in hosts if (folders := lazy_folders(h))}

    @staticmethod
    def check_backend(backend: str) -> None:
        """ClusterConfigError when lazy disks cannot be made on this backend, saying what to do."""
        if backend not in (*LOCAL_BACKENDS, "docker"):
            raise ClusterConfigError(
                f"flush = \"lazy\" puts the nodes' data on fencepost's lazy filesystem, a FUSE daemon that "
                f"must run beside the node; the {backend} backend cannot run it on its machines: use the "
                "netns, process or docker backend, or flush = \"os\" / \"fsync\" (no power cuts)")

    def mount_all(self, hosts: HostSet, plan: Mapping[str, list[str]], options: LazyOptions,
                  on_mounted: Callable[[], None] = lambda: None) -> None:
        """Mount every planned folder, node by node (`on_mounted` after each node, to save state)."""
        self.check_backend(hosts.backend)
        self.options = options
        for node, folders in plan.items():
            self.disks[node] = make_disk(hosts[node], hosts, folders, options)
            on_mounted()

    @staticmethod
    def attach(hosts: HostSet, state: Mapping[str, Any] | None) -> LazyDisks:
        state = state or {}
        options = LazyOptions.from_dict(state["options"]) if state.get("options") else None
        return LazyDisks({node: attach_disk(hosts, data) for node, data in (state.get("nodes") or {}).items()},
                         options)

    def state(self) -> dict[str, Any]:
        return {"options": None if self.options is None else
                {**asdict(self.options), "mmap_suffixes": list(self.options.mmap_suffixes)},
                "nodes": {node: disk.state() for node, disk in self.disks.items()}}

    def __contains__(self, node: str) -> bool:
        return node in self.disks

    def __bool__(self) -> bool:
        return bool(self.disks)

    @property
    def nodes(self) -> list[str]:
        return list(self.disks)

    def disk(self, node: str) -> NodeDisk:
        try:
            return self.disks[node]
        except KeyError:
            raise ClusterConfigError(f"{node} has no lazy disk: "
                                     + (f"only {', '.join(self.disks)} have" if self.disks else
                                        "the cluster was not started with flush = \"lazy\"")) from None

    def kills_with_signals(self, node: str) -> bool:
        return node in self.disks and self.disks[node].kills_with_signals

    def durable_path(self, node: str, relative: str = "") -> Path:
        """A path in the node's first lazy folder, in its backing folder on this machine: what is
        durable there."""
        return Path(self.disk(node).backings[0]) / relative

    def unmount_all(self) -> None:
        """Every disk unmounted cleanly (in reverse order); HostError naming what could not be."""
        problems = []
        for node in reversed(list(self.disks)):
            try:
                self.disks[node].unmount()
            except (HostError, OSError) as e:
                problems.append(f"{node}: {e}")
        self.disks = {}
        if problems:
            raise HostError("lazy disks left mounted (remove them with `fencepost cleanup`): " + "; ".join(problems))


def make_disk(host: Host, hosts: HostSet, folders: list[str], options: LazyOptions) -> NodeDisk:
    if hosts.backend in LOCAL_BACKENDS:
        return LocalDisk.make(host, hosts.cluster, folders, options)
    return ContainerDisk.make(host, hosts.cluster, folders, options)


def attach_disk(hosts: HostSet, state: Mapping[str, Any]) -> NodeDisk:
    if state.get("kind") == "local":
        return LocalDisk(state["node"], [LazyMount.attach(m) for m in state["mounts"]])
    if state.get("kind") == "container":
        return ContainerDisk.attach(hosts[state["node"]], state)
    raise ClusterConfigError(f"a lazy disk of kind {state.get('kind')!r} is not one this version knows")
