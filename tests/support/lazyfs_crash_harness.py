"""A driver process to be killed: makes two lazy mounts, starts a marked process that sits in
one of them (as a broker would), then writes, cuts, checkpoints and remounts in a loop until it
is killed (tests/reliability/test_lazyfs_crash.py kill -9s it at a random moment).

    python tests/support/lazyfs_crash_harness.py DIR CLUSTER SEED

It prints "mounted" once both mounts answer, then one line per step.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from fencepost.clusters.hosts.base import CLUSTER_ENV  # noqa: E402
from fencepost.clusters.lazyfs import LazyMount, LazyOptions  # noqa: E402


def main(directory: str, cluster: str, seed: str) -> None:
    rng = random.Random(int(seed))
    root = Path(directory)
    mounts = [LazyMount.mount(root / f"m{i}", root / f"b{i}", cluster,
                              LazyOptions(model=rng.choice(["journal", "strict"])))
              for i in range(2)]
    subprocess.Popen(["sleep", "600"], cwd=mounts[0].mountpoint, env={**os.environ, CLUSTER_ENV: cluster},
                     start_new_session=True)
    print("mounted", flush=True)
    step = 0
    while True:
        i = rng.randrange(len(mounts))
        mount = mounts[i]
        action = rng.choice(["write", "write", "cut", "checkpoint", "remount"])
        print(action, mount.mountpoint, flush=True)
        if action == "write":
            step += 1
            with open(mount.mountpoint / f"f{step % 5}", "wb") as f:
                f.write(os.urandom(rng.randrange(1, 200_000)))
                if rng.random() < 0.5:
                    os.fsync(f.fileno())
        elif action == "cut":
            mount.power_cut()
        elif action == "checkpoint":
            mount.checkpoint()
        elif i == 1:  # the other one has a process sitting in it
            mount.unmount()
            mounts[i] = LazyMount.mount(mount.mountpoint, mount.backing, cluster, mount.options)


if __name__ == "__main__":
    main(*sys.argv[1:])
