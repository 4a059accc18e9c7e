"""Crash safety of the lazy filesystem driver: a process that has made lazy mounts (and a
marked process sitting in one) and cuts, checkpoints and remounts them is killed with SIGKILL
at a random moment, 10 times (seeded); `fencepost cleanup --cluster NAME` then leaves no lazy
mount and no daemon of that cluster, the same folders mount again, and another cluster's lazy
mount is left alone."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time

import pytest

from fencepost.clusters.hosts.local_process import marked_processes
from fencepost.clusters.lazyfs import LazyMount, cleanup
from fencepost.clusters.lazyfs.cleanup import daemons
from fencepost.clusters.lazyfs.mounts import lazy_mounts
from tests.support.cli import fencepost
from tests.support.lazyfs_support import needs_fuse, tree, write
from tests.support.paths import SUPPORT

pytestmark = [pytest.mark.integration, pytest.mark.root]
HARNESS = SUPPORT / "lazyfs_crash_harness.py"
RUNS = 10


def test_cleanup_after_a_killed_driver_leaves_no_lazy_mount_and_no_daemon(tmp_path):
    needs_fuse()
    cluster, other = f"lazycrash-{os.getpid()}", f"lazybystander-{os.getpid()}"
    bystander = LazyMount.mount(tmp_path / "by-mnt", tmp_path / "by-backing", other)
    outputs = []
    try:
        write(bystander.mountpoint / "kept", b"unsynced, and kept")
        for run in range(RUNS):
            rng = random.Random(f"lazyfs-crash/{run}")
            where = tmp_path / f"run{run}"
            driver = subprocess.Popen([sys.executable, str(HARNESS), str(where), cluster, str(run)],
                                      stdout=subprocess.PIPE, text=True)
            assert driver.stdout.readline().strip() == "mounted"
            time.sleep(rng.uniform(0.0, 1.5))
            driver.kill()
            driver.wait()
            done = fencepost(tmp_path, "cleanup", "--cluster", cluster)
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout)
            assert lazy_mounts([cluster]) == [], done.stdout
            assert daemons([cluster]) == {} and marked_processes(cluster) == {}, done.stdout
            for i in range(2):  # nothing stands in the way of the same mounts
                LazyMount.mount(where / f"m{i}", where / f"b{i}", cluster).unmount()
            assert [m.mountpoint for m in lazy_mounts([other])] == [str(bystander.mountpoint)]
            assert tree(bystander.mountpoint) == {"kept": b"unsynced, and kept"}
        assert all("lazy" in out for out in outputs), outputs
    finally:
        bystander.unmount()
        cleanup([cluster, other])
