"""A harness process to be killed while lazy disks exist: brings an own-system cluster up with
`flush = "lazy"` (its brokers' data on lazy mounts) on the netns backend, then power-cuts,
writes back and restarts brokers in a loop until it is killed (tests/reliability/test_disks_crash.py
kill -9s it at a random moment).

    python tests/support/disks_crash_harness.py DIR NAME SUBNET SEED

It prints each set-up step as it begins, "up" once the cluster is up, then one line per action.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from fencepost.clusters.cluster import Cluster, ClusterSpec  # noqa: E402


def main(directory: str, name: str, subnet: str, seed: str) -> None:
    rng = random.Random(int(seed))
    spec = ClusterSpec(name, "own", 3, "netns", {"subnet": subnet}, {"flush": "lazy"})
    cluster = Cluster.up(spec, Path(directory), on_step=lambda step: print(step, flush=True))
    print("up", flush=True)
    while True:
        node = rng.choice(cluster.broker_nodes)
        action = rng.choice(["power-cut", "power-cut", "writeback", "kill"])
        print(action, node, flush=True)
        if action == "power-cut":
            cluster.power_cut(node)
        elif action == "writeback":
            cluster.writeback(node)
        else:
            cluster.kill(node)
        cluster.heal()


if __name__ == "__main__":
    main(*sys.argv[1:])
