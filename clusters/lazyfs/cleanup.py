"""What crashed runs left of lazy filesystems, and its removal (part of `fencepost cleanup`):
every daemon process whose environment carries `FENCEPOST_LAZYFS` (killed with SIGKILL), then
every mount of type `fuse.fencepost-lazyfs` whose source is `fencepost-lazyfs:<cluster>`
(unmounted lazily: a dead FUSE mount, or one a process still sits in, goes at once). With
cluster names given, only theirs. Nothing else is touched: not the backing folders (they hold
the data), not other FUSE mounts.

A copy of a mount in another mount namespace (a process started under `ip netns exec`) cannot
be reached from here; once its daemon is killed it serves nothing (ENOTCONN) and it goes when
that process ends, which the cluster cleanup's process sweep sees to.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Collection

from fencepost.clusters.errors import HostError
from fencepost.clusters.lazyfs.mount import LAZYFS_ENV
from fencepost.clusters.lazyfs.mounts import lazy_mounts, unmount
from fencepost.clusters.processes import CLUSTER_ENV, local_state, signal_local

KILL_WAIT_S = 10.0


def daemons(clusters: Collection[str] = ()) -> dict[int, tuple[str, str]]:
    """{pid: (cluster, mount point)} of every lazy filesystem daemon (of `clusters` when named)."""
    found = {}
    markers = {CLUSTER_ENV.encode() + b"=": "cluster", LAZYFS_ENV.encode() + b"=": "mountpoint"}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        seen: dict[str, str] = {}
        for item in environ.split(b"\0"):
            for marker, key in markers.items():
                if item.startswith(marker):
                    seen[key] = item[len(marker):].decode(errors="replace")
        if "mountpoint" in seen and (not clusters or seen.get("cluster") in clusters):
            found[int(entry.name)] = (seen.get("cluster", "?"), seen["mountpoint"])
    return found


def remove_strays(clusters: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """(what was removed, what could not be and why)."""
    removed, failed = [], []
    found = daemons(clusters)
    for pid in found:
        signal_local(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    for pid, (cluster, mountpoint) in sorted(found.items()):
        while local_state(pid) != "gone" and time.monotonic() < deadline:
            time.sleep(0.01)
        if local_state(pid) == "gone":
            removed.append(f"lazy filesystem daemon {pid} (cluster {cluster}, {mountpoint})")
        else:
            failed.append(f"lazy filesystem daemon {pid} ({mountpoint}) outlived kill -9")
    for entry in lazy_mounts(clusters):
        try:
            unmount(entry.mountpoint, lazy=True)
            removed.append(f"lazy mount {entry.mountpoint} (cluster {entry.cluster})")
        except OSError as e:
            failed.append(f"lazy mount {entry.mountpoint}: {e.strerror} (unmounting needs root or fusermount3)")
    return removed, failed


def cleanup(clusters: Collection[str] = ()) -> list[str]:
    """Remove every stray lazy filesystem (of `clusters` when named); what was removed. HostError
    naming what could not be removed."""
    removed, failed = remove_strays(clusters)
    if failed:
        raise HostError("; ".join(failed) + (f" (removed: {'; '.join(removed)})" if removed else ""))
    return removed
