"""What `fencepost cleanup` removes: everything a crashed cluster can leave behind on
this machine, and only what carries the project's own names — namespaces `fp-*`,
links `fpb*`/`fpv*`, iptables rules with the `fencepost` comment (netns); containers
and networks labelled `fencepost.cluster` (docker); processes whose environment
carries the `FENCEPOST_CLUSTER` marker (every local backend); lazy filesystem mounts
of type `fuse.fencepost-lazyfs` and their daemons (clusters/lazyfs/cleanup.py). ssh hosts are real
machines it has no configuration for: `fencepost cluster down` cleans those.
Given cluster names, it removes only what those clusters left, so a crashed run can be
cleaned up while other clusters (a campaign) keep running on the same machine.
"""
from __future__ import annotations

import signal
from typing import Collection

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.hosts import backend_module
from fencepost.clusters.hosts.local_process import local_state, marked_processes, signal_local
from fencepost.clusters.lazyfs.cleanup import remove_strays as lazyfs_strays

LOCAL_BACKENDS = ("netns", "docker", "process")


def cleanup_everything(clusters: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """(what was removed, what could not be checked and why); only `clusters`' leftovers when named."""
    removed: list[str] = []
    skipped: list[str] = []
    strays = {pid: cluster for pid, cluster in marked_processes().items() if not clusters or cluster in clusters}
    for pid in strays:
        signal_local(pid, signal.SIGKILL)
    for pid, cluster in sorted(strays.items()):
        if local_state(pid) == "gone" or _wait_gone(pid):
            removed.append(f"process {pid} (cluster {cluster})")
    # after the sweep: nothing runs on a lazy mount any more when it is unmounted
    try:
        gone, failed = lazyfs_strays(clusters)
        removed += gone
        skipped += [f"lazyfs: {item}" for item in failed]
    except OSError as e:
        skipped.append(f"lazyfs: {e}")
    for name in LOCAL_BACKENDS:
        try:
            removed += backend_module(name).cleanup(clusters)
        except (ClusterConfigError, HostError, ImportError, OSError) as e:
            skipped.append(f"{name}: {e}")
    return removed, skipped


def _wait_gone(pid: int, tries: int = 200) -> bool:
    import time
    for _ in range(tries):
        if local_state(pid) == "gone":
            return True
        time.sleep(0.01)
    return False
