"""Lazy disks of a docker node (clusters/disks/lazy_disks.py): the lazy filesystem's daemon runs inside the
node's container, so that the mount is in the container's own mount table (a mount made on this
machine would not reach a running container: this machine's root mount is private).

The container is made with /dev/fuse and CAP_SYS_ADMIN (docker_node.start_node, `fuse`), and this
machine's daemon binary folder mounted read-only (the default image runs this machine's /usr, so
libfuse3 is there). Each daemon is spawned in the container like any process of the node
(`DockerHost.spawn`: its own session, the cluster marker, `FENCEPOST_LAZYFS=<mount point>`); its
control socket lies in the backing folder, inside the node's workdir, which is bind-mounted at
the same path: this machine talks to it directly.

A docker node with lazy disks is killed with signals (SIGKILL of its processes, through the
namespace holder), never with `docker kill`, which would kill the daemon and so lose the data a
kill -9 of a process keeps (the page cache). Its power cut: drop (through the socket), kill the
node's processes, SIGKILL the daemon, detach the dead mount inside the container (`umount -l`),
spawn a new daemon. A paused node (`docker pause` freezes the daemon too) is unpaused first.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from fencepost.clusters.disks.node_disk import CutLoss, NodeDisk, backing_folder
from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts.base import Host, ProcessHandle
from fencepost.clusters.lazyfs import LazyOptions, control, mounts
from fencepost.clusters.lazyfs.build import daemon_binary
from fencepost.clusters.lazyfs.mount import LAZYFS_ENV, LOG, READY_TIMEOUT_S, TERM_EXIT_S, check_cluster

POLL_S = 0.05


class ContainerDisk(NodeDisk):
    def __init__(self, host: Host, cluster: str, folders: list[str], options: LazyOptions,
                 daemons: list[ProcessHandle]) -> None:
        self.host = host
        self.node = host.name
        self.cluster = cluster
        self._folders = folders
        self.options = options
        self.daemons = daemons

    @staticmethod
    def make(host: Host, cluster: str, folders: list[str], options: LazyOptions) -> ContainerDisk:
        check_cluster(cluster)
        disk = ContainerDisk(host, cluster, folders, options.checked(), [])
        try:
            for i, folder in enumerate(folders):
                for path in (Path(folder), Path(backing_folder(host, folder))):
                    path.mkdir(parents=True, exist_ok=True)  # the workdir is this machine's, bind-mounted
                present = [p.name for p in Path(folder).iterdir()]
                if present:
                    raise ClusterConfigError(f"mount point {folder} on {host.name} is not empty ({present[0]!r}, "
                                             "...): a lazy disk is made on an empty folder")
                disk.daemons.append(disk._spawn(i))
        except BaseException:
            disk.unmount()
            raise
        return disk

    @staticmethod
    def attach(host: Host, state: Mapping[str, Any]) -> ContainerDisk:
        return ContainerDisk(host, state["cluster"], list(state["folders"]), LazyOptions.from_dict(state["options"]),
                             [ProcessHandle.from_dict(d) for d in state["daemons"]])

    def state(self) -> dict[str, Any]:
        options = {**self.options.__dict__, "mmap_suffixes": list(self.options.mmap_suffixes)}
        return {"kind": "container", "node": self.node, "cluster": self.cluster, "folders": self._folders,
                "options": options, "daemons": [d.to_dict() for d in self.daemons]}

    @property
    def folders(self) -> list[str]:
        return list(self._folders)

    @property
    def backings(self) -> list[str]:
        return [backing_folder(self.host, f) for f in self._folders]

    # -- the daemons ----------------------------------------------------------------------------

    def _spawn(self, i: int) -> ProcessHandle:
        folder, backing = self._folders[i], Path(self.backings[i])
        state = control.state_dir(backing)
        state.mkdir(mode=0o700, exist_ok=True)
        argv = [str(daemon_binary()), str(backing), folder, *self.options.argv(), "--fsname",
                mounts.source_for(self.cluster)]
        handle = self.host.spawn(f"lazyfs-{i}", argv, str(state / LOG), env={LAZYFS_ENV: folder})
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                answer = control.send(backing, "ping", timeout=2.0)
                if answer.get("ready") and answer.get("pid") == handle.pid:
                    return handle
            except HostError:
                pass
            if self.host.process_state(handle) == "gone" or time.monotonic() > deadline:
                log = (state / LOG).read_text(errors="replace")[-2000:] if (state / LOG).exists() else ""
                raise HostError(f"on {self.node}: the lazy filesystem for {folder} did not mount in its container "
                                f"(needs /dev/fuse and CAP_SYS_ADMIN there): {log.strip() or 'no message'}")
            time.sleep(POLL_S)

    def _end_daemon(self, i: int, sig: signal.Signals) -> None:
        handle = self.daemons[i]
        self.host.signal(handle, sig)
        try:
            self.host.wait_for_state([handle], {"gone"}, TERM_EXIT_S)
        except HostError:
            self.host.signal(handle, signal.SIGKILL)
            self.host.wait_for_state([handle], {"gone"})
        # the dead mount (ENOTCONN) is detached; a clean unmount by the daemon leaves nothing to do
        self.host.run(["umount", "-l", self._folders[i]], check=False)

    def _thawed(self) -> None:
        """`docker pause` freezes the daemon with the node: unpause (its processes stay stopped when
        the caller stopped them with a signal first)."""
        self.host.resume([])

    # -- NodeDisk ------------------------------------------------------------------------------

    def power_cut(self, kill: Callable[[], None]) -> CutLoss:
        self._thawed()
        lost: list[Mapping[str, Any]] = [control.send(Path(b), "drop") for b in self.backings]
        kill()
        for i in range(len(self.daemons)):
            self._end_daemon(i, signal.SIGKILL)
            self.daemons[i] = self._spawn(i)
        return CutLoss.of(lost)

    def writeback(self) -> None:
        self._thawed()
        for backing in self.backings:
            control.send(Path(backing), "checkpoint")

    def unmount(self) -> None:
        problems = []
        for i in reversed(range(len(self.daemons))):
            try:
                if self.host.process_state(self.daemons[i]) != "gone":
                    self._thawed()
                    control.send(Path(self.backings[i]), "checkpoint")
                    self._end_daemon(i, signal.SIGTERM)  # a clean unmount, as a disk's
            except (HostError, OSError) as e:
                problems.append(f"{self._folders[i]}: {e}")
        if problems:
            raise HostError("; ".join(problems))

    @property
    def kills_with_signals(self) -> bool:
        return True
